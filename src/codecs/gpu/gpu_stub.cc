// Built when CUDA or the nvImageCodec header is not available: every device request fails clearly.
#include "codecs/gpu/device_memory.h"
#include "codecs/gpu/gpu_decoder.h"
#include "codecs/gpu/tile_lanes.h"

namespace tilewise::codecs::gpu {

namespace {
Status not_built() {
  return unsupported("this build of tilewise has no GPU support (built without the CUDA toolkit or the "
                     "nvidia-nvimgcodec-cu13 0.8 header)");
}
}  // namespace

Status device_status(int) { return not_built(); }
bool GpuDecoder::can_decode(const TileDesc&) { return false; }
Result<std::unique_ptr<GpuDecoder>> GpuDecoder::create(int) { return not_built(); }
void at_gpu_shutdown(void (*)()) {}
Result<void*> device_malloc(size_t, int) { return not_built(); }
void device_free(void*, int) {}
Result<StreamLease> StreamLease::acquire(int) { return not_built(); }
DeviceTileCache& tile_cache(int) {
  static DeviceTileCache none(0, [](size_t) -> void* { return nullptr; }, [](void*) {});
  return none;
}
StreamLease::~StreamLease() = default;
Status device_fill(uint8_t*, size_t, int32_t, int32_t, const uint8_t[3], void*) { return not_built(); }
Status device_copy_2d(uint8_t*, size_t, const uint8_t*, size_t, int32_t, int32_t, bool, void*) { return not_built(); }
Status device_ycbcr_to_rgb(uint8_t*, size_t, int32_t, int32_t, void*) { return not_built(); }
Status device_synchronize(void*) { return not_built(); }

}  // namespace tilewise::codecs::gpu
