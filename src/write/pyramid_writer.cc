#include "write/pyramid_writer.h"

#include <algorithm>
#include <cstring>

#include "util/thread_pool.h"

namespace tilewise::write {

PyramidWriter::PyramidWriter(TileSink& out, BandOps& ops, int32_t samples, SampleType type)
    : out_(out), ops_(ops), samples_(samples), type_(type), pixel_bytes_(int64_t{samples} * sample_bytes(type)) {}

Result<std::unique_ptr<PyramidWriter>> PyramidWriter::create(TileSink& out, std::vector<LevelSpec> levels, bool sub_ifds,
                                                             int32_t samples, SampleType type, int32_t level0_tile_rows,
                                                             BandOps& ops) {
  std::unique_ptr<PyramidWriter> w(new PyramidWriter(out, ops, samples, type));
  w->levels_ = std::move(levels);
  for (size_t k = 0; k < w->levels_.size(); ++k) {
    LevelSpec& level = w->levels_[k];
    if (k > 0 && sub_ifds) level.parent = w->ids_[0];
    w->ids_.push_back(out.add_level(level));
    Band b;
    b.stride = level.tiles_across() * level.tile * w->pixel_bytes_;
    b.capacity = level.tile * (k == 0 ? level0_tile_rows : 1);
    TW_ASSIGN_OR_RETURN(b.pixels, ops.allocate(static_cast<size_t>(b.stride) * static_cast<size_t>(b.capacity)));
    w->bands_.push_back(b);
  }
  return w;
}

ImageView PyramidWriter::level0_rows(int32_t rows) {
  Band& b = bands_[0];
  return ImageView{b.pixels + b.rows * b.stride, b.stride, static_cast<int32_t>(levels_[0].width), rows, samples_,
                   ops_.device(), sample_bytes(type_)};
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
    uint8_t* top = b.pixels + first * b.stride;
    if (k == kept_level_ && kept_) {
      const int64_t row_bytes = levels_[k].width * pixel_bytes_;
      kept_rows_.resize(static_cast<size_t>(row_bytes * rows));
      TW_RETURN_IF_ERROR(ops_.to_host(top, b.stride, row_bytes, rows, kept_rows_.data()));
      kept_->insert(kept_->end(), kept_rows_.begin(), kept_rows_.end());
    }
    TW_RETURN_IF_ERROR(ops_.pad(top, b.stride, levels_[k].width, b.stride / pixel_bytes_, rows, tile));
    TW_RETURN_IF_ERROR(write_tile_row(k, top));
    if (k + 1 < levels_.size()) TW_RETURN_IF_ERROR(halve_into_next(k, top, rows));
  }
  b.rows = 0;
  return Status();
}

Status PyramidWriter::write_tile_row(size_t k, const uint8_t* top) {
  Band& b = bands_[k];
  const LevelSpec& level = levels_[k];
  const int64_t across = level.tiles_across();
  tiles_.resize(static_cast<size_t>(across));
  std::vector<Status> statuses(static_cast<size_t>(across));
  // Level 0's tiles the copy gives are taken as they are; the others are encoded.
  std::vector<char> copied(static_cast<size_t>(across), 0);
  if (k == 0 && copy_) {
    internal::global_pool().parallel_for(across, [&](int64_t i) {
      if (std::optional<std::vector<uint8_t>> bytes = copy_(i, b.tile_row)) {
        tiles_[static_cast<size_t>(i)] = std::move(*bytes);
        copied[static_cast<size_t>(i)] = 1;
        copied_.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::vector<int64_t> encode;
  for (int64_t i = 0; i < across; ++i) {
    if (!copied[static_cast<size_t>(i)]) encode.push_back(i);
  }
  ops_.encode(top, b.stride, level.tile, encode, tiles_, statuses);
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
  TW_RETURN_IF_ERROR(ops_.halve(top, b.stride, levels_[k].width, rows, next.pixels + next.rows * next.stride, next.stride));
  return received(k + 1, (rows + 1) / 2);
}

}  // namespace tilewise::write
