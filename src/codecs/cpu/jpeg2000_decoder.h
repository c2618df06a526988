// Jpeg2000Decoder: raw JPEG 2000 codestreams (as Aperio stores them, compression 33003/33005) through
// OpenJPEG.
//
// Colour: with ColorSpace::kYCbCr the three components are Y, Cb, Cr (Aperio 33003) and are converted to
// RGB with OpenSlide's integer formula (R = Y + round(1.402 Cr'), G = Y + ((round(65536 (0.5 - 0.34414 Cb'))
// + round(-65536 * 0.71414 Cr')) >> 16), B = Y + round(1.772 Cb'), with C' = C - 128), so pixels match
// OpenSlide's; with kRgb (33005) the components are R, G, B (any internal colour transform of the
// codestream is undone by OpenJPEG). Subsampled components are replicated (nearest), as OpenSlide does.
// Windows are decoded with opj_set_decode_area, which reconstructs only the code-blocks they need.
// Thread behaviour: one instance per worker (it holds conversion tables only; OpenJPEG codec objects are
// created per call, since OpenJPEG cannot reuse them across codestreams).
#pragma once

#include <cstdint>
#include <span>

#include "codecs/tile_desc.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

class Jpeg2000Decoder {
 public:
  Jpeg2000Decoder();
  // Decodes the window of out's size at (x, y) of the tile into out: RGB, or (out of one channel) a
  // one-component stream's own 8- or 16-bit samples.
  Status decode_window(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out, int32_t x,
                       int32_t y);

 private:
  int16_t r_cr_[256];
  int32_t g_cb_[256];
  int32_t g_cr_[256];
  int16_t b_cb_[256];
};

}  // namespace tilewise::codecs
