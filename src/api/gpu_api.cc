// The public GPU API (tilewise/gpu.h) over the GPU layer.
#include "tilewise/gpu.h"

#include <algorithm>

#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "gpu/device_context.h"
#include "gpu/cuda_ops.h"

namespace tilewise {

Status gpu_status(int device) { return gpu::device_status(device); }

GpuStats gpu_stats(int device) {
  const gpu::LaneStats s = gpu::lane_stats(device);
  const auto c = gpu::tile_cache_stats(device);
  return GpuStats{s.gpu_tiles, s.cpu_tiles, s.batches, s.lanes, c.hits, c.misses, c.bytes};
}

void set_nvimgcodec_directory(const std::string& directory) { codecs::nvimgcodec::set_library_directory(directory); }

void* allocate_device_pixels(size_t bytes, int device, Status* error) {
  auto context = gpu::device_context(device);
  auto p = context.ok() ? (*context)->ops().allocate(bytes) : Result<void*>(context.status());
  if (!p.ok()) {
    if (error) *error = p.status();
    return nullptr;
  }
  return *p;
}

void free_device_pixels(void* buffer, int device) {
  // The context's operations are cuda_ops(device); a free needs no context (nor its lanes or cache).
  if (buffer) gpu::cuda_ops(device).release(buffer);
}

Status fill_device_pixels(uint8_t* buffer, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                          int device) {
  TW_ASSIGN_OR_RETURN(gpu::DeviceContext * context, gpu::device_context(device));
  gpu::DeviceOps& ops = context->ops();
  TW_ASSIGN_OR_RETURN(auto stream, gpu::StreamLease::acquire(ops));
  TW_RETURN_IF_ERROR(ops.fill(buffer, pitch, width, height, rgb, stream.get()));
  return ops.synchronize(stream.get());
}

void* allocate_pinned_pixels(size_t bytes, int device, Status* error) {
  auto p = gpu::cuda_ops(device).allocate_host(bytes);
  if (!p.ok()) {
    if (error) *error = p.status();
    return nullptr;
  }
  return *p;
}

void free_pinned_pixels(void* buffer, int device) {
  if (buffer) gpu::cuda_ops(device).release_host(buffer);
}

Status upload_pixels(uint8_t* device_dst, const uint8_t* host_src, size_t bytes, int device) {
  if (bytes == 0) return Status();
  TW_ASSIGN_OR_RETURN(gpu::DeviceContext * context, gpu::device_context(device));
  gpu::DeviceOps& ops = context->ops();
  TW_ASSIGN_OR_RETURN(auto stream, gpu::StreamLease::acquire(ops));
  // copy_2d takes a row of at most 2 GiB: larger uploads go as rows of 1 GiB (a batch is far smaller).
  constexpr size_t kRow = size_t{1} << 30;
  for (size_t done = 0; done < bytes; done += kRow) {
    const size_t n = std::min(kRow, bytes - done);
    TW_RETURN_IF_ERROR(ops.copy_2d(device_dst + done, n, host_src + done, n, static_cast<int32_t>(n), 1, true,
                                   stream.get()));
  }
  return ops.synchronize(stream.get());
}

}  // namespace tilewise
