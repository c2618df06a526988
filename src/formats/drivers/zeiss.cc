// Zeiss CZI (OpenSlide's "zeiss" vendor, format "zeiss-czi"): ZISRAW segments. OpenSlide 4.0.1's reading,
// followed here:
// - ZISRAWFILE at 0: the subblock directory, metadata and attachment directory positions and two GUIDs.
//   ZISRAWDIRECTORY: one DV entry per subblock (pixel type, compression, file position, dimensions X, Y
//   (start, size, stored size: size / stored size rounded is the subblock's downsample), S (scene), C
//   (channel), Z (focal plane), T (time point), M (mosaic index: where subblocks overlap, the lower index
//   shows, as OpenSlide 4.0.1 draws them, measured); B, R, I, H and V only at index 0 (blocks, rotations,
//   illuminations, phases and views of one image); any other dimension is an error).
//   Coordinates may be negative: every subblock is moved by the smallest X and Y, and C, Z and T by their
//   smallest index.
// - ZISRAWMETADATA: the XML (drivers/zeiss_metadata.h): zeiss.* properties, the level-0 size, the scenes,
//   the mpp, the objective power and the channels.
// - Planes: one BGR24 or BGR48 channel at one (Z, T) is a brightfield slide, as OpenSlide reads it; GRAY8,
//   GRAY16 and GRAY32FLOAT channels, and BGR images with several focal planes or time points, have a plane
//   per (C, Z, T), each its own mosaic of every scene, with the levels every plane has.
// - Levels: every downsample that all scenes have, each a positioned grid (formats::Placement) of its
//   subblocks at (x / downsample, y / downsample), highest mosaic index first; its size is level 0's over the
//   downsample. openslide.region[i].* give each scene's bounds at level 0.
// - Pixels: GRAY8, GRAY16, GRAY32FLOAT, BGR24 or BGR48 (RGB from the high bytes), uncompressed, zstd ("zstd v0") or zstd behind a small header
//   with optional HiLo byte packing ("zstd v1"), and JPEG XR (jxrlib; OpenSlide refuses it). Each subblock's data is a
//   unit behind a 12-byte header of the driver's own (its size, pixel type, compression; formats::CziUnitHeader,
//   which the level's unit stream turns into the unit's description) through an io::SplicedFile, so that units
//   of different sizes and codings share one level.
// - Attachments Label, SlidePreview and Thumbnail become label, macro and thumbnail: a JPEG, or a CZI of one
//   subblock embedded in the file. quickhash-1: SHA-256 of the two GUIDs and the XML with its NUL.
// Subblock headers (their metadata size) are read at open, one read each.
#include <pugixml.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <iterator>
#include <set>
#include <tuple>

#include "formats/drivers/zeiss_metadata.h"
#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"
#include "formats/unit_stream.h"
#include "io/spliced_source.h"
#include "util/checked_math.h"
#include "util/bytes.h"

