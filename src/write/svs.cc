#include "write/svs.h"

#include <algorithm>
#include <sstream>

namespace tilewise::write {

namespace {

std::string header(const std::string& creator) { return "Aperio Image Library (" + creator + ")"; }

const char* codec_label(const TileCoding& coding) {
  switch (coding.codec) {
    case TileCodec::kJpeg: return "JPEG/RGB";
    case TileCodec::kDeflate: return "Deflate/RGB";
    case TileCodec::kZstd: return "Zstd/RGB";
    case TileCodec::kLzw: return "LZW/RGB";
    case TileCodec::kNone: return "Raw/RGB";
  }
  return "RGB";
}

// One RGB image as a strip directory: JPEG, or LZW where it must stay exact (a label's barcode).
Status add_strip(TiledTiffWriter& out, const uint8_t* pixels, int64_t width, int64_t height, uint32_t subfile_type,
                 const std::string& description, TileCodec codec, int* id) {
  LevelSpec spec;
  spec.width = width;
  spec.height = height;
  spec.stripped = true;
  spec.compression = tiff_compression(codec);
  spec.photometric = tiff_photometric(codec);
  spec.subfile_type = subfile_type;
  spec.description = description;
  const ImageView view{const_cast<uint8_t*>(pixels), width * 3, static_cast<int32_t>(width), static_cast<int32_t>(height), 3, {}, 1};
  std::vector<uint8_t> bytes;
  TW_RETURN_IF_ERROR(encode_tile(TileCoding{codec, 90, true, false}, view, bytes));
  *id = out.add_level(std::move(spec));
  return out.write_tile(*id, 0, bytes);
}

}  // namespace

std::string aperio_description(const LevelSpec& base, const LevelSpec& level, int index, const TileCoding& coding,
                               std::optional<double> objective_power, const std::string& creator) {
  std::ostringstream d;
  d.precision(10);
  d << header(creator) << "\r\n" << base.width << "x" << base.height;
  if (index == 0) {
    d << " [0,0 " << base.width << "x" << base.height << "]";
  } else {
    d << " -> " << level.width << "x" << level.height << " -";
  }
  d << " (" << level.tile << "x" << level.tile << ") " << codec_label(coding);
  if (coding.codec == TileCodec::kJpeg) d << " Q=" << coding.quality;
  if (index == 0) {
    if (objective_power) d << "|AppMag = " << *objective_power;
    if (base.mpp) d << "|MPP = " << (base.mpp->first + base.mpp->second) / 2;
  }
  return d.str();
}

int aperio_thumbnail_level(const std::vector<LevelSpec>& levels) {
  for (size_t k = 0; k < levels.size(); ++k) {
    if (std::max(levels[k].width, levels[k].height) <= 1024) return static_cast<int>(k);
  }
  return -1;
}

Status add_aperio_associated(TiledTiffWriter& out, int level0, const std::vector<uint8_t>& thumbnail, int64_t width,
                             int64_t height, const std::vector<std::pair<std::string, RgbImage>>& associated,
                             const std::string& creator) {
  if (!thumbnail.empty()) {
    int id = -1;
    TW_RETURN_IF_ERROR(add_strip(out, thumbnail.data(), width, height, 0,
                                 header(creator) + "\r\nthumbnail " + std::to_string(width) + "x" + std::to_string(height),
                                 TileCodec::kJpeg, &id));
    out.place_after(id, level0);
  }
  for (const auto& [name, image] : associated) {
    if ((name != "label" && name != "macro") || image.width <= 0 || image.height <= 0) continue;
    int id = -1;
    TW_RETURN_IF_ERROR(add_strip(out, image.pixels.data(), image.width, image.height, name == "label" ? 1 : 9,
                                 header(creator) + "\r\n" + name + " " + std::to_string(image.width) + "x" +
                                     std::to_string(image.height),
                                 name == "label" ? TileCodec::kLzw : TileCodec::kJpeg, &id));
  }
  return Status();
}

}  // namespace tilewise::write
