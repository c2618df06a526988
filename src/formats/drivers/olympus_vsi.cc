// Olympus/Evident cellSens VSI: `name.vsi` beside the folder `_name_/` whose `stack<N>/` folders hold one
// .ets file each.
//
// - The .vsi is a TIFF (its own images are small previews) whose metadata stream describes the stacks
//   (drivers/olympus_metadata.h): name, type, boundary, calibration, the dimensions of their tiles and the
//   channels' names. The stacks whose pixels are in .ets files are matched to the stack folders in order of
//   their numbers, each to the first remaining stack whose boundary its level-0 tiles cover (as slideio
//   matches them).
// - Each .ets (drivers/olympus_ets.h) is a stack's tiles, keyed by (x, y, the stack's dimensions, level):
//   uint8, uint16 or float32 samples, one per pixel (channels are a dimension) or three (RGB), raw, JPEG,
//   JPEG 2000, PNG or BMP. Level 0 is the boundary's size, each next level half the one before (rounded up,
//   within the tiles it has); every tile is a unit of the level's grid, and tiles the table does not list read
//   as the header's background.
// - Image stacks are the scenes (the first the default); an RGB image of one plane is a brightfield slide;
//   grey channels, focal planes and time points are planes. The overview stack is the `macro` image.
// - The .ets files are found by listing the folder: a .vsi opens from a local file only.
#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "formats/drivers/olympus_ets.h"
#include "formats/drivers/olympus_metadata.h"
#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

namespace fs = std::filesystem;
using olympus::DimKind;
using olympus::Ets;
using olympus::Stack;

constexpr char kWhat[] = "Olympus cellSens VSI";
constexpr int32_t kImage = 0, kOverview = 1;
constexpr uint64_t kMaxMetadataBytes = 256ull << 20;
constexpr uint64_t kMaxMacroBytes = 64ull << 20;  // decoded RGB bytes of the macro image's level

Status detect(const Probe& probe) {
  if (!ends_with_ignoring_case(probe.source->name(), ".vsi")) return unsupported("not a .vsi file");
  return Status();
}

// The .ets files of the stack folders beside the .vsi, by stack number.
Result<std::vector<std::string>> ets_files(const std::string& vsi) {
  const fs::path path(vsi);
  const fs::path folder = path.parent_path() / ("_" + path.stem().string() + "_");
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return not_found(std::string(kWhat) + ": the folder " + folder.filename().string() +
                     " beside it, which holds the slide's .ets files, is missing");
  }
  std::vector<std::pair<int64_t, std::string>> found;
  for (const fs::directory_entry& stack : fs::directory_iterator(folder, ec)) {
    const std::string name = stack.path().filename().string();
    const auto number = name.rfind("stack", 0) == 0 ? parse_int64(name.substr(5)) : std::nullopt;
    if (!number || !stack.is_directory(ec)) continue;
    std::vector<std::string> ets;
    for (const fs::directory_entry& f : fs::directory_iterator(stack.path(), ec)) {
      if (ends_with_ignoring_case(f.path().filename().string(), ".ets")) ets.push_back(f.path().string());
    }
    std::sort(ets.begin(), ets.end());
    if (!ets.empty()) found.emplace_back(*number, ets.front());
  }
  if (ec) return io_error(folder.string() + ": " + ec.message());
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

