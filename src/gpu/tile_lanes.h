// TileLanes: the per-GPU scheduler that merges the tiles of all concurrent device reads into batches for a
// few decode lanes, with the calling CPU threads decoding what the lanes have not reached yet.
//
// Synchronisation model:
// - One TileLanes per device and process (ForkSafe: a forked child starts its own lanes lazily). K lane
//   threads (settings().gpu_lanes, default 6 at ~3 ms of work per call: the lanes' host cost follows the
//   number of nvImageCodec calls, so fewer, larger calls decode as fast on fewer cores; bench/RESULTS.md,
//   "where the GPU loader's host cores go"), each owning one decoder
//   of the contract in codecs/decoder.h (in production nvImageCodec's: its own decoder, CUDA stream and
//   pinned staging). There is no decode lock: the only shared state is the queue below, under one mutex held for
//   O(batch) pointer work, never while decoding.
// - A caller's decode() queues its jobs as one entry. A lane takes jobs from the front of the queue (oldest
//   first, across entries and so across requests) up to about batch_seconds of work (3 ms; at most
//   max_batch tiles, 64: LaneOptions) per nvImageCodec call. Meanwhile the
//   caller, instead of sleeping, takes its own jobs back from the end of its entry and runs `cpu_assist` for
//   them (CPU decoding + upload): CPU cores that would otherwise wait add their throughput to the engines'
//   (gpu.md: 16 cores of libjpeg-turbo decode about as fast as the engines on slide tiles). A caller takes
//   its last queued job when the lanes would need longer to reach and decode it than the CPU needs for its
//   window: the device's scheduler (scheduler.h) decides from the speeds the lanes and callers measure. So the split follows the
//   measured speeds: JPEG 2000, where nvJPEG2000 is much slower than OpenJPEG on many cores for small
//   tiles, goes mostly to the CPU; JPEG is shared between the engines and otherwise idle cores.
//   settings().gpu_cpu_assist = false (TILEWISE_GPU_CPU_ASSIST=0) turns this off (all tiles to the GPU).
// - A job is claimed exactly once, under the mutex, by a lane or by its caller. decode() returns when every
//   job of the call is finished; the lane finishes a job under the mutex and signals the caller's condition
//   variable there, so the caller's stack (jobs, entry) outlives every reference to it. An entry is removed
//   from the queue as soon as its last job is claimed.
// - Shutdown: at process exit the lanes are stopped and joined (finishing their batch) before the
//   nvImageCodec instance and the CUDA runtime go (codecs/nvimgcodec/nvimgcodec_decoder.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codecs/decoder.h"
#include "gpu/host_cost.h"
#include "gpu/scheduler.h"
#include "tilewise/status.h"

namespace tilewise::gpu {

struct LaneJob {
  codecs::DecodeRequest request;  // a whole tile, its output in device memory
  int64_t cpu_pixels = 0;  // pixels cpu_assist would decode for this job (its window); 0: the whole tile
  Status status;           // set when the job is finished
  bool on_gpu = false;     // decoded by a lane (else by cpu_assist)
};

struct LaneStats {
  uint64_t gpu_tiles = 0;     // tiles decoded by the lanes
  uint64_t cpu_tiles = 0;     // tiles the callers decoded on the CPU while the lanes were busy
  uint64_t batches = 0;       // nvImageCodec calls
  uint64_t queued = 0;        // tiles waiting now
  int lanes = 0;
};

struct LaneOptions {
  bool cpu_assist = true;      // callers decode their own queued tiles on the CPU when that is sooner
  size_t assist_backlog = 64;  // until the lanes' speed is known: assist once this many tiles are ahead
  double batch_seconds = 0.002;  // work per nvImageCodec call at the measured speed (1..max_batch tiles)
  size_t max_batch = 64;         // most tiles per call
  bool warm_up = true;  // each lane warms its decoder (Decoder::warm_up) when it starts, before taking work
  // When set, the lanes append one line per call to this file when they stop (at exit): "lane,claimed_ns,
  // returned_ns,tiles,per_call", times of the monotonic clock (Python's time.monotonic_ns()), at most
  // kMaxTraced calls per lane. A diagnosis of how one read's calls line up (bench/diag/lane_trace.py).
  std::string trace_path;
  // Where the lanes' calls, the callers' assisting decodes and their waits add their host CPU time (nullptr:
  // not counted).
  HostCost* host_cost = nullptr;
};

class TileLanes {
 public:
  static constexpr size_t kMaxTraced = size_t{1} << 20;
  // Lanes over the given decoders, one thread each (gpu/device_context.cc makes nvImageCodec's; tests pass
  // decoders that need no GPU), measuring and deciding through `scheduler` (the device's; nullptr: one of
  // their own, as tests use).
  static std::unique_ptr<TileLanes> make(std::vector<std::unique_ptr<codecs::Decoder>> decoders,
                                         const LaneOptions& options, Scheduler* scheduler = nullptr);
  // Options from the settings for `lanes` lanes: cpu_assist unless TILEWISE_GPU_CPU_ASSIST=0, batch_seconds
  // and max_batch TILEWISE_GPU_BATCH_MS and TILEWISE_GPU_BATCH_TILES (3 ms, 64), assist_backlog lanes *
  // max_batch * 4 (before the first batch is measured, callers assist only behind a very long queue),
  // trace_path TILEWISE_GPU_TRACE, warm_up.
  static LaneOptions options_from_settings(int lanes);

  // Decodes every job (each job's status says how). Jobs are taken by lanes in order from the front; the
  // caller takes them from the back and calls cpu_assist(index) when it is set and assisting is enabled,
  // so order jobs by how much the GPU should prefer them. Returns when all are finished.
  // per_call > 0 deals the jobs out as calls of exactly that many tiles (at most max_batch; the last call
  // takes the rest) instead of by the lanes' measured speed: a large read sized to the lanes goes in one
  // round, one call per lane. Such calls leave the measured speed that sizes the other calls alone, and a
  // lane measured 1.4x slower than the others on them leaves them to an idle faster lane.
  using CpuAssist = std::function<Status(size_t index)>;
  virtual void decode(std::span<LaneJob> jobs, const CpuAssist& cpu_assist, size_t per_call = 0) = 0;
  virtual int lane_count() const = 0;
  virtual LaneStats stats() const = 0;
  // Whether `cpu_threads` CPU threads decode tiles like `desc` at least twice as fast as the lanes, by the
  // measured speeds (false until measured): then a large read should let many threads assist.
  virtual bool cpu_outpaces_gpu(const codecs::TileDesc& desc, int cpu_threads) const = 0;
  // Stops the lanes (each finishes its batch) and fails the jobs still queued; decode() fails afterwards.
  virtual void stop() = 0;
  virtual ~TileLanes() = default;
};


}  // namespace tilewise::gpu
