// Baseline JPEG encoding with libjpeg(-turbo): what the GPU decoders' warm-up decodes (a synthetic tile;
// codecs/nvimgcodec/) and what tests use to make tiles. Not a writer of slides.
#pragma once

#include <cstdint>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::codecs {

// Interleaved 8-bit RGB (width * 3 bytes per row) as a complete baseline JFIF stream with YCbCr components,
// 4:2:0 when `subsample` (else 4:4:4), at `quality` (1-100).
Result<std::vector<uint8_t>> encode_jpeg_rgb(const uint8_t* rgb, int32_t width, int32_t height, int quality,
                                             bool subsample);

}  // namespace tilewise::codecs
