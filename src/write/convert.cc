// tilewise::convert (tilewise/convert.h): a slide's level 0 read in bands of one tile row and written as a
// tiled pyramidal TIFF, every level's tile rows written as soon as they form.
//
// Each level keeps one band: the rows of its next tile row (level 0: of its next few, as they are read),
// the level's width rounded up to whole tiles. A full band (or the level's last rows) is written tile row
// by tile row: padded (edge pixels repeated, so JPEG blocks at the edge do not ring), its tiles encoded on
// the worker pool and written in order, then halved into the next level's band, which is flushed in turn
// when full. Tile sizes are even, so a full tile row halves into exactly half a band of the next level.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "tilewise/convert.h"
#include "tilewise/tilewise.h"
#include "util/thread_pool.h"
#include "write/downsample.h"
#include "write/tiff_writer.h"
#include "write/tile_encoder.h"

namespace tilewise {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(), [](char a, char b) { return std::tolower(a) == b; });
}

struct Band {
  std::vector<uint8_t> pixels;  // `capacity` rows of `stride` bytes
  int64_t stride = 0;
  int32_t capacity = 0;
  int32_t rows = 0;             // rows filled
  int64_t rows_received = 0;    // of the level, so far
  int64_t tile_row = 0;         // the next tile row of the level
};

class PyramidWriter {
 public:
  // `level0_tile_rows`: level 0's band holds this many tile rows (read in one go; the others hold one).
  PyramidWriter(write::TiledTiffWriter& out, std::vector<write::TiffLevel> levels, const write::TileCoding& coding,
                int32_t level0_tile_rows)
      : out_(out), levels_(std::move(levels)), coding_(coding) {
    for (const write::TiffLevel& level : levels_) {
      ids_.push_back(out_.add_level(level));
      Band b;
      b.stride = level.tiles_across() * level.tile * 3;
      b.capacity = level.tile * (bands_.empty() ? level0_tile_rows : 1);
      b.pixels.resize(static_cast<size_t>(b.stride) * static_cast<size_t>(b.capacity));
      bands_.push_back(std::move(b));
    }
  }

  int32_t level0_capacity() const { return bands_[0].capacity; }
  // Level 0's band as a view of its next `rows` rows (rows <= level0_capacity()): the caller reads them
  // in, then calls added(rows).
  ImageView level0_rows(int32_t rows) {
    Band& b = bands_[0];
    return ImageView{b.pixels.data() + b.rows * b.stride, b.stride, static_cast<int32_t>(levels_[0].width), rows, 3, {}};
  }
  Status added(int32_t rows) { return received(0, rows); }

 private:
  Status received(size_t k, int32_t rows) {
    Band& b = bands_[k];
    b.rows += rows;
    b.rows_received += rows;
    if (b.rows == b.capacity || b.rows_received == levels_[k].height) return flush(k);
    return Status();
  }

  // The band's tile rows, each encoded and written, then halved into the next level's band.
  Status flush(size_t k) {
    Band& b = bands_[k];
    const int32_t tile = levels_[k].tile;
    for (int32_t first = 0; first < b.rows; first += tile) {
      const int32_t rows = std::min(tile, b.rows - first);
      uint8_t* top = b.pixels.data() + first * b.stride;
      pad(k, top, rows);
      TW_RETURN_IF_ERROR(write_tile_row(k, top));
      if (k + 1 < levels_.size()) TW_RETURN_IF_ERROR(halve_into_next(k, top, rows));
    }
    b.rows = 0;
    return Status();
  }

  // Repeats the last column into the padding on the right of `rows` rows at `top`, and the last row
  // below them to the tile's height.
  void pad(size_t k, uint8_t* top, int32_t rows) {
    const Band& b = bands_[k];
    const int64_t width = levels_[k].width, padded = b.stride / 3;
    if (padded > width) {
      for (int32_t r = 0; r < rows; ++r) {
        uint8_t* row = top + r * b.stride;
        for (int64_t x = width; x < padded; ++x) std::memcpy(row + 3 * x, row + 3 * (width - 1), 3);
      }
    }
    for (int32_t r = rows; r < levels_[k].tile; ++r) {
      std::memcpy(top + r * b.stride, top + (rows - 1) * b.stride, static_cast<size_t>(b.stride));
    }
  }

  // The tile row at `top` encoded on the worker pool and written in order.
  Status write_tile_row(size_t k, const uint8_t* top) {
    Band& b = bands_[k];
    const write::TiffLevel& level = levels_[k];
    const int64_t across = level.tiles_across();
    tiles_.resize(static_cast<size_t>(across));
    std::vector<Status> statuses(static_cast<size_t>(across));
    internal::global_pool().parallel_for(across, [&](int64_t i) {
      const ImageView tile{const_cast<uint8_t*>(top) + i * level.tile * 3, b.stride, level.tile, level.tile, 3, {}};
      statuses[static_cast<size_t>(i)] = write::encode_tile(coding_, tile, tiles_[static_cast<size_t>(i)]);
    });
    for (int64_t i = 0; i < across; ++i) {
      const Status& s = statuses[static_cast<size_t>(i)];
      if (!s.ok()) {
        return s.with_context("level " + std::to_string(k) + " tile (" + std::to_string(i) + "," + std::to_string(b.tile_row) + ")");
      }
      TW_RETURN_IF_ERROR(out_.write_tile(ids_[k], b.tile_row * across + i, tiles_[static_cast<size_t>(i)]));
    }
    ++b.tile_row;
    return Status();
  }

