// JpegDecoder: baseline/progressive 8-bit JPEG through libjpeg-turbo's libjpeg API.
//
// Uses libjpeg-turbo's defaults (integer IDCT, fancy upsampling) so that pixels are byte-identical to
// OpenSlide's, which decodes with the same defaults. Abbreviated streams are primed with the TIFF
// JPEGTables first. One instance per worker thread; the decompress object is reused across calls.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "codecs/tile_desc.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Decodes into out (out.width x out.height RGB). The JPEG may be larger than the view (padding is
  // dropped) but not smaller.
  Status decode(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out);

  // Decodes the window of out's size at (x, y) inside the tile. With `partial`, only the iMCU columns and
  // rows the window needs are reconstructed (libjpeg-turbo's crop and skip), which costs a fraction of a
  // full decode for windows cut from a tile's corner; the pixels are identical either way.
  Status decode_window(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out, int32_t x,
                       int32_t y, bool partial);

  // The image size in a JPEG header (width, height).
  Result<std::pair<int32_t, int32_t>> dimensions(std::span<const uint8_t> data);

  struct State;

 private:
  std::unique_ptr<State> state_;
  std::string init_error_;  // set when libjpeg could not be initialised
};

}  // namespace tilewise::codecs
