// Settings: every TILEWISE_* environment variable tilewise reads, in one table, read once per process.
//
// Sizes are in bytes everywhere and accept a binary suffix: "268435456", "256M", "256MiB", "1G" (K, M, G, T
// = 1024^n). Switches take 0/1 (also false/true, off/on). A malformed value is ignored (the default holds)
// and reported once on stderr. The older *_MB spellings of the two GPU sizes are still read, in MiB, when
// the byte variable is not set. Variables are read at the first call to settings(); setters of the public
// API (set_cache_capacity, set_worker_threads, set_max_region_bytes) change the live values afterwards,
// these stay the start-up defaults. Thread-safe (a function-local static).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tilewise::internal {

// How tilewise's threads wait for device work (codecs/nvimgcodec/cuda_wait.h).
enum class GpuWait {
  kAuto,    // sleep through long waits (nvJPEG2000 batches), poll through short ones (default)
  kBlock,   // on an event made with cudaEventBlockingSync: the thread sleeps
  kSpin,    // cudaStreamSynchronize under the device's scheduling (CUDA's default: polls a core)
  kDevice,  // as kBlock, and the device's scheduling set to cudaDeviceScheduleBlockingSync, so that the
            //   waits inside nvImageCodec and the caller's own sleep too (process-wide: opt-in)
};

