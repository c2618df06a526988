// SlideModel: what a format driver makes of a slide: levels (largest first), properties, associated images
// and the background colour. Immutable once built; the region layer reads it without locks.
//
// A level is a grid of decode units. Each unit is a byte range of the level's source plus the level's codec
// description; how a unit's bytes become a decoder's complete stream is the level's UnitStream (a TIFF tile
// or strip as stored, or a run of MCUs between two JPEG restart markers, as in Hamamatsu NDPI), read by
// formats/unit_stream.h. The grid
// is regular (unit (c, r) covers the level's pixels at (c, r) x the unit size), sparse (units of length 0
// read as background), or positioned (a Placement: parts of units drawn at their own places, overlapping
// or leaving gaps, as MIRAX's camera images). The region layer plans and reads every level the same way,
// whatever its format.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/checked_math.h"

#include "codecs/tile_desc.h"
#include "io/source.h"
#include "tiff/tiff_file.h"
#include "tilewise/status.h"
#include "tilewise/types.h"

namespace tilewise::codecs {
struct EntropyLayout;
}

namespace tilewise::formats {

enum class UnitStream {
  kStored,           // the unit's bytes as stored (JPEG with shared tables: desc.jpeg_tables, spliced in on demand)
  kRestartInterval,  // its part's header + the unit's bytes, whose last two (the next restart marker) end as EOI
  kItems,            // DICOM fragments: the unit is a run of items (tag, length, value) whose values, joined, are the stream
  kCziSubblock,      // a Zeiss subblock behind the driver's header (formats/unit_stream.h): each unit its own description
  kFrame,            // a frame its part's source fetches whole by number (Source::read_frame: DICOMweb); the unit's
                     // offset is the frame number, its length an estimate of its bytes (0: absent, as everywhere)
};

// One file a level's units are read from, with the JPEG header its restart-interval units share
// (UnitStream::kRestartInterval: SOI .. SOS of that file's image, its SOF sized to one unit).
// `entropy`, for restart-interval units whose header the MCU index can walk (codecs/jpeg/mcu_index.h): its
// tables, so that a window far into a unit is decoded from a checkpoint rather than the unit's start.
struct UnitPart {
  std::shared_ptr<const io::Source> source;
  std::vector<uint8_t> header;
  std::shared_ptr<const codecs::EntropyLayout> entropy;
  // Bytes of the file that hold no unit (a TIFF's header and directories, sorted by offset): a unit
  // overlapping them has a damaged offset. Null when the format has none to check.
  std::shared_ptr<const std::vector<io::ByteRange>> structure;
};

// Where a level's units lie: byte ranges in the level's parts (`part` per unit; empty when the level has
// one part). Shared by the levels OpenSlide derives from one image by decoding it at a reduced scale.
struct UnitTable {
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> lengths;
  std::vector<uint32_t> part;
};

// A tile of a positioned level: the part of one decoded unit at (src_x, src_y), width x height, drawn with
// its top-left pixel at (x, y) of the level (which may lie outside the level: what falls outside is cut).
struct PlacedTile {
  int64_t x = 0, y = 0;
  int32_t width = 0, height = 0;
  int32_t src_x = 0, src_y = 0;
  int64_t unit = 0;  // index into the level's units (row-major over tiles_across x tiles_down)
};

// A positioned level's tiles in paint order: where two overlap, the later one's pixels show; pixels no
// tile covers read as background. Tiles are drawn wherever they lie, also past the level's edges (as
// OpenSlide draws MIRAX tiles); [x0, x1) x [y0, y1) bounds them all. Bins of bin_width x bin_height pixels
// from (x0, y0) list the tiles touching them (ascending), so a region finds its tiles without a scan.
struct Placement {
  std::vector<PlacedTile> tiles;
  int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int64_t bin_width = 1, bin_height = 1, bins_across = 0, bins_down = 0;
  std::vector<uint32_t> bin_start;  // tiles of bin b: bin_tiles[bin_start[b] .. bin_start[b + 1])
  std::vector<uint32_t> bin_tiles;
};

// Indexes `tiles` (in paint order) into bins of about the tiles' size.
std::shared_ptr<const Placement> make_placement(std::vector<PlacedTile> tiles);

struct LevelModel {
  LevelInfo info;
  codecs::TileDesc desc;  // unit description shared by every unit of the level (width x height pixels)
  int64_t tiles_across = 0;
  int64_t tiles_down = 0;
  // The units, row-major over the grid: where each one's bytes lie in which part (file). A unit of length 0
  // is absent in every format (Philips sparse slides, Aperio encoder gaps, sparse generic TIFFs) and reads
  // as background.
  std::shared_ptr<const std::vector<UnitPart>> parts;
  std::shared_ptr<const UnitTable> units;
  UnitStream stream = UnitStream::kStored;
  // Set for positioned levels: where each unit's pixels are drawn (units then need not tile the level).
  std::shared_ptr<const Placement> placement;
  const tiff::Ifd* ifd = nullptr;  // the TIFF directory the level was built from, if any (owned by SlideModel::tiff)
  uint64_t unit_offset(int64_t i) const { return units->offsets[static_cast<size_t>(i)]; }
  uint64_t unit_length(int64_t i) const { return units->lengths[static_cast<size_t>(i)]; }
  const UnitPart& unit_part(int64_t i) const {
    return (*parts)[units->part.empty() ? 0 : units->part[static_cast<size_t>(i)]];
  }
};

// A tiled level of width x height pixels on a regular grid of `desc`'s units, the last column and row cut by
// the level's edges: its size, tile size, compression, unit description and grid. The caller adds the
// units, their parts and the downsample.
LevelModel grid_level(int64_t width, int64_t height, const codecs::TileDesc& desc);

// The parts of a level read from one file (with no shared header).
inline std::shared_ptr<const std::vector<UnitPart>> single_part(std::shared_ptr<const io::Source> source,
                                                                 std::vector<uint8_t> header = {},
                                                                 std::shared_ptr<const std::vector<io::ByteRange>> structure = {}) {
  return std::make_shared<const std::vector<UnitPart>>(
      std::vector<UnitPart>{{std::move(source), std::move(header), nullptr, std::move(structure)}});
}

struct AssociatedModel {
  std::string name;
  // Decoded whole through the same tile machinery; or, when embedded_jpeg is set (Philips keeps label and
  // macro as base64 JPEG inside its XML), image.info holds the size and embedded_jpeg the stream.
  LevelModel image;
  std::vector<uint8_t> embedded_jpeg;
  std::vector<uint8_t> icc_profile;  // where the format gives it one (DICOM's own, Aperio's thumbnail)
};

// A stored 2-D image of a slide with several planes: `samples` channels from `channel` on (interleaved in
// its units), at focal plane z and time point t, and its pyramid (the same level sizes as every plane's).
struct PlaneModel {
  int32_t channel = 0;
  int32_t samples = 1;
  int32_t z = 0;
  int32_t t = 0;
  std::vector<LevelModel> levels;
};

struct SlideModel {
  std::shared_ptr<const tiff::TiffFile> tiff;
  // Other TIFF files whose directories levels were built from (the members of a multi-file OME-TIFF set).
  std::vector<std::shared_ptr<const tiff::TiffFile>> companion_tiffs;
  std::string vendor;
  // The pyramid every RGB read uses: the image's, or where it has several planes that of channel 0 at
  // (axes.default_z, t 0).
  std::vector<LevelModel> levels;
  ImageAxes axes;
  // Every plane, when the image has more than one or its channels are not an RGB rendering; empty for
  // brightfield (one plane, `levels`). planes[0] is (channel 0, z 0, t 0).
  std::vector<PlaneModel> planes;
  Properties properties;  // sorted by key
  std::vector<AssociatedModel> associated;
  std::array<uint8_t, 3> background{255, 255, 255};
  std::vector<uint8_t> icc_profile;
  std::optional<std::pair<double, double>> mpp;
  // Problems that did not stop the slide from opening (malformed metadata, ignored directories).
  std::vector<std::string> warnings;
  // The file's images when it holds several, and the one this model is (unset: the format's default).
  std::vector<SceneInfo> scenes;
  std::optional<int32_t> scene;
};

// The plane holding channel `channel` at (z, t), and the sample of its units the channel is; nullptr when
// the model has no such plane (the caller checks the indices against `axes` first).
const PlaneModel* find_plane(const SlideModel& model, int32_t channel, int32_t z, int32_t t, int32_t* sample);

// Checks a driver's planes against its axes and levels: every (channel, z, t) held by exactly one plane,
// every plane's pyramid of the sizes of `levels`, its units' samples of the axes' type. Corrupt naming
// `file` otherwise.
Status check_planes(const SlideModel& model, const std::string& file);

// The sample type units described by `desc` hold; Unsupported for sizes no SampleType has.
Result<SampleType> sample_type_of(const codecs::TileDesc& desc);

// Limits applied while building levels (decode units that cannot be decoded safely are refused).
struct ModelLimits {
  uint64_t max_chunk_bytes = 512ull << 20;  // RGB bytes of one decoded tile or strip
  // Whether a decode unit of width x height pixels of `bytes_per_pixel` fits (overflow-checked: the sizes come
  // from the file). Every driver bounds its units with it; each words its own error.
  bool unit_fits(uint64_t width, uint64_t height, uint64_t bytes_per_pixel = 3) const {
    const auto pixels = internal::checked_mul(width, height);
    const auto bytes = pixels ? internal::checked_mul(*pixels, bytes_per_pixel) : std::nullopt;
    return bytes && *bytes <= max_chunk_bytes;
  }
};

}  // namespace tilewise::formats
