// What the nvImageCodec backend takes (no CUDA needed: also built without the GPU path).
#include "codecs/nvimgcodec/nvimgcodec_decoder.h"

#include <string>

namespace tilewise::codecs::nvimgcodec {

Status supports(const TileDesc& desc) {
  const std::string codec = compression_name(desc.compression);
  if (desc.bits_per_sample != 8) return unsupported("gpu " + codec + ": only 8-bit samples are decoded on the GPU");
  if (desc.scale_denom != 1) return unsupported("gpu " + codec + ": no decoding at a reduced scale on the GPU");
  if (desc.planes != 1) return unsupported("gpu " + codec + ": units of separate planes are decoded on the CPU");
  if (desc.compression == Compression::kJpeg) {
    // JPEG with RGB components (Aperio) stays on the CPU: nvJPEG 13 / nvImageCodec 0.8 convert its components
    // as YCbCr whatever the stream says (an Adobe APP14 "transform 0" marker) or the output asks for
    // (I_UNCHANGED): colours were off by up to 189 on the H200 either way.
    if (desc.color != ColorSpace::kYCbCr && desc.color != ColorSpace::kMinIsBlack) {
      return unsupported("gpu jpeg: RGB-component JPEG is converted as YCbCr by nvJPEG");
    }
    if (desc.samples_per_pixel != 3 && desc.samples_per_pixel != 1) {
      return unsupported("gpu jpeg: " + std::to_string(desc.samples_per_pixel) + " components");
    }
    return Status();
  }
  if (desc.compression == Compression::kJpeg2000) {
    if (desc.samples_per_pixel != 3 || (desc.color != ColorSpace::kYCbCr && desc.color != ColorSpace::kRgb)) {
      return unsupported("gpu jpeg2000: only 3-component RGB or YCbCr tiles");
    }
    return Status();
  }
  return unsupported("gpu: no GPU decoder for " + codec + " tiles");
}

Status supports_samples(const TileDesc& desc) {
  const std::string codec = compression_name(desc.compression);
  if (desc.scale_denom != 1) return unsupported("gpu " + codec + ": no decoding at a reduced scale on the GPU");
  if (desc.planes != 1) return unsupported("gpu " + codec + ": units of separate planes are decoded on the CPU");
  if (desc.samples_per_pixel != 1) {
    return unsupported("gpu " + codec + ": only single-sample (grey) tiles are decoded on the GPU as samples");
  }
  if (desc.sample_format != SampleFormat::kUnsigned) {
    return unsupported("gpu " + codec + ": only unsigned samples are decoded on the GPU");
  }
  if (desc.compression == Compression::kJpeg) {
    if (desc.bits_per_sample != 8) return unsupported("gpu jpeg: only 8-bit JPEG is decoded on the GPU");
    return Status();
  }
  if (desc.compression == Compression::kJpeg2000) {
    if (desc.bits_per_sample != 8 && desc.bits_per_sample != 16) {
      return unsupported("gpu jpeg2000: only 8- and 16-bit samples are decoded on the GPU");
    }
    return Status();
  }
  return unsupported("gpu: no GPU decoder for " + codec + " tiles");
}

}  // namespace tilewise::codecs::nvimgcodec
