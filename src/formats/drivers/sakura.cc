// Sakura SVSlide (OpenSlide's "sakura" vendor): an SQLite database. OpenSlide 4.0.1's reading, followed here:
// - DataManagerSQLiteConfigXPO names one blob table (id, data); its "++MagicBytes" row is
//   "SVGigaPixelImage", its "Header" blob holds the tile size, image width and height (32-bit little-endian)
//   and, at byte 16, the number of focal planes, of which the middle one is shown.
// - Tile blobs are named "T;x|y;downsample;colour;plane" (x, y in level-0 pixels, colour 0-2 for red, green,
//   blue; ids that do not round-trip are errors, ids not starting "T;" or ending "#" are not tiles). Each
//   downsample with plane-0 tiles is a level of width / downsample x height / downsample on a regular grid
//   of the tile size; a tile is three greyscale JPEGs, one per channel (a JPEG unit of 3 planes); a tile
//   without all three channels is absent (background; transparent in tilewise.openslide).
// - The tiles' bytes are read through an io::SqliteBlobFile: the database's blobs as one virtual file, so
//   that units are byte ranges as in every other format.
// - Properties: sakura.<column> of SVSlideDataXPO joined with SVHRScanDataXPO (text columns when not
//   empty, the two real ones in OpenSlide's number format), sakura.VersionBytes, mpp from
//   ResolutionMmPerPix, the objective power from NominalLensMagnification; label and macro from
//   SVScannedImageDataXPO, thumbnail from SVHRScanDataXPO (unreadable ones left out). quickhash-1: the slide
//   and scan rows, the header and the tiles of the smallest level (ids sorted), as OpenSlide hashes them.
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <tuple>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"
#include "io/sqlite_blobs.h"
#include "util/bytes.h"

namespace tilewise::formats {
namespace {

constexpr char kSqliteMagic[] = "SQLite format 3";  // and a NUL: the first 16 bytes of every database

struct Db {
  sqlite3* db = nullptr;
  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db() { sqlite3_close(db); }
};

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Status ok() const { return rc_ == SQLITE_OK ? Status() : corrupt(std::string("SQLite: ") + sqlite3_errmsg(db_)); }
  sqlite3_stmt* get() const { return stmt_; }
  int step() { return sqlite3_step(stmt_); }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

Status open_db(const std::string& path, Db& db) {
  if (sqlite3_open_v2(path.c_str(), &db.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    return corrupt("cannot open the database: " + std::string(db.db ? sqlite3_errmsg(db.db) : "out of memory"));
  }
  return Status();
}

Result<std::string> unique_table(sqlite3* db) {
  Stmt s(db, "SELECT quote(TableName) FROM DataManagerSQLiteConfigXPO");
  TW_RETURN_IF_ERROR(s.ok());
  if (s.step() != SQLITE_ROW) return corrupt("no row in DataManagerSQLiteConfigXPO");
  std::string name = s.text(0);
  if (s.step() != SQLITE_DONE) return corrupt("Found > 1 unique tables");
  return name;
}

bool sqlite_header(const io::Source& source) {
  uint8_t head[16];
  return source.size() >= sizeof head && source.pread(head, 0).ok() && std::memcmp(head, kSqliteMagic, 16) == 0;
}

Status detect(const Probe& probe) {
  const io::Source& source = *probe.source;
  if (!sqlite_header(source)) return unsupported("Not an SQLite database");
  if (!source.is_local_file()) return Status();  // open says why it cannot read it
  Db db;
  TW_RETURN_IF_ERROR(open_db(source.name(), db));
  auto table = unique_table(db.db);
  if (!table.ok()) return unsupported(table.status().message());
  Stmt s(db.db, "SELECT data FROM " + *table + " WHERE id = '++MagicBytes'");
  if (!s.ok().ok() || s.step() != SQLITE_ROW || s.text(0) != "SVGigaPixelImage") {
    return unsupported("Magic number does not match");
  }
  return Status();
}

struct TileId {
  int64_t x = 0, y = 0, downsample = 0, color = 0, plane = 0;
};

// Parses a blob id; nullopt (no error) for rows that are not tiles.
Result<std::optional<TileId>> parse_tile_id(const std::string& id) {
  if (id.rfind("T;", 0) != 0 || (!id.empty() && id.back() == '#')) return std::optional<TileId>();
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t i = 0; i <= id.size(); ++i) {
    if (i == id.size() || id[i] == ';' || id[i] == '|') {
      fields.push_back(id.substr(start, i - start));
      start = i + 1;
    }
  }
  if (fields.size() != 6) return corrupt("Bad field count in tile ID " + id);
  int64_t v[5];
  for (int i = 0; i < 5; ++i) {
    auto n = parse_int64(fields[static_cast<size_t>(i) + 1]);
    if (!n || *n < 0) return corrupt("Bad field value in tile ID " + id);
    v[i] = *n;
  }
  TileId t{v[0], v[1], v[2], v[3], v[4]};
  if (t.downsample < 1 || t.color >= 3) return corrupt("Bad field value in tile ID " + id);
  const std::string again = "T;" + std::to_string(t.x) + "|" + std::to_string(t.y) + ";" +
                            std::to_string(t.downsample) + ";" + std::to_string(t.color) + ";" +
                            std::to_string(t.plane);
  if (again != id) return corrupt("Couldn't round-trip tile ID " + id);
  return std::optional<TileId>(t);
}

// Hashes every column of every row, each followed by a NUL (OpenSlide's hash_columns).
Status hash_rows(sqlite3* db, const std::string& sql, Quickhash& hash) {
  Stmt s(db, sql);
  TW_RETURN_IF_ERROR(s.ok());
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(s.get()); ++i) {
      hash.update(sqlite3_column_blob(s.get(), i), static_cast<size_t>(sqlite3_column_bytes(s.get(), i)));
      hash.update("", 1);
    }
  }
  return rc == SQLITE_DONE ? Status() : corrupt(std::string("SQLite: ") + sqlite3_errmsg(db));
}

