// Aperio SVS output: a generic pyramid (write/tiff_writer.h) whose directories carry Aperio's
// ImageDescription - level 0's "Aperio ..." header, then "WxH [0,0 WxH] (TxT) JPEG/RGB Q=..|AppMag = ..|
// MPP = ..", which OpenSlide, tiffslide, cuCIM and QuPath read as an Aperio slide with its mpp and
// objective power - with the thumbnail (a small level of the pyramid) as directory 1 and the label and
// macro after the levels, each one strip (JPEG; the label LZW, as Aperio writes it, so its barcode stays
// exact and every Aperio reader, cuCIM included, reads it), named by its description's second line
// ("label 400x400") as Aperio's readers expect.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tilewise/status.h"
#include "tilewise/types.h"
#include "write/tile_encoder.h"
#include "write/tiff_writer.h"

namespace tilewise::write {

// The ImageDescription of pyramid level `index` (level 0 names the mpp and objective power it has).
std::string aperio_description(const LevelSpec& base, const LevelSpec& level, int index, const TileCoding& coding,
                               std::optional<double> objective_power, const std::string& creator);

// The thumbnail's level: the first of `levels` whose longer side is at most 1,024 pixels; -1 if none is.
int aperio_thumbnail_level(const std::vector<LevelSpec>& levels);

// Adds the thumbnail (`pixels`: `width` x `height` RGB, placed after directory `level0`), then each of
// `associated` ("label", "macro"; others are not Aperio's and are left out) as one strip each.
Status add_aperio_associated(TiledTiffWriter& out, int level0, const std::vector<uint8_t>& thumbnail, int64_t width,
                             int64_t height, const std::vector<std::pair<std::string, RgbImage>>& associated,
                             const std::string& creator);

}  // namespace tilewise::write
