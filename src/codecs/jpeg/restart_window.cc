#include "codecs/jpeg/restart_window.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "codecs/jpeg/mcu_index_cache.h"

namespace tilewise::codecs {

bool checkpoints_enabled() { return McuIndexCache::global().capacity() > 0; }

std::optional<Status> decode_from_checkpoint(const UnitKey& unit, const EntropyLayout& layout, const TileDesc& desc,
                                             std::span<const uint8_t> bytes, CpuDecoder& decoder, const ImageView& out,
                                             int32_t x, int32_t y) {
  constexpr int64_t kSpacing = kMcuIndexSpacing;
  if (desc.compression != Compression::kJpeg || !checkpoints_enabled()) return std::nullopt;
  if (bytes.size() <= layout.header_end) return std::nullopt;
  const int64_t denom = std::max(1, desc.scale_denom);
  const int64_t mcu_width = layout.mcu_width;
  const int64_t unit_mcus = int64_t{desc.width} * denom / mcu_width;
  // Decoding from MCU `first` on, pixels from MCU first + 1 on equal a decode from the unit's start (the
  // fancy upsampling of MCU first's left column reads the resuming MCU's chroma).
  const int64_t k = (int64_t{x} * denom / mcu_width - 1) / kSpacing;
  if (k <= 0) return std::nullopt;  // within the unit's first checkpoints: from its start
  const int64_t first = k * kSpacing;
  // The window's MCUs and one to its right (whose chroma its last column's upsampling reads).
  const int64_t end =
      std::min(unit_mcus, ((int64_t{x} + out.width) * denom + mcu_width + mcu_width - 1) / mcu_width);
  McuIndexCache& cache = McuIndexCache::global();
  auto entry = cache.entry(unit.table, unit.index, static_cast<size_t>(unit_mcus / kSpacing + 1));
  if (!entry) return std::nullopt;
  const std::span<const uint8_t> entropy = bytes.subspan(layout.header_end);
  // The checkpoint after the window's MCUs, where the index holds it, bounds the bits copied.
  std::optional<McuCheckpoint> to;
  const std::optional<McuCheckpoint> from =
      entry->reach(layout, entropy, unit_mcus, static_cast<int32_t>(kSpacing), static_cast<size_t>(k),
                   static_cast<size_t>((end + kSpacing - 1) / kSpacing), &to);
  if (!from) return std::nullopt;
  thread_local std::vector<uint8_t> stream;
  const Status built = resume_stream(layout, bytes.first(layout.header_end), entropy, *from,
                                             to ? &*to : nullptr, static_cast<int32_t>(end - first), stream);
  if (!built.ok()) return std::nullopt;  // tables without the codes of the resuming MCU
  TileDesc resumed = desc;
  resumed.width = static_cast<int32_t>((1 + end - first) * mcu_width / denom);
  const int32_t resumed_x = static_cast<int32_t>(x - (first - 1) * mcu_width / denom);
  Status s = decoder.decode_window(stream, resumed, out, resumed_x, y);
  if (s.ok()) cache.count_resumed();
  return s;
}

}  // namespace tilewise::codecs
