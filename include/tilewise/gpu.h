// The GPU API: whether a CUDA device can be read to, device buffers for region outputs, and how the device's
// decode lanes and loaders shared the work. Reads themselves go through Slide::read_region with a CUDA ImageView.
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
// The calling thread's current CUDA device (what torch.cuda.set_device chose; 0 without one), which a device
// named "cuda" without an index means, as in PyTorch and CuPy: each DDP rank reads to its own GPU.
int current_cuda_device();
// Where to look first for libnvimgcodec.so.0 (the nvidia-nvimgcodec-cu13 wheel's nvidia/nvimgcodec folder).
void set_nvimgcodec_directory(const std::string& directory);

// How the decode lanes of `device` have shared the work so far, and how its device loaders shared their
// regions (all zero before the first device read).
struct GpuStats {
  uint64_t gpu_tiles = 0;  // tiles the lanes decoded
  uint64_t cpu_tiles = 0;  // tiles reading threads decoded on the CPU while the lanes were busy
  uint64_t batches = 0;    // nvImageCodec calls
  int lanes = 0;
  uint64_t tile_cache_hits = 0;  // cut tiles composed from the device tile cache (not decoded again)
  uint64_t tile_cache_misses = 0;
  size_t tile_cache_bytes = 0;
  uint64_t loader_gpu_regions = 0;  // regions device loaders read by device batch reads
  uint64_t loader_gpu_reads = 0;    // those batch reads
  uint64_t loader_cpu_regions = 0;  // regions device loaders' CPU helpers read (uploaded with their batch)
  // Regions of channels and planes (Slide::read_planes into device memory) decoded on the CPU and uploaded:
  // their tiles are of a codec the lanes do not decode into samples (only grey JPEG 2000 and grey JPEG).
  uint64_t host_plane_regions = 0;
  // Host CPU time (nanoseconds, each thread's own clock) the device's reads have spent, by stage: reading
  // tile bytes and preparing code streams; inside the lanes' nvImageCodec calls (the lane threads;
  // nvImageCodec's own worker threads are not counted); reading threads' CPU decodes while the lanes were
  // busy; reading threads waiting for the lanes; crops, gathers and stream synchronisation. Per tile:
  // divide by gpu_tiles + cpu_tiles.
  uint64_t host_read_ns = 0;
  uint64_t host_call_ns = 0;
  uint64_t host_assist_ns = 0;
  uint64_t host_wait_ns = 0;
  uint64_t host_compose_ns = 0;
};
GpuStats gpu_stats(int device = 0);

// Device memory for region outputs, from a per-device pool (a cudaFree would synchronise the device);
// nullptr with `error` set on failure. A freed block is reused once work queued before the free on the
// legacy default stream is complete.
void* allocate_device_pixels(size_t bytes, int device, Status* error);
void free_device_pixels(void* buffer, int device);

}  // namespace tilewise
