// Device memory, streams and small device operations for the GPU path.
//
// Device buffers come from a per-device cache of blocks (size classes at most 25% apart) instead of a
// cudaMalloc/cudaFree per read: cudaFree synchronises the whole device, so with many readers every freed
// patch would stall every decode lane. A freed block is reusable once an event recorded at the free on the
// legacy default stream has completed, i.e. after the work that blocking streams (PyTorch's and CuPy's
// default streams) queued before the free; work a consumer queued on its own non-blocking stream must be
// finished before it drops the array (as with any DLPack producer). The cache holds at most
// TILEWISE_GPU_CACHED_MB (default 1024) MiB of idle blocks per device and is emptied when cudaMalloc fails.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/gpu/device_tile_cache.h"
#include "tilewise/status.h"

namespace tilewise::codecs::gpu {

// The device tile cache of `device` (device_tile_cache.h): TILEWISE_GPU_TILE_CACHE_MB MiB (default 256) of
// decoded cut tiles, in blocks from device_malloc. Used when the read uses the tile cache and tilewise's
// cache is enabled (set_cache_capacity(0) turns both off).
DeviceTileCache& tile_cache(int device);

Result<void*> device_malloc(size_t bytes, int device);
void device_free(void* p, int device);

// A CUDA stream (non-blocking) on loan from a per-device pool, for composing one output.
class StreamLease {
 public:
  static Result<StreamLease> acquire(int device);
  StreamLease(StreamLease&& other) noexcept : stream_(other.stream_), device_(other.device_) { other.stream_ = nullptr; }
  StreamLease(const StreamLease&) = delete;
  ~StreamLease();
  void* get() const { return stream_; }

 private:
  StreamLease(void* stream, int device) : stream_(stream), device_(device) {}
  void* stream_;
  int device_;
};

// Device-side helpers on `stream`: fill a rectangle with a colour; copy a rectangle between device buffers or
// upload a host rectangle; Aperio's YCbCr -> RGB (the formula of the CPU JPEG 2000 decoder) in place.
Status device_fill(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3], void* stream);
Status device_copy_2d(uint8_t* dst, size_t dst_pitch, const uint8_t* src, size_t src_pitch, int32_t width_bytes,
                      int32_t height, bool src_on_host, void* stream);
Status device_ycbcr_to_rgb(uint8_t* pixels, size_t pitch, int32_t width, int32_t height, void* stream);
Status device_synchronize(void* stream);

}  // namespace tilewise::codecs::gpu
