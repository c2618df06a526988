#include "codecs/jpeg/tile_resume.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "codecs/jpeg/markers.h"
#include "codecs/jpeg/mcu_index.h"
#include "codecs/jpeg/mcu_index_cache.h"

namespace tilewise::codecs {

namespace {

// The entropy layouts of the tile headers seen (tables, frame and scan: one or a few per level), by the
// header's bytes; null for a header the index cannot walk. Parsing builds the Huffman lookup tables (tens of
// microseconds), so it is done once per distinct header, not per tile. Each thread first checks the last
// header it looked up - a level's tiles share one - so that the windows of 16 workers take no lock, copy
// no header and touch no shared reference count.
class Layouts {
 public:
  static Layouts& get() {
    static auto* layouts = new Layouts();  // never destroyed: reads may run during exit
    return *layouts;
  }
  // The layout of `header`, or null; valid until this thread's next call.
  const EntropyLayout* of(std::span<const uint8_t> header) {
    // Empty until this thread's first lookup, which no header (never empty) matches.
    thread_local std::string last_header;
    thread_local std::shared_ptr<const EntropyLayout> last_layout;
    if (last_header.size() == header.size() && std::memcmp(last_header.data(), header.data(), header.size()) == 0) {
      return last_layout.get();
    }
    last_header.assign(reinterpret_cast<const char*>(header.data()), header.size());
    last_layout = find_or_parse(last_header, header);
    return last_layout.get();
  }

 private:
  std::shared_ptr<const EntropyLayout> find_or_parse(const std::string& key, std::span<const uint8_t> header) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = layouts_.find(key);
      if (it != layouts_.end()) return it->second;
    }
    auto parsed = parse_entropy_layout(header);
    std::shared_ptr<const EntropyLayout> layout = parsed.ok() ? *std::move(parsed) : nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    if (layouts_.size() >= kMaxHeaders) layouts_.clear();  // many distinct headers: start again
    layouts_.emplace(key, layout);
    return layout;
  }

  static constexpr size_t kMaxHeaders = 64;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const EntropyLayout>> layouts_;
};

}  // namespace

std::optional<Status> decode_tile_from_row(const UnitKey& unit, const TileDesc& desc, std::span<const uint8_t> bytes,
                                           CpuDecoder& decoder, const ImageView& out, int32_t x, int32_t y) {
  // The smallest MCU is 8 rows, and a window must start two MCU rows down to gain anything.
  if (y <= 16 || desc.compression != Compression::kJpeg || desc.planes != 1 || desc.scale_denom > 1 ||
      bytes.size() < 4 || bytes[0] != 0xFF || bytes[1] != 0xD8) {
    return std::nullopt;
  }
  McuIndexCache& cache = McuIndexCache::global();
  if (cache.capacity() == 0) return std::nullopt;
  // The tile's own markers say its frame: it must be the tile as the level describes it (the MCUs per row
  // follow from its width), with no restart markers (the walker stops at markers).
  const Result<JpegFrame> frame = parse_jpeg_frame(bytes);
  if (!frame.ok() || frame->width != static_cast<uint32_t>(desc.width) ||
      frame->height != static_cast<uint32_t>(desc.height) || frame->restart_interval != 0) {
    return std::nullopt;
  }
  const size_t tile_header = static_cast<size_t>(frame->header_end);
  const std::span<const uint8_t> entropy = bytes.subspan(tile_header);
  // The header the index walks and the resumed stream starts with: with shared tables (JPEGTables), the
  // tables without their EOI, then the tile's header without its SOI; the entropy-coded data stays where
  // it is.
  thread_local std::vector<uint8_t> spliced;
  const std::span<const uint8_t> tables = desc.jpeg_tables;
  std::span<const uint8_t> header = bytes.first(tile_header);
  if (tables.size() > 4) {
    // Tables as TIFF stores them: SOI, table segments, EOI. Anything else is left to the plain decode.
    if (tables[0] != 0xFF || tables[1] != 0xD8 || tables[tables.size() - 2] != 0xFF || tables.back() != 0xD9) {
      return std::nullopt;
    }
    spliced.assign(tables.begin(), tables.end() - 2);
    spliced.insert(spliced.end(), bytes.begin() + 2, bytes.begin() + static_cast<std::ptrdiff_t>(tile_header));
    header = spliced;
  }
  const EntropyLayout* layout = Layouts::get().of(header);
  if (!layout || layout->header_end != header.size()) return std::nullopt;
  const int32_t mcu_h = layout->mcu_height;
  // Resume at the MCU row above the window's top row: the row the window starts in is then decoded with
  // its real upper neighbour (fancy upsampling reads the chroma row above).
  const int32_t row = (y - 1) / mcu_h;
  if (row < 2) return std::nullopt;
  const int32_t row_mcus = (desc.width + layout->mcu_width - 1) / layout->mcu_width;
  const int32_t rows = (desc.height + mcu_h - 1) / mcu_h;
  auto entry = cache.entry(unit.table, unit.index, static_cast<size_t>(rows) + 1);
  if (!entry) return std::nullopt;
  const std::optional<McuCheckpoint> from =
      entry->reach(*layout, entropy, int64_t{row_mcus} * rows, row_mcus, static_cast<size_t>(row));
  if (!from) return std::nullopt;
  thread_local std::vector<uint8_t> resumed;
  const int32_t below = desc.height - row * mcu_h;
  if (!resume_rows(*layout, header, entropy, *from, desc.width, below, resumed).ok()) {
    return std::nullopt;  // tables without the codes of the resuming row
  }
  TileDesc rd = desc;
  rd.height = mcu_h + below;
  rd.jpeg_tables = {};  // the resumed stream carries them
  // A failure here is left to the decode from the tile's start, whose error names the damage as usual.
  if (!decoder.decode_window(resumed, rd, out, x, y - (row - 1) * mcu_h).ok()) return std::nullopt;
  cache.count_resumed();
  return Status();
}

}  // namespace tilewise::codecs
