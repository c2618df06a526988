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

// Who decodes where the device's scheduler could choose (gpu/scheduler.h); for measurements.
enum class GpuPolicy {
  kAuto,  // by measured speeds (default)
  kGpu,   // the GPU: device loaders without CPU helpers, large regions through the decode lanes
  kCpu,   // the CPU: large regions on the host's cores (uploaded), device loaders with every worker but one
          //   helping on the CPU
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
  std::string http_token;                         // TILEWISE_HTTP_TOKEN: bearer token of HTTP(S) and DICOMweb requests
  std::string http_headers;                       // TILEWISE_HTTP_HEADERS: their extra headers, "Name: value" per line
  std::string jpegxr_worker;                      // TILEWISE_JPEGXR_WORKER: the JPEG XR helper executable
                                                  //   (empty: found beside the library)
  int list_page_keys = 0;                         // TILEWISE_LIST_PAGE_KEYS: keys per object-listing page (0: the store's)
  uint64_t gpu_pool_bytes = 1024ull << 20;        // TILEWISE_GPU_POOL_BYTES: idle device blocks kept per device
  uint64_t gpu_tile_cache_bytes = 256ull << 20;   // TILEWISE_GPU_TILE_CACHE_BYTES: device tile cache per device
  int gpu_lanes = 6;                              // TILEWISE_GPU_LANES: decode lanes per GPU (1-32)
  int gpu_batch_tiles = 64;                       // TILEWISE_GPU_BATCH_TILES: most tiles per nvImageCodec call (1-512)
  int gpu_batch_ms = 3;                           // TILEWISE_GPU_BATCH_MS: work per call at the measured speed (1-100)
  int gpu_encode_threads = 4;                     // TILEWISE_GPU_ENCODE_THREADS: nvImageCodec's threads per encoder (1-32)
  int gpu_encoders = 1;                           // TILEWISE_GPU_ENCODERS: encoders at once on convert's GPU path (1-16)
  int gpu_encode_host = -1;                       // TILEWISE_GPU_ENCODE_HOST: the percentage of each tile row the
                                                  //   host's cores encode beside them (0-100), or -1 ("auto": by
                                                  //   the two sides' measured times; write/encode_split.h)
  bool gpu_cpu_assist = true;                     // TILEWISE_GPU_CPU_ASSIST: callers decode queued tiles on the CPU
  bool gpu_blocking_sync = false;                 // TILEWISE_GPU_BLOCKING_SYNC: the devices' primary contexts
                                                  //   wait by blocking syncs (gpu/cuda_ops.cc)
  GpuPolicy gpu_policy = GpuPolicy::kAuto;        // TILEWISE_GPU_POLICY: "auto", "gpu" or "cpu" (above)
  std::string gpu_trace;                          // TILEWISE_GPU_TRACE: a file the lanes append their calls to at
                                                  //   exit (gpu/tile_lanes.h; empty: off)
  uint32_t gpu_log = 0;                           // TILEWISE_GPU_LOG: nvImageCodec's own messages from this
                                                  //   severity up, through its default messenger ("info",
                                                  //   "debug", "trace"; unset: off)
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
