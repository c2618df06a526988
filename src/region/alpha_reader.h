// The alpha samples of a region of a level whose samples carry one (RGBA or grey + alpha TIFFs): what the
// RGB reads drop, for readers that keep transparency (the OpenSlide drop-in).
#pragma once

#include <cstdint>
#include <string_view>

#include "formats/slide_model.h"
#include "tilewise/status.h"

namespace tilewise::region {

// Writes the width x height alpha values of the region at (x, y) of `level` (its own pixel frame) to `out`
// (`stride` bytes apart): each stored pixel's alpha sample (255 on a level without one), 0 where nothing
// is stored (outside the level, absent tiles). Tiles are decoded on the calling thread, the tile cache
// not used. Errors name the file, level and tile; Unsupported for alpha the CPU decoder cannot read alone
// (JPEG, 16-bit samples).
Status read_level_alpha(const formats::SlideModel& model, const formats::LevelModel& level, std::string_view label,
                        int64_t x, int64_t y, int64_t width, int64_t height, uint8_t* out, int64_t stride);

}  // namespace tilewise::region
