#include "region/tile_fetcher.h"

#include <algorithm>
#include <cstring>

#include "codecs/decoder_pool.h"
#include "dicom/data_set.h"
#include "region/restart_window.h"
#include "region/tile_resume.h"
#include "util/checked_math.h"

namespace tilewise::region {

void prefetch_units(const formats::LevelModel& level, std::span<const int64_t> units) {
  if (units.empty() || level.unit_part(units.front()).source->is_local_file()) return;
  std::vector<std::pair<const io::Source*, io::ByteRange>> ranges;
  ranges.reserve(units.size());
  for (const int64_t i : units) {
    ranges.push_back({level.unit_part(i).source.get(), {level.unit_offset(i), level.unit_length(i)}});
  }
  std::stable_sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t at = 0; at < ranges.size();) {
    size_t end = at;
    std::vector<io::ByteRange> same;
    while (end < ranges.size() && ranges[end].first == ranges[at].first) same.push_back(ranges[end++].second);
    ranges[at].first->prefetch(same);
    at = end;
  }
}

namespace {

// The first range of the part's structure that [offset, offset + length) overlaps, or nullptr.
const io::ByteRange* overlapped_structure(const formats::UnitPart& part, uint64_t offset, uint64_t length) {
  if (!part.structure || length == 0) return nullptr;
  const std::vector<io::ByteRange>& ranges = *part.structure;
  // Ranges start in order and do not overlap: only the last one starting at or before `offset`, and those
  // starting inside the unit, can meet it.
  auto it = std::upper_bound(ranges.begin(), ranges.end(), offset,
                             [](uint64_t at, const io::ByteRange& r) { return at < r.offset; });
  if (it != ranges.begin() && std::prev(it)->offset + std::prev(it)->length > offset) return &*std::prev(it);
  if (it != ranges.end() && it->offset - offset < length) return &*it;
  return nullptr;
}

}  // namespace

int32_t TileRef::valid_rows() const {
  if (level->placement) return level->desc.height;  // a placed unit's pixels are all its own
  return static_cast<int32_t>(std::min<int64_t>(level->desc.height, level->info.height - y0()));
}
int32_t TileRef::valid_cols() const {
  if (level->placement) return level->desc.width;
  return static_cast<int32_t>(std::min<int64_t>(level->desc.width, level->info.width - x0()));
}

std::string TileFetcher::context(const TileRef& tile, uint64_t offset) const {
  const io::Source& source = *tile.level->unit_part(tile.index()).source;
  return source.name() + ": " + std::string(tile.level_label) + " tile (" + std::to_string(tile.col) + "," +
         std::to_string(tile.row) + ") at offset " + std::to_string(source.file_offset(offset));
}

std::string TileFetcher::context(const TileRef& tile) const {
  return context(tile, tile.level->unit_offset(tile.index()));
}

Result<std::vector<uint8_t>> TileFetcher::read_bytes(const TileRef& tile, bool splice_tables) const {
  std::vector<uint8_t> bytes;
  TW_RETURN_IF_ERROR(read_bytes_into(tile, bytes, splice_tables));
  return bytes;
}

