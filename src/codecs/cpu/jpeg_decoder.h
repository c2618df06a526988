// JpegDecoder: baseline/progressive 8-bit JPEG through libjpeg-turbo's libjpeg API.
//
// Uses libjpeg-turbo's defaults (integer IDCT, fancy upsampling) so that pixels are byte-identical to
// OpenSlide's, which decodes with the same defaults. Abbreviated streams are primed with the TIFF
// JPEGTables first. One instance per worker thread; the decompress object is reused across calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tilewise::codecs
