// Process-wide configuration: the decoded-tile cache shared by all open slides, the decode worker pool and
// the region size limit. Initial values come from the environment (docs/design.md, "Settings"), read once.
// Every function is thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "tilewise/status.h"

namespace tilewise {

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;     // decoded bytes currently held
  uint64_t capacity = 0;  // byte budget; 0 = disabled
};

// Sets the byte budget of the cache, a per-process one (0 disables it and drops every entry; it also turns
// the GPU's device tile cache off). Default 256 MiB, or TILEWISE_CACHE_BYTES.
void set_cache_capacity(uint64_t bytes);
uint64_t cache_capacity();

// Moves the cache into shared memory with `bytes` of tile space (cuCIM's "shared_memory" cache): processes
// forked after the call (DataLoader workers) and processes that attach to it read and fill the same tiles.
// Without a name, the segment is this process's own (freed when the last process mapping it exits); the
// call sets TILEWISE_SHARED_CACHE in the environment to where children started otherwise (spawn) attach.
// With a name (letters, digits, '-', '_', '.'), processes that are not related (DDP ranks) share
// /dev/shm/tilewise-cache-<name>: the first creates it with `bytes`, later ones open it as it is; setting
// TILEWISE_SHARED_CACHE=<name> before they start does the same. Hits and misses in cache_stats() are this
// process's; entries, bytes and evictions the shared store's. IoError when the segment cannot be made.
Status set_shared_cache(uint64_t bytes, const std::string& name = "");
// Where other processes attach to the shared cache ("" when the cache is per-process).
std::string shared_cache_path();
// The shared cache's whole segment, headers and indexes included (0 when per-process).
uint64_t shared_cache_segment_bytes();
CacheStats cache_stats();
void clear_cache();
void reset_cache_stats();

// The MCU index of restart-interval JPEG units (Hamamatsu NDPI and VMS levels are read by restart interval,
// units of up to 4,096 x 8 pixels) and of JPEG tiles (one checkpoint per MCU row): where decoding can enter
// a unit or tile in the middle, learnt as windows are read, so that a window far into a unit is decoded
// without entropy-decoding the unit's left part, and a window low in a tile without its rows above.
// Metadata of the encoded stream, not pixels: it has its own byte budget (default 64 MiB, about 100,000
// units of 4,096 pixels, or TILEWISE_MCU_INDEX_BYTES), which the tile cache's capacity does not govern; 0
// drops it and turns it off (every window is then decoded from its unit's start).
struct McuIndexStats {
  uint64_t entries = 0;   // units and tiles indexed
  uint64_t bytes = 0;     // their budgeted size
  uint64_t capacity = 0;  // byte budget; 0 = off
  uint64_t resumed = 0;   // windows decoded from a checkpoint since the process started
};
void set_mcu_index_capacity(uint64_t bytes);
McuIndexStats mcu_index_stats();

// Sets the number of threads of the process-wide decode pool (0 = one per hardware thread, or
// TILEWISE_NUM_THREADS). Takes effect for work submitted afterwards.
void set_worker_threads(int threads);
int worker_threads();

// Upper bound on the bytes of one region allocated by the bindings and the CLI (a read beyond it fails
// with OutOfMemory instead of exhausting memory). Default 4 GiB, or TILEWISE_MAX_REGION_BYTES.
void set_max_region_bytes(uint64_t bytes);
uint64_t max_region_bytes();
// OutOfMemory when width x height x pixel_bytes (3: 8-bit RGB) exceeds max_region_bytes() (or overflows);
// InvalidArgument when negative.
Status check_region_size(int64_t width, int64_t height, int64_t pixel_bytes = 3);

}  // namespace tilewise
