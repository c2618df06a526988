#include "formats/slide_model.h"

#include "util/checked_math.h"

namespace tilewise::formats {

LevelModel grid_level(int64_t width, int64_t height, const codecs::TileDesc& desc) {
  LevelModel level;
  level.desc = desc;
  level.info.width = width;
  level.info.height = height;
  level.info.tiled = true;
  level.info.tile_width = desc.width;
  level.info.tile_height = desc.height;
  level.info.compression = codecs::compression_name(desc.compression);
  level.tiles_across = internal::ceil_div(width, int64_t{desc.width});
  level.tiles_down = internal::ceil_div(height, int64_t{desc.height});
  return level;
}

}  // namespace tilewise::formats
