// 3DHISTECH MIRAX (OpenSlide's "mirax" vendor): `slide.mrxs` beside a folder `slide/` holding Slidedat.ini
// (a key file, at most 1 MiB), an index file and data files. OpenSlide 4.0.1's reading, followed here:
//
// - Slidedat.ini: [GENERAL] SLIDE_ID, IMAGENUMBER_X/Y (camera images across and down at level 0),
//   OBJECTIVE_MAGNIFICATION, CameraImageDivisionsPerSide (images per camera photo along a side, default 1);
//   [HIERARCHICAL] HIER_0 must be "Slide zoom level", its values' sections describe the zoom levels
//   (IMAGE_CONCAT_FACTOR, OVERLAP_X/Y, MICROMETER_PER_PIXEL_X/Y, IMAGE_FILL_COLOR_BGR, DIGITIZER_WIDTH/
//   HEIGHT: the size of every stored image, IMAGE_FORMAT JPEG/PNG/BMP24); NONHIER_* name the other
//   records (camera positions, label, macro, thumbnail) and INDEXFILE the index; [DATAFILE] the data files.
// - The index: "01.02" + SLIDE_ID, then the root of the hierarchical records (one per zoom level: a chain
//   of pages of (image index, offset, length, data file) entries) and of the others (one data extent each).
// - Geometry: zoom level k's images each hold 2^k x 2^k level-0 images, downsampled (its concat factor).
//   A camera photo is split into CameraImageDivisionsPerSide^2 images placed edge to edge at the photo's
//   position (VIMSLIDE_POSITION_BUFFER, or the zlib-compressed StitchingIntensityLayer: 9 bytes per
//   photo, a flag and x, y); without positions they follow the nominal overlap. Once a level's images
//   hold more than one photo, each image is cut into one tile per photo, each at its photo's position
//   (divided by the level's concat factor). Tiles overlap where photos do; OpenSlide paints them from the
//   bottom-right up, so of two overlapping tiles the one earlier in row-major order shows: the level is a
//   positioned grid (formats::Placement) in that paint order. Photos absent at level 0 are left out of
//   every level; pixels no tile covers are background (transparent through tilewise.openslide).
// - Positions that are not whole pixels of a level (a position not divisible by the level's concat factor)
//   are rounded to the nearest pixel; OpenSlide paints them through cairo at the fraction (bilinear), so
//   such tiles differ from OpenSlide's by that resampling. Level sizes, downsamples (the ratio of concat
//   factors, in integers), tile-size hints (only where every tile sits on its nominal grid with no
//   overlap), properties (mirax.<group>.<key> for every key; objective power; mpp; background colour from
//   the fill colour) and quickhash-1 (SHA-256 of Slidedat.ini, then of every image of the last zoom level
//   in index order) are OpenSlide's.
// - Associated images (JPEG only, as OpenSlide): macro (ScanDataLayer_SlideThumbnail), label
//   (ScanDataLayer_SlideBarcode), thumbnail (ScanDataLayer_SlidePreview).
#include <libdeflate.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "codecs/jpeg/markers.h"
#include "formats/format_registry.h"
#include "formats/key_file.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"
#include "util/checked_math.h"
#include "util/bytes.h"

namespace tilewise::formats {

namespace {

constexpr const char* kSuffix = ".mrxs";
constexpr uint64_t kMaxSlidedat = 1 << 20;
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;
constexpr const char* kIndexVersion = "01.02";
constexpr int kPositionRecord = 9;

Status detect(const Probe& probe) {
  const io::Source& source = *probe.source;
  if (!source.name().ends_with(kSuffix)) return unsupported("Not a MIRAX slide");
  return Status();
}

// One zoom level's section of Slidedat.ini.
struct ZoomSection {
  int64_t concat_exponent = 0;
  double overlap_x = 0, overlap_y = 0, mpp_x = 0, mpp_y = 0;
  int64_t fill_bgr = 0;
  codecs::Compression format = codecs::Compression::kJpeg;
  int64_t image_w = 0, image_h = 0;
};

// Typed access to Slidedat.ini with OpenSlide's error texts.
class Slidedat {
 public:
  explicit Slidedat(KeyFile file) : file_(std::move(file)) {}
  const KeyFile& file() const { return file_; }
  Result<const KeyList*> group(const std::string& name) const {
    auto it = file_.find(name);
    if (it == file_.end()) return corrupt("Can't find " + name + " group");
    return &it->second;
  }
  Result<std::string> value(const std::string& group_name, const std::string& key) const {
    TW_ASSIGN_OR_RETURN(const KeyList* g, group(group_name));
    const std::string* v = find_key(*g, key);
    if (!v) return corrupt("Key file does not have key \"" + key + "\" in group \"" + group_name + "\"");
    return *v;
  }
  Result<int64_t> integer(const std::string& group_name, const std::string& key) const {
    TW_ASSIGN_OR_RETURN(std::string v, value(group_name, key));
    auto n = parse_int64(v);
    if (!n || *n < INT32_MIN || *n > INT32_MAX) {
      return corrupt("Key file contains key \"" + key + "\" in group \"" + group_name +
                     "\" which has a value that cannot be interpreted.");
    }
    return *n;
  }
  Result<double> number(const std::string& group_name, const std::string& key) const {
    TW_ASSIGN_OR_RETURN(std::string v, value(group_name, key));
    auto n = parse_double(v);
    if (!n)
      return corrupt("Key file contains key \"" + key + "\" in group \"" + group_name +
                     "\" which has a value that cannot be interpreted.");
    return *n;
  }

