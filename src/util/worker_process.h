// Helper processes for decoders that are not safe on hostile input.
//
// jxrlib (the only JPEG XR decoder there is) reads and writes out of bounds on corrupt streams: a fuzzer
// finds a crash in seconds. tilewise promises errors, never crashes, on bad files, so such a decoder runs
// in a helper process of its own (a small executable linking it; see src/codecs/jpegxr_worker/): when the
// helper dies on a stream, the read returns a Corrupt error naming the signal and a fresh helper serves the
// next one. Browsers isolate image decoders the same way.
//
// WorkerProcessPool keeps idle helpers for reuse (one per concurrent call, at most `max_idle` kept), speaks
// one framed request/reply exchange per call over a Unix socket pair, and is thread-safe without holding a
// lock during a call. serve_requests() is the helper's side of the exchange.
//
// Wire format (both ends are the same build): a request is {u64 head bytes, u64 body bytes, head, body};
// a reply is {i32 code, u32 message bytes, u64 out bytes, message, out}. Code 0 is success; anything else
// is a StatusCode with the message.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::internal {

class WorkerProcessPool {
 public:
  // `name` appears in errors; `locate` finds the helper executable (called when one is first spawned).
  WorkerProcessPool(std::string name, std::function<Result<std::string>()> locate, size_t max_idle,
                    std::chrono::milliseconds timeout);
  ~WorkerProcessPool();
  WorkerProcessPool(const WorkerProcessPool&) = delete;
  WorkerProcessPool& operator=(const WorkerProcessPool&) = delete;

  // Sends head and body to a helper and receives its reply; the reply's bytes go straight into `out`.
  // Returns the number of bytes written, or the helper's error, or Corrupt when the helper died or did not
  // answer within the timeout (it is killed then) - the input is what a healthy helper failed on.
  Result<size_t> call(std::span<const uint8_t> head, std::span<const uint8_t> body, std::span<uint8_t> out);

  // Helpers spawned so far (for tests: a crash costs one).
  uint64_t spawned() const;

 private:
  struct Worker {
    int pid = -1;
    int fd = -1;
  };
  Result<Worker> spawn();
  int discard(Worker w);  // stops it and reaps it; its wait status (how it ended)
  // One request and its reply. `failure` says why the helper gave no usable answer ("ended", a timeout, a
  // malformed reply); empty when it answered, with success or with its own error.
  Result<size_t> exchange(const Worker& w, std::span<const uint8_t> head, std::span<const uint8_t> body,
                          std::span<uint8_t> out, bool* sent, std::string* failure);

  const std::string name_;
  const std::function<Result<std::string>()> locate_;
  const size_t max_idle_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::vector<Worker> idle_;
  std::string path_;  // the helper, once located
  uint64_t spawned_ = 0;
};

// The helper's loop over requests on `fd` until the other end closes it. `handle` decodes one request into
// `out` (resized by it) and returns its status.
using WorkerHandler =
    std::function<Status(std::span<const uint8_t> head, std::span<const uint8_t> body, std::vector<uint8_t>& out)>;
int serve_requests(int fd, const WorkerHandler& handle);

// The directory holding the code that calls this (the shared object, or the executable it is linked into).
std::string directory_of_this_code();

}  // namespace tilewise::internal
