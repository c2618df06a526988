// Built without the GPU path: no device BandOps can be made.
#include "write/band_ops.h"

namespace tilewise::write {

Status fill_device_view(const ImageView&, uint8_t) { return unsupported("this build of tilewise has no GPU support"); }

Result<std::unique_ptr<BandOps>> device_band_ops(int, const TileCoding&, Downsample) {
  return unsupported("this build of tilewise has no GPU support (built without the CUDA toolkit or the "
                     "nvidia-nvimgcodec-cu13 0.8 header): convert on the GPU is not available");
}

}  // namespace tilewise::write
