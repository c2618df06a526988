// Scheduler: every "CPU or GPU?" decision of one device's reads, from one speed model per codec class.
//
// - Tiles. How many tiles one nvImageCodec call of a lane takes (tiles_per_call: about a batch's worth of
//   work at the measured speed); whether a reading thread decodes its own last queued tile on the CPU rather
//   than wait for the lanes to reach it (cpu_is_sooner); whether the cores outpace the lanes on a codec, so
//   that a long list of tiles is assisted by every core (cpu_outpaces_gpu). The lanes report each call
//   (record_gpu_call) and the reading threads each tile they decode (record_cpu_decode).
// - Large regions. A region of many tiles goes whole to the lanes or to the CPU path, whichever has read
//   large regions faster (route_large_region; bench/RESULTS.md, "Large regions routed by measured rates"):
//   each side's rate is the best of its recent large reads (record_large_read), measured first on a few
//   reads of each side, then by sending every kRemeasureEvery-th large read to the slower side.
// - Channels and planes. A read of channels into device memory goes through the lanes (their decoders take
//   the planes' grey tiles as samples) or is read on the CPU and uploaded, whichever has read them faster,
//   per codec class and tile size, by the same race as large regions (route_plane_read, record_plane_read):
//   nvJPEG2000 loses to 16 cores on 128-pixel tiles and wins on 512-pixel ones (bench/RESULTS.md,
//   "Channels to the device").
// - Device loaders. How many of a loader's workers read whole regions on the CPU beside the GPU's batch
//   reads, and how the GPU claims its part of a batch (loader_plan; bench/RESULTS.md, "Helpers by codec",
//   "JPEG 2000's GPU in small runs"); the helpers' share of a batch, learnt from each batch's outcome and kept
//   across the process's loaders (record_loader_batch).
//
// Speeds are kept per codec class: JPEG (the hardware engines) and the others (JPEG 2000). Time comes from
// an injected Clock, so that every decision is tested without a GPU. A forced policy (TILEWISE_GPU_POLICY,
// util/settings.h) makes the large-region and loader decisions one side's, for measurements. One scheduler per device and process
// (device_scheduler); tests make their own.
//
// Thread behaviour: lock-free. Each measured quantity is an atomic read and written with relaxed order; a
// decision made during an update is merely a little stale. The tile speeds are updated by the lanes under
// their own lock, so their moving averages see every sample.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "codecs/tile_desc.h"
#include "tilewise/types.h"
#include "util/settings.h"

namespace tilewise::gpu {

enum class CodecClass { kJpeg = 0, kOther = 1 };
CodecClass codec_class(const codecs::TileDesc& desc);
// The class of a level's tiles as the public API describes them (LevelInfo::compression).
CodecClass codec_class(const LevelInfo& level);

// The time source of measurements, in seconds.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double seconds() const = 0;
};
// std::chrono::steady_clock's.
const Clock& steady_seconds();

// How a device loader shares its batches between the GPU and its CPU helpers.
struct LoaderPlan {
  int helpers = 0;           // workers that read whole regions on the CPU beside the GPU's batch reads
  int gpu_run = 0;           // > 0: the GPU reads each batch in runs of this many regions; 0: a planned share
  double helper_share = 0;   // the helpers' planned part of a batch (gpu_run == 0)
};

// Which side reads a whole region: the GPU's decode lanes, or the CPU's cores (then one upload).
enum class ReadSide { kLanes, kCpu };

// Two sides racing for one kind of whole read: each side's rate is the best of its last kRecent timed reads,
// measured first on `first_reads` reads of each side (the lanes first); then the faster side reads, the
// slower one every remeasure_every-th read so that its rate stays current. Lock-free (relaxed atomics).
class SideRace {
 public:
  static constexpr size_t kRecent = 8;
  explicit SideRace(int first_reads = 3) : first_reads_(static_cast<uint64_t>(first_reads)) {}
  ReadSide route(uint64_t remeasure_every);
  // A read of `amount` (pixels or samples) by `side` alone took `seconds`; its first read sets the side up
  // (the lanes' decoders, pinned staging) and is not counted.
  void record(ReadSide side, double amount, double seconds);
  void reset(int first_reads);

 private:
  struct Rates {
    std::atomic<double> recent[kRecent] = {};
    std::atomic<uint64_t> reads{0};
    double best() const;
  };
  Rates lanes_, cpu_;
  std::atomic<uint64_t> routed_{0};
  std::atomic<uint64_t> first_reads_;
};

class Scheduler {
 public:
  static constexpr uint64_t kRemeasureEvery = 16;

  static constexpr int kFirstLargeReads = 3;  // SideRace's default too

  explicit Scheduler(const Clock& clock = steady_seconds(), internal::GpuPolicy policy = internal::GpuPolicy::kAuto);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  double now() const { return clock_.seconds(); }