struct Blob {
  int64_t rowid = 0;
  uint32_t length = 0;
};

// An associated image's blob: the one row `sql` returns (rowid, length), nullopt when none or several.
std::optional<Blob> associated_blob(sqlite3* db, const std::string& sql) {
  Stmt s(db, sql);
  if (!s.ok().ok() || s.step() != SQLITE_ROW || s.is_null(1)) return std::nullopt;
  Blob b{sqlite3_column_int64(s.get(), 0), static_cast<uint32_t>(sqlite3_column_int64(s.get(), 1))};
  if (s.step() != SQLITE_DONE) return std::nullopt;
  return b;
}

// The Header blob: tile size, width, height (32-bit little-endian) and, at byte 16, the focal planes.
struct Header {
  uint32_t tile = 0, width = 0, height = 0, planes = 0;
  int64_t shown_plane() const { return static_cast<int64_t>(planes / 2 + planes % 2) - 1; }  // the middle one
};

Result<Header> read_header(sqlite3* db, const std::string& table) {
  Header hd;
  Stmt s(db, "SELECT data FROM " + table + " WHERE id = 'Header'");
  TW_RETURN_IF_ERROR(s.ok());
  if (s.step() != SQLITE_ROW) return corrupt("no Header row");
  const auto* h = static_cast<const uint8_t*>(sqlite3_column_blob(s.get(), 0));
  const int n = sqlite3_column_bytes(s.get(), 0);
  if (n < 20) return corrupt("Header is too short (" + std::to_string(n) + " bytes)");
  hd.tile = internal::load_le32(h), hd.width = internal::load_le32(h + 4), hd.height = internal::load_le32(h + 8);
  hd.planes = internal::load_le32(h + 16);
  if (hd.tile == 0 || hd.tile > 65536) return corrupt("Invalid tile size: " + std::to_string(hd.tile));
  return hd;
}

// Tile blobs by (downsample, x, y, plane, colour); the downsamples with plane-0 tiles (the levels); the ids
// of the smallest level's tiles (quickhash-1).
struct Tiles {
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, Blob> blobs;
  std::map<int64_t, bool> downsamples;
  std::vector<std::string> hash_ids;
  int64_t hash_downsample = 0;
};

Result<Tiles> read_tiles(sqlite3* db, const std::string& table) {
  Tiles t;
  Stmt s(db, "SELECT id, rowid, length(data) FROM " + table);
  TW_RETURN_IF_ERROR(s.ok());
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    const std::string id = s.text(0);
    TW_ASSIGN_OR_RETURN(const std::optional<TileId> tid, parse_tile_id(id));
    if (!tid) continue;
    if (tid->plane == 0 && !t.downsamples.count(tid->downsample)) {
      if (tid->downsample & (tid->downsample - 1)) return corrupt("Invalid downsample " + std::to_string(tid->downsample));
      t.downsamples[tid->downsample] = true;
    }
    if (tid->downsample > t.hash_downsample) t.hash_ids.clear(), t.hash_downsample = tid->downsample;
    if (tid->downsample == t.hash_downsample) t.hash_ids.push_back(id);
    t.blobs[{tid->downsample, tid->x, tid->y, tid->plane, tid->color}] =
        Blob{sqlite3_column_int64(s.get(), 1), static_cast<uint32_t>(sqlite3_column_int64(s.get(), 2))};
  }
  if (rc != SQLITE_DONE) return corrupt(std::string("SQLite: ") + sqlite3_errmsg(db));
  if (t.downsamples.empty()) return corrupt("Couldn't find any tiles");
  return t;
}

