// JPEG XR: Zeiss CZI subblocks may be JPEG XR, which OpenSlide cannot read. jxrlib, the one decoder there
// is, crashes on corrupt streams, so it runs in helper processes (tilewise-jpegxr-worker, see
// util/worker_process.h) and this side only ships streams to them: a stream that kills a helper is a
// Corrupt error of that tile. The cost is one copy of the stream and of the pixels through a socket
// (bench/RESULTS.md, "2 cores: Leica, Ventana, Trestle, Sakura, Zeiss").
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "codecs/cpu/lossless_decoders.h"
#include "codecs/jpegxr_worker/jxrlib_decode.h"
#include "util/fork_safe.h"
#include "util/settings.h"
#include "util/worker_process.h"

namespace tilewise::codecs {

namespace {

constexpr char kWorker[] = "tilewise-jpegxr-worker";

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

// TILEWISE_JPEGXR_WORKER, else beside the code that links tilewise (the Python extension's folder holds it
// in a wheel), else where `cmake --install` puts it, else the build tree's.
Result<std::string> locate_worker() {
  const std::string& configured = internal::settings().jpegxr_worker;
  if (!configured.empty()) {
    if (executable(configured)) return configured;
    return unsupported("jpeg-xr: TILEWISE_JPEGXR_WORKER=" + configured + " is not an executable");
  }
  std::vector<std::string> candidates;
  const std::string here = internal::directory_of_this_code();
  if (!here.empty()) {
    candidates = {here + "/" + kWorker, here + "/../libexec/tilewise/" + kWorker, here + "/../tilewise/" + kWorker};
  }
#ifdef TILEWISE_JPEGXR_WORKER_INSTALLED
  candidates.emplace_back(TILEWISE_JPEGXR_WORKER_INSTALLED);
#endif
#ifdef TILEWISE_JPEGXR_WORKER_BUILT
  candidates.emplace_back(TILEWISE_JPEGXR_WORKER_BUILT);
#endif
  std::string looked;
  for (const std::string& c : candidates) {
    if (executable(c)) return c;
    looked += (looked.empty() ? "" : ", ") + c;
  }
  return unsupported(std::string("jpeg-xr: the decoder helper ") + kWorker + " was not found (looked for " + looked +
                     "); set TILEWISE_JPEGXR_WORKER to its path");
}

internal::WorkerProcessPool& pool() {
  static internal::ForkSafe<internal::WorkerProcessPool> instance([] {
    const size_t threads = std::max(1u, std::thread::hardware_concurrency());
    return new internal::WorkerProcessPool("jpeg-xr", locate_worker, threads, std::chrono::seconds(60));
  });
  return instance.get();
}

}  // namespace

Result<size_t> jpegxr_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height,
                             int32_t bytes_per_pixel) {
  const jpegxr_worker::Request request{width, height, bytes_per_pixel};
  return pool().call({reinterpret_cast<const uint8_t*>(&request), sizeof request}, in, out);
}

}  // namespace tilewise::codecs