  // Tiles per lane call for tiles of class `c`: about `batch_seconds` of work at the measured speed, 1 to
  // `max_tiles`; 8 until measured.
  size_t tiles_per_call(CodecClass c, double batch_seconds, size_t max_tiles) const;
  // Whether a reading thread's last queued tile (of `pixels` to decode on the CPU) is sooner decoded by the
  // thread itself than by `lanes` lanes, behind the `in_flight` tiles they are decoding and the `ahead` queued
  // before it. Until the lanes are measured: only once `ahead` reaches `unmeasured_backlog`.
  bool cpu_is_sooner(CodecClass c, size_t in_flight, size_t ahead, size_t lanes, int64_t pixels,
                     size_t unmeasured_backlog) const;
  // Whether `cpu_threads` threads decode tiles of `tile_pixels` at least twice as fast as `lanes` lanes
  // (false until the lanes are measured).
  bool cpu_outpaces_gpu(CodecClass c, int64_t tile_pixels, int cpu_threads, size_t lanes) const;
  // A lane's call of tiles of class `c` took `seconds_per_tile` per tile (calls sized by their caller,
  // which measure another regime, are not reported).
  void record_gpu_call(CodecClass c, double seconds_per_tile);
  // A reading thread decoded `pixels` of class `c` on the CPU in `seconds`.
  void record_cpu_decode(CodecClass c, double seconds, int64_t pixels);
  double gpu_seconds_per_tile(CodecClass c) const { return gpu_tile_[index(c)].load(std::memory_order_relaxed); }
  double cpu_seconds_per_pixel(CodecClass c) const { return cpu_pixel_[index(c)].load(std::memory_order_relaxed); }

  using Side = ReadSide;
  // The side that reads the next large region whole.
  Side route_large_region();
  // A large region of `pixels` was read by `side` alone in `seconds` (its first read sets the side up and is
  // not counted).
  void record_large_read(Side side, double pixels, double seconds);
  // Forgets the large-region rates: the next large reads measure both sides again, `first_reads` each.
  void reset_large_regions(int first_reads = kFirstLargeReads);
  // The side that reads the next read of channels into device memory, of tiles of class `c` and
  // `tile_pixels`, and its outcome (`samples`: pixels x channels).
  Side route_plane_read(CodecClass c, int64_t tile_pixels);
  void record_plane_read(CodecClass c, int64_t tile_pixels, Side side, double samples, double seconds);

  // The plan of a device loader of `workers` workers reading tiles of class `c`; `helpers` and `gpu_run`
  // override it when >= 0 (tests of the loader's scheduling).
  LoaderPlan loader_plan(CodecClass c, int workers, int helpers = -1, int gpu_run = -1) const;
  // A loader batch of class `c` read with the helpers' share `share` is complete: the GPU needed a second run
  // (the helpers fell behind) or not. Returns the share for the next batch (kept for the process's loaders).
  double record_loader_batch(CodecClass c, double share, bool gpu_needed_second_run);
  // How the device's loaders have shared their regions (for gpu_stats): regions read by device batch reads,
  // those reads, and regions read by CPU helpers.
  struct LoaderCounts {
    uint64_t gpu_regions = 0, gpu_reads = 0, cpu_regions = 0;
  };
  void count_loader_gpu_read(int64_t regions);
  void count_loader_cpu_regions(int64_t regions);
  LoaderCounts loader_counts() const;
  // Regions of channels and planes read to the device through the host (decoded on the CPU, uploaded once):
  // their codec is not the lanes', or the race routed them there.
  void count_host_plane_region() { host_plane_regions_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t host_plane_regions() const { return host_plane_regions_.load(std::memory_order_relaxed); }

 private:
  static size_t index(CodecClass c) { return static_cast<size_t>(c); }
  Side forced_or(SideRace& race);
  // The plane race of class `c` and tiles of `tile_pixels`: up to 128^2, 256^2, 512^2, larger.
  SideRace& plane_race(CodecClass c, int64_t tile_pixels);

  const Clock& clock_;
  const internal::GpuPolicy policy_;
  std::atomic<double> gpu_tile_[2] = {};  // 0: not measured yet
  // Optimistic start (10 ns per pixel, ~100 MPix/s per core): callers try, then learn the real cost.
  std::atomic<double> cpu_pixel_[2] = {10e-9, 10e-9};
  SideRace large_{kFirstLargeReads};
  SideRace planes_[2][4];
  std::atomic<double> helper_share_[2] = {0.25, 0.25};
  std::atomic<uint64_t> loader_gpu_regions_{0}, loader_gpu_reads_{0}, loader_cpu_regions_{0};
  std::atomic<uint64_t> host_plane_regions_{0};
};

// The scheduler of CUDA device `device` (-1: the host, for loaders scheduled as device loaders in tests),
// process-wide and never destroyed (reads may run during exit), with the policy of TILEWISE_GPU_POLICY.
Scheduler& device_scheduler(int device);

}  // namespace tilewise::gpu