Result<codecs::TileDesc> describe(const Ets& e) {
  codecs::TileDesc d;
  d.width = e.tile_width;
  d.height = e.tile_height;
  d.samples_per_pixel = e.samples;
  switch (e.sample_type) {
    case 2: d.bits_per_sample = 8; break;
    case 4: d.bits_per_sample = 16; break;
    case 9: d.bits_per_sample = 32, d.sample_format = codecs::SampleFormat::kFloat; break;
    default: return unsupported("samples of ETS type " + std::to_string(e.sample_type) + " are not read");
  }
  if (e.samples != 1 && !(e.samples == 3 && d.bits_per_sample == 8)) {
    return unsupported(std::to_string(e.samples) + " samples per pixel of " + std::to_string(d.bits_per_sample) +
                       " bits are not read");
  }
  const bool grey = e.samples == 1;
  d.color = grey ? codecs::ColorSpace::kMinIsBlack : codecs::ColorSpace::kRgb;
  switch (e.codec) {
    case 0: d.compression = codecs::Compression::kNone; break;
    case 2:
      d.compression = codecs::Compression::kJpeg;
      if (d.bits_per_sample != 8) return unsupported("JPEG tiles of " + std::to_string(d.bits_per_sample) + "-bit samples");
      if (!grey) d.color = codecs::ColorSpace::kYCbCr;
      break;
    case 3:
      d.compression = codecs::Compression::kJpeg2000;
      if (d.sample_format == codecs::SampleFormat::kFloat) return unsupported("JPEG 2000 tiles of float samples");
      break;
    case 8:
    case 9:
      if (grey) return unsupported("grey PNG or BMP tiles are not read");
      d.compression = e.codec == 8 ? codecs::Compression::kPng : codecs::Compression::kBmp;
      break;
    case 5: return unsupported("lossless JPEG tiles are not read");
    default: return unsupported("ETS codec " + std::to_string(e.codec) + " is not read");
  }
  if (!ModelLimits{}.unit_fits(uint64_t(d.width), uint64_t(d.height), uint64_t(d.samples_per_pixel) * d.bits_per_sample / 8)) {
    return unsupported("tiles of " + std::to_string(d.width) + "x" + std::to_string(d.height) + " are too large to decode");
  }
  return d;
}

// One stack's planes: (t, z, c) -> levels, and the axes they span.
struct StackImage {
  ImageAxes axes;
  std::map<std::tuple<int32_t, int32_t, int32_t>, std::vector<LevelModel>> planes;
  std::array<uint8_t, 3> background{0, 0, 0};
  std::vector<std::string> warnings;
};

// The levels' sizes: level 0 the stack's boundary (or what its tiles cover), each next one half the one
// before, rounded up but within what that level's tiles cover.
std::vector<std::pair<int64_t, int64_t>> level_sizes(const Stack& s, const Ets& e, int32_t levels,
                                                     const std::vector<std::pair<int32_t, int32_t>>& max_tile) {
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int32_t k = 0; k < levels; ++k) {
    const int64_t cover_w = int64_t{max_tile[k].first + 1} * e.tile_width;
    const int64_t cover_h = int64_t{max_tile[k].second + 1} * e.tile_height;
    int64_t w = k == 0 ? (s.width > 0 ? s.width : cover_w) : (sizes.back().first + 1) / 2;
    int64_t h = k == 0 ? (s.height > 0 ? s.height : cover_h) : (sizes.back().second + 1) / 2;
    if (k > 0) w = std::min(w, cover_w), h = std::min(h, cover_h);
    if (w < 1 || h < 1) break;
    sizes.emplace_back(w, h);
  }
  return sizes;
}

