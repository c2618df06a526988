// BatchLoader: reads many regions of one slide in batches, on a persistent worker pool, with prefetch.
//
// Delivery is ordered (batch k is returned k-th, its items in the order of the location list, or of a
// seeded shuffle of it). Each batch is one pooled buffer of N x H x W x 3 bytes, shared between the loader
// and the consumer: a buffer returns to the pool only when every holder released it, so a batch handed out
// stays valid for as long as the caller keeps it. A region that fails to read is reported in that batch's
// item statuses (its pixels are the fill colour); the other items are unaffected. Destroying the loader
// cancels batches not yet started; reads already running finish in the background and release their
// buffers. Thread behaviour: one consumer calls next(); the loader's own synchronisation is described in
// src/loader/batch_loader.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "tilewise/slide.h"
#include "tilewise/status.h"

namespace tilewise {

struct BatchOptions {
  int level = 0;
  int64_t width = 0;   // region size in pixels of the level
  int64_t height = 0;
  int batch_size = 1;
  int num_workers = 0;  // concurrent region reads; 0 = one per hardware thread
  int prefetch = 2;     // batches read ahead of the consumer (at least 1)
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
  ReadOptions read;
  // Where batches are made: host memory, or a CUDA device (decoded there by the GPU path; the device's
  // scheduler decides how many workers read whole regions on the CPU beside the GPU).
  Device device;
  // Channels of one (z, t) at the image's own sample type (Slide::read_planes), instead of the RGB
  // rendering; host memory only.
  std::optional<PlaneSelection> planes;
};

// The pixels of one batch; shared and immutable once delivered.
class BatchBuffer {
 public:
  explicit BatchBuffer(size_t bytes, Device device = {});
  ~BatchBuffer();
  BatchBuffer(const BatchBuffer&) = delete;
  BatchBuffer& operator=(const BatchBuffer&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }
  const Device& device() const { return device_; }
  const Status& error() const { return error_; }  // why data() is null

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_;
  Device device_;
  Status error_;
};

struct Batch {
  int64_t index = 0;                // batch number, from 0
  int64_t count = 0;                // regions in this batch (the last may be short)
  int64_t width = 0, height = 0;
  int32_t channels = 3, sample_bytes = 1;         // per pixel: RGB, or the planes' channels and sample size
  std::shared_ptr<BatchBuffer> pixels;            // count x height x width x channels samples
  std::vector<int64_t> locations_index;           // position of each item in the caller's location list
  std::vector<Status> statuses;                   // one per item
  bool ok() const;
  // The first failing item's status, with its position and location in the message; ok when none failed.
  Status first_error(const std::vector<std::pair<int64_t, int64_t>>& locations) const;
};

namespace loader {
struct Scheduling;  // how a loader is scheduled beyond its options (src/loader/scheduling.h; tests)
}

class BatchLoader {
 public:
  // Locations are level-0 (x, y). InvalidArgument for a bad level, size or option.
  static Result<std::unique_ptr<BatchLoader>> create(const Slide& slide,
                                                     std::vector<std::pair<int64_t, int64_t>> locations,
                                                     const BatchOptions& options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int64_t batch_count() const;
  int64_t location_count() const;
  // The next batch in order (waits for it), or nullopt when all were delivered.
  std::optional<Batch> next();

 private:
  friend struct loader::Scheduling;
  struct State;
  explicit BatchLoader(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace tilewise