 private:
  KeyFile file_;
};

Status positive(int64_t v, const char* what) {
  return v > 0 ? Status() : corrupt(std::string(what) + " <= 0: " + std::to_string(v));
}

Result<codecs::Compression> image_format(const std::string& name) {
  if (name == "JPEG") return codecs::Compression::kJpeg;
  if (name == "PNG") return codecs::Compression::kPng;
  if (name == "BMP24") return codecs::Compression::kBmp;
  return corrupt("Unrecognized image format: " + name);
}

// The records named by NONHIER_* keys: each name has NONHIER_i_COUNT values, numbered across all names.
struct NonhierRecord {
  int64_t record = -1;  // -1: the name or value is absent
  std::string section;
};

Result<NonhierRecord> nonhier_record(const Slidedat& sd, int64_t nonhier_count, const std::string& name,
                                     const std::string* value) {
  int64_t offset = 0;
  for (int64_t i = 0; i < nonhier_count; ++i) {
    const std::string p = "NONHIER_" + std::to_string(i);
    TW_ASSIGN_OR_RETURN(std::string n, sd.value("HIERARCHICAL", p + "_NAME"));
    TW_ASSIGN_OR_RETURN(int64_t count, sd.integer("HIERARCHICAL", p + "_COUNT"));
    if (count == 0) return corrupt("Nonhier val count is zero");
    if (n != name) {
      offset += count;
      continue;
    }
    if (!value) return NonhierRecord{offset, {}};
    for (int64_t j = 0; j < count; ++j) {
      const std::string v = p + "_VAL_" + std::to_string(j);
      TW_ASSIGN_OR_RETURN(std::string got, sd.value("HIERARCHICAL", v));
      if (got == *value) {
        TW_ASSIGN_OR_RETURN(std::string section, sd.value("HIERARCHICAL", v + "_SECTION"));
        return NonhierRecord{offset + j, section};
      }
    }
    return NonhierRecord{};
  }
  return NonhierRecord{};
}

// The index file, read whole, with bounds-checked little-endian reads naming what was being read.
class Index {
 public:
  explicit Index(std::vector<uint8_t> bytes) : b_(std::move(bytes)) {}
  Result<int32_t> i32(uint64_t at, const char* what) const {
    if (at > b_.size() || b_.size() - at < 4) return corrupt(std::string("Can't read ") + what);
    return static_cast<int32_t>(internal::load_le32(b_.data() + at));
  }
  bool starts_with(const std::string& s) const {
    return b_.size() >= s.size() && std::memcmp(b_.data(), s.data(), s.size()) == 0;
  }
  uint64_t size() const { return b_.size(); }

 private:
  std::vector<uint8_t> b_;
};

// A data file extent: (file, offset, length).
struct Extent {
  int32_t file = 0;
  int64_t offset = 0, length = 0;
};

Result<Extent> read_nonhier(const Index& index, uint64_t nonhier_root, int64_t record, int64_t file_count) {
  TW_ASSIGN_OR_RETURN(int32_t table, index.i32(nonhier_root, "initial nonhier pointer"));
  TW_ASSIGN_OR_RETURN(int32_t ptr,
                      index.i32(static_cast<uint64_t>(table) + 4 * static_cast<uint64_t>(record), "nonhier record"));
  TW_ASSIGN_OR_RETURN(int32_t zero, index.i32(static_cast<uint32_t>(ptr), "nonhier record"));
  if (zero != 0) return corrupt("Expected 0 value at beginning of data page");
  TW_ASSIGN_OR_RETURN(int32_t page, index.i32(static_cast<uint32_t>(ptr) + 4, "initial data page pointer"));
  const uint64_t at = static_cast<uint32_t>(page);
  TW_ASSIGN_OR_RETURN(int32_t one, index.i32(at, "data page"));
  if (one != 1) return corrupt("Expected 1 value");
  // The next word is sometimes 1253 (OpenSlide ignores it), then two zeroes.
  TW_ASSIGN_OR_RETURN(int32_t second, index.i32(at + 8, "data page"));
  if (second != 0) return corrupt("Expected second 0 value");
  TW_ASSIGN_OR_RETURN(int32_t third, index.i32(at + 12, "data page"));
  if (third != 0) return corrupt("Expected third 0 value");
  Extent e;
  TW_ASSIGN_OR_RETURN(int32_t offset, index.i32(at + 16, "position"));
  TW_ASSIGN_OR_RETURN(int32_t length, index.i32(at + 20, "size"));
  TW_ASSIGN_OR_RETURN(e.file, index.i32(at + 24, "fileno"));
  if (offset < 0 || length < 0) return corrupt("Invalid nonhier record extent");
  if (e.file < 0 || e.file >= file_count) return corrupt("Invalid fileno " + std::to_string(e.file));
  e.offset = offset;
  e.length = length;
  return e;
}

// The slide's files, opened when first needed (OpenSlide opens a data file only to read it).
class DataFiles {
 public:
  DataFiles(std::vector<std::string> paths) : paths_(std::move(paths)), sources_(paths_.size()) {}
  int64_t count() const { return static_cast<int64_t>(paths_.size()); }
  Result<std::shared_ptr<const io::Source>> get(int32_t i) {
    auto& s = sources_[static_cast<size_t>(i)];
    if (!s) {
      auto opened = io::open_file(paths_[static_cast<size_t>(i)]);
      if (!opened.ok()) return opened.status();
      s = std::move(opened).value();
    }
    return s;
  }

