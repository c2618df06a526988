// A window low in a JPEG tile decoded from the MCU row above it (codecs/jpeg/mcu_index.h resume_rows)
// rather than from the tile's first row.
//
// Tiled JPEG (Aperio, generic TIFF, Leica, Ventana, Trestle, MIRAX, ...) has no restart markers inside a
// tile: a window whose top is row y costs libjpeg-turbo the entropy decoding of every row above it
// (jpeg_skip_scanlines still reads their Huffman codes). A random 256^2 patch meets two tiles at their
// middle on average, so about a fifth of a patch's CPU time went into rows it never shows (2-core machine:
// 0.44 us per skipped tile row, ~113 us of a ~570 us patch; the H200's CPU loader profile: 20% in
// jpeg_skip_scanlines). Once a tile is indexed - one checkpoint (bit position, DC predictors) per MCU row,
// ~16 x 12 bytes per 256^2 tile, kept in the McuIndexCache with the restart-interval units' - a window
// starts one MCU row above its top instead.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/jpeg/unit_key.h"
#include "codecs/tile_desc.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

// Decodes the window of out's size at (x, y) of the JPEG tile `unit` (described by `desc`, its shared
// tables in desc.jpeg_tables; `bytes` the tile as stored) from the checkpoint of MCU row
// (y - 1) / mcu_height, indexing the tile up to it if needed. nullopt when that does not apply - a window in
// the tile's first MCU rows, not a JPEG tile, a stream the index cannot walk (restart markers, progressive)
// or damaged above the checkpoint, the index turned off - and the caller decodes from the tile's start (which
// reports any damage as usual).
std::optional<Status> decode_tile_from_row(const UnitKey& unit, const TileDesc& desc, std::span<const uint8_t> bytes,
                                           CpuDecoder& decoder, const ImageView& out, int32_t x, int32_t y);

}  // namespace tilewise::codecs
