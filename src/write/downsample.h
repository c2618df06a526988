// Halving 8-bit RGB rows for a pyramid's next level: each output pixel the mean of a 2 x 2 box (rounded
// half up), as libvips' pyramids and OpenSlide's generic-TIFF expectations do; an odd last column or row
// repeats the edge pixel, so no input pixel is dropped and the level is ceil(w / 2) x ceil(h / 2).
#pragma once

#include <cstdint>

namespace tilewise::write {

// `rows` rows of `width` pixels at `src` (`src_stride` bytes apart) into ceil(rows / 2) rows of
// ceil(width / 2) pixels at `dst` (`dst_stride` bytes apart).
void halve_rgb(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst, int64_t dst_stride);

}  // namespace tilewise::write