Result<StackImage> build_stack(const Stack& s, const Ets& e, std::shared_ptr<const io::Source> source) {
  TW_ASSIGN_OR_RETURN(const codecs::TileDesc desc, describe(e));
  const int32_t dims_end = e.coords - (e.pyramid ? 1 : 0);
  if (dims_end < 2) return corrupt("tiles have no level coordinate beyond x and y");
  // Where each kind of dimension is among a tile's coordinates (-1: absent).
  int32_t at_c = -1, at_z = -1, at_t = -1;
  for (const auto& [index, kind] : s.dims) {
    if (index >= dims_end) continue;
    if (kind == DimKind::kC) at_c = index;
    if (kind == DimKind::kZ) at_z = index;
    if (kind == DimKind::kT) at_t = index;
  }
  StackImage out;
  int32_t channels = 1, zs = 1, ts = 1, levels = 1;
  int64_t skipped = 0;
  auto coord = [&](size_t i, int32_t k) { return k < 0 ? 0 : e.coord[i * size_t(e.coords) + size_t(k)]; };
  std::vector<bool> used(e.tiles(), true);
  for (size_t i = 0; i < e.tiles(); ++i) {
    bool other = false;  // a nonzero index of a dimension not read (lambda, phase, undescribed)
    for (int32_t k = 2; k < dims_end; ++k) {
      if (k != at_c && k != at_z && k != at_t && coord(i, k) != 0) other = true;
    }
    const int32_t level = e.pyramid ? coord(i, e.coords - 1) : 0;
    if (other || coord(i, 0) < 0 || coord(i, 1) < 0 || coord(i, at_c) < 0 || coord(i, at_z) < 0 ||
        coord(i, at_t) < 0 || level < 0 || level >= 32 || coord(i, at_c) >= 4096 || coord(i, at_z) >= 4096 ||
        coord(i, at_t) >= 4096) {
      used[i] = false;
      ++skipped;
      continue;
    }
    channels = std::max(channels, coord(i, at_c) + 1);
    zs = std::max(zs, coord(i, at_z) + 1);
    ts = std::max(ts, coord(i, at_t) + 1);
    levels = std::max(levels, level + 1);
  }
  if (e.samples == 3 && channels > 1) return unsupported(std::to_string(channels) + " channels of RGB tiles are not read");
  std::vector<std::pair<int32_t, int32_t>> max_tile(size_t(levels), {-1, -1});
  for (size_t i = 0; i < e.tiles(); ++i) {
    if (!used[i]) continue;
    auto& m = max_tile[size_t(e.pyramid ? coord(i, e.coords - 1) : 0)];
    m.first = std::max(m.first, coord(i, 0));
    m.second = std::max(m.second, coord(i, 1));
  }
  const auto sizes = level_sizes(s, e, levels, max_tile);
  if (sizes.empty()) return corrupt("the stack has no tiles at level 0");
  // Every plane's unit table is allocated: a table that claims far more grid positions than it lists tiles
  // is refused rather than allocated.
  uint64_t positions = 0;
  for (const auto& [w, h] : sizes) {
    positions += uint64_t((w + e.tile_width - 1) / e.tile_width) * uint64_t((h + e.tile_height - 1) / e.tile_height);
  }
  // (positions is bounded first, so the product - at most 2e8 x 4096^3 - does not overflow)
  const uint64_t planes = uint64_t(channels) * uint64_t(zs) * uint64_t(ts);
  const uint64_t bound = std::min<uint64_t>(200'000'000, std::max<uint64_t>(e.tiles() * 1024, uint64_t{1} << 20));
  if (positions > bound || positions * planes > bound) {
    return corrupt("a grid of " + std::to_string(positions) + " tiles in each of " + std::to_string(planes) +
                   " planes for " + std::to_string(e.tiles()) + " stored ones");
  }
  std::vector<LevelModel> shells;
  for (const auto& [w, h] : sizes) {
    LevelModel level = grid_level(w, h, desc);
    level.info.samples_per_pixel = desc.samples_per_pixel;
    level.parts = single_part(source);
    shells.push_back(std::move(level));
  }
  std::map<std::tuple<int32_t, int32_t, int32_t>, std::vector<UnitTable>> tables;
  for (int32_t t = 0; t < ts; ++t) {
    for (int32_t z = 0; z < zs; ++z) {
      for (int32_t c = 0; c < channels; ++c) {
        auto& levels_of = tables[{t, z, c}];
        for (const LevelModel& l : shells) {
          const size_t n = size_t(l.tiles_across * l.tiles_down);
          levels_of.push_back(UnitTable{std::vector<uint64_t>(n, 0), std::vector<uint64_t>(n, 0), {}});
        }
      }
    }
  }
  for (size_t i = 0; i < e.tiles(); ++i) {
    const int32_t k = e.pyramid ? coord(i, e.coords - 1) : 0;
    if (!used[i] || size_t(k) >= shells.size() || coord(i, 0) >= shells[size_t(k)].tiles_across ||
        coord(i, 1) >= shells[size_t(k)].tiles_down) {
      ++skipped;
      continue;
    }
    UnitTable& table = tables[{coord(i, at_t), coord(i, at_z), coord(i, at_c)}][size_t(k)];
    const size_t index = size_t(coord(i, 1) * shells[size_t(k)].tiles_across + coord(i, 0));
    if (table.lengths[index] != 0 || e.lengths[i] == 0) continue;  // a repeated tile: the first is read
    table.offsets[index] = e.offsets[i];
    table.lengths[index] = e.lengths[i];
  }
  if (skipped > 0) {
    out.warnings.push_back(std::to_string(skipped) + " tiles beyond the stack's levels, channels, focal planes "
                           "and time points are not read");
  }
  for (auto& [key, level_tables] : tables) {
    std::vector<LevelModel> levels_of = shells;
    for (size_t k = 0; k < levels_of.size(); ++k) {
      levels_of[k].units = std::make_shared<const UnitTable>(std::move(level_tables[k]));
    }
    compute_downsamples(levels_of);
    out.planes.emplace(key, std::move(levels_of));
  }
  ImageAxes& axes = out.axes;
  axes.rgb = e.samples == 3;
  axes.channels = axes.rgb ? 3 : channels;
  axes.z = zs;
  axes.t = ts;
  TW_ASSIGN_OR_RETURN(axes.sample_type, sample_type_of(desc));
  if (!axes.rgb) {
    for (int32_t c = 0; c < channels; ++c) {
      ChannelInfo info;
      auto name = s.channel_names.find(c);
      info.name = name != s.channel_names.end() && !name->second.empty() ? name->second : "C" + std::to_string(c);
      axes.channel_info.push_back(std::move(info));
    }
  }
  if (axes.rgb) out.background = {e.background[0], e.background[1], e.background[2]};
  return out;
}

