#include "write/pyramid_writer.h"

#include <algorithm>
#include <cstring>

#include "util/thread_pool.h"
#include "write/downsample.h"

namespace tilewise::write {

PyramidWriter::PyramidWriter(TileSink& out, std::vector<LevelSpec> levels, bool sub_ifds, int32_t samples,
                             SampleType type, const TileCoding& coding, int32_t level0_tile_rows, Downsample filter)
    : out_(out),
      levels_(std::move(levels)),
      samples_(samples),
      type_(type),
      pixel_bytes_(int64_t{samples} * sample_bytes(type)),
      coding_(coding),
      filter_(filter) {
  for (size_t k = 0; k < levels_.size(); ++k) {
    if (k > 0 && sub_ifds) levels_[k].parent = ids_[0];
    ids_.push_back(out_.add_level(levels_[k]));
    Band b;
    b.stride = levels_[k].tiles_across() * levels_[k].tile * pixel_bytes_;
    b.capacity = levels_[k].tile * (k == 0 ? level0_tile_rows : 1);
    b.pixels.resize(static_cast<size_t>(b.stride) * static_cast<size_t>(b.capacity));
    bands_.push_back(std::move(b));
  }
}

ImageView PyramidWriter::view(uint8_t* top, int64_t stride, int64_t width, int32_t rows) const {
  return ImageView{top, stride, static_cast<int32_t>(width), rows, samples_, {}, sample_bytes(type_)};
}

ImageView PyramidWriter::level0_rows(int32_t rows) {
  Band& b = bands_[0];
  return view(b.pixels.data() + b.rows * b.stride, b.stride, levels_[0].width, rows);
}

Status PyramidWriter::added(int32_t rows) { return received(0, rows); }

Status PyramidWriter::received(size_t k, int32_t rows) {
  Band& b = bands_[k];
  b.rows += rows;
  b.rows_received += rows;
  if (b.rows == b.capacity || b.rows_received == levels_[k].height) return flush(k);
  return Status();
}

Status PyramidWriter::flush(size_t k) {
  Band& b = bands_[k];
  const int32_t tile = levels_[k].tile;
  for (int32_t first = 0; first < b.rows; first += tile) {
    const int32_t rows = std::min(tile, b.rows - first);
    uint8_t* top = b.pixels.data() + first * b.stride;
    if (k == kept_level_ && kept_) {
      const auto row_bytes = static_cast<size_t>(levels_[k].width * pixel_bytes_);
      for (int32_t r = 0; r < rows; ++r) kept_->insert(kept_->end(), top + r * b.stride, top + r * b.stride + row_bytes);
    }
    pad(k, top, rows);
    TW_RETURN_IF_ERROR(write_tile_row(k, top));
    if (k + 1 < levels_.size()) TW_RETURN_IF_ERROR(halve_into_next(k, top, rows));
  }
  b.rows = 0;
  return Status();
}

void PyramidWriter::pad(size_t k, uint8_t* top, int32_t rows) const {
  const Band& b = bands_[k];
  const int64_t width = levels_[k].width, padded = b.stride / pixel_bytes_;
  const auto pixel = static_cast<size_t>(pixel_bytes_);
  if (padded > width) {
    for (int32_t r = 0; r < rows; ++r) {
      uint8_t* row = top + r * b.stride;
      for (int64_t x = width; x < padded; ++x) std::memcpy(row + pixel_bytes_ * x, row + pixel_bytes_ * (width - 1), pixel);
    }
  }
  for (int32_t r = rows; r < levels_[k].tile; ++r) {
    std::memcpy(top + r * b.stride, top + (rows - 1) * b.stride, static_cast<size_t>(b.stride));
  }
}

Status PyramidWriter::write_tile_row(size_t k, const uint8_t* top) {
  Band& b = bands_[k];
  const LevelSpec& level = levels_[k];
  const int64_t across = level.tiles_across();
  tiles_.resize(static_cast<size_t>(across));
  std::vector<Status> statuses(static_cast<size_t>(across));
  internal::global_pool().parallel_for(across, [&](int64_t i) {
    if (k == 0 && copy_) {
      if (std::optional<std::vector<uint8_t>> bytes = copy_(i, b.tile_row)) {
        tiles_[static_cast<size_t>(i)] = std::move(*bytes);
        copied_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    const ImageView tile = view(const_cast<uint8_t*>(top) + i * level.tile * pixel_bytes_, b.stride, level.tile, level.tile);
    statuses[static_cast<size_t>(i)] = encode_tile(coding_, tile, tiles_[static_cast<size_t>(i)]);
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

Status PyramidWriter::halve_into_next(size_t k, const uint8_t* top, int32_t rows) {
  const Band& b = bands_[k];
  Band& next = bands_[k + 1];
  const int32_t halved = (rows + 1) / 2;
  constexpr int32_t kRowsPerTask = 16;
  internal::global_pool().parallel_for((halved + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task) {
    const int32_t first = static_cast<int32_t>(task) * kRowsPerTask;
    const int32_t count = std::min(kRowsPerTask, halved - first);
    halve(top + 2 * first * b.stride, b.stride, levels_[k].width, std::min(2 * count, rows - 2 * first), samples_, type_,
          next.pixels.data() + (next.rows + first) * next.stride, next.stride, filter_);
  });
  return received(k + 1, halved);
}

}  // namespace tilewise::write
