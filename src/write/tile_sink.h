// TileSink: where a pyramid's encoded tiles go (write/pyramid_writer.h) - a TIFF's directories
// (tiff_writer.h), a DICOM WSI series' instances (dicom_wsi_writer.h) or an OME-Zarr group's arrays
// (ome_zarr_writer.h) - and the description of each level it receives.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tilewise/status.h"
#include "write/tile_encoder.h"

namespace tilewise::write {

// One level: its size, tiles, how they are coded (in TIFF's numbers, which the DICOM writer maps to its
// own), and what goes with it.
struct LevelSpec {
  int64_t width = 0, height = 0;
  int32_t tile = 256;
  uint16_t samples = 3;       // SamplesPerPixel, interleaved
  uint16_t bits = 8;          // BitsPerSample of each
  uint16_t sample_format = 1; // SampleFormat: 1 unsigned, 2 signed, 3 float
  uint16_t compression = 1;   // TIFF Compression: 1 none, 7 JPEG, 8 deflate, ...
  TileCodec codec = TileCodec::kNone;  // the same, for sinks that name codecs otherwise (DICOM)
  uint16_t photometric = 2;   // 1 min-is-black; 2 RGB; 6 YCbCr (JPEG tiles coded as YCbCr)
  uint16_t ycbcr_subsampling = 2;  // YCbCr: 2 (4:2:0) or 1 (4:4:4)
  uint32_t subfile_type = 0;  // TIFF NewSubfileType: 1 a lower level of the pyramid or a label, 9 a macro
  bool stripped = false;      // one strip (TIFF) or frame (DICOM) of the whole image, not tiles
  std::string associated;     // "": a level of the pyramid; else the associated image it is ("label", "macro")
  std::string description;    // TIFF ImageDescription, when not empty
  std::optional<std::pair<double, double>> mpp;  // microns per pixel (x, y) of this level
  std::vector<uint8_t> icc_profile;              // when not empty
  int parent = -1;            // TIFF: the directory (add_level's index) whose SubIFD this is; -1: the main chain
  int64_t tiles_across() const { return stripped ? 1 : (width + tile - 1) / tile; }
  int64_t tiles_down() const { return stripped ? 1 : (height + tile - 1) / tile; }
  int64_t frame_width() const { return stripped ? width : tile; }
  int64_t frame_height() const { return stripped ? height : tile; }
};

// For sinks that keep every plane in the first plane's levels (OME-Zarr arrays, DICOM instances): the k-th
// level of a later plane is the first plane's k-th, on the same grid. Ok, or an internal error naming
// `output` (PyramidWriter gives every plane the same pyramid).
inline Status check_plane_level(const std::string& output, size_t k, const LevelSpec& first, const LevelSpec& level) {
  if (first.width == level.width && first.height == level.height && first.tile == level.tile) return Status();
  return internal_error(output + ": a plane's level " + std::to_string(k) + " differs from the first plane's");
}

class TileSink {
 public:
  virtual ~TileSink() = default;
  // The plane (channel, focal plane, time point) whose pyramid comes next: a sink that stores planes as
  // axes of one array (OME-Zarr) places the tiles by it; the others take each plane's levels as new ones.
  virtual void begin_plane(int32_t /*c*/, int32_t /*z*/, int32_t /*t*/) {}
  // Declares the next level; its index is returned.
  virtual int add_level(LevelSpec level) = 0;
  // Takes tile `index` (row-major in the level's grid) of `level`; each tile once. A sink may require the
  // tiles of each level in index order (DICOM's TILED_FULL frames): PyramidWriter gives them so.
  virtual Status write_tile(int level, int64_t index, std::span<const uint8_t> bytes) = 0;
};

}  // namespace tilewise::write