// A stack of the metadata and the .ets file holding its pixels.
struct StackFile {
  Stack stack;
  std::string path;
  std::shared_ptr<const io::Source> source;
  Ets ets;
};

// The stacks with .ets files paired with those files: each file, in stack-number order, with the first
// remaining stack whose boundary its level-0 tiles cover.
Result<std::vector<StackFile>> match(const std::vector<Stack>& stacks, const std::vector<std::string>& files,
                                     std::vector<std::string>& warnings) {
  std::vector<const Stack*> unmatched;
  for (const Stack& s : stacks) {
    if (s.external && (s.type == kImage || s.type == kOverview)) unmatched.push_back(&s);
  }
  std::vector<StackFile> out;
  for (const std::string& file : files) {
    TW_ASSIGN_OR_RETURN(std::shared_ptr<const io::Source> src, io::open_file(file));
    auto read = olympus::read_ets(*src);
    if (!read.ok()) return read.status().with_context(file);
    int32_t max_x = 0, max_y = 0;
    for (size_t i = 0; i < read->tiles(); ++i) {
      const bool level0 = !read->pyramid || read->coord[(i + 1) * size_t(read->coords) - 1] == 0;
      if (!level0) continue;
      max_x = std::max(max_x, read->coord[i * size_t(read->coords)]);
      max_y = std::max(max_y, read->coord[i * size_t(read->coords) + 1]);
    }
    const int64_t w0 = int64_t{max_x} * read->tile_width, h0 = int64_t{max_y} * read->tile_height;
    auto fits = [&](const Stack* s) {
      return s->width >= w0 && s->width <= w0 + read->tile_width && s->height >= h0 && s->height <= h0 + read->tile_height;
    };
    auto it = std::find_if(unmatched.begin(), unmatched.end(), fits);
    if (it == unmatched.end()) {
      warnings.push_back(fs::path(file).parent_path().filename().string() + "/" + fs::path(file).filename().string() +
                         ": no stack of the metadata has its size: not read");
      continue;
    }
    out.push_back({**it, file, std::move(src), std::move(read).value()});
    unmatched.erase(it);
  }
  return out;
}