namespace tilewise::formats {
namespace {

using zeiss::Metadata;
using zeiss::parse_metadata;

constexpr size_t kSubblockHeader = 288;
constexpr size_t kDirectoryEntry = 32;
constexpr size_t kDimensionEntry = 20;

// CZI's fields are signed little-endian integers.
int32_t le32(const uint8_t* p) { return static_cast<int32_t>(internal::load_le32(p)); }
int64_t le64(const uint8_t* p) { return static_cast<int64_t>(internal::load_le64(p)); }

// A file offset from a base and a position read from the file, in unsigned (wrapping, never undefined)
// arithmetic: a wrapped or negative one is past the end of the file, which read_at rejects.
uint64_t offset_of(int64_t base, int64_t pos) { return static_cast<uint64_t>(base) + static_cast<uint64_t>(pos); }

Status read_at(const io::Source& src, uint64_t offset, std::span<uint8_t> out, const char* what) {
  if (!internal::range_inside(offset, out.size(), src.size())) {
    return corrupt(std::string("Couldn't read ") + what + " at offset " + std::to_string(offset) +
                   ": past the end of the file");
  }
  return src.pread(out, offset).with_context(std::string("Couldn't read ") + what);
}

Status check_magic(const uint8_t* found, const char* expected) {
  if (std::memcmp(found, expected, std::strlen(expected)) != 0) {
    return corrupt(std::string("No magic string \"") + expected + "\" in struct header");
  }
  return Status();
}

Status detect(const Probe& probe) {
  const io::Source& source = *probe.source;
  uint8_t head[16];
  if (source.size() < sizeof head || !source.pread(head, 0).ok() || std::memcmp(head, "ZISRAWFILE", 10) != 0) {
    return unsupported("Not a Zeiss CZI file");
  }
  return Status();
}

struct Subblock {
  int64_t file_pos = 0;
  int32_t pixel_type = 0, compression = 0;
  int64_t x = 0, y = 0, m = 0;
  uint32_t w = 0, h = 0;
  int32_t scene = 0, c = 0, z = 0, t = 0;
  int64_t downsample = 1;
};

constexpr int32_t kGray8 = 0, kGray16 = 1, kGray32Float = 2, kBgr24 = 3, kBgr48 = 4;

const char* pixel_type_name(int32_t type) {
  static const char* names[] = {"GRAY8",      "GRAY16", "GRAY32FLOAT",   "BGR24",         "BGR48",  "5",     "6", "7",
                                "BGR96FLOAT", "BGRA32", "GRAY64COMPLEX", "BGR192COMPLEX", "GRAY32", "GRAY64"};
  return type >= 0 && type < 14 ? names[type] : "unknown";
}

struct Czi {
  uint8_t primary_guid[16], file_guid[16];
  int64_t offset = 0, dir_pos = 0, meta_pos = 0, att_pos = 0;
  std::vector<Subblock> subblocks;
};

Result<Czi> read_czi(const io::Source& src, int64_t offset) {
  uint8_t h[112];
  TW_RETURN_IF_ERROR(read_at(src, static_cast<uint64_t>(offset), h, "file header"));
  TW_RETURN_IF_ERROR(check_magic(h, "ZISRAWFILE"));
  Czi czi;
  std::memcpy(czi.primary_guid, h + 48, 16);
  std::memcpy(czi.file_guid, h + 64, 16);
  czi.offset = offset;
  czi.dir_pos = le64(h + 84);
  czi.meta_pos = le64(h + 92);
  czi.att_pos = le64(h + 104);
  uint8_t dh[160];
  const uint64_t dir_at = offset_of(offset, czi.dir_pos);
  TW_RETURN_IF_ERROR(read_at(src, dir_at, dh, "subblock directory header"));
  TW_RETURN_IF_ERROR(check_magic(dh, "ZISRAWDIRECTORY"));
  const int32_t count = le32(dh + 32);
  const int64_t used = le64(dh + 24);
  if (count < 0 || used < 128 || used - 128 > (int64_t{1} << 30)) return corrupt("Bad subblock directory size");
  std::vector<uint8_t> dir(static_cast<size_t>(used - 128));
  TW_RETURN_IF_ERROR(read_at(src, dir_at + sizeof dh, dir, "subblock directory"));
  size_t at = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (dir.size() - at < kDirectoryEntry) return corrupt("Premature end of directory when reading directory entry");
    const uint8_t* e = dir.data() + at;
    if (e[0] != 'D' || e[1] != 'V') return corrupt("No magic string \"DV\" in struct header");
    Subblock b;
    b.pixel_type = le32(e + 2);
    b.file_pos = le64(e + 6);
    b.compression = le32(e + 18);
    const int32_t ndim = le32(e + 28);
    at += kDirectoryEntry;
    for (int32_t d = 0; d < ndim; ++d) {
      if (dir.size() - at < kDimensionEntry) return corrupt("Premature end of directory when reading dimension");
      const uint8_t* m = dir.data() + at;
      at += kDimensionEntry;
      const std::string name(reinterpret_cast<const char*>(m), strnlen(reinterpret_cast<const char*>(m), 4));
      const int32_t start = le32(m + 4), size = le32(m + 8), stored = le32(m + 16);
      if (name == "X") {
        if (stored <= 0 || size <= 0) return corrupt("Bad X dimension in directory entry");
        b.x = start;
        b.w = static_cast<uint32_t>(stored);
        b.downsample = (int64_t{size} + stored / 2) / stored;  // in 64 bits: size near INT32_MAX overflows 32
      } else if (name == "Y") {
        if (stored <= 0) return corrupt("Bad Y dimension in directory entry");
        b.y = start;
        b.h = static_cast<uint32_t>(stored);
      } else if (name == "S") {
        b.scene = start;
      } else if (name == "C") {
        b.c = start;
      } else if (name == "Z") {
        b.z = start;
      } else if (name == "T") {
        b.t = start;
      } else if (name == "M") {
        b.m = start;
      } else if (name.size() == 1 && std::string_view("RIHVB").find(name[0]) != std::string_view::npos) {
        // Dimensions of valid files that one image has at index 0: rotations (R), illuminations (I),
        // phases (H), views (V), blocks (B). Several of them are images tilewise does not compose.
        if (start != 0) {
          return unsupported("subblock dimension " + name + " at index " + std::to_string(start) +
                             " (images beyond channels, focal planes and time points) is not read");
        }
      } else {
        return corrupt("Unrecognized subblock dimension \"" + name + "\"");
      }
    }
    if (!b.w || !b.h) return corrupt("Missing X or Y dimension in directory entry");
    if (b.downsample < 1) return corrupt("Bad subblock downsample");
    czi.subblocks.push_back(b);
  }
  if (at != dir.size())
    return corrupt("Found " + std::to_string(dir.size() - at) + " trailing bytes after subblock directory");
  int64_t min_x = INT64_MAX, min_y = INT64_MAX;
  int32_t min_c = INT32_MAX;
  std::set<int32_t> zs, ts;
  for (const Subblock& b : czi.subblocks) {
    min_x = std::min(min_x, b.x), min_y = std::min(min_y, b.y), min_c = std::min(min_c, b.c);
    zs.insert(b.z), ts.insert(b.t);
  }
  // Z and T: the indices the file uses, in order (a focal plane or time point no subblock has is not an
  // image); C from its smallest index, so that channel k stays the metadata's channel k.
  auto rank = [](const std::set<int32_t>& used, int32_t v) {
    return static_cast<int32_t>(std::distance(used.begin(), used.find(v)));
  };
  for (Subblock& b : czi.subblocks) {
    b.x -= min_x, b.y -= min_y;
    // in 64 bits: indices come from the file and may span all of int32
    if (int64_t{b.c} - min_c > 65535) return corrupt("Subblock C index spans more than 65536 channels");
    b.c -= min_c, b.z = rank(zs, b.z), b.t = rank(ts, b.t);
  }
  return czi;
}

Status validate(const Subblock& b) {
  if (b.pixel_type < kGray8 || b.pixel_type > kBgr48) {
    const std::string name = b.pixel_type >= 0 && b.pixel_type < 14 ? pixel_type_name(b.pixel_type)
                                                                      : std::to_string(b.pixel_type);
    return unsupported("Pixel type " + name + " is not supported");
  }
  if (b.compression != 0 && b.compression != 4 && b.compression != 5 && b.compression != 6) {
    static const char* names[] = {"uncompressed", "JPEG", "LZW", "type 3", "JPEG XR", "zstd v0", "zstd v1", "unknown"};
    if (b.compression >= 0 && b.compression < 8)
      return unsupported(std::string(names[b.compression]) + " compression is not supported");
    return unsupported("Compression " + std::to_string(b.compression) + " is not supported");
  }
  return Status();
}

int32_t bytes_per_pixel(int32_t pixel_type) {
  switch (pixel_type) {
    case kGray8: return 1;
    case kGray16: return 2;
    case kGray32Float: return 4;
    case kBgr24: return 3;
    default: return 6;
  }
}

// A level's units are decoded into tiles of the largest subblock width by the largest height: bounded as
// every driver's decode unit is (ModelLimits), so that a subblock that claims a huge size fails at open.
Status check_unit_size(uint32_t w, uint32_t h, const std::string& what, int32_t pixel_type = kBgr24) {
  // RGB renderings take 3 bytes a pixel, own samples their stored size
  if (!ModelLimits{}.unit_fits(w, h, static_cast<uint64_t>(std::max(3, bytes_per_pixel(pixel_type))))) {
    return unsupported(what + ": subblocks of " + std::to_string(w) + " x " + std::to_string(h) + " pixels exceed the " +
                       std::to_string(ModelLimits{}.max_chunk_bytes >> 20) + " MiB decode limit");
  }
  return Status();
}

// The unit of one subblock: the driver's header, then the subblock's data (read from its segment header).
Result<std::pair<uint64_t, uint64_t>> add_unit(const io::Source& src, io::SplicedFile& file, int64_t czi_offset,
                                               const Subblock& b) {
  uint8_t h[48];
  const uint64_t at = offset_of(czi_offset, b.file_pos);
  TW_RETURN_IF_ERROR(read_at(src, at, h, "subblock header"));
  TW_RETURN_IF_ERROR(check_magic(h, "ZISRAWSUBBLOCK"));
  const int32_t meta = le32(h + 32);
  const int64_t data = le64(h + 40);
  if (meta < 0 || data < 0) return corrupt("Bad subblock sizes");
  const uint64_t data_at = at + kSubblockHeader + static_cast<uint64_t>(meta);
  if (!internal::range_inside(data_at, static_cast<uint64_t>(data), src.size())) {
    return corrupt("subblock data at offset " + std::to_string(data_at) + " runs past the end of the file");
  }
  uint8_t head[CziUnitHeader::kSize];
  CziUnitHeader{b.w, b.h, static_cast<uint8_t>(b.pixel_type), static_cast<uint8_t>(b.compression)}.write(head);
  const uint64_t start = file.add_bytes(head);
  file.add_range(data_at, static_cast<uint64_t>(data));
  return std::make_pair(start, file.size() - start);
}

// A level of units up to unit_w x unit_h, described as its subblock `b`: each unit's own description comes
// from its header (UnitStream::kCziSubblock).
LevelModel czi_level_shell(uint32_t unit_w, uint32_t unit_h, const Subblock& b) {
  LevelModel level;
  level.info.tiled = true;
  level.stream = UnitStream::kCziSubblock;
  level.desc.compression = b.compression == 4   ? codecs::Compression::kJpegXr
                           : b.compression == 0 ? codecs::Compression::kNone
                                                : codecs::Compression::kZstd;
  level.info.compression = codecs::compression_name(level.desc.compression);
  const bool grey = b.pixel_type <= kGray32Float;
  level.desc.color = grey ? codecs::ColorSpace::kMinIsBlack : codecs::ColorSpace::kBgr;
  level.desc.samples_per_pixel = grey ? 1 : 3;
  level.desc.bits_per_sample = b.pixel_type == kGray8 || b.pixel_type == kBgr24 ? 8 : b.pixel_type == kGray32Float ? 32 : 16;
  if (b.pixel_type == kGray32Float) level.desc.sample_format = codecs::SampleFormat::kFloat;
  level.desc.width = static_cast<int32_t>(unit_w);
  level.desc.height = static_cast<int32_t>(unit_h);
  level.info.tile_width = level.desc.width;
  level.info.tile_height = level.desc.height;
  return level;
}

// A slide being built: the spliced file its units are read through, each level's placement and units until
// the file is built, the associated images found.
struct Building {
  explicit Building(std::shared_ptr<const io::Source> source) : file(std::move(source)) { model.vendor = "zeiss"; }
  struct Pending {  // an embedded CZI's one subblock
    std::string name;
    uint64_t offset, length;
    Subblock subblock;
  };
  // A plane's levels, with each level's tiles and units until the spliced file is built.
  struct Plane {
    int32_t c = 0, z = 0, t = 0;
    std::vector<LevelModel> levels;
    std::vector<std::vector<PlacedTile>> placements;
    std::vector<UnitTable> tables;
  };
  SlideModel model;
  io::SplicedFile file;
  std::vector<Plane> planes;
  std::vector<Pending> pending;
  std::vector<AssociatedModel> jpegs;
};

// The metadata segment's XML (up to its first NUL), parsed (drivers/zeiss_metadata.h).
Result<Metadata> read_metadata(const io::Source& src, const Czi& czi) {
  uint8_t mh[kSubblockHeader];
  TW_RETURN_IF_ERROR(read_at(src, static_cast<uint64_t>(czi.meta_pos), mh, "metadata header"));
  TW_RETURN_IF_ERROR(check_magic(mh, "ZISRAWMETADATA"));
  const int32_t xml_size = le32(mh + 32);
  if (xml_size < 0 || xml_size > (1 << 28)) return corrupt("Bad metadata size");
  std::string xml(static_cast<size_t>(xml_size), '\0');
  TW_RETURN_IF_ERROR(read_at(src, static_cast<uint64_t>(czi.meta_pos) + sizeof mh,
                             {reinterpret_cast<uint8_t*>(xml.data()), xml.size()}, "metadata XML"));
  xml.resize(strnlen(xml.c_str(), xml.size()));
  return parse_metadata(std::move(xml));
}

// A scene's bounds at level 0: [x1, x2) x [y1, y2).
struct Bounds {
  int64_t x1, y1, x2, y2;
};

// Each scene's bounds at level 0 (openslide.region[i].*, and `bounds`); returns the largest downsample every
// scene has.
Result<int64_t> add_scene_regions(const Czi& czi, int64_t scenes, PropertyMap& props, std::vector<Bounds>* bounds = nullptr) {
  std::vector<int64_t> x1(static_cast<size_t>(scenes), INT64_MAX), y1(x1), x2(static_cast<size_t>(scenes), INT64_MIN),
      y2(x2), max_ds(static_cast<size_t>(scenes), 0);
  for (size_t i = 0; i < czi.subblocks.size(); ++i) {
    const Subblock& b = czi.subblocks[i];
    if (b.scene < 0 || b.scene >= scenes) {
      return corrupt("Subblock " + std::to_string(i) + " specifies out-of-range scene " + std::to_string(b.scene));
    }
    const size_t s = static_cast<size_t>(b.scene);
    max_ds[s] = std::max(max_ds[s], b.downsample);
    if (b.downsample == 1) {
      x1[s] = std::min(x1[s], b.x), y1[s] = std::min(y1[s], b.y);
      x2[s] = std::max(x2[s], b.x + int64_t{b.w}), y2[s] = std::max(y2[s], b.y + int64_t{b.h});
    }
  }
  int64_t common_ds = INT64_MAX;
  for (int64_t s = 0; s < scenes; ++s) {
    const size_t i = static_cast<size_t>(s);
    if (!max_ds[i]) return corrupt("No subblocks for scene " + std::to_string(s));
    const std::string p = "openslide.region[" + std::to_string(s) + "].";
    props[p + "x"] = std::to_string(x1[i]);
    props[p + "y"] = std::to_string(y1[i]);
    props[p + "width"] = std::to_string(x2[i] - x1[i]);
    props[p + "height"] = std::to_string(y2[i] - y1[i]);
    if (bounds) bounds->push_back({x1[i], y1[i], x2[i], y2[i]});
    common_ds = std::min(common_ds, max_ds[i]);
  }

  return common_ds;
}

// The subblocks of each plane, in directory order, keyed by (t, z, c) so that planes come in that order.
using PlaneSubblocks = std::map<std::tuple<int32_t, int32_t, int32_t>, std::vector<size_t>>;

PlaneSubblocks subblocks_by_plane(const Czi& czi) {
  PlaneSubblocks planes;
  for (size_t i = 0; i < czi.subblocks.size(); ++i) {
    const Subblock& b = czi.subblocks[i];
    planes[{b.t, b.z, b.c}].push_back(i);
  }
  return planes;
}

// The downsamples up to `common_ds` that every plane has: each becomes a level.
Result<std::set<int64_t>> plane_downsamples(const Czi& czi, const PlaneSubblocks& planes, int64_t common_ds) {
  std::set<int64_t> shared;
  bool first = true;
  for (const auto& [key, ids] : planes) {
    std::set<int64_t> own;
    for (size_t i : ids) {
      if (czi.subblocks[i].downsample <= common_ds) own.insert(czi.subblocks[i].downsample);
    }
    if (first) {
      shared = std::move(own);
      first = false;
    } else {
      std::set<int64_t> both;
      std::set_intersection(shared.begin(), shared.end(), own.begin(), own.end(), std::inserter(both, both.end()));
      shared.swap(both);
    }
  }
  if (shared.empty() || *shared.begin() != 1) return corrupt("Found no levels in slide");
  return shared;
}

// One plane's levels: one per downsample in `downsamples`, each a positioned grid of the plane's subblocks
// in mosaic order (stable for equal M), their units added to the spliced file.
Status add_plane_levels(const io::Source& src, const Czi& czi, const Metadata& meta, const std::vector<size_t>& ids,
                        const std::set<int64_t>& downsamples, Building::Plane& plane, io::SplicedFile& file) {
  std::map<int64_t, std::vector<size_t>> by_ds;
  for (size_t i : ids) {
    if (downsamples.count(czi.subblocks[i].downsample)) by_ds[czi.subblocks[i].downsample].push_back(i);
  }
  for (auto& [ds, members] : by_ds) {
    // Units in directory order (errors name a subblock as tile (k, 0): the level's k-th subblock); drawn in
    // paint order: OpenSlide 4.0.1 draws a lower mosaic index over a higher one (measured with overlapping
    // tiles in both numberings), so the highest index is painted first.
    uint32_t uw = 0, uh = 0;
    UnitTable table;
    std::vector<PlacedTile> placed;
    for (size_t k = 0; k < members.size(); ++k) {
      const Subblock& sb = czi.subblocks[members[k]];
      TW_RETURN_IF_ERROR(validate(sb));
      uw = std::max(uw, sb.w), uh = std::max(uh, sb.h);
      TW_ASSIGN_OR_RETURN(auto range, add_unit(src, file, 0, sb));
      table.offsets.push_back(range.first);
      table.lengths.push_back(range.second);
      PlacedTile t;
      t.x = std::llround(static_cast<double>(sb.x) / static_cast<double>(ds));
      t.y = std::llround(static_cast<double>(sb.y) / static_cast<double>(ds));
      t.width = static_cast<int32_t>(sb.w);
      t.height = static_cast<int32_t>(sb.h);
      t.unit = static_cast<int64_t>(k);
      placed.push_back(t);
    }
    const Subblock& first = czi.subblocks[members.front()];
    TW_RETURN_IF_ERROR(check_unit_size(uw, uh, "Level of downsample " + std::to_string(ds), first.pixel_type));
    std::vector<size_t> order(members.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    const std::vector<size_t>& in_level = members;  // a structured binding: not capturable before C++20 in clang 14
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return czi.subblocks[in_level[a]].m > czi.subblocks[in_level[b]].m; });
    std::vector<PlacedTile> painted;
    for (size_t k : order) painted.push_back(placed[k]);
    LevelModel level = czi_level_shell(uw, uh, first);
    level.info.width = meta.width / ds;
    level.info.height = meta.height / ds;
    level.info.downsample = static_cast<double>(ds);
    level.tiles_across = static_cast<int64_t>(members.size());
    level.tiles_down = 1;
    plane.levels.push_back(std::move(level));
    plane.placements.push_back(std::move(painted));
    plane.tables.push_back(std::move(table));
  }
  return Status();
}

