// An associated image (a label, a macro, a thumbnail) written into a TileSink as one more level of a
// single strip or frame holding the whole image: a TIFF's stripped directory, a DICOM LABEL or OVERVIEW
// instance.
#pragma once

#include <cstdint>
#include <string>

#include "tilewise/status.h"
#include "write/tile_encoder.h"
#include "write/tile_sink.h"

namespace tilewise::write {

// Adds `pixels` (`width` x `height` 8-bit RGB) coded with `codec` (JPEG at quality 90, 4:2:0; or lossless)
// as the associated image `name`; `spec` gives what else the level carries (description, NewSubfileType).
// Its id in `out` is returned.
Result<int> add_associated_image(TileSink& out, const uint8_t* pixels, int64_t width, int64_t height, const std::string& name,
                                 TileCodec codec, LevelSpec spec = {});

}  // namespace tilewise::write