// One level per downsample: a grid of the tile size whose units are the three channel blobs of the shown
// plane behind their lengths (a JPEG unit of three planes), added to `file`.
void add_levels(const Header& hd, const Tiles& tiles, const std::string& table, io::SqliteBlobFile& file,
                SlideModel& model) {
  const std::string bare_table = table.size() >= 2 && table.front() == '\'' ? table.substr(1, table.size() - 2) : table;
  const uint32_t tiles_column = file.column(bare_table, "data");
  const uint32_t tile = hd.tile;
  const int64_t shown = hd.shown_plane();
  for (const auto& [ds, unused] : tiles.downsamples) {
    codecs::TileDesc desc;  // three grey JPEGs, one per channel
    desc.compression = codecs::Compression::kJpeg;
    desc.planes = 3;
    desc.width = desc.height = static_cast<int32_t>(tile);
    desc.color = codecs::ColorSpace::kRgb;
    LevelModel level = grid_level(hd.width / ds, hd.height / ds, desc);
    level.info.downsample = static_cast<double>(ds);
    UnitTable units;
    for (int64_t r = 0; r < level.tiles_down; ++r) {
      for (int64_t c = 0; c < level.tiles_across; ++c) {
        std::array<const Blob*, 3> rgb{};
        for (int64_t color = 0; color < 3; ++color) {
          auto it = tiles.blobs.find({ds, c * tile * ds, r * tile * ds, shown, color});
          rgb[static_cast<size_t>(color)] = it == tiles.blobs.end() ? nullptr : &it->second;
        }
        if (!rgb[0] || !rgb[1] || !rgb[2]) {  // a channel missing: the tile is absent, as OpenSlide draws it
          units.offsets.push_back(0);
          units.lengths.push_back(0);
          continue;
        }
        const uint64_t start = file.size();
        for (const Blob* b : rgb) {
          const uint8_t len[4] = {static_cast<uint8_t>(b->length), static_cast<uint8_t>(b->length >> 8),
                                  static_cast<uint8_t>(b->length >> 16), static_cast<uint8_t>(b->length >> 24)};
          file.add_bytes(len);
          file.add_blob(tiles_column, b->rowid, b->length);
        }
        units.offsets.push_back(start);
        units.lengths.push_back(file.size() - start);
      }
    }
    level.units = std::make_shared<const UnitTable>(std::move(units));
    model.levels.push_back(std::move(level));
  }

}

// Label, macro and thumbnail: JPEG blobs of the metadata tables, added to `file`, which is then built and
// given to the levels.
void add_associated_and_finish(sqlite3* db, io::SqliteBlobFile& file, SlideModel& model) {
  struct Wanted {
    const char* name;
    const char* table;
    const char* column;
    const char* join;
  };
  const Wanted wanted[] = {{"label", "SVScannedImageDataXPO", "Image",
                            "JOIN SVSlideDataXPO ON SVSlideDataXPO.m_labelScan = SVScannedImageDataXPO.OID"},
                           {"macro", "SVScannedImageDataXPO", "Image",
                            "JOIN SVSlideDataXPO ON SVSlideDataXPO.m_overviewScan = SVScannedImageDataXPO.OID"},
                           {"thumbnail", "SVHRScanDataXPO", "ThumbnailImage",
                            "JOIN SVSlideDataXPO ON SVHRScanDataXPO.ParentSlide = SVSlideDataXPO.OID"}};
  std::vector<std::pair<const char*, std::pair<uint64_t, uint64_t>>> found;  // name, blob range in the file
  for (const Wanted& w : wanted) {
    const std::string sql = std::string("SELECT ") + w.table + ".rowid, length(" + w.column + ") FROM " + w.table + " " + w.join;
    auto blob = associated_blob(db, sql);
    if (!blob) continue;
    const uint64_t at = file.add_blob(file.column(w.table, w.column), blob->rowid, blob->length);
    found.push_back({w.name, {at, blob->length}});
  }
  const std::shared_ptr<const io::Source> blobs = file.build();
  for (LevelModel& level : model.levels) level.parts = single_part(blobs);
  for (const auto& [name, range] : found) {  // unreadable ones are left out, as OpenSlide leaves them
    auto image = whole_jpeg_level(blobs, range.first, range.second);
    if (image.ok()) model.associated.push_back({name, std::move(image).value(), {}, {}});
  }

}

