// Pixel buffers for region outputs.
//
// Large buffers (1 MiB and up) come from a process-wide pool: fresh ones are mapped with transparent huge
// pages requested, and released ones are kept (up to a byte budget) for reuse, so repeated large reads do
// not pay first-touch page faults again. The bindings allocate every array they return here and release
// it when the array's last reference goes away; a buffer is never reused while anyone holds it.
// Thread-safe. In a forked child the pool starts empty.
#pragma once

#include <cstddef>

namespace tilewise {

// Returns a buffer of at least `bytes` bytes (64-byte aligned), or nullptr when memory is exhausted.
void* allocate_pixels(size_t bytes);
// Returns a buffer obtained from allocate_pixels(bytes) (same size) to the pool.
void free_pixels(void* buffer, size_t bytes);
// Byte budget of released buffers kept for reuse (default 512 MiB; 0 keeps none).
void set_pixel_pool_capacity(size_t bytes);
size_t pixel_pool_cached_bytes();

}  // namespace tilewise

#include <cstdint>
#include <string>
#include <vector>

#include "tilewise/status.h"

namespace tilewise {

// GPU support. Ok when `device` (a CUDA device index) can be read to: this build has the GPU path, a GPU is
// present and nvImageCodec 0.8 loads; otherwise the reason (Unsupported).
Status gpu_status(int device = 0);
// Where to look first for libnvimgcodec.so.0 (the nvidia-nvimgcodec-cu13 wheel's nvidia/nvimgcodec folder).
void set_nvimgcodec_directory(const std::string& directory);
// How the decode lanes of `device` have shared the work so far (all zero before the first device read).
// Tiles the lanes decoded, tiles reading threads decoded on the CPU while the lanes were busy (the hybrid
// scheduler: TILEWISE_GPU_CPU_ASSIST=0 turns it off), nvImageCodec batches, lanes.
struct GpuStats {
  uint64_t gpu_tiles = 0;
  uint64_t cpu_tiles = 0;
  uint64_t batches = 0;
  int lanes = 0;
  uint64_t tile_cache_hits = 0;    // cut tiles composed from the device tile cache (not decoded again)
  uint64_t tile_cache_misses = 0;
  size_t tile_cache_bytes = 0;
};
GpuStats gpu_stats(int device = 0);
// For benchmarks: the raw decode ceiling. Decodes every stream (complete JPEG or JPEG 2000 streams of
// width x height RGB tiles) `repeats` times with nvImageCodec from `threads` threads, each with its own
// decoder, stream and pinned input, in batches of `batch`, into device memory; returns tiles per second.
Result<double> gpu_decode_rate(const std::vector<std::vector<uint8_t>>& streams, int32_t width, int32_t height,
                               int threads, int batch, int repeats, int device = 0);
// Device memory for region outputs, from a per-device cache of blocks (a cudaFree would synchronise the
// device); nullptr with `error` set on failure. A freed block is reused once work queued before the free on
// the legacy default stream is complete.
void* allocate_device_pixels(size_t bytes, int device, Status* error);
void free_device_pixels(void* buffer, int device);
// Fills `height` rows of `width` RGB pixels (`pitch` bytes apart) of device memory with a colour; returns
// when done.
Status fill_device_pixels(uint8_t* buffer, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                          int device);

}  // namespace tilewise
