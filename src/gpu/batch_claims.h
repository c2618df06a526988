// BatchClaims: the items of one device-loader batch, shared out between its GPU reader and CPU helpers.
//
// The GPU reader takes runs from the front (a device batch read wants many regions at once: their tiles are
// deduplicated and fill full nvImageCodec batches), CPU helpers take single items from the back (a region
// read on one core, into page-locked host memory, uploaded with the others at the end). The GPU's first run
// is its planned share of the batch; whatever the helpers have not taken when that run is read, the GPU
// takes in one more run. Each device batch read costs milliseconds of latency whatever its size
// (bench/RESULTS.md, "Device batch reads in one or two runs"), so the GPU makes as few as it can: one when
// the share is right, two when the helpers fell behind. The loader learns the share from that outcome
// (batch_loader.cc): a second run means the helpers were given too much, none means they kept up and may
// take more. Where the GPU is slower than the helpers
// (JPEG 2000) a share claimed when the batch starts holds regions for the GPU that idle helpers could read:
// there the GPU takes small runs of a fixed size instead (in_runs), each when it has read the last.
//
// The CPU's items are always the batch's last ones, [cpu_first(), size()): one contiguous upload.
// Not synchronised: the loader calls it under its own mutex.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

namespace tilewise::gpu {

class BatchClaims {
 public:
  // `gpu_share`: the part of the batch the GPU's first run takes (clamped to 0-1; at least one item of a
  // non-empty batch).
  BatchClaims(int64_t size, double gpu_share)
      : size_(size),
        back_(size),
        first_run_(std::clamp<int64_t>(static_cast<int64_t>(std::clamp(gpu_share, 0.0, 1.0) * static_cast<double>(size) + 0.5),
                                       1, std::max<int64_t>(1, size))) {}

  // Runs of `run` items (at least 1) from the front, each taken when the last is read, so that the GPU and
  // the helpers meet wherever their speeds put them, with no share planned.
  static BatchClaims in_runs(int64_t size, int64_t run) {
    BatchClaims c(size, 1.0);
    c.first_run_ = std::max<int64_t>(1, run);
    c.fixed_runs_ = true;
    return c;
  }

  // The GPU's next run {first, count}: its share first, then everything left (in_runs: every run of the
  // fixed size); count 0 when nothing is left.
  std::pair<int64_t, int64_t> take_front() {
    const int64_t left = back_ - front_;
    if (left <= 0) return {front_, 0};
    const int64_t count = gpu_runs_++ == 0 || fixed_runs_ ? std::min(left, first_run_) : left;
    const int64_t first = front_;
    front_ += count;
    return {first, count};
  }

  // A CPU helper's next item, or -1 when nothing is left.
  int64_t take_back() {
    if (back_ <= front_) return -1;
    return --back_;
  }

  bool exhausted() const { return back_ <= front_; }
  int64_t size() const { return size_; }
  int gpu_runs() const { return gpu_runs_; }  // 2 (planned share): the helpers fell behind the GPU's first run
  bool fixed_runs() const { return fixed_runs_; }
  int64_t cpu_first() const { return back_; }  // the CPU took [cpu_first(), size())
  double cpu_share() const { return size_ > 0 ? static_cast<double>(size_ - back_) / static_cast<double>(size_) : 0; }

 private:
  int64_t size_;
  int64_t front_ = 0;
  int64_t back_;
  int64_t first_run_;
  bool fixed_runs_ = false;
  int gpu_runs_ = 0;
};

}  // namespace tilewise::gpu