struct Settings {
  int num_threads = 0;                            // TILEWISE_NUM_THREADS: decode pool size; 0 = hardware threads
  uint64_t cache_bytes = 256ull << 20;            // TILEWISE_CACHE_BYTES: decoded-tile cache budget
  uint64_t max_region_bytes = 4ull << 30;         // TILEWISE_MAX_REGION_BYTES
  uint64_t mcu_index_bytes = 64ull << 20;         // TILEWISE_MCU_INDEX_BYTES: MCU checkpoints of restart-interval
                                                  //   units kept (codecs/jpeg/mcu_index_cache.h; 0: off)
  uint64_t http_block_bytes = 256ull << 10;       // TILEWISE_HTTP_BLOCK_BYTES: what a smaller remote read fetches
  uint64_t http_coalesce_bytes = 16ull << 10;     // TILEWISE_HTTP_COALESCE_BYTES: ranges this close share a request
  uint64_t http_cache_bytes = 64ull << 20;        // TILEWISE_HTTP_CACHE_BYTES: fetched bytes kept per remote slide
  std::string http_disk_cache;                    // TILEWISE_HTTP_DISK_CACHE: folder of the disk cache (empty: off)
  uint64_t http_disk_cache_bytes = 10ull << 30;   // TILEWISE_HTTP_DISK_CACHE_BYTES: its budget
  std::string jpegxr_worker;                      // TILEWISE_JPEGXR_WORKER: the JPEG XR helper executable
                                                  //   (empty: found beside the library)
  int list_page_keys = 0;                         // TILEWISE_LIST_PAGE_KEYS: keys per object-listing page (0: the store's)
  uint64_t gpu_pool_bytes = 1024ull << 20;        // TILEWISE_GPU_POOL_BYTES: idle device blocks kept per device
  uint64_t gpu_tile_cache_bytes = 256ull << 20;   // TILEWISE_GPU_TILE_CACHE_BYTES: device tile cache per device
  int gpu_lanes = 6;                              // TILEWISE_GPU_LANES: decode lanes per GPU (1-32)
  bool gpu_warm_up = true;                        // TILEWISE_GPU_WARM_UP: each lane's decoder decodes a synthetic
                                                  // batch when the lanes start (its slow first call)
  bool gpu_cpu_assist = true;                     // TILEWISE_GPU_CPU_ASSIST: callers decode queued tiles on the CPU
  std::optional<uint64_t> gpu_assist_backlog;     // TILEWISE_GPU_ASSIST_BACKLOG: tiles; unset = lanes x 64 x 4
  int gpu_decoder_threads = 1;                    // TILEWISE_GPU_DECODER_THREADS: CPU threads inside each
                                                  //   nvImageCodec decoder (1-16)
  double gpu_batch_ms = 3;                        // TILEWISE_GPU_BATCH_MS: work per nvImageCodec call (ms)
  int gpu_assist_callers = 0;                     // TILEWISE_GPU_ASSIST_CALLERS: threads that assist one
                                                  //   read's queued tiles (0 = by measured speeds)
  int gpu_spread_tiles = 64;                      // TILEWISE_GPU_SPREAD_TILES: a device region with twice this
                                                  //   many tiles to decode deals them to the lanes in calls
                                                  //   of this many or more, one round (0 = never: calls by
                                                  //   the measured speed, as the loader's)
  uint32_t gpu_log = 0;                           // TILEWISE_GPU_LOG: nvImageCodec's own messages from this
                                                  //   severity up, through its default messenger ("info",
                                                  //   "debug", "trace"; unset: off)
  std::string gpu_trace;                          // TILEWISE_GPU_TRACE: a file the lanes append their calls to at
                                                  //   exit (gpu/tile_lanes.h; empty: off)
  bool gpu_in_place = true;                       // TILEWISE_GPU_IN_PLACE: decode whole tiles into the output
  bool gpu_async_allocator = false;               // TILEWISE_GPU_ALLOCATOR: "pool" (default) or "async"
  int gpu_split_tiles = 64;                       // TILEWISE_GPU_SPLIT_TILES: a device region of this many tiles
                                                  //   goes to the lanes or the CPU, whichever reads such
                                                  //   regions faster (0 = always the lanes)
  int gpu_split_first_reads = 3;                  // TILEWISE_GPU_SPLIT_FIRST_READS: large reads each side makes
                                                  //   before the measured rates route them (2-64; the first
                                                  //   of each is its set-up, not counted)
  std::optional<double> gpu_split_cpu_share;      // TILEWISE_GPU_SPLIT_CPU_SHARE: share such a region's tile
                                                  //   rows, this part to the CPU, at once, 0-1 (unset: one
                                                  //   side by measured rates)
  GpuWait gpu_wait = GpuWait::kAuto;              // TILEWISE_GPU_WAIT: how host threads wait for the GPU ("auto",
                                                  //   "block", "spin" or "device"; codecs/nvimgcodec/cuda_wait.h)
  int loader_device_chunk = 0;                    // TILEWISE_LOADER_DEVICE_CHUNK: regions per device batch read
                                                  //   of the loader (0 = the whole batch)
  std::optional<int> loader_device_ahead;         // TILEWISE_LOADER_DEVICE_AHEAD: batches a device loader starts
                                                  //   ahead of its consumer at least (unset: by its batch
                                                  //   bytes, loader/batches_ahead.h; 0: its prefetch)
  std::optional<int> loader_gpu_run;              // TILEWISE_LOADER_GPU_RUN: a hybrid loader's GPU reads each
                                                  //   batch in runs of this many regions from the front while
                                                  //   the helpers read from the back (0: one run of the
                                                  //   learnt share, then the rest; unset: 0 for JPEG, 8 for
                                                  //   other codecs)
  int loader_helper_nice = 0;                     // TILEWISE_LOADER_HELPER_NICE: added to the nice value of
                                                  //   the hybrid loader's CPU helper threads (0-19)
  std::optional<int> loader_cpu_helpers;          // TILEWISE_LOADER_CPU_HELPERS: a device loader's workers that
                                                  //   read whole regions on the CPU beside the GPU (unset: by
                                                  //   its num_workers, loader/batch_loader.cc; 0: GPU only)
};

// The process's settings (from the environment at first use).
const Settings& settings();

// Parsers, exposed for tests. nullopt when `text` is not a valid value.
std::optional<uint64_t> parse_bytes(std::string_view text);
std::optional<bool> parse_switch(std::string_view text);

// Reads the settings from a lookup function (settings() passes getenv); for tests.
using EnvLookup = const char* (*)(const char* name);
Settings read_settings(EnvLookup lookup);

}  // namespace tilewise::internal
