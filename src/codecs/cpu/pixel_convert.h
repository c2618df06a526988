// Sample layout conversions for lossless codecs: undo the horizontal predictor, then turn 8-bit grey,
// grey+alpha, RGB, BGR or RGBA rows into RGB.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "codecs/tile_desc.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

// Undoes TIFF predictor 2 (horizontal differencing) in place on `rows` rows of 8-bit samples.
void undo_horizontal_predictor(uint8_t* data, int64_t row_bytes, int64_t rows, int samples_per_pixel);

// Undoes TileDesc::split_bytes in place on `bytes` bytes of 16-bit samples (low-byte plane, then high-byte
// plane) through `scratch`.
void join_byte_planes(uint8_t* data, size_t bytes, std::vector<uint8_t>& scratch);

// Turns `rows` rows of 16-bit samples (row_bytes apart, in desc.big_endian order, horizontally
// differenced when desc.predictor == 2) into 8-bit samples (the high byte), packed at the start of each row.
void narrow_16_to_8(uint8_t* data, int64_t row_bytes, int64_t rows, const TileDesc& desc);

// Turns `rows` rows of 16- or 32-bit samples (row_bytes apart, in desc.big_endian order, horizontally
// differenced when desc.predictor == 2: 16-bit only) into host-order sample values, in place.
void to_host_samples(uint8_t* data, int64_t row_bytes, int64_t rows, const TileDesc& desc);
// Converts `out.height` rows of packed 8-bit samples (row_bytes apart) into out's RGB pixels.
void samples_to_rgb(const uint8_t* src, int64_t row_bytes, const TileDesc& desc, const ImageView& out);

}  // namespace tilewise::codecs