// The image's axes from its subblocks' pixel type and indices: one BGR channel at one (Z, T) is brightfield
// RGB; grey channels read as their own samples; BGR images with several planes as RGB planes.
Result<ImageAxes> image_axes(const Czi& czi, const PlaneSubblocks& planes, const Metadata& meta) {
  const int32_t type = czi.subblocks.front().pixel_type;
  for (const Subblock& b : czi.subblocks) {
    if (b.pixel_type != type) {
      TW_RETURN_IF_ERROR(validate(b));
      return unsupported(std::string("subblocks of pixel types ") + pixel_type_name(type) + " and " +
                         pixel_type_name(b.pixel_type) + " in one image are not read");
    }
  }
  TW_RETURN_IF_ERROR(validate(czi.subblocks.front()));
  ImageAxes axes;
  axes.channels = 1;
  for (const auto& [key, ids] : planes) {
    axes.t = std::max(axes.t, std::get<0>(key) + 1);
    axes.z = std::max(axes.z, std::get<1>(key) + 1);
    axes.channels = std::max(axes.channels, std::get<2>(key) + 1);
  }
  if (type == kBgr24 || type == kBgr48) {
    if (axes.channels > 1) {
      return unsupported(std::to_string(axes.channels) + " channels of " + pixel_type_name(type) +
                         " samples (several colour channels) are not read");
    }
    axes.channels = 3;
    return axes;  // rgb, uint8: the channels are R, G and B
  }
  axes.rgb = false;
  if (axes.z > 1) {  // Scaling's Z distance, in metres
    auto it = meta.props.find("zeiss.Scaling.Items.Z.Value");
    if (it != meta.props.end()) axes.z_spacing = std::max(0.0, parse_double(it->second).value_or(0.0) * 1e6);
  }
  axes.sample_type = type == kGray8 ? SampleType::kUint8 : type == kGray16 ? SampleType::kUint16 : SampleType::kFloat32;
  axes.channel_info = meta.channels;
  axes.channel_info.resize(static_cast<size_t>(axes.channels));
  for (size_t i = 0; i < axes.channel_info.size(); ++i) {
    if (axes.channel_info[i].name.empty()) axes.channel_info[i].name = "C" + std::to_string(i);
  }
  return axes;
}

