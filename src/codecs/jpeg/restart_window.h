// A window of a restart-interval unit (Hamamatsu NDPI, VMS) decoded from the MCU checkpoint left of it
// (codecs/jpeg/mcu_index.h) rather than from the unit's start: for a 256-pixel window at the right of a
// 4,096-pixel unit, the entropy decoding of ~15 of its 16 parts is skipped once the unit is indexed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/jpeg/mcu_index.h"
#include "codecs/jpeg/unit_key.h"
#include "codecs/tile_desc.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

// Whether windows of restart-interval units may be decoded from checkpoints (the index is on): a window
// then costs about its own width, not the unit's.
bool checkpoints_enabled();

// Decodes the window of out's size at (x, y) of the restart-interval unit `unit` (described by `desc`, a
// JPEG of one restart interval; `bytes` its complete stream, header first, whose entropy-coded data `layout`
// describes) from a checkpoint, indexing the unit up to it if needed. nullopt when that does not apply - a
// window within the unit's first checkpoints, a stream damaged before the checkpoint, the index turned off -
// and the caller decodes from the unit's start (which reports any damage as usual).
std::optional<Status> decode_from_checkpoint(const UnitKey& unit, const EntropyLayout& layout, const TileDesc& desc,
                                             std::span<const uint8_t> bytes, CpuDecoder& decoder, const ImageView& out,
                                             int32_t x, int32_t y);

}  // namespace tilewise::codecs