 private:
  std::vector<std::string> paths_;
  std::vector<std::shared_ptr<const io::Source>> sources_;
};

// The camera positions (level-0 pixels) of every photo, from the position record or the nominal overlap.
Result<std::vector<int64_t>> camera_positions(const Index& index, uint64_t nonhier_root, DataFiles& files,
                                              int64_t record, bool compressed, int64_t images_x, int64_t images_y,
                                              int64_t divisions, const ZoomSection& s0, int64_t concat0) {
  const int64_t across = images_x / divisions;
  const int64_t count = across * (images_y / divisions);
  std::vector<int64_t> pos(static_cast<size_t>(count) * 2);
  if (record < 0) {
    for (int64_t i = 0; i < count; ++i) {
      // OpenSlide stores these as int: the products truncate toward zero.
      pos[2 * i] = static_cast<int64_t>(static_cast<double>(i % across) *
                                        (static_cast<double>(s0.image_w * divisions) - s0.overlap_x));
      pos[2 * i + 1] = static_cast<int64_t>(static_cast<double>(i / across) *
                                            (static_cast<double>(s0.image_h * divisions) - s0.overlap_y));
    }
    return pos;
  }
  auto e = read_nonhier(index, nonhier_root, record, files.count());
  if (!e.ok()) return e.status().with_context("Cannot read slide position info");
  TW_ASSIGN_OR_RETURN(std::shared_ptr<const io::Source> src, files.get(e->file));
  if (!internal::range_inside(static_cast<uint64_t>(e->offset), static_cast<uint64_t>(e->length), src->size())) {
    return corrupt("Cannot read slide position record: it runs past the end of " + src->name());
  }
  std::vector<uint8_t> raw(static_cast<size_t>(e->length));
  TW_RETURN_IF_ERROR(src->pread(raw, static_cast<uint64_t>(e->offset)));
  const size_t expected = static_cast<size_t>(count) * kPositionRecord;
  std::vector<uint8_t> buffer;
  if (compressed) {
    buffer.resize(expected);
    libdeflate_decompressor* d = libdeflate_alloc_decompressor();
    if (!d) return out_of_memory("cannot allocate a zlib decompressor");
    size_t got = 0;
    const libdeflate_result r =
        libdeflate_zlib_decompress(d, raw.data(), raw.size(), buffer.data(), buffer.size(), &got);
    libdeflate_free_decompressor(d);
    if (r == LIBDEFLATE_SHORT_OUTPUT || (r == LIBDEFLATE_SUCCESS && got != expected)) {
      return corrupt("Error decompressing position buffer: Short read while decompressing: " + std::to_string(got) +
                     "/" + std::to_string(expected));
    }
    if (r != LIBDEFLATE_SUCCESS) return corrupt("Error decompressing position buffer: Decompression failure");
  } else {
    if (raw.size() != expected) return corrupt("Slide position file not of the expected size");
    buffer = std::move(raw);
  }
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* p = buffer.data() + i * kPositionRecord;
    if (p[0] & 0xfe) return corrupt("Unexpected flag value (" + std::to_string(static_cast<int8_t>(p[0])) + ")");
    auto le = [](const uint8_t* q) {
      return static_cast<int32_t>(uint32_t{q[0]} | uint32_t{q[1]} << 8 | uint32_t{q[2]} << 16 | uint32_t{q[3]} << 24);
    };
    pos[2 * i] = int64_t{le(p + 1)} * concat0;
    pos[2 * i + 1] = int64_t{le(p + 5)} * concat0;
  }
  return pos;
}

// What OpenSlide derives per zoom level (see the header comment).
struct LevelParams {
  int64_t concat = 1;              // level-0 images per image along a side
  int64_t tile_count_divisor = 1;  // image coordinate -> tile column divisor
  int64_t tiles_per_image = 1;     // tiles along a side of one image
  int64_t positions_per_tile = 1;  // camera photos along a side of one tile
  double tile_w = 0, tile_h = 0, advance_x = 0, advance_y = 0;
};

struct Tile {
  int64_t col, row;
  PlacedTile placed;
};

class Builder {
 public:
  Builder(const Slidedat& sd, DataFiles& files, const Index& index) : sd_(sd), files_(files), index_(index) {}
  Result<SlideModel> build(std::shared_ptr<const io::Source> slidedat);

 private:
  Status read_level_tiles(size_t z, uint64_t pointer_at, std::vector<Tile>& tiles, std::vector<HashedRange>* hash,
                          std::vector<Extent>& units);
  bool tile_position(size_t z, int64_t xx, int64_t yy, int64_t& px, int64_t& py);
  Status read_sections();
  Status find_records();
  Status compute_geometry();
  Status read_positions();
  Status add_associated(SlideModel& model);
  Status add_level(size_t z, int32_t hier_table, std::vector<HashedRange>& hashed, SlideModel& model);
  Status add_properties(const std::vector<HashedRange>& hashed, SlideModel& model);

  struct Associated {  // an associated image's record in the non-hierarchical index
    const char* name;
    const char* value;
    const char* type_key;
    NonhierRecord record;
  };