Result<SlideModel> open(const Probe& probe) {
  const io::Source& vsi = *probe.source;
  if (!vsi.is_local_file()) {
    return unsupported(std::string(kWhat) + " opens from a local file: its .ets files are found by listing the "
                       "folder beside it");
  }
  std::vector<uint8_t> head(std::min<uint64_t>(vsi.size(), kMaxMetadataBytes + 8));
  TW_RETURN_IF_ERROR(vsi.pread(head, 0));
  auto stacks = olympus::parse_stacks(std::span<const uint8_t>(head).subspan(std::min<size_t>(8, head.size())));
  if (!stacks.ok()) return stacks.status().with_context(kWhat);
  TW_ASSIGN_OR_RETURN(const std::vector<std::string> files, ets_files(vsi.name()));
  SlideModel model;
  model.tiff = probe.tiff;
  model.vendor = "olympus";
  TW_ASSIGN_OR_RETURN(const std::vector<StackFile> matched, match(*stacks, files, model.warnings));
  std::vector<size_t> images;
  std::optional<size_t> overview;
  for (size_t i = 0; i < matched.size(); ++i) {
    if (matched[i].stack.type == kImage) images.push_back(i);
    if (matched[i].stack.type == kOverview && !overview) overview = i;
  }
  if (images.empty()) {
    return corrupt(std::string(kWhat) + ": none of its " + std::to_string(files.size()) +
                   " .ets files holds an image stack of the metadata (" + std::to_string(stacks->size()) + " stacks)");
  }
  if (images.size() > 1) {
    for (size_t i : images) {
      const Stack& s = matched[i].stack;
      model.scenes.push_back({s.name.empty() ? "Image " + std::to_string(model.scenes.size()) : s.name, s.width, s.height});
    }
  }
  const size_t chosen = images[probe.scene && size_t(*probe.scene) < images.size() ? size_t(*probe.scene) : 0];
  const StackFile& main = matched[chosen];
  const Stack& stack = main.stack;
  const std::string& file = main.path;
  auto image = build_stack(stack, main.ets, main.source);
  if (!image.ok()) return image.status().with_context(file);
  model.axes = image->axes;
  model.background = image->background;
  for (std::string& w : image->warnings) model.warnings.push_back(file + ": " + w);
  model.levels = image->planes.begin()->second;
  const bool brightfield = model.axes.rgb && image->planes.size() == 1;
  for (auto& [key, levels] : image->planes) {
    if (brightfield) break;
    const auto& [t, z, c] = key;
    model.planes.push_back({c, model.axes.rgb ? 3 : 1, z, t, std::move(levels)});
  }
  if (overview) {
    const StackFile& o = matched[*overview];
    auto macro = build_stack(o.stack, o.ets, o.source);
    if (!macro.ok() || !macro->axes.rgb || macro->planes.size() != 1) {
      model.warnings.push_back("the overview stack is not read: " +
                               (macro.ok() ? std::string("not one RGB plane") : macro.status().message()));
    } else {
      const std::vector<LevelModel>& levels = macro->planes.begin()->second;
      auto fits = std::find_if(levels.begin(), levels.end(), [](const LevelModel& l) {
        return uint64_t(l.info.width) * uint64_t(l.info.height) * 3 <= kMaxMacroBytes;
      });
      if (fits != levels.end()) model.associated.push_back({"macro", *fits, {}, {}});
    }
  }
  PropertyMap props;
  if (!stack.name.empty()) props["olympus.stack-name"] = stack.name;
  props["olympus.ets"] = fs::path(file).parent_path().filename().string() + "/" + fs::path(file).filename().string();
  if (stack.um_per_pixel) {
    props["openslide.mpp-x"] = format_double(stack.um_per_pixel->first);
    props["openslide.mpp-y"] = format_double(stack.um_per_pixel->second);
  }
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kOlympusVsiDriver = {"olympus", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