// Every plane's levels; a brightfield image keeps its one plane's as the slide's levels only.
Status add_planes(const io::Source& src, const Czi& czi, const Metadata& meta, int64_t common_ds, Building& b) {
  const PlaneSubblocks planes = subblocks_by_plane(czi);
  TW_ASSIGN_OR_RETURN(b.model.axes, image_axes(czi, planes, meta));
  TW_ASSIGN_OR_RETURN(const std::set<int64_t> downsamples, plane_downsamples(czi, planes, common_ds));
  for (const auto& [key, ids] : planes) {
    Building::Plane& plane = b.planes.emplace_back();
    std::tie(plane.t, plane.z, plane.c) = key;
    Status s = add_plane_levels(src, czi, meta, ids, downsamples, plane, b.file);
    if (!s.ok()) {
      return s.with_context("plane (channel " + std::to_string(plane.c) + ", z " + std::to_string(plane.z) + ", t " +
                            std::to_string(plane.t) + ")");
    }
  }
  return Status();
}

// Label, SlidePreview and Thumbnail from the attachment directory: JPEGs, or CZIs of one subblock whose
// units are added to the spliced file.
Status add_attachments(const std::shared_ptr<const io::Source>& source, const Czi& czi, Building& b) {
  const io::Source& src = *source;
  uint8_t ah[kSubblockHeader];
  TW_RETURN_IF_ERROR(read_at(src, static_cast<uint64_t>(czi.att_pos), ah, "attachment directory header"));
  TW_RETURN_IF_ERROR(check_magic(ah, "ZISRAWATTDIR"));
  const int32_t attachments = le32(ah + 32);
  if (attachments < 0 || attachments > 100000) return corrupt("Bad attachment count");
  for (int32_t i = 0; i < attachments; ++i) {
    uint8_t e[128];
    TW_RETURN_IF_ERROR(read_at(src, static_cast<uint64_t>(czi.att_pos) + sizeof ah + 128 * static_cast<uint64_t>(i), e,
                               "attachment directory entry"));
    if (e[0] != 'A' || e[1] != '1') return corrupt("No magic string \"A1\" in struct header");
    const std::string type(reinterpret_cast<const char*>(e + 40), strnlen(reinterpret_cast<const char*>(e + 40), 8));
    const std::string name(reinterpret_cast<const char*>(e + 48), strnlen(reinterpret_cast<const char*>(e + 48), 80));
    const char* ours = name == "Label"          ? "label"
                       : name == "SlidePreview" ? "macro"
                       : name == "Thumbnail"    ? "thumbnail"
                                                : nullptr;
    if (!ours) continue;
    const int64_t seg = le64(e + 12);
    if (!internal::range_inside(static_cast<uint64_t>(seg), kSubblockHeader, src.size())) {
      return corrupt(std::string("Associated image \"") + ours + "\" at offset " + std::to_string(seg) +
                     " is past the end of the file");
    }
    const int64_t data_at = seg + static_cast<int64_t>(kSubblockHeader);
    if (type == "JPG") {
      uint8_t sh[36];
      TW_RETURN_IF_ERROR(read_at(src, static_cast<uint64_t>(seg), sh, "attachment header"));
      const int32_t size = le32(sh + 32);
      auto image = whole_jpeg_level(source, static_cast<uint64_t>(data_at), static_cast<uint64_t>(std::max(size, 0)));
      if (!image.ok()) {
        return image.status().with_context(std::string("Reading JPEG header for associated image \"") + ours + "\"");
      }
      b.jpegs.push_back({ours, std::move(image).value(), {}, {}});
    } else if (type == "CZI") {
      auto inner = read_czi(src, data_at);
      if (!inner.ok())
        return inner.status().with_context(std::string("Reading CZI for associated image \"") + ours + "\"");
      if (inner->subblocks.size() != 1) {
        return corrupt(std::string("Embedded CZI for associated image \"") + ours + "\" has " +
                       std::to_string(inner->subblocks.size()) + " subblocks, expected one");
      }
      const Subblock& sb = inner->subblocks[0];
      TW_RETURN_IF_ERROR(validate(sb).with_context(std::string("Adding associated image \"") + ours + "\""));
      TW_RETURN_IF_ERROR(check_unit_size(sb.w, sb.h, std::string("Associated image \"") + ours + "\""));
      TW_ASSIGN_OR_RETURN(auto range, add_unit(src, b.file, data_at, sb));
      b.pending.push_back({ours, range.first, range.second, sb});
    } else {
      return corrupt(std::string("Associated image \"") + ours + "\" has unrecognized type \"" + type + "\"");
    }
  }
  return Status();
}

