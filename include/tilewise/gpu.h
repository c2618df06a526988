// The GPU API: whether a CUDA device can be read to, device buffers for region outputs, and how the device's
// decode lanes shared the work. Reads themselves go through Slide::read_region with a CUDA ImageView.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tilewise/status.h"

namespace tilewise {

// Ok when `device` (a CUDA device index) can be read to: this build has the GPU path, a GPU is present and
// nvImageCodec 0.8 loads. Otherwise InvalidArgument for a device index that does not exist, Unsupported
// with the reason for everything else.
Status gpu_status(int device = 0);
// Where to look first for libnvimgcodec.so.0 (the nvidia-nvimgcodec-cu13 wheel's nvidia/nvimgcodec folder).
void set_nvimgcodec_directory(const std::string& directory);

// How the decode lanes of `device` have shared the work so far (all zero before the first device read).
struct GpuStats {
  uint64_t gpu_tiles = 0;  // tiles the lanes decoded
  uint64_t cpu_tiles = 0;  // tiles reading threads decoded on the CPU while the lanes were busy
  uint64_t batches = 0;    // nvImageCodec calls
  int lanes = 0;
  uint64_t tile_cache_hits = 0;  // cut tiles composed from the device tile cache (not decoded again)
  uint64_t tile_cache_misses = 0;
  size_t tile_cache_bytes = 0;
};
GpuStats gpu_stats(int device = 0);

// Device memory for region outputs, from a per-device pool (a cudaFree would synchronise the device);
// nullptr with `error` set on failure. A freed block is reused once work queued before the free on the
// legacy default stream is complete.
void* allocate_device_pixels(size_t bytes, int device, Status* error);
void free_device_pixels(void* buffer, int device);
// Fills `height` rows of `width` RGB pixels (`pitch` bytes apart) of device memory with a colour; returns
// when done.
Status fill_device_pixels(uint8_t* buffer, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                          int device);

// Page-locked host memory for staging uploads to `device` (a per-process pool of blocks, kept for reuse:
// cudaHostAlloc takes milliseconds); nullptr with `error` set on failure.
void* allocate_pinned_pixels(size_t bytes, int device, Status* error);
void free_pinned_pixels(void* buffer, int device);
// Copies `bytes` of host memory (page-locked from allocate_pinned_pixels, or pageable) into device memory of
// `device`; returns when done.
Status upload_pixels(uint8_t* device_dst, const uint8_t* host_src, size_t bytes, int device);

}  // namespace tilewise