  // `rows` rows at `top` of level k halved into level k + 1's band, in parallel by pairs of rows.
  Status halve_into_next(size_t k, const uint8_t* top, int32_t rows) {
    const Band& b = bands_[k];
    Band& next = bands_[k + 1];
    const int32_t halved = (rows + 1) / 2;
    constexpr int32_t kRowsPerTask = 16;
    internal::global_pool().parallel_for((halved + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task) {
      const int32_t first = static_cast<int32_t>(task) * kRowsPerTask;
      const int32_t count = std::min(kRowsPerTask, halved - first);
      write::halve_rgb(top + 2 * first * b.stride, b.stride, levels_[k].width, std::min(2 * count, rows - 2 * first),
                       next.pixels.data() + (next.rows + first) * next.stride, next.stride);
    });
    return received(k + 1, halved);
  }

  write::TiledTiffWriter& out_;
  std::vector<write::TiffLevel> levels_;
  std::vector<int> ids_;
  std::vector<Band> bands_;
  std::vector<std::vector<uint8_t>> tiles_;  // one tile row's encoded tiles (their capacity reused)
  write::TileCoding coding_;
};

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Status convert(const Slide& slide, const std::string& output, const ConvertOptions& options) {
  if (!ends_with(output, ".tif") && !ends_with(output, ".tiff")) {
    return invalid_argument(output + ": the output's name must end in .tif or .tiff (a pyramidal TIFF)");
  }
  if (ends_with(output, ".ome.tif") || ends_with(output, ".ome.tiff")) {
    return unsupported(output + ": OME-TIFF output is not written; name the output *.tif for a pyramidal TIFF");
  }
  if (options.tile_size < 16 || options.tile_size > 4096 || options.tile_size % 16 != 0) {
    return invalid_argument("tile size " + std::to_string(options.tile_size) + " is not a multiple of 16 from 16 to 4096");
  }
  if (options.quality < 1 || options.quality > 100) {
    return invalid_argument("quality " + std::to_string(options.quality) + " is not 1 to 100");
  }
  if (options.max_levels < 0) return invalid_argument("max_levels must be >= 0");
  TW_ASSIGN_OR_RETURN(const write::TileCodec codec, write::tile_codec(options.codec));
  const write::TileCoding coding{codec, options.quality, options.subsample};
  const LevelInfo& base = slide.level(0);

  std::vector<write::TiffLevel> levels;
  int64_t w = base.width, h = base.height;
  for (int i = 0;; ++i) {
    write::TiffLevel level;
    level.width = w;
    level.height = h;
    level.tile = options.tile_size;
    level.compression = write::tiff_compression(codec);
    level.photometric = write::tiff_photometric(codec);
    level.ycbcr_subsampling = options.subsample ? 2 : 1;
    level.reduced = i > 0;
    if (const auto mpp = slide.mpp()) {
      const double scale = static_cast<double>(base.width) / static_cast<double>(w);
      level.pixels_per_cm = std::make_pair(1e4 / (mpp->first * scale), 1e4 / (mpp->second * scale));
    }
    if (i == 0) {
      level.description = std::string("tilewise ") + version() + ": " + base_name(slide.path()) + " (" + slide.format() + ")";
      level.icc_profile = slide.icc_profile();
    }
    levels.push_back(std::move(level));
    if ((w <= options.tile_size && h <= options.tile_size) || static_cast<int>(levels.size()) == options.max_levels) break;
    w = (w + 1) / 2;
    h = (h + 1) / 2;
  }

  // Level 0 is read a whole number of the source's tile rows at a time where they are multiples of the
  // output's (no source tile is decoded for two reads), else one output tile row at a time.
  const int32_t source_tile = slide.level(0).tile_height;
  const int32_t tile_rows =
      source_tile > options.tile_size && source_tile % options.tile_size == 0 ? std::min(source_tile / options.tile_size, 8) : 1;
  TW_ASSIGN_OR_RETURN(write::TiledTiffWriter out, write::TiledTiffWriter::create(output));
  PyramidWriter pyramid(out, std::move(levels), coding, tile_rows);
  for (int64_t y = 0; y < base.height; y += pyramid.level0_capacity()) {
    const auto rows = static_cast<int32_t>(std::min<int64_t>(pyramid.level0_capacity(), base.height - y));
    const ImageView band = pyramid.level0_rows(rows);
    TW_RETURN_IF_ERROR(slide.read_level_region(0, 0, y, base.width, rows, band));
    TW_RETURN_IF_ERROR(pyramid.added(rows));
    if (options.progress) TW_RETURN_IF_ERROR(options.progress(y + rows, base.height));
  }
  return out.finish();
}

}  // namespace tilewise