// The spliced file built, the planes' levels and the embedded images read from it, the JPEGs after them.
void finish(Building& b) {
  const std::shared_ptr<const io::Source> spliced = b.file.build();
  const auto parts = single_part(spliced);
  for (Building::Plane& plane : b.planes) {
    for (size_t i = 0; i < plane.levels.size(); ++i) {
      LevelModel& l = plane.levels[i];
      l.units = std::make_shared<const UnitTable>(std::move(plane.tables[i]));
      l.parts = parts;
      l.placement = make_placement(std::move(plane.placements[i]));
    }
  }
  SlideModel& model = b.model;
  model.levels = b.planes.front().levels;
  const bool brightfield = model.axes.rgb && b.planes.size() == 1;
  for (Building::Plane& plane : b.planes) {
    if (brightfield) break;
    model.planes.push_back({plane.c, model.axes.rgb ? 3 : 1, plane.z, plane.t, std::move(plane.levels)});
  }
  for (const Building::Pending& p : b.pending) {  // embedded CZIs: their one subblock through the spliced file
    LevelModel image = czi_level_shell(p.subblock.w, p.subblock.h, p.subblock);
    image.info.width = p.subblock.w;
    image.info.height = p.subblock.h;
    image.tiles_across = image.tiles_down = 1;
    image.parts = single_part(spliced);
    image.units = std::make_shared<const UnitTable>(UnitTable{{p.offset}, {p.length}, {}});
    b.model.associated.push_back({p.name, std::move(image), {}, {}});
  }
  for (AssociatedModel& a : b.jpegs) b.model.associated.push_back(std::move(a));

}

