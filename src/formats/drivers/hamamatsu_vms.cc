// Hamamatsu VMS and VMU (OpenSlide's "hamamatsu" vendor, VMS/VMU variant): an INI-style index file naming
// a grid of JPEG files that together make level 0, a map JPEG (a smaller level) and a macro JPEG (VMS); or
// one NGR file of uncompressed 12-bit RGB and an NGR map (VMU, "Uncompressed Virtual Microscope Specimen").
//
// The index ([Virtual Microscope Specimen], at most 64 KiB, as OpenSlide reads it) gives NoJpegColumns x
// NoJpegRows image files as ImageFile, ImageFile(x,y), ImageFile(z) or ImageFile(z,x,y) (layer z 0 only),
// MapFile (required) and MacroImage. Every JPEG is read by restart interval (formats/drivers/hamamatsu_jpeg.h):
// level 0 is the grid of all image files' units (a level whose units come from many files, each file a
// UnitPart with its own header), the map is level 1, and OpenSlide's derived 1/2, 1/4, 1/8 levels follow.
// The OptimisationFile's restart-marker hints are not needed: the JPEGs are scanned at open.
//
// An NGR file ("GN", then width, height and column width as 32-bit little-endian at bytes 4-15, the data's
// offset at byte 24) stores its image as columns of `column width` pixels, each column whole from top to
// bottom, 3 x 16-bit little-endian samples per pixel of which 12 bits count: units of column width x 64
// rows (OpenSlide's tiles), narrowed to 8 bits by a shift of 4.
//
// Properties as OpenSlide writes them: hamamatsu.<key> for every key of the group, the objective power
// from SourceLens, mpp from PhysicalWidth/PhysicalHeight (nanometres over level 0's size), the first image
// file's JPEG comment as openslide.comment, quickhash-1 over the index file and the map file.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>

#include "formats/format_registry.h"
#include "formats/drivers/hamamatsu_jpeg.h"
#include "formats/key_file.h"
#include "formats/level_builder.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"
#include "util/bytes.h"

