#include "write/svs.h"

#include <algorithm>
#include <sstream>

#include "write/associated_image.h"

namespace tilewise::write {

namespace {

std::string header(const std::string& creator) { return "Aperio Image Library (" + creator + ")"; }

const char* codec_label(const TileCoding& coding) {
  switch (coding.codec) {
    case TileCodec::kJpeg: return "JPEG/RGB";
    case TileCodec::kDeflate: return "Deflate/RGB";
    case TileCodec::kZstd: return "Zstd/RGB";
    case TileCodec::kLzw: return "LZW/RGB";
    case TileCodec::kJpegLs: return "JPEG-LS/RGB";
    case TileCodec::kJpeg2000: return "J2K/KDU";
    case TileCodec::kJpeg2000Lossless: return "J2K/KDU";
    case TileCodec::kNone: return "Raw/RGB";
  }
  return "RGB";
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
  if (coding.codec == TileCodec::kJpeg || coding.codec == TileCodec::kJpeg2000) d << " Q=" << coding.quality;
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
    LevelSpec spec;
    spec.description = header(creator) + "\r\nthumbnail " + std::to_string(width) + "x" + std::to_string(height);
    TW_ASSIGN_OR_RETURN(const int id, add_associated_image(out, thumbnail.data(), width, height, "thumbnail", TileCodec::kJpeg, spec));
    out.place_after(id, level0);
  }
  for (const auto& [name, image] : associated) {
    if (name != "label" && name != "macro") continue;
    LevelSpec spec;
    spec.subfile_type = name == "label" ? 1 : 9;
    spec.description = header(creator) + "\r\n" + name + " " + std::to_string(image.width) + "x" + std::to_string(image.height);
    // The label exact (LZW: cuCIM reads associated images only as JPEG or LZW), the macro JPEG
    TW_RETURN_IF_ERROR(add_associated_image(out, image.pixels.data(), image.width, image.height, name,
                                            name == "label" ? TileCodec::kLzw : TileCodec::kJpeg, spec)
                           .status());
  }
  return Status();
}

}  // namespace tilewise::write
