#include "write/associated_image.h"

#include <utility>
#include <vector>

namespace tilewise::write {

Result<int> add_associated_image(TileSink& out, const uint8_t* pixels, int64_t width, int64_t height, const std::string& name,
                                 TileCodec codec, LevelSpec spec) {
  if (width <= 0 || height <= 0 || width > 65535 || height > 65535) {
    return invalid_argument("associated image " + name + " of " + std::to_string(width) + " x " + std::to_string(height) +
                            " pixels is not written (1 to 65535 on a side)");
  }
  spec.width = width;
  spec.height = height;
  spec.stripped = true;
  spec.associated = name;
  spec.samples = 3;
  spec.bits = 8;
  spec.compression = tiff_compression(codec);
  spec.codec = codec;
  spec.photometric = tiff_photometric(codec);
  const ImageView view{const_cast<uint8_t*>(pixels), width * 3, static_cast<int32_t>(width), static_cast<int32_t>(height), 3, {}, 1};
  std::vector<uint8_t> bytes;
  TW_RETURN_IF_ERROR(encode_tile(TileCoding{codec, 90, true, false}, view, bytes));
  const int id = out.add_level(std::move(spec));
  TW_RETURN_IF_ERROR(out.write_tile(id, 0, bytes));
  return id;
}

}  // namespace tilewise::write