namespace tilewise::formats {

namespace {

constexpr uint64_t kMaxIndexBytes = 64 << 10;
constexpr const char* kVmsGroup = "Virtual Microscope Specimen";
constexpr const char* kVmuGroup = "Uncompressed Virtual Microscope Specimen";
constexpr int32_t kNgrTileHeight = 64;

// GLib's integer reading as OpenSlide uses it here: 0 when absent or not an integer.
int64_t integer(const KeyList& keys, const std::string& key) { return key_integer(keys, key).value_or(0); }

Result<KeyFile> read_index(const io::Source& source) { return read_key_file(source, kMaxIndexBytes); }

Status detect(const Probe& probe) {
  const io::Source& source = *probe.source;
  auto groups = read_index(source);
  if (!groups.ok()) return groups.status();
  auto g = groups->find(kVmsGroup);
  if (g == groups->end()) {
    if (groups->count(kVmuGroup)) return Status();
    return unsupported("Not VMS or VMU file");
  }
  if (integer(g->second, "NoJpegColumns") < 1) return unsupported("VMS file has no columns");
  if (integer(g->second, "NoJpegRows") < 1) return unsupported("VMS file has no rows");
  return Status();
}

// A VMU level: one NGR file.
Result<LevelModel> ngr_level(const std::string& path) {
  TW_ASSIGN_OR_RETURN(std::shared_ptr<const io::Source> source, io::open_file(path));
  uint8_t head[28];
  if (source->size() < sizeof head) return corrupt(path + ": Couldn't read NGR header");
  TW_RETURN_IF_ERROR(source->pread(head, 0).with_context(path));
  if (head[0] != 'G' || head[1] != 'N') return corrupt(path + ": Bad magic on NGR file");
  auto le32 = [&](int at) { return static_cast<int32_t>(internal::load_le32(head + at)); };
  const int64_t w = le32(4), h = le32(8), cw = le32(12), start = le32(24);
  if (w <= 0 || h <= 0 || cw <= 0 || start <= 0) return corrupt(path + ": Couldn't read NGR header");
  if (w % cw != 0) return corrupt(path + ": Width " + std::to_string(w) + " not multiple of column width " + std::to_string(cw));
  codecs::TileDesc desc;  // columns of cw x kNgrTileHeight, 12 significant bits of 16-bit RGB
  desc.compression = codecs::Compression::kNone;
  desc.width = static_cast<int32_t>(cw);
  desc.height = kNgrTileHeight;
  desc.samples_per_pixel = 3;
  desc.bits_per_sample = 16;
  desc.significant_bits = 12;
  desc.color = codecs::ColorSpace::kRgb;
  LevelModel level = grid_level(w, h, desc);
  UnitTable units;
  for (int64_t y = 0; y < level.tiles_down; ++y) {
    const int64_t rows = std::min<int64_t>(kNgrTileHeight, h - y * kNgrTileHeight);
    for (int64_t x = 0; x < level.tiles_across; ++x) {
      units.offsets.push_back(static_cast<uint64_t>(start + (y * kNgrTileHeight + x * h) * cw * 6));
      units.lengths.push_back(static_cast<uint64_t>(cw * rows * 6));
    }
  }
  level.units = std::make_shared<const UnitTable>(std::move(units));
  level.parts = single_part(std::move(source));
  return level;
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// A JPEG file of the set, indexed by restart interval.
struct JpegFile {
  std::shared_ptr<const io::Source> source;
  RestartJpeg jpeg;
};

Result<JpegFile> open_jpeg(const std::string& path, const ModelLimits& limits) {
  TW_ASSIGN_OR_RETURN(std::shared_ptr<const io::Source> source, io::open_file(path));
  TW_ASSIGN_OR_RETURN(RestartJpeg jpeg, index_jpeg(*source, 0, source->size(), 0, 0, nullptr, limits, path));
  return JpegFile{std::move(source), std::move(jpeg)};
}

// Level 0: the image files' units in one grid, file (c, r) covering tiles [c * across, ...) x [r * down, ...).
Result<LevelModel> grid_level(const std::vector<JpegFile>& files, int64_t cols, int64_t rows) {
  const RestartJpeg& j0 = files[0].jpeg;
  LevelModel level = restart_jpeg_level(j0);
  for (size_t i = 1; i < files.size(); ++i) {
    const RestartJpeg& j = files[i].jpeg;
    const int64_t c = static_cast<int64_t>(i) % cols, r = static_cast<int64_t>(i) / cols;
    if (j.unit_width != j0.unit_width || j.unit_height != j0.unit_height || j.restart_units != j0.restart_units) {
      return corrupt("Tile size not consistent for JPEG " + std::to_string(i) + ": expected " +
                     std::to_string(j0.unit_width) + "x" + std::to_string(j0.unit_height) + ", found " +
                     std::to_string(j.unit_width) + "x" + std::to_string(j.unit_height));
    }
    // Every file of a column has the column's width in units, of a row the row's height (only the last
    // column and row may be narrower or shorter).
    const RestartJpeg& top = files[static_cast<size_t>(c)].jpeg;
    const RestartJpeg& left = files[static_cast<size_t>(r * cols)].jpeg;
    if ((c != cols - 1 && j.units_across != j0.units_across) || (r != rows - 1 && j.units_down != j0.units_down) ||
        j.units_across != top.units_across || j.units_down != left.units_down || j.units_across > j0.units_across ||
        j.units_down > j0.units_down) {
      return corrupt("Tiles across or down not consistent for JPEG " + std::to_string(i));
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    level.info.width += files[static_cast<size_t>(c)].jpeg.frame.width;
    level.tiles_across += files[static_cast<size_t>(c)].jpeg.units_across;
  }
  for (int64_t r = 0; r < rows; ++r) {
    level.info.height += files[static_cast<size_t>(r * cols)].jpeg.frame.height;
    level.tiles_down += files[static_cast<size_t>(r * cols)].jpeg.units_down;
  }
  UnitTable units;
  const size_t count = static_cast<size_t>(level.tiles_across * level.tiles_down);
  units.offsets.resize(count);
  units.lengths.resize(count);
  units.part.resize(count);
  auto parts = std::make_shared<std::vector<UnitPart>>();
  for (const JpegFile& f : files) parts->push_back(restart_part(f.source, f.jpeg));
  for (int64_t y = 0; y < level.tiles_down; ++y) {
    for (int64_t x = 0; x < level.tiles_across; ++x) {
      const size_t file = static_cast<size_t>((y / j0.units_down) * cols + x / j0.units_across);
      const RestartJpeg& j = files[file].jpeg;
      const int64_t local = (y % j0.units_down) * j.units_across + x % j0.units_across;
      const size_t i = static_cast<size_t>(y * level.tiles_across + x);
      units.offsets[i] = j.offsets[static_cast<size_t>(local)];
      units.lengths[i] = j.lengths[static_cast<size_t>(local)];
      units.part[i] = static_cast<uint32_t>(file);
    }
  }
  level.units = std::make_shared<const UnitTable>(std::move(units));
  level.parts = std::move(parts);
  return level;
}

LevelModel single_jpeg_level(JpegFile file) {
  LevelModel level = restart_jpeg_level(file.jpeg);
  level.info.width = file.jpeg.frame.width;
  level.info.height = file.jpeg.frame.height;
  level.tiles_across = file.jpeg.units_across;
  level.tiles_down = file.jpeg.units_down;
  level.units = std::make_shared<const UnitTable>(UnitTable{std::move(file.jpeg.offsets), std::move(file.jpeg.lengths), {}});
  level.parts = std::make_shared<const std::vector<UnitPart>>(std::vector{restart_part(std::move(file.source), file.jpeg)});
  return level;
}

// The image files named by the group: row-major, cols x rows of them, layer 0 only.
Result<std::vector<std::string>> image_files(const KeyList& keys, int64_t cols, int64_t rows, const std::string& folder) {
  std::vector<std::string> names(static_cast<size_t>(cols * rows));
  for (const auto& [key, value] : keys) {
    if (key.rfind("ImageFile", 0) != 0) continue;
    std::vector<int64_t> index;
    const std::string suffix = key.substr(9);
    if (!suffix.empty()) {
      if (suffix.front() != '(' || suffix.back() != ')') continue;
      for (size_t at = 1; at < suffix.size();) {
        size_t end = suffix.find_first_of(",)", at);
        index.push_back(std::strtoll(suffix.substr(at, end - at).c_str(), nullptr, 10));
        at = end + 1;
      }
    }
    int64_t layer = 0, col = 0, row = 0;
    if (index.size() == 1) layer = index[0];
    if (index.size() == 2) col = index[0], row = index[1];
    if (index.size() == 3) layer = index[0], col = index[1], row = index[2];
    if (index.size() > 3) return corrupt("Unknown number of image dimensions: " + std::to_string(index.size()));
    if (layer != 0) continue;
    if (col < 0 || row < 0 || col >= cols || row >= rows) {
      return corrupt("Invalid row or column in Hamamatsu file (" + std::to_string(col) + "," + std::to_string(row) + ")");
    }
    std::string& slot = names[static_cast<size_t>(row * cols + col)];
    if (!slot.empty()) return corrupt("Duplicate image for (" + std::to_string(col) + "," + std::to_string(row) + ")");
    slot = folder + "/" + value;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) return corrupt("Can't read image filename " + std::to_string(i));
  }
  return names;
}

// hamamatsu.<key> for every key, objective power, mpp from the physical size; then the standard keys.
void add_index_properties(SlideModel& model, const KeyList& keys, PropertyMap& props) {
  for (const auto& [key, value] : keys) props["hamamatsu." + key] = value;
  if (auto lens = props.find("hamamatsu.SourceLens"); lens != props.end()) {
    char* end = nullptr;
    const double v = std::strtod(lens->second.c_str(), &end);
    if (end != lens->second.c_str() && *end == '\0') props["openslide.objective-power"] = format_double(v);
  }
  const LevelInfo& l0 = model.levels[0].info;
  if (const int64_t nm = integer(keys, "PhysicalWidth"); nm > 0) {
    props["openslide.mpp-x"] = format_double(static_cast<double>(nm) / (1000.0 * static_cast<double>(l0.width)));
  }
  if (const int64_t nm = integer(keys, "PhysicalHeight"); nm > 0) {
    props["openslide.mpp-y"] = format_double(static_cast<double>(nm) / (1000.0 * static_cast<double>(l0.height)));
  }
  add_standard_properties(model, props);
}

Result<SlideModel> open_vmu(std::shared_ptr<const io::Source> index, const KeyList& keys) {
  const std::string folder = folder_of(index->name());
  const std::string* map = find_key(keys, "MapFile");
  if (!map || map->empty()) return corrupt("Can't read map file");
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, image_files(keys, 1, 1, folder));
  if (integer(keys, "BitsPerPixel") != 36) return unsupported("BitsPerPixel must be 36");
  const std::string* order = find_key(keys, "PixelOrder");
  if (!order || *order != "RGB") return unsupported("PixelOrder must be RGB");
  SlideModel model;
  model.vendor = "hamamatsu";
  TW_ASSIGN_OR_RETURN(LevelModel image, ngr_level(names[0]));
  TW_ASSIGN_OR_RETURN(LevelModel map_level, ngr_level(folder + "/" + *map));
  PropertyMap props;
  const std::array<const io::Source*, 2> hashed{index.get(), map_level.parts->front().source.get()};
  TW_ASSIGN_OR_RETURN(props["openslide.quickhash-1"], quickhash1_of_files(hashed));
  model.levels = {std::move(image), std::move(map_level)};
  compute_downsamples(model.levels);
  if (const std::string* macro = find_key(keys, "MacroImage"); macro && !macro->empty()) {
    auto f = open_jpeg(folder + "/" + *macro, ModelLimits{});
    if (!f.ok()) return f.status().with_context("macro image");
    model.associated.push_back({"macro", single_jpeg_level(std::move(f).value()), {}});
  }
  add_index_properties(model, keys, props);
  return model;
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const io::Source>& index = probe.source;
  TW_ASSIGN_OR_RETURN(auto groups, read_index(*index));
  if (!groups.count(kVmsGroup)) return open_vmu(index, groups.at(kVmuGroup));
  const KeyList& keys = groups.at(kVmsGroup);
  const int64_t cols = integer(keys, "NoJpegColumns"), rows = integer(keys, "NoJpegRows");
  if (cols > 4096 || rows > 4096 || cols * rows > 4096) return corrupt("Too many columns or rows");
  const std::string folder = folder_of(index->name());
  const std::string* map = find_key(keys, "MapFile");
  if (!map || map->empty()) return corrupt("Can't read map file");
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, image_files(keys, cols, rows, folder));
  const ModelLimits limits;
  std::vector<JpegFile> files;
  for (size_t i = 0; i < names.size(); ++i) {
    auto f = open_jpeg(names[i], limits);
    if (!f.ok()) return f.status().with_context("Can't validate JPEG " + std::to_string(i));
    files.push_back(std::move(f).value());
  }
  auto map_file = open_jpeg(folder + "/" + *map, limits);
  if (!map_file.ok()) return map_file.status().with_context("map file");

  SlideModel model;
  model.vendor = "hamamatsu";
  PropertyMap props;
  if (files[0].jpeg.frame.has_comment) {
    props["openslide.comment"] = files[0].jpeg.frame.comment;
  }
  const std::array<const io::Source*, 2> hashed{index.get(), map_file->source.get()};
  TW_ASSIGN_OR_RETURN(props["openslide.quickhash-1"], quickhash1_of_files(hashed));
  TW_ASSIGN_OR_RETURN(LevelModel level0, grid_level(files, cols, rows));
  model.levels = with_scaled_levels({std::move(level0), single_jpeg_level(std::move(map_file).value())});
  compute_downsamples(model.levels);

  if (const std::string* macro = find_key(keys, "MacroImage"); macro && !macro->empty()) {
    auto f = open_jpeg(folder + "/" + *macro, limits);
    if (!f.ok()) return f.status().with_context("macro image");
    model.associated.push_back({"macro", single_jpeg_level(std::move(f).value()), {}});
  }
  add_index_properties(model, keys, props);
  return model;
}

}  // namespace

const FormatDriver kHamamatsuVmsDriver = {"hamamatsu", Reads::kSource, &detect, &open};

}  // namespace tilewise::formats