// sakura.* (the slide and scan rows, VersionBytes), the mpp and the objective power.
PropertyMap read_properties(sqlite3* db, const std::string& table) {
  PropertyMap props;
  {
    Stmt s(db,
           "SELECT SVSlideDataXPO.SlideId, SVSlideDataXPO.Date, SVSlideDataXPO.Description, SVSlideDataXPO.Creator, "
           "SVSlideDataXPO.DiagnosisCode, SVSlideDataXPO.Keywords, SVHRScanDataXPO.ScanId, "
           "SVHRScanDataXPO.ResolutionMmPerPix, SVHRScanDataXPO.NominalLensMagnification, "
           "SVHRScanDataXPO.FocussingMethod FROM SVSlideDataXPO JOIN SVHRScanDataXPO ON "
           "SVHRScanDataXPO.ParentSlide == SVSlideDataXPO.OID");
    const char* names[] = {"SlideId",
                           "Date",
                           "Description",
                           "Creator",
                           "DiagnosisCode",
                           "Keywords",
                           "ScanId",
                           "ResolutionMmPerPix",
                           "NominalLensMagnification",
                           "FocussingMethod"};
    if (s.ok().ok() && s.step() == SQLITE_ROW) {
      for (int i = 0; i < 10; ++i) {
        if (i == 7 || i == 8) {
          props[std::string("sakura.") + names[i]] = format_double(sqlite3_column_double(s.get(), i));
        } else if (std::string v = s.text(i); !v.empty()) {
          props[std::string("sakura.") + names[i]] = v;
        }
      }
    }
  }
  {
    Stmt s(db,
           "SELECT ResolutionMmPerPix FROM SVHRScanDataXPO JOIN SVSlideDataXPO ON SVHRScanDataXPO.ParentSlide = "
           "SVSlideDataXPO.OID");
    if (s.ok().ok() && s.step() == SQLITE_ROW) {
      props["openslide.mpp-x"] = props["openslide.mpp-y"] = format_double(sqlite3_column_double(s.get(), 0) * 1000);
    }
  }
  if (auto m = props.find("sakura.NominalLensMagnification"); m != props.end()) {
    if (auto v = parse_double(m->second)) props["openslide.objective-power"] = format_double(*v);
  }
  {
    Stmt s(db, "SELECT data FROM " + table + " WHERE id = '++VersionBytes'");
    if (s.ok().ok() && s.step() == SQLITE_ROW) props["sakura.VersionBytes"] = s.text(0);
  }

  return props;
}

// quickhash-1: slide and scan rows, the header, the smallest level's tiles (ids sorted as strcmp sorts); a
// warning instead when a row cannot be read.
void add_quickhash(sqlite3* db, const std::string& table, const Tiles& tiles, PropertyMap& props, SlideModel& model) {
  Quickhash hash;
  Status hashed =
      hash_rows(db, "SELECT SlideId, Date, Creator, Description, Keywords FROM SVSlideDataXPO ORDER BY OID", hash);
  if (hashed.ok())
    hashed = hash_rows(db, "SELECT ScanId, Date, Name, Description FROM SVHRScanDataXPO ORDER BY OID", hash);
  if (hashed.ok()) hashed = hash_rows(db, "SELECT data FROM " + table + " WHERE id = 'Header' ORDER BY rowid", hash);
  std::vector<std::string> hash_ids = tiles.hash_ids;
  std::sort(hash_ids.begin(), hash_ids.end());
  if (hashed.ok()) {
    Stmt s(db, "SELECT data FROM " + table + " WHERE id = ?");
    hashed = s.ok();
    for (size_t i = 0; hashed.ok() && i < hash_ids.size(); ++i) {
      sqlite3_reset(s.get());
      sqlite3_bind_text(s.get(), 1, hash_ids[i].c_str(), -1, SQLITE_TRANSIENT);
      if (s.step() != SQLITE_ROW) {
        hashed = corrupt("tile " + hash_ids[i] + " vanished");
        break;
      }
      hash.update(sqlite3_column_blob(s.get(), 0), static_cast<size_t>(sqlite3_column_bytes(s.get(), 0)));
    }
  }
  if (hashed.ok()) {
    props["openslide.quickhash-1"] = hash.hex();
  } else {
    model.warnings.push_back("no openslide.quickhash-1: " + hashed.message());
  }
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const io::Source>& source = probe.source;
  if (!source->is_local_file()) return unsupported("Sakura SVSlide databases are read from local files only");
  const std::string& path = source->name();
  Db db;
  TW_RETURN_IF_ERROR(open_db(path, db));
  TW_ASSIGN_OR_RETURN(const std::string table, unique_table(db.db));
  TW_ASSIGN_OR_RETURN(const Header header, read_header(db.db, table));
  TW_ASSIGN_OR_RETURN(const Tiles tiles, read_tiles(db.db, table));
  io::SqliteBlobFile file(path);
  SlideModel model;
  model.vendor = "sakura";
  add_levels(header, tiles, table, file, model);
  add_associated_and_finish(db.db, file, model);
  PropertyMap props = read_properties(db.db, table);
  add_quickhash(db.db, table, tiles, props, model);
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kSakuraDriver = {"sakura", Reads::kSource, &detect, &open};

}  // namespace tilewise::formats
