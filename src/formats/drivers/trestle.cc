// Trestle (OpenSlide's "trestle" vendor): a TIFF whose Software starts "MedScan", every directory tiled,
// IFD 0's ImageDescription "key=value;key=value;..." (trestle.<key>, both trimmed; Objective Power gives
// the objective power, "Background Color=RRGGBB" the background). OpenSlide 4.0.1's reading, followed here:
// "OverlapsXY= x0 y0 x1 y1 ..." gives each directory's overlap between neighbouring tiles; directory i is
// level i, its tiles drawn at (column * (tile width - x_i), row * (tile height - y_i)), each cut at the
// directory's image edge, the later in row-major order showing where they overlap (a positioned level);
// the level's size is the image's less the overlaps. mpp comes from tiff.XResolution/YResolution as they
// are (OpenSlide's reading of them); the macro image is the JPEG file beside the slide named like it with
// ".Full" for its extension (ignored when absent or unreadable). quickhash-1 over the last directory and
// IFD 0's strings.
#include <cstdlib>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  const tiff::Ifd& ifd0 = tiff.ifds()[0];
  if (!ifd0.software || ifd0.software->rfind("MedScan", 0) != 0) return unsupported("Not a Trestle slide");
  if (!ifd0.image_description) return unsupported("no ImageDescription");
  for (const tiff::Ifd& ifd : tiff.ifds()) {
    if (!ifd.tiled) return unsupported("TIFF level " + std::to_string(ifd.index) + " is not tiled");
  }
  return Status();
}

// The ".Full" companion: a whole JPEG file.
Result<LevelModel> full_jpeg(const std::string& path) {
  TW_ASSIGN_OR_RETURN(std::shared_ptr<const io::Source> src, io::open_file(path));
  const uint64_t size = src->size();
  return whole_jpeg_level(std::move(src), 0, size);
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  const tiff::Ifd& ifd0 = tiff->ifds()[0];
  PropertyMap props;
  std::vector<int64_t> overlaps;
  SlideModel model;
  model.vendor = "trestle";
  model.tiff = tiff;
  for (const std::string& field : split(*ifd0.image_description, ';')) {
    const size_t eq = field.find('=');
    const std::string name = strip(field.substr(0, eq));
    if (eq != std::string::npos) props["trestle." + name] = strip(field.substr(eq + 1));
    if (field.rfind("OverlapsXY=", 0) == 0) {
      const std::vector<std::string> words = split(field, ' ');
      for (size_t i = 1; i < words.size(); ++i) overlaps.push_back(std::strtoll(words[i].c_str(), nullptr, 10));
    } else if (field.rfind("Background Color=", 0) == 0) {
      const unsigned long bg = std::strtoul(field.c_str() + 17, nullptr, 16);
      model.background = {static_cast<uint8_t>(bg >> 16), static_cast<uint8_t>(bg >> 8), static_cast<uint8_t>(bg)};
      char color[8];
      std::snprintf(color, sizeof color, "%02X%02X%02X", model.background[0], model.background[1], model.background[2]);
      props["openslide.background-color"] = color;
    }
  }
  if (auto p = props.find("trestle.Objective Power"); p != props.end()) {
    if (auto v = parse_int64(p->second)) props["openslide.objective-power"] = std::to_string(*v);
  }
  bool overlapping = false;
  for (const tiff::Ifd& ifd : tiff->ifds()) {
    TW_ASSIGN_OR_RETURN(LevelModel level, build_level(*tiff, ifd));
    const size_t i = static_cast<size_t>(ifd.index);
    const bool has = i < overlaps.size() / 2;
    const int64_t ox = has ? overlaps[2 * i] : 0, oy = has ? overlaps[2 * i + 1] : 0;
    overlapping = overlapping || ox || oy;
    const int64_t tw = level.desc.width, th = level.desc.height;
    if (ox >= tw || oy >= th || ox < 0 || oy < 0) {
      return corrupt("overlaps " + std::to_string(ox) + "x" + std::to_string(oy) + " of level " + std::to_string(i) +
                     " do not fit its tiles");
    }
    if (ifd.width >= tw) level.info.width -= (level.tiles_across - 1) * ox;
    if (ifd.height >= th) level.info.height -= (level.tiles_down - 1) * oy;
    std::vector<PlacedTile> placed;
    for (int64_t r = 0; r < level.tiles_down; ++r) {
      for (int64_t c = 0; c < level.tiles_across; ++c) {
        const int64_t unit = r * level.tiles_across + c;
        if (level.unit_length(unit) == 0) continue;
        PlacedTile t;
        t.x = c * (tw - ox);
        t.y = r * (th - oy);
        t.width = static_cast<int32_t>(std::min<int64_t>(tw, int64_t{ifd.width} - c * tw));
        t.height = static_cast<int32_t>(std::min<int64_t>(th, int64_t{ifd.height} - r * th));
        t.unit = unit;
        placed.push_back(t);
      }
    }
    level.placement = make_placement(std::move(placed));
    model.levels.push_back(std::move(level));
  }
  compute_downsamples(model.levels);
  add_tiff_properties(ifd0, props);
  if (ifd0.image_description) props["openslide.comment"] = *ifd0.image_description;
  // OpenSlide copies the resolution tags to mpp as they are.
  for (const char* axis : {"X", "Y"}) {
    auto r = props.find(std::string("tiff.") + axis + "Resolution");
    if (r == props.end()) continue;
    if (auto v = parse_double(r->second))
      props[std::string("openslide.mpp-") + (axis[0] == 'X' ? "x" : "y")] = format_double(*v);
  }
  const std::string& name = tiff->source().name();
  const size_t dot = name.find_last_of('.'), slash = name.find_last_of('/');
  const std::string base =
      dot != std::string::npos && (slash == std::string::npos || dot > slash) ? name.substr(0, dot) : name;
  if (auto macro = full_jpeg(base + ".Full"); macro.ok())
    model.associated.push_back({"macro", std::move(macro).value(), {}, {}});
  add_standard_properties(model, props);
  if (overlapping) drop_tile_size_properties(model);
  return model;
}

}  // namespace

const FormatDriver kTrestleDriver = {"trestle", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
