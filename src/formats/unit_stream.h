// Unit streams: how unit i of a level becomes what a decoder takes - its description (codecs/tile_desc.h)
// and its complete, codec-ready stream. The levels' UnitStream says how (formats/slide_model.h): a TIFF tile
// or strip as stored (with a JPEG's shared tables spliced in for decoders that cannot be primed with them),
// a restart interval behind its image's header, a run of DICOM items joined, or a Zeiss subblock behind the
// header the driver writes for it. Codecs know nothing about any of these; the region layer reads every unit
// through read_unit.
//
// Thread behaviour: stateless; call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codecs/tile_desc.h"
#include "formats/slide_model.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::formats {

// The header before each Zeiss subblock's data in a UnitStream::kCziSubblock level's units: width, height
// (32-bit little-endian), the CZI pixel type (0 GRAY8, 1 GRAY16, 2 GRAY32FLOAT, 3 BGR24, 4 BGR48) and compression (0 none, 4 JPEG XR, 5 zstd,
// 6 zstd behind a header of its own), two zero bytes. The driver writes it because a level's subblocks may
// differ in size and coding; read_unit turns it into the unit's description.
struct CziUnitHeader {
  static constexpr size_t kSize = 12;
  uint32_t width = 0, height = 0;
  uint8_t pixel_type = 0, compression = 0;
  void write(uint8_t (&to)[kSize]) const;
};

// Reads unit `unit` of `level` into `bytes` (resized; its capacity reused) as a complete stream for the
// unit's decoder and returns the unit's description: the level's, except for UnitStream::kCziSubblock, whose
// units carry their own (size, sample layout and codec; a unit smaller than the level's nominal one leaves
// the rest of its area unpainted, as zeros). `splice_tables`: a JPEG tile with shared tables (TIFF
// JPEGTables) gets them spliced in, for decoders that cannot be primed with tables (nvImageCodec); else
// the tables stay in the description. Errors say what is wrong with the unit; the caller names it.
Result<codecs::TileDesc> read_unit(const LevelModel& level, int64_t unit, std::vector<uint8_t>& bytes,
                                   bool splice_tables = false);

// For a unit stored uncompressed (TIFF tiles and strips, DICOM native frames, Zeiss subblocks; one plane,
// no predictor, no byte planes): reads only its rows [row, row + rows), cut to the unit's height, into
// `bytes` and returns their description, a unit of those rows alone - a window of a large raw unit then
// reads its rows, not the whole unit. nullopt for any other unit (read it whole with read_unit, which also
// reports what is wrong with a damaged one).
Result<std::optional<codecs::TileDesc>> read_unit_rows(const LevelModel& level, int64_t unit, int32_t row, int32_t rows,
                                                       std::vector<uint8_t>& bytes);

// For such a unit whose samples `out` takes as they are stored (its own samples in host byte order, or
// 8-bit RGB) and of out's width: reads its rows [row, row + out.height) straight into `out` and returns true
// (Source::pread_rows: no staging copy). False, reading nothing, for any other unit or view, or rows past
// the unit's own. (A narrower window reads its full rows with read_unit_rows and copies its part:
// scattering them with preadv measured 10-15% slower on 256^2 patches.)
Result<bool> read_unit_rows_into(const LevelModel& level, int64_t unit, int32_t row, const ImageView& out);

// Whether every unit of `level` is described by level.desc (its bytes from read_unit then decode with it).
bool units_share_desc(const LevelModel& level);

}  // namespace tilewise::formats
