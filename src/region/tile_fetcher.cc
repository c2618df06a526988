#include "region/tile_fetcher.h"

#include <algorithm>
#include <cstring>

#include "codecs/decoder_pool.h"
#include "codecs/jpeg/restart_window.h"
#include "codecs/jpeg/tile_resume.h"
#include "formats/unit_stream.h"

namespace tilewise::region {

void prefetch_units(const formats::LevelModel& level, std::span<const int64_t> units) {
  if (units.empty() || level.unit_part(units.front()).source->is_local_file()) return;
  if (level.stream == formats::UnitStream::kFrame) {  // frames by number, per instance
    std::vector<std::pair<const io::Source*, uint64_t>> frames;
    for (const int64_t i : units) frames.push_back({level.unit_part(i).source.get(), level.unit_offset(i)});
    std::stable_sort(frames.begin(), frames.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t at = 0; at < frames.size();) {
      std::vector<uint64_t> same;
      size_t end = at;
      while (end < frames.size() && frames[end].first == frames[at].first) same.push_back(frames[end++].second);
      frames[at].first->prefetch_frames(same);
      at = end;
    }
    return;
  }
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

int32_t TileRef::valid_rows() const {
  if (level->placement) return level->desc.height;  // a placed unit's pixels are all its own
  return static_cast<int32_t>(std::min<int64_t>(level->desc.height, level->info.height - y0()));
}
int32_t TileRef::valid_cols() const {
  if (level->placement) return level->desc.width;
  return static_cast<int32_t>(std::min<int64_t>(level->desc.width, level->info.width - x0()));
}

std::string TileFetcher::context(const TileRef& tile) const {
  const uint64_t offset = tile.level->unit_offset(tile.index());
  const io::Source& source = *tile.level->unit_part(tile.index()).source;
  const std::string where = tile.level->stream == formats::UnitStream::kFrame
                                ? " frame " + std::to_string(offset)
                                : " at offset " + std::to_string(source.file_offset(offset));
  return source.name() + ": " + std::string(tile.level_label) + " tile (" + std::to_string(tile.col) + "," +
         std::to_string(tile.row) + ")" + where;
}

Result<std::vector<uint8_t>> TileFetcher::read_bytes(const TileRef& tile, bool splice_tables) const {
  std::vector<uint8_t> bytes;
  TW_RETURN_IF_ERROR(read_bytes_into(tile, bytes, splice_tables));
  return bytes;
}

Status TileFetcher::read_bytes_into(const TileRef& tile, std::vector<uint8_t>& bytes, bool splice_tables) const {
  const Result<codecs::TileDesc> desc = formats::read_unit(*tile.level, tile.index(), bytes, splice_tables);
  return desc.ok() ? Status() : desc.status().with_context(context(tile));
}

bool windows_use_checkpoints(const formats::LevelModel& level, int64_t unit) {
  return level.stream == formats::UnitStream::kRestartInterval && level.desc.compression == codecs::Compression::kJpeg &&
         level.unit_part(unit).entropy != nullptr && codecs::checkpoints_enabled();
}

template <typename Fn>
Status TileFetcher::with_tile_bytes(const TileRef& tile, Fn&& decode) const {
  // Bytes are read into a buffer of the calling thread's: decoders never see the file, no lock is held
  // while reading, and no allocation per tile (one per tile fragmented the heap that long-lived objects,
  // such as MCU index entries, were allocated between: 10 KiB of RSS per 0.5 KiB entry).
  thread_local std::vector<uint8_t> buffer;
  std::vector<uint8_t> bytes = std::move(buffer);
  const Result<codecs::TileDesc> desc = formats::read_unit(*tile.level, tile.index(), bytes);
  if (!desc.ok()) {
    buffer = std::move(bytes);
    return desc.status().with_context(context(tile));
  }
  Status s = with_decoder(tile, bytes, *desc, decode);
  if (bytes.capacity() <= (4u << 20)) buffer = std::move(bytes);  // a rare huge unit's buffer is not kept
  return s;
}

template <typename Fn>
Status TileFetcher::with_decoder(const TileRef& tile, std::span<const uint8_t> bytes, const codecs::TileDesc& desc,
                                 Fn&& decode) const {
  auto decoder = codecs::DecoderPool::global().acquire();
  Status s = decode(*decoder, bytes, desc);
  if (!s.ok()) s = s.with_context(context(tile));  // the context string only for an error: this is per tile
  return s;
}

namespace {

// A unit smaller than its level's nominal one (a Zeiss subblock): the part of the window [x, x + out.width) x
// [y, y + out.height) the unit covers, decoded in place, and zeros elsewhere (such a unit's area past its own
// pixels is never drawn).
Status decode_smaller_unit(codecs::CpuDecoder& d, std::span<const uint8_t> bytes, const codecs::TileDesc& desc,
                           const ImageView& out, int32_t x, int32_t y) {
  const int32_t w = std::clamp(desc.width - x, 0, out.width), h = std::clamp(desc.height - y, 0, out.height);
  for (int32_t r = 0; r < out.height; ++r) {
    const size_t from = r < h ? static_cast<size_t>(w) * out.pixel_bytes() : 0;
    std::memset(out.row(r) + from, 0, out.row_bytes() - from);
  }
  if (w == 0 || h == 0) return Status();
  const ImageView part = out.sub(0, 0, w, h);
  return x == 0 && y == 0 && w == desc.width ? d.decode(bytes, desc, part) : d.decode_window(bytes, desc, part, x, y);
}

bool smaller_than_level(const TileRef& tile, const codecs::TileDesc& desc) {
  return desc.width != tile.level->desc.width || desc.height != tile.level->desc.height;
}

auto whole(const TileRef& tile, const ImageView& out) {
  return [&tile, &out](codecs::CpuDecoder& d, std::span<const uint8_t> bytes, const codecs::TileDesc& desc) {
    if (smaller_than_level(tile, desc)) return decode_smaller_unit(d, bytes, desc, out, 0, 0);
    return d.decode(bytes, desc, out);
  };
}

// A window of a JPEG unit decoded from an MCU checkpoint of its index (codecs/jpeg/), or nullopt.
std::optional<Status> resumed_window(const TileRef& tile, std::span<const uint8_t> bytes, const codecs::TileDesc& desc,
                                     codecs::CpuDecoder& d, const ImageView& out, int32_t x, int32_t y) {
  const formats::LevelModel& level = *tile.level;
  if (desc.compression != codecs::Compression::kJpeg || !out.is_rgb8()) return std::nullopt;
  const std::shared_ptr<const void> table = level.units;  // the index's key, held weakly there
  const codecs::UnitKey unit{table, tile.index()};
  if (level.stream == formats::UnitStream::kRestartInterval) {
    const codecs::EntropyLayout* layout = level.unit_part(unit.index).entropy.get();
    if (!layout) return std::nullopt;
    return codecs::decode_from_checkpoint(unit, *layout, desc, bytes, d, out, x, y);
  }
  // Positioned levels (Leica, Ventana, Trestle, MIRAX) qualify too: (x, y) are in the unit's own pixels, and
  // tile.index() is the unit (region/region_plan.cc).
  if (level.stream == formats::UnitStream::kStored || level.stream == formats::UnitStream::kFrame)
    return codecs::decode_tile_from_row(unit, desc, bytes, d, out, x, y);
  return std::nullopt;
}

auto window(const TileRef& tile, const ImageView& out, int32_t x, int32_t y) {
  return [&tile, &out, x, y](codecs::CpuDecoder& d, std::span<const uint8_t> bytes, const codecs::TileDesc& desc) {
    if (smaller_than_level(tile, desc)) return decode_smaller_unit(d, bytes, desc, out, x, y);
    if (std::optional<Status> s = resumed_window(tile, bytes, desc, d, out, x, y)) return *std::move(s);
    return d.decode_window(bytes, desc, out, x, y);
  };
}

}  // namespace

Status TileFetcher::decode(const TileRef& tile, const ImageView& out) const {
  if (std::optional<Status> s = read_stored(tile, out, 0)) return *std::move(s);
  return with_tile_bytes(tile, whole(tile, out));
}

Status TileFetcher::decode_window(const TileRef& tile, const ImageView& out, int32_t x, int32_t y) const {
  if (x == 0 && out.width == tile.level->desc.width) {
    if (std::optional<Status> s = read_stored(tile, out, y)) return *std::move(s);
  }
  if (out.height < tile.level->desc.height) {
    if (std::optional<Status> s = decode_rows(tile, out, x, y)) return *std::move(s);
  }
  return with_tile_bytes(tile, window(tile, out, x, y));
}

std::optional<Status> TileFetcher::read_stored(const TileRef& tile, const ImageView& out, int32_t row) const {
  const Result<bool> read = formats::read_unit_rows_into(*tile.level, tile.index(), row, out);
  if (!read.ok()) return read.status().with_context(context(tile));
  return *read ? std::optional<Status>(Status()) : std::nullopt;
}

std::optional<Status> TileFetcher::decode_rows(const TileRef& tile, const ImageView& out, int32_t x, int32_t y) const {
  thread_local std::vector<uint8_t> buffer;  // as with_tile_bytes': no allocation per window
  std::vector<uint8_t> bytes = std::move(buffer);
  const auto rows = formats::read_unit_rows(*tile.level, tile.index(), y, out.height, bytes);
  std::optional<Status> s;
  if (!rows.ok()) {
    s = rows.status().with_context(context(tile));
  } else if (*rows) {
    // The rows are a unit of their own: the window at (x, 0) of it, zeros past the unit's own pixels
    s = with_decoder(tile, bytes, **rows,
                     [&out, x](codecs::CpuDecoder& d, std::span<const uint8_t> data, const codecs::TileDesc& desc) {
                       return decode_smaller_unit(d, data, desc, out, x, 0);
                     });
  }
  if (bytes.capacity() <= (4u << 20)) buffer = std::move(bytes);
  return s;
}

Status TileFetcher::decode(const TileRef& tile, std::span<const uint8_t> bytes, const ImageView& out) const {
  TW_RETURN_IF_ERROR(shared_desc(tile));
  return with_decoder(tile, bytes, tile.level->desc, whole(tile, out));
}

Status TileFetcher::decode_window(const TileRef& tile, std::span<const uint8_t> bytes, const ImageView& out, int32_t x,
                                  int32_t y) const {
  TW_RETURN_IF_ERROR(shared_desc(tile));
  return with_decoder(tile, bytes, tile.level->desc, window(tile, out, x, y));
}

Status TileFetcher::shared_desc(const TileRef& tile) const {
  if (formats::units_share_desc(*tile.level)) return Status();
  return internal_error(context(tile) + ": the level's units carry their own descriptions; decode them unread");
}

}  // namespace tilewise::region
