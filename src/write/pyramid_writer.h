// PyramidWriter: one image's pyramid written into a TileSink as its level 0 arrives in bands of rows.
//
// Each level keeps one band: the rows of its next tile row (level 0: of its next few, as they are read),
// the level's width rounded up to whole tiles. A full band (or the level's last rows) is written tile row
// by tile row: padded (edge pixels repeated, so JPEG blocks at the edge do not ring), its tiles encoded
// and written in order, then halved (write/downsample.h) into the next level's band, which
// is flushed in turn when full. Tile sizes are even, so a full tile row halves into exactly half a band of
// the next level.
//
// Where the bands lie and what pads, halves and encodes them is its BandOps (band_ops.h): host memory and the
// worker pool, or a CUDA device with nvImageCodec's encoders. Level 0's band is filled by the caller in place
// (level0_rows(), a view of the ops' memory, then added()). Thread behaviour: one thread calls a
// PyramidWriter.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "tilewise/image_view.h"
#include "tilewise/status.h"
#include "tilewise/types.h"
#include "write/band_ops.h"
#include "write/downsample.h"
#include "write/tile_encoder.h"
#include "write/tile_sink.h"

namespace tilewise::write {

class PyramidWriter {
 public:
  // `levels`: the image's levels, level 0 first (each the previous one halved), added to `out` here: level
  // 0 as given, the others in the main chain or, with `sub_ifds`, as SubIFDs of level 0. Pixels are
  // `samples` interleaved samples of `type`, in the bands `ops` makes and works on (the ops outlive the
  // writer; their coding and filter are the pyramid's). `level0_tile_rows`: level 0's band holds this many
  // tile rows. An error when the bands cannot be allocated.
  static Result<std::unique_ptr<PyramidWriter>> create(TileSink& out, std::vector<LevelSpec> levels, bool sub_ifds,
                                                       int32_t samples, SampleType type, int32_t level0_tile_rows,
                                                       BandOps& ops);

  // Level 0's tiles are taken as `copy` gives them (tile col, row; nullopt: encoded as the others); it is
  // called from the worker pool's threads at once.
  using TileCopy = std::function<std::optional<std::vector<uint8_t>>(int64_t col, int64_t row)>;
  void copy_level0(TileCopy copy) { copy_ = std::move(copy); }
  // Level 0's tiles taken from `copy` so far.
  int64_t copied() const { return copied_.load(); }

  // Level `k`'s pixels (width x height, packed rows) appended to `out` as the level forms (an Aperio
  // thumbnail is a small level of the pyramid).
  void keep_level(size_t k, std::vector<uint8_t>* out) {
    kept_level_ = k;
    kept_ = out;
  }

  ~PyramidWriter() { ops_.release(); }
  PyramidWriter(const PyramidWriter&) = delete;
  PyramidWriter& operator=(const PyramidWriter&) = delete;

  int32_t level0_capacity() const { return bands_[0].capacity; }
  // Level 0's band as a view of its next `rows` rows (<= level0_capacity()): the caller reads them in,
  // then calls added(rows).
  ImageView level0_rows(int32_t rows);
  Status added(int32_t rows);

 private:
  PyramidWriter(TileSink& out, BandOps& ops, int32_t samples, SampleType type);

  struct Band {
    uint8_t* pixels = nullptr;  // `capacity` rows of `stride` bytes, of the ops' memory
    int64_t stride = 0;
    int32_t capacity = 0;
    int32_t rows = 0;           // rows filled
    int64_t rows_received = 0;  // of the level, so far
    int64_t tile_row = 0;       // the next tile row of the level
  };
  Status received(size_t k, int32_t rows);
  Status flush(size_t k);
  Status write_tile_row(size_t k, const uint8_t* top);
  Status halve_into_next(size_t k, const uint8_t* top, int32_t rows);

  TileSink& out_;
  BandOps& ops_;
  std::vector<LevelSpec> levels_;
  std::vector<int> ids_;
  std::vector<Band> bands_;
  std::vector<std::vector<uint8_t>> tiles_;  // one tile row's encoded tiles (their capacity reused)
  std::vector<uint8_t> kept_rows_;            // a kept level's tile row, on its way to the host
  int32_t samples_;
  SampleType type_;
  int64_t pixel_bytes_;
  TileCopy copy_;
  std::atomic<int64_t> copied_{0};
  size_t kept_level_ = SIZE_MAX;
  std::vector<uint8_t>* kept_ = nullptr;
};

}  // namespace tilewise::write