  const Slidedat& sd_;
  DataFiles& files_;
  const Index& index_;
  int64_t images_x_ = 0, images_y_ = 0, divisions_ = 1;
  std::vector<ZoomSection> sections_;
  std::vector<LevelParams> params_;
  std::vector<int64_t> positions_;
  std::set<int64_t> active_;  // photos with an image at level 0
  std::string slide_id_;
  int64_t objective_ = 0, nonhier_count_ = 0;
  NonhierRecord vimslide_, stitching_;  // the camera positions' records (raw, zlib)
  std::vector<Associated> associated_;
  int64_t base_w_ = 0, base_h_ = 0;  // level 0's size
  uint64_t hier_root_ = 0, nonhier_root_ = 0;
  bool hints_ = true;  // every level's tiles on their nominal grid (OpenSlide then gives tile sizes)
};

bool Builder::tile_position(size_t z, int64_t xx, int64_t yy, int64_t& px, int64_t& py) {
  const int64_t xp = xx / divisions_, yp = yy / divisions_;
  const int64_t across = images_x_ / divisions_;
  const int64_t cp = yp * across + xp;
  // A photo beyond the position table (an image count that is not a multiple of the divisions): OpenSlide
  // reads past its table there; tilewise leaves the tile out.
  if (xp >= across || cp < 0 || 2 * cp + 1 >= static_cast<int64_t>(positions_.size())) return false;
  px = positions_[static_cast<size_t>(2 * cp)] + sections_[0].image_w * (xx - xp * divisions_);
  py = positions_[static_cast<size_t>(2 * cp + 1)] + sections_[0].image_h * (yy - yp * divisions_);
  if (z == 0) {
    // Where a level-0 image merges several photos, inactive photos may sit at (0, 0): only photo (0, 0)
    // can be there.
    if (positions_[static_cast<size_t>(2 * cp)] == 0 && positions_[static_cast<size_t>(2 * cp + 1)] == 0 &&
        (xp != 0 || yp != 0)) {
      return false;
    }
    active_.insert(cp);
    return true;
  }
  const int64_t n = params_[z].positions_per_tile;
  for (int64_t y = yp; y < yp + n; ++y) {
    for (int64_t x = xp; x < xp + n; ++x) {
      if (active_.count(y * across + x)) return true;
    }
  }
  return false;
}

Status Builder::read_level_tiles(size_t z, uint64_t pointer_at, std::vector<Tile>& tiles,
                                 std::vector<HashedRange>* hash, std::vector<Extent>& units) {
  const LevelParams& lp = params_[z];
  TW_ASSIGN_OR_RETURN(int32_t ptr, index_.i32(pointer_at, "zoom level pointer"));
  TW_ASSIGN_OR_RETURN(int32_t zero, index_.i32(static_cast<uint32_t>(ptr), "start of data pages"));
  if (zero != 0) return corrupt("Expected 0 value at beginning of data page");
  TW_ASSIGN_OR_RETURN(int32_t page, index_.i32(static_cast<uint32_t>(ptr) + 4, "initial data page pointer"));
  const int64_t units_across = (images_x_ + lp.concat - 1) / lp.concat;
  const int64_t units_down = (images_y_ + lp.concat - 1) / lp.concat;
  units.assign(static_cast<size_t>(units_across * units_down), Extent{});
  // Pages form a chain; a chain longer than the index has pages is a loop.
  uint64_t at = static_cast<uint32_t>(page);
  for (uint64_t pages = 0;; ++pages) {
    if (pages > index_.size() / 8) return corrupt("Data pages of zoom level " + std::to_string(z) + " form a loop");
    TW_ASSIGN_OR_RETURN(int32_t len, index_.i32(at, "page length"));
    TW_ASSIGN_OR_RETURN(int32_t next, index_.i32(at + 4, "\"next\" pointer"));
    if (len < 0 || static_cast<uint64_t>(len) > (index_.size() - std::min(index_.size(), at + 8)) / 16) {
      return corrupt("Can't read page length");
    }
    for (int32_t i = 0; i < len; ++i) {
      const uint64_t e = at + 8 + 16 * static_cast<uint64_t>(i);
      TW_ASSIGN_OR_RETURN(int32_t image_index, index_.i32(e, "image index"));
      TW_ASSIGN_OR_RETURN(int32_t offset, index_.i32(e + 4, "image offset"));
      TW_ASSIGN_OR_RETURN(int32_t length, index_.i32(e + 8, "image length"));
      TW_ASSIGN_OR_RETURN(int32_t fileno, index_.i32(e + 12, "image fileno"));
      if (image_index < 0) return corrupt("image_index < 0");
      if (offset < 0) return corrupt("offset < 0");
      if (length < 0) return corrupt("length < 0");
      if (fileno < 0) return corrupt("fileno < 0");
      const int64_t x = image_index % images_x_, y = image_index / images_x_;
      if (y >= images_y_) {
        return corrupt("y (" + std::to_string(y) + ") outside of bounds for zoom level (" + std::to_string(z) + ")");
      }
      if (x % lp.concat)
        return corrupt("x (" + std::to_string(x) + ") not correct multiple for zoom level (" + std::to_string(z) + ")");
      if (y % lp.concat)
        return corrupt("y (" + std::to_string(y) + ") not correct multiple for zoom level (" + std::to_string(z) + ")");
      if (fileno >= files_.count()) return corrupt("Invalid fileno");
      const int64_t unit = (y / lp.concat) * units_across + x / lp.concat;
      units[static_cast<size_t>(unit)] = Extent{fileno, offset, length};
      if (hash) {
        auto src = files_.get(fileno);
        if (!src.ok()) return src.status().with_context("Can't hash images");
        hash->push_back({src->get(), static_cast<uint64_t>(offset), static_cast<uint64_t>(length)});
      }
      for (int64_t yi = 0; yi < lp.tiles_per_image; ++yi) {
        const int64_t yy = y + yi * divisions_;
        if (yy >= images_y_) break;
        for (int64_t xi = 0; xi < lp.tiles_per_image; ++xi) {
          const int64_t xx = x + xi * divisions_;
          if (xx >= images_x_) break;
          int64_t px = 0, py = 0;
          if (!tile_position(z, xx, yy, px, py)) continue;
          Tile t;
          t.col = x / lp.tile_count_divisor + xi;
          t.row = y / lp.tile_count_divisor + yi;
          t.placed.x = std::llround(static_cast<double>(px) / static_cast<double>(lp.concat));
          t.placed.y = std::llround(static_cast<double>(py) / static_cast<double>(lp.concat));
          t.placed.width = static_cast<int32_t>(std::ceil(lp.tile_w));
          t.placed.height = static_cast<int32_t>(std::ceil(lp.tile_h));
          t.placed.src_x = static_cast<int32_t>(std::llround(lp.tile_w * static_cast<double>(xi)));
          t.placed.src_y = static_cast<int32_t>(std::llround(lp.tile_h * static_cast<double>(yi)));
          t.placed.unit = unit;
          tiles.push_back(t);
        }
      }
    }
    if (next == 0) break;
    at = static_cast<uint32_t>(next);
  }
  return Status();
}

// GENERAL and HIERARCHICAL: the photo grid, the slide id, the objective, and one ZoomSection per level.
Status Builder::read_sections() {
  TW_ASSIGN_OR_RETURN(const KeyList* general, sd_.group("GENERAL"));
  TW_ASSIGN_OR_RETURN(slide_id_, sd_.value("GENERAL", "SLIDE_ID"));
  TW_RETURN_IF_ERROR(sd_.value("GENERAL", "SLIDE_VERSION").status());
  TW_ASSIGN_OR_RETURN(images_x_, sd_.integer("GENERAL", "IMAGENUMBER_X"));
  TW_ASSIGN_OR_RETURN(images_y_, sd_.integer("GENERAL", "IMAGENUMBER_Y"));
  TW_ASSIGN_OR_RETURN(objective_, sd_.integer("GENERAL", "OBJECTIVE_MAGNIFICATION"));
  divisions_ = key_integer(*general, "CameraImageDivisionsPerSide").value_or(1);
  TW_RETURN_IF_ERROR(positive(images_x_, "images_x"));
  TW_RETURN_IF_ERROR(positive(images_y_, "images_y"));
  TW_RETURN_IF_ERROR(positive(divisions_, "image_divisions"));
  if (images_x_ * images_y_ > (int64_t{1} << 26)) return corrupt("Too many images");

  TW_RETURN_IF_ERROR(sd_.group("HIERARCHICAL").status());
  TW_ASSIGN_OR_RETURN(int64_t hier_count, sd_.integer("HIERARCHICAL", "HIER_COUNT"));
  TW_ASSIGN_OR_RETURN(nonhier_count_, sd_.integer("HIERARCHICAL", "NONHIER_COUNT"));
  TW_RETURN_IF_ERROR(positive(hier_count, "hier_count"));
  if (nonhier_count_ < 0) return corrupt("nonhier_count < 0: " + std::to_string(nonhier_count_));
  int64_t zoom_hier = -1;
  for (int64_t i = 0; i < hier_count && zoom_hier < 0; ++i) {
    TW_ASSIGN_OR_RETURN(std::string name, sd_.value("HIERARCHICAL", "HIER_" + std::to_string(i) + "_NAME"));
    if (name == "Slide zoom level") zoom_hier = i;
  }
  if (zoom_hier < 0) return corrupt("Can't find slide zoom level");
  if (zoom_hier != 0) return corrupt("Slide zoom level not HIER_0");
  TW_ASSIGN_OR_RETURN(std::string index_name, sd_.value("HIERARCHICAL", "INDEXFILE"));
  TW_ASSIGN_OR_RETURN(int64_t zoom_levels, sd_.integer("HIERARCHICAL", "HIER_0_COUNT"));
  TW_RETURN_IF_ERROR(positive(zoom_levels, "zoom_levels"));
  if (zoom_levels > 31) return corrupt("Too many zoom levels: " + std::to_string(zoom_levels));
  for (int64_t i = 0; i < zoom_levels; ++i) {
    TW_ASSIGN_OR_RETURN(std::string group, sd_.value("HIERARCHICAL", "HIER_0_VAL_" + std::to_string(i) + "_SECTION"));
    TW_RETURN_IF_ERROR(sd_.group(group).status());
    ZoomSection s;
    TW_ASSIGN_OR_RETURN(s.concat_exponent, sd_.integer(group, "IMAGE_CONCAT_FACTOR"));
    TW_ASSIGN_OR_RETURN(s.overlap_x, sd_.number(group, "OVERLAP_X"));
    TW_ASSIGN_OR_RETURN(s.overlap_y, sd_.number(group, "OVERLAP_Y"));
    TW_ASSIGN_OR_RETURN(s.mpp_x, sd_.number(group, "MICROMETER_PER_PIXEL_X"));
    TW_ASSIGN_OR_RETURN(s.mpp_y, sd_.number(group, "MICROMETER_PER_PIXEL_Y"));
    TW_ASSIGN_OR_RETURN(s.fill_bgr, sd_.integer(group, "IMAGE_FILL_COLOR_BGR"));
    TW_ASSIGN_OR_RETURN(s.image_w, sd_.integer(group, "DIGITIZER_WIDTH"));
    TW_ASSIGN_OR_RETURN(s.image_h, sd_.integer(group, "DIGITIZER_HEIGHT"));
    if (i == 0 && s.concat_exponent < 0)
      return corrupt("hs->concat_exponent < 0: " + std::to_string(s.concat_exponent));
    if (i > 0) TW_RETURN_IF_ERROR(positive(s.concat_exponent, "hs->concat_exponent"));
    TW_RETURN_IF_ERROR(positive(s.image_w, "hs->image_w"));
    TW_RETURN_IF_ERROR(positive(s.image_h, "hs->image_h"));
    if (!ModelLimits{}.unit_fits(static_cast<uint64_t>(s.image_w), static_cast<uint64_t>(s.image_h))) {
      return unsupported("images of " + std::to_string(s.image_w) + "x" + std::to_string(s.image_h) +
                         " pixels are too large");
    }
    TW_ASSIGN_OR_RETURN(std::string format, sd_.value(group, "IMAGE_FORMAT"));
    TW_ASSIGN_OR_RETURN(s.format, image_format(format));
    sections_.push_back(s);
  }

  return Status();
}

// The non-hierarchical records: the camera positions (VIMSLIDE_POSITION_BUFFER raw, else
// StitchingIntensityLayer zlib) and the associated images (JPEG only).
Status Builder::find_records() {
  TW_ASSIGN_OR_RETURN(vimslide_, nonhier_record(sd_, nonhier_count_, "VIMSLIDE_POSITION_BUFFER", nullptr));
  if (vimslide_.record < 0) {
    TW_ASSIGN_OR_RETURN(stitching_, nonhier_record(sd_, nonhier_count_, "StitchingIntensityLayer", nullptr));
  }
  associated_ = {{"macro", "ScanDataLayer_SlideThumbnail", "THUMBNAIL_IMAGE_TYPE", {}},
                                        {"label", "ScanDataLayer_SlideBarcode", "BARCODE_IMAGE_TYPE", {}},
                                        {"thumbnail", "ScanDataLayer_SlidePreview", "PREVIEW_IMAGE_TYPE", {}}};
  for (Associated& a : associated_) {
    const std::string value = a.value;
    TW_ASSIGN_OR_RETURN(a.record, nonhier_record(sd_, nonhier_count_, "Scan data layer", &value));
    if (a.record.record < 0) continue;
    TW_ASSIGN_OR_RETURN(std::string type, sd_.value(a.record.section, a.type_key));
    TW_ASSIGN_OR_RETURN(codecs::Compression c, image_format(type));
    if (c != codecs::Compression::kJpeg) return corrupt("Unsupported associated image format: " + type);
  }

  return Status();
}

// Level geometry (OpenSlide's arithmetic, including its truncations): level 0's size and each level's
// concatenation, tile counts and advance.
Status Builder::compute_geometry() {
  const ZoomSection& s0 = sections_[0];
  const bool have_positions = vimslide_.record >= 0 || stitching_.record >= 0;
  for (int64_t i = 0; i < images_x_; ++i) {
    const bool full = (i % divisions_) != divisions_ - 1 || i == images_x_ - 1;
    base_w_ =
        static_cast<int64_t>(static_cast<double>(base_w_) +
                             (full ? static_cast<double>(s0.image_w) : static_cast<double>(s0.image_w) - s0.overlap_x));
  }
  for (int64_t i = 0; i < images_y_; ++i) {
    const bool full = (i % divisions_) != divisions_ - 1 || i == images_y_ - 1;
    base_h_ =
        static_cast<int64_t>(static_cast<double>(base_h_) +
                             (full ? static_cast<double>(s0.image_h) : static_cast<double>(s0.image_h) - s0.overlap_y));
  }
  int64_t total_exponent = 0;
  for (size_t z = 0; z < sections_.size(); ++z) {
    const ZoomSection& s = sections_[z];
    LevelParams lp;
    total_exponent += s.concat_exponent;
    if (total_exponent > 30) return corrupt("Concat factors too large");
    lp.concat = int64_t{1} << total_exponent;
    const int64_t positions_per_image = std::max<int64_t>(1, lp.concat / divisions_);
    if (have_positions || s0.overlap_x != 0 || s0.overlap_y != 0) {
      lp.tile_count_divisor = std::min(lp.concat, divisions_);
      lp.tiles_per_image = positions_per_image;
      lp.positions_per_tile = 1;
    } else {
      lp.tile_count_divisor = lp.concat;
      lp.tiles_per_image = 1;
      lp.positions_per_tile = positions_per_image;
    }
    lp.tile_w = static_cast<double>(s.image_w) / static_cast<double>(lp.tiles_per_image);
    lp.tile_h = static_cast<double>(s.image_h) / static_cast<double>(lp.tiles_per_image);
    const double images_per_position = static_cast<double>(std::max<int64_t>(1, divisions_ / lp.concat));
    lp.advance_x = lp.tile_w - s.overlap_x / images_per_position;
    lp.advance_y = lp.tile_h - s.overlap_y / images_per_position;
    if (lp.advance_x <= 0 || lp.advance_y <= 0) return corrupt("Overlaps are larger than the images");
    params_.push_back(lp);
  }

  return Status();
}

// The index's version and slide id, its roots, and the camera positions.
Status Builder::read_positions() {
  if (!index_.starts_with(kIndexVersion)) return corrupt("Index.dat doesn't have expected version");
  if (!index_.starts_with(std::string(kIndexVersion) + slide_id_)) {
    return corrupt("Index.dat doesn't have a matching slide identifier");
  }
  hier_root_ = std::strlen(kIndexVersion) + slide_id_.size();
  nonhier_root_ = hier_root_ + 4;
  const bool have_positions = vimslide_.record >= 0 || stitching_.record >= 0;
  const int64_t position_record = have_positions ? (vimslide_.record >= 0 ? vimslide_.record : stitching_.record) : -1;
  TW_ASSIGN_OR_RETURN(positions_, camera_positions(index_, nonhier_root_, files_, position_record, vimslide_.record < 0,
                                                   images_x_, images_y_, divisions_, sections_[0], params_[0].concat));

  return Status();
}

// The associated images found by find_records, each a whole JPEG.
Status Builder::add_associated(SlideModel& model) {
  for (const Associated& a : associated_) {
    if (a.record.record < 0) continue;
    auto e = read_nonhier(index_, nonhier_root_, a.record.record, files_.count());
    Result<LevelModel> image = e.status();
    if (e.ok()) {
      auto src = files_.get(e->file);
      image = src.ok() ? whole_jpeg_level(*src, static_cast<uint64_t>(e->offset), static_cast<uint64_t>(e->length))
                       : Result<LevelModel>(src.status());
    }
    if (!image.ok()) return image.status().with_context(std::string("Cannot read ") + a.name + " associated image");
    model.associated.push_back({a.name, std::move(image).value(), {}, {}});
  }

  return Status();
}

// Level z from the hierarchical index at `hier_table`: its tiles placed in row-major paint order, its units
// in the data files; the smallest level's index records are added to `hashed` (quickhash-1).
Status Builder::add_level(size_t z, int32_t hier_table, std::vector<HashedRange>& hashed, SlideModel& model) {
  const LevelParams& lp = params_[z];
  std::vector<Tile> tiles;
  std::vector<Extent> extents;
  TW_RETURN_IF_ERROR(read_level_tiles(z, static_cast<uint32_t>(hier_table) + 4 * z, tiles,
                                    z + 1 == sections_.size() ? &hashed : nullptr, extents));
  // One tile per (col, row), the last added; painted in row-major order, so of two overlapping tiles
  // the one later in that order shows (measured against OpenSlide 4.0.1).
  std::map<std::pair<int64_t, int64_t>, PlacedTile> cells;
  for (const Tile& t : tiles) cells[{t.row, t.col}] = t.placed;
  bool level_hint = lp.advance_x == std::floor(lp.advance_x) && lp.advance_y == std::floor(lp.advance_y) &&
                    lp.advance_x == lp.tile_w && lp.advance_y == lp.tile_h;
  std::vector<PlacedTile> placed;
  placed.reserve(cells.size());
  for (const auto& [cell, p] : cells) {
    if (static_cast<double>(p.x) != static_cast<double>(cell.second) * lp.advance_x ||
        static_cast<double>(p.y) != static_cast<double>(cell.first) * lp.advance_y) {
      level_hint = false;
    }
    placed.push_back(p);
  }
  hints_ = hints_ && level_hint;

  LevelModel level;
  level.info.width = base_w_ / lp.concat;
  level.info.height = base_h_ / lp.concat;
  level.info.downsample = static_cast<double>(lp.concat / params_[0].concat);
  level.info.tiled = true;
  level.info.tile_width = static_cast<int32_t>(std::llround(lp.advance_x));
  level.info.tile_height = static_cast<int32_t>(std::llround(lp.advance_y));
  level.info.compression = codecs::compression_name(sections_[z].format);
  level.desc.compression = sections_[z].format;
  level.desc.color =
      sections_[z].format == codecs::Compression::kJpeg ? codecs::ColorSpace::kYCbCr : codecs::ColorSpace::kRgb;
  level.desc.width = static_cast<int32_t>(sections_[z].image_w);
  level.desc.height = static_cast<int32_t>(sections_[z].image_h);
  level.tiles_across = (images_x_ + lp.concat - 1) / lp.concat;
  level.tiles_down = (images_y_ + lp.concat - 1) / lp.concat;
  auto parts = std::make_shared<std::vector<UnitPart>>();
  std::vector<uint32_t> part_of_file(static_cast<size_t>(files_.count()), UINT32_MAX);
  UnitTable table;
  for (const Extent& e : extents) {
    table.offsets.push_back(static_cast<uint64_t>(e.offset));
    table.lengths.push_back(static_cast<uint64_t>(e.length));
    uint32_t& part = part_of_file[static_cast<size_t>(e.file)];
    if (e.length > 0 && part == UINT32_MAX) {
      TW_ASSIGN_OR_RETURN(std::shared_ptr<const io::Source> src, files_.get(e.file));
      part = static_cast<uint32_t>(parts->size());
      parts->push_back({std::move(src), {}});
    }
    table.part.push_back(e.length > 0 ? part : 0);
  }
  if (parts->empty()) {  // a level without images: every pixel background
    TW_ASSIGN_OR_RETURN(std::shared_ptr<const io::Source> src, files_.get(0));
    parts->push_back({std::move(src), {}});
  }
  level.units = std::make_shared<const UnitTable>(std::move(table));
  level.parts = std::move(parts);
  level.placement = make_placement(std::move(placed));
  model.levels.push_back(std::move(level));
  return Status();
}

// mirax.* (every Slidedat key), mpp, objective power, background, quickhash-1 and level 0's bounds.
Status Builder::add_properties(const std::vector<HashedRange>& hashed, SlideModel& model) {
  const ZoomSection& s0 = sections_[0];
  PropertyMap props;
  for (const auto& [group, keys] : sd_.file()) {
    for (const auto& [key, value] : keys) props["mirax." + group + "." + key] = *find_key(keys, key);
  }
  props["openslide.objective-power"] = std::to_string(objective_);
  props["openslide.mpp-x"] = format_double(s0.mpp_x);
  props["openslide.mpp-y"] = format_double(s0.mpp_y);
  const uint32_t bgr = static_cast<uint32_t>(s0.fill_bgr);
  model.background = {static_cast<uint8_t>(bgr & 0xFF), static_cast<uint8_t>((bgr >> 8) & 0xFF),
                      static_cast<uint8_t>((bgr >> 16) & 0xFF)};
  char color[8];
  std::snprintf(color, sizeof color, "%02X%02X%02X", model.background[0], model.background[1], model.background[2]);
  props["openslide.background-color"] = color;
  TW_ASSIGN_OR_RETURN(props["openslide.quickhash-1"], quickhash1_of_ranges(hashed));
  // The bounds of level 0's tiles within the level, where they leave part of it empty (as OpenSlide 4.0.1
  // reports them: measured).
  const Placement& p0 = *model.levels[0].placement;
  const LevelInfo& l0 = model.levels[0].info;
  const int64_t bx0 = std::max<int64_t>(0, p0.x0), by0 = std::max<int64_t>(0, p0.y0);
  const int64_t bx1 = std::min(l0.width, p0.x1), by1 = std::min(l0.height, p0.y1);
  if (!p0.tiles.empty() && bx1 > bx0 && by1 > by0 && (bx0 > 0 || by0 > 0 || bx1 < l0.width || by1 < l0.height)) {
    props["openslide.bounds-x"] = std::to_string(bx0);
    props["openslide.bounds-y"] = std::to_string(by0);
    props["openslide.bounds-width"] = std::to_string(bx1 - bx0);
    props["openslide.bounds-height"] = std::to_string(by1 - by0);
  }
  add_standard_properties(model, props);
  if (!hints_) {  // OpenSlide gives no tile size where tiles leave their nominal grid
    drop_tile_size_properties(model);
  }
  return Status();
}

Result<SlideModel> Builder::build(std::shared_ptr<const io::Source> slidedat) {
  TW_RETURN_IF_ERROR(read_sections());
  TW_RETURN_IF_ERROR(find_records());
  TW_RETURN_IF_ERROR(compute_geometry());
  TW_RETURN_IF_ERROR(read_positions());
  SlideModel model;
  model.vendor = "mirax";
  TW_RETURN_IF_ERROR(add_associated(model));
  TW_ASSIGN_OR_RETURN(const int32_t hier_table, index_.i32(hier_root_, "initial pointer"));
  std::vector<HashedRange> hashed;
  hashed.push_back({slidedat.get(), 0, slidedat->size()});
  for (size_t z = 0; z < sections_.size(); ++z) TW_RETURN_IF_ERROR(add_level(z, hier_table, hashed, model));
  TW_RETURN_IF_ERROR(add_properties(hashed, model));
  return model;
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const io::Source>& source = probe.source;
  const std::string& name = source->name();
  const std::string folder = name.substr(0, name.size() - std::strlen(kSuffix));
  auto slidedat = io::open_file(folder + "/Slidedat.ini");
  if (!slidedat.ok()) return slidedat.status().with_context("Can't load Slidedat.ini file");
  auto keys = read_key_file(**slidedat, kMaxSlidedat);
  if (!keys.ok()) return corrupt("Can't load Slidedat.ini file: " + keys.status().message());
  const Slidedat sd(std::move(keys).value());
  TW_ASSIGN_OR_RETURN(int64_t file_count, sd.integer("DATAFILE", "FILE_COUNT"));
  TW_RETURN_IF_ERROR(positive(file_count, "datafile_count"));
  if (file_count > 65536) return corrupt("Too many data files: " + std::to_string(file_count));
  std::vector<std::string> paths;
  for (int64_t i = 0; i < file_count; ++i) {
    TW_ASSIGN_OR_RETURN(std::string f, sd.value("DATAFILE", "FILE_" + std::to_string(i)));
    paths.push_back(folder + "/" + f);
  }
  DataFiles files(std::move(paths));
  TW_ASSIGN_OR_RETURN(std::string index_name, sd.value("HIERARCHICAL", "INDEXFILE"));
  auto index_source = io::open_file(folder + "/" + index_name);
  if (!index_source.ok()) return index_source.status();
  if ((*index_source)->size() > kMaxIndexBytes) return unsupported("the index file is larger than 1 GiB");
  std::vector<uint8_t> index_bytes(static_cast<size_t>((*index_source)->size()));
  TW_RETURN_IF_ERROR((*index_source)->pread(index_bytes, 0));
  const Index index(std::move(index_bytes));
  Builder builder(sd, files, index);
  return builder.build(*slidedat);
}

}  // namespace

const FormatDriver kMiraxDriver = {"mirax", Reads::kSource, &detect, &open};

}  // namespace tilewise::formats
