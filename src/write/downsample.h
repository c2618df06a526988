// Halving rows of pixels for a pyramid's next level: each output sample the mean of its 2 x 2 box (integers
// rounded half up, as libvips' pyramids do; floats exact), an odd last column or row repeating the edge
// pixel, so no input pixel is dropped and the level is ceil(w / 2) x ceil(h / 2). Or, for label masks whose
// values must not mix, nearest: each output pixel its box's top-left pixel.
#pragma once

#include <cstdint>

#include "tilewise/types.h"

namespace tilewise::write {

enum class Downsample { kMean, kNearest };

// `rows` rows of `width` pixels of `samples` interleaved samples of `type` at `src` (`src_stride` bytes
// apart) into ceil(rows / 2) rows of ceil(width / 2) pixels at `dst` (`dst_stride` bytes apart). Both
// buffers and strides are aligned for the sample type.
void halve(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, int32_t samples, SampleType type,
           uint8_t* dst, int64_t dst_stride, Downsample filter = Downsample::kMean);

// halve() of 8-bit RGB.
inline void halve_rgb(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst,
                      int64_t dst_stride) {
  halve(src, src_stride, width, rows, 3, SampleType::kUint8, dst, dst_stride);
}

}  // namespace tilewise::write
