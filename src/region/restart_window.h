// A window of a restart-interval unit (Hamamatsu NDPI, VMS) decoded from the MCU checkpoint left of it
// (codecs/jpeg_mcu_index.h) rather than from the unit's start: for a 256-pixel window at the right of a
// 4,096-pixel unit, the entropy decoding of ~15 of its 16 parts is skipped once the unit is indexed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "codecs/cpu/cpu_decoder.h"
#include "region/tile_fetcher.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::region {

// True when windows of `unit` of `level` may be decoded from checkpoints (a restart-interval unit whose
// stream the index can walk, the index on): a window then costs about its own width, not the unit's.
bool windows_use_checkpoints(const formats::LevelModel& level, int64_t unit);

// Decodes the window of out's size at (x, y) of `tile` (whose stream is `bytes`, as TileFetcher reads it)
// from a checkpoint, indexing the unit up to it if needed. nullopt when that does not apply - a window
// within the unit's first checkpoints, a stream the index cannot walk or damaged before the checkpoint, the
// index turned off - and the caller decodes from the unit's start (which reports any damage as usual).
std::optional<Status> decode_from_checkpoint(const TileRef& tile, std::span<const uint8_t> bytes,
                                             codecs::CpuDecoder& decoder, const ImageView& out, int32_t x, int32_t y);

}  // namespace tilewise::region