// The file's subblocks narrowed to scene `scene`, moved so that its bounds start at (0, 0): the image of
// OpenOptions::scene, one scene of the level-0 size of its bounds.
void narrow_to_scene(Czi& czi, int32_t scene, const Bounds& bounds, Metadata& meta) {
  std::erase_if(czi.subblocks, [&](const Subblock& b) { return b.scene != scene; });
  for (Subblock& b : czi.subblocks) b.scene = 0, b.x -= bounds.x1, b.y -= bounds.y1;
  meta.width = bounds.x2 - bounds.x1;
  meta.height = bounds.y2 - bounds.y1;
  meta.scenes = 1;
  std::erase_if(meta.props, [](const auto& p) { return p.first.rfind("openslide.region[", 0) == 0; });
}

Result<SlideModel> open(const Probe& probe) {
  const io::Source& src = *probe.source;
  TW_ASSIGN_OR_RETURN(Czi czi, read_czi(src, 0));
  TW_ASSIGN_OR_RETURN(Metadata meta, read_metadata(src, czi));
  PropertyMap& props = meta.props;
  std::vector<Bounds> bounds;
  TW_ASSIGN_OR_RETURN(int64_t common_ds, add_scene_regions(czi, meta.scenes, props, &bounds));
  std::vector<SceneInfo> scenes;
  for (size_t i = 0; meta.scenes > 1 && i < bounds.size(); ++i) {
    auto name = meta.scene_names.find(static_cast<int64_t>(i));
    scenes.push_back({name != meta.scene_names.end() && !name->second.empty() ? name->second : "Scene " + std::to_string(i),
                      bounds[i].x2 - bounds[i].x1, bounds[i].y2 - bounds[i].y1});
  }
  if (probe.scene && *probe.scene < static_cast<int64_t>(scenes.size())) {
    narrow_to_scene(czi, *probe.scene, bounds[static_cast<size_t>(*probe.scene)], meta);
    TW_ASSIGN_OR_RETURN(common_ds, add_scene_regions(czi, 1, props));
  }
  Building b(probe.source);
  b.model.scenes = std::move(scenes);
  TW_RETURN_IF_ERROR(add_planes(src, czi, meta, common_ds, b));
  TW_RETURN_IF_ERROR(add_attachments(probe.source, czi, b));
  finish(b);
  SlideModel& model = b.model;
  const std::string& xml = meta.xml;

  Quickhash hash;
  hash.update(czi.primary_guid, 16);
  hash.update(czi.file_guid, 16);
  hash.update(xml.c_str(), xml.size() + 1);
  props["openslide.quickhash-1"] = hash.hex();
  add_standard_properties(model, props);
  drop_tile_size_properties(model);
  return std::move(model);
}

}  // namespace

const FormatDriver kZeissDriver = {"zeiss", Reads::kSource, &detect, &open};

}  // namespace tilewise::formats
