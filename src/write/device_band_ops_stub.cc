// Built without the GPU path: no device BandOps can be made.
#include "write/band_ops.h"

#include <cstring>

namespace tilewise::write {

Status fill_view(const ImageView& view, uint8_t value) {
  if (view.device.type == DeviceType::kCuda) return unsupported("this build of tilewise has no GPU support");
  for (int32_t r = 0; r < view.height; ++r) std::memset(view.row(r), value, view.row_bytes());
  return Status();
}

Result<std::unique_ptr<BandOps>> device_band_ops(int, const TileCoding&, Downsample) {
  return unsupported("this build of tilewise has no GPU support (built without the CUDA toolkit or the "
                     "nvidia-nvimgcodec-cu13 0.8 header): convert on the GPU is not available");
}

}  // namespace tilewise::write
