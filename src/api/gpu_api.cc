// The public GPU API (tilewise/gpu.h) over the GPU layer.
#include "tilewise/gpu.h"

#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "gpu/device_context.h"
#include "gpu/cuda_ops.h"

namespace tilewise {

Status gpu_status(int device) { return gpu::device_status(device); }

int current_cuda_device() { return gpu::current_device(); }

GpuStats gpu_stats(int device) {
  const gpu::LaneStats s = gpu::lane_stats(device);
  const auto c = gpu::tile_cache_stats(device);
  const gpu::Scheduler& scheduler = gpu::device_scheduler(device);
  const gpu::Scheduler::LoaderCounts l = scheduler.loader_counts();
  const gpu::HostCostSnapshot h = gpu::host_cost_stats(device);
  using gpu::HostStage;
  return GpuStats{s.gpu_tiles, s.cpu_tiles, s.batches, s.lanes, c.hits, c.misses, c.bytes,
                  l.gpu_regions, l.gpu_reads, l.cpu_regions, scheduler.host_plane_regions(),
                  h[HostStage::kRead], h[HostStage::kCall], h[HostStage::kAssist], h[HostStage::kWait],
                  h[HostStage::kCompose]};
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

}  // namespace tilewise