Status TileFetcher::read_bytes_into(const TileRef& tile, std::vector<uint8_t>& bytes, bool splice_tables) const {
  const formats::LevelModel& level = *tile.level;
  const uint64_t offset = level.unit_offset(tile.index());
  const uint64_t length = level.unit_length(tile.index());
  const formats::UnitPart& part = level.unit_part(tile.index());
  const io::Source& source = *part.source;
  if (!internal::range_inside(offset, length, source.size())) {
    return corrupt(context(tile, offset) + ": " + std::to_string(length) + " bytes would run past the end of the file (" +
                   std::to_string(source.size()) + " bytes)");
  }
  if (const io::ByteRange* hit = overlapped_structure(part, offset, length)) {
    return corrupt(context(tile, offset) + ": its " + std::to_string(length) + " bytes overlap the file's " +
                   (hit->offset == 0 ? std::string("header") : "directory at offset " + std::to_string(hit->offset)));
  }
  if (level.stream == formats::UnitStream::kRestartInterval) {
    // The image's header, then the MCUs up to the next restart marker, which becomes the end of image.
    const size_t head = part.header.size();
    bytes.resize(head + length);
    std::memcpy(bytes.data(), part.header.data(), head);
    Status s = source.pread({bytes.data() + head, length}, offset);
    if (!s.ok()) return s.with_context(context(tile, offset));
    if (length < 2 || bytes[bytes.size() - 2] != 0xFF) {
      return corrupt(context(tile, offset) + ": the unit does not end with a JPEG marker");
    }
    bytes.back() = 0xD9;
    return Status();
  }
  if (level.stream == formats::UnitStream::kItems) {
    bytes.resize(length);
    Status s = source.pread(bytes, offset);
    if (s.ok()) s = dicom::join_items(bytes);
    if (!s.ok()) return s.with_context(context(tile, offset));
    return Status();
  }
  const auto tables = level.desc.jpeg_tables;
  // Splice: the tables without their EOI, then the tile without its SOI.
  const bool splice = splice_tables && tables.size() > 4 && length > 2;
  const size_t head = splice ? tables.size() - 2 : 0;
  bytes.resize(head + length);
  if (splice) std::memcpy(bytes.data(), tables.data(), head);
  Status s = source.pread({bytes.data() + head, length}, offset);
  if (!s.ok()) return s.with_context(context(tile, offset));
  if (splice) bytes.erase(bytes.begin() + static_cast<long>(head), bytes.begin() + static_cast<long>(head) + 2);
  return Status();
}

template <typename Fn>
Status TileFetcher::with_tile_bytes(const TileRef& tile, Fn&& decode) const {
  // Bytes are read into a buffer of the calling thread's: decoders never see the file, no lock is held
  // while reading, and no allocation per tile (one per tile fragmented the heap that long-lived objects,
  // such as MCU index entries, were allocated between: 10 KiB of RSS per 0.5 KiB entry).
  thread_local std::vector<uint8_t> buffer;
  std::vector<uint8_t> bytes = std::move(buffer);
  Status s = read_bytes_into(tile, bytes);
  if (!s.ok()) {
    buffer = std::move(bytes);
    return s;
  }
  s = with_decoder(tile, bytes, decode);
  if (bytes.capacity() <= (4u << 20)) buffer = std::move(bytes);  // a rare huge unit's buffer is not kept
  return s;
}

template <typename Fn>
Status TileFetcher::with_decoder(const TileRef& tile, std::span<const uint8_t> bytes, Fn&& decode) const {
  auto decoder = codecs::DecoderPool::global().acquire();
  Status s = decode(*decoder, bytes);
  if (!s.ok()) s = s.with_context(context(tile));  // the context string only for an error: this is per tile
  return s;
}

namespace {

auto whole(const TileRef& tile, const ImageView& out) {
  return [&tile, &out](codecs::CpuDecoder& d, std::span<const uint8_t> bytes) {
    return d.decode(bytes, tile.level->desc, out);
  };
}

auto window(const TileRef& tile, const ImageView& out, int32_t x, int32_t y) {
  return [&tile, &out, x, y](codecs::CpuDecoder& d, std::span<const uint8_t> bytes) {
    if (std::optional<Status> s = decode_from_checkpoint(tile, bytes, d, out, x, y)) return *std::move(s);
    if (std::optional<Status> s = decode_tile_from_row(tile, bytes, d, out, x, y)) return *std::move(s);
    return d.decode_window(bytes, tile.level->desc, out, x, y);
  };
}

}  // namespace

Status TileFetcher::decode(const TileRef& tile, const ImageView& out) const {
  return with_tile_bytes(tile, whole(tile, out));
}

Status TileFetcher::decode_window(const TileRef& tile, const ImageView& out, int32_t x, int32_t y) const {
  return with_tile_bytes(tile, window(tile, out, x, y));
}

Status TileFetcher::decode(const TileRef& tile, std::span<const uint8_t> bytes, const ImageView& out) const {
  return with_decoder(tile, bytes, whole(tile, out));
}

Status TileFetcher::decode_window(const TileRef& tile, std::span<const uint8_t> bytes, const ImageView& out, int32_t x,
                                  int32_t y) const {
  return with_decoder(tile, bytes, window(tile, out, x, y));
}

}  // namespace tilewise::region
