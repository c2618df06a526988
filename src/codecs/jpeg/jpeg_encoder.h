// Baseline JPEG encoding with libjpeg(-turbo): the JPEG tiles of the slide writers (write/tile_encoder.h),
// what the GPU decoders' warm-up decodes (a synthetic tile; codecs/nvimgcodec/) and what tests use to make
// tiles.
#pragma once

#include <cstdint>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::codecs {

// Interleaved 8-bit RGB (rows `stride` bytes apart; 0: width * 3) as a complete baseline JFIF stream with
// YCbCr components, 4:2:0 when `subsample` (else 4:4:4), at `quality` (1-100).
Result<std::vector<uint8_t>> encode_jpeg_rgb(const uint8_t* rgb, int32_t width, int32_t height, int quality,
                                             bool subsample, int64_t stride = 0);

}  // namespace tilewise::codecs
