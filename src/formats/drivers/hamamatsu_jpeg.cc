#include "formats/drivers/hamamatsu_jpeg.h"

#include <algorithm>
#include <functional>
#include <map>

#include "codecs/jpeg/mcu_index.h"
#include "util/checked_math.h"

namespace tilewise::formats {

namespace {

// The JPEG's header: read in growing pieces until its SOS segment ends.
Result<std::pair<codecs::JpegFrame, std::vector<uint8_t>>> read_header(const io::Source& source, uint64_t offset,
                                                                       uint64_t length, const std::string& where) {
  for (uint64_t want = 64 << 10;; want *= 4) {
    std::vector<uint8_t> bytes(static_cast<size_t>(std::min(want, length)));
    TW_RETURN_IF_ERROR(source.pread(bytes, offset).with_context(where));
    auto frame = codecs::parse_jpeg_frame(bytes);
    if (frame.ok()) {
      bytes.resize(static_cast<size_t>(frame->header_end));
      return std::make_pair(*frame, std::move(bytes));
    }
    if (!codecs::frame_needs_more_bytes(frame.status()) || want >= length || want >= (16u << 20)) {
      return frame.status().with_context(where);
    }
  }
}

// Where each restart interval begins (file offsets).
Result<std::vector<uint64_t>> unit_starts(const io::Source& source, uint64_t offset, uint64_t length,
                                          const codecs::JpegFrame& frame, uint64_t units,
                                          const std::vector<uint64_t>* recorded, const std::string& where) {
  if (recorded && recorded->size() == units) {
    std::vector<uint64_t> starts(units);
    for (size_t i = 0; i < units; ++i) {
      if ((*recorded)[i] >= length) return corrupt(where + ": MCU start " + std::to_string(i) + " lies past the JPEG");
      starts[i] = offset + (*recorded)[i];
    }
    return starts;
  }
  std::vector<uint64_t> starts{offset + frame.header_end};
  constexpr uint64_t kChunk = 4 << 20;
  std::vector<uint8_t> buf;
  bool pending_ff = false;
  for (uint64_t at = frame.header_end; at < length && starts.size() < units + 1; at += kChunk) {
    buf.resize(static_cast<size_t>(std::min(kChunk, length - at)));
    TW_RETURN_IF_ERROR(source.pread(buf, offset + at).with_context(where));
    codecs::find_restart_markers(buf, offset + at, pending_ff, starts);
  }
  if (starts.size() != units) {
    return corrupt(where + ": the JPEG has " + std::to_string(starts.size()) + " restart intervals, its size and " +
                   "restart interval need " + std::to_string(units));
  }
  return starts;
}

}  // namespace

Result<RestartJpeg> index_jpeg(const io::Source& source, uint64_t offset, uint64_t length, uint32_t width,
                               uint32_t height, const std::vector<uint64_t>* recorded, const ModelLimits& limits,
                               const std::string& where) {
  if (!internal::range_inside(offset, length, source.size())) {
    return corrupt(where + ": the JPEG (" + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                   ") runs past the end of the file");
  }
  TW_ASSIGN_OR_RETURN(auto header, read_header(source, offset, length, where));
  RestartJpeg j;
  j.frame = header.first;
  const codecs::JpegFrame& frame = j.frame;
  if (frame.components != 3) return unsupported(where + ": a JPEG with " + std::to_string(frame.components) + " components");
  if (width == 0) width = frame.width;
  if (height == 0) height = frame.height;
  // SOF sizes of 0 (or anything) stand for the caller's size when it is larger than JPEG allows.
  if ((frame.width != 0 && frame.width != width && width <= 65500) ||
      (frame.height != 0 && frame.height != height && height <= 65500)) {
    return corrupt(where + ": JPEG size " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                   " differs from the expected " + std::to_string(width) + "x" + std::to_string(height));
  }
  if (width == 0 || height == 0) return corrupt(where + ": the JPEG has no size");
  const uint64_t mcus_across = (uint64_t{width} + frame.mcu_width - 1) / frame.mcu_width;
  if (frame.restart_interval == 0) {  // one unit: the whole image
    if (!limits.unit_fits(width, height, 4) || width > 65500 || height > 65500) {
      return unsupported(where + ": a " + std::to_string(width) + "x" + std::to_string(height) +
                         " JPEG without restart markers cannot be read in parts, and exceeds the " +
                         std::to_string(limits.max_chunk_bytes >> 20) + " MiB decode limit");
    }
    j.unit_width = static_cast<int32_t>(width);
    j.unit_height = static_cast<int32_t>(height);
    j.offsets = {offset};
    j.lengths = {length};
    return j;
  }
  if (frame.restart_interval > mcus_across || mcus_across % frame.restart_interval != 0) {
    return unsupported(where + ": restart interval " + std::to_string(frame.restart_interval) + " does not divide the " +
                       std::to_string(mcus_across) + " MCUs of a row");
  }
  const uint64_t unit_width = uint64_t{frame.restart_interval} * frame.mcu_width;
  if (unit_width > 65500) return unsupported(where + ": restart intervals of " + std::to_string(unit_width) + " pixels");
  j.restart_units = true;
  j.unit_width = static_cast<int32_t>(unit_width);
  j.unit_height = frame.mcu_height;
  j.units_across = static_cast<int64_t>(mcus_across / frame.restart_interval);
  j.units_down = (int64_t{height} + frame.mcu_height - 1) / frame.mcu_height;
  const uint64_t count = static_cast<uint64_t>(j.units_across * j.units_down);
  TW_ASSIGN_OR_RETURN(j.offsets, unit_starts(source, offset, length, frame, count, recorded, where));
  j.lengths.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t end = i + 1 < count ? j.offsets[i + 1] : offset + length;
    if (end <= j.offsets[i]) return corrupt(where + ": MCU starts are not increasing at " + std::to_string(i));
    j.lengths[i] = end - j.offsets[i];
  }
  j.unit_header = std::move(header.second);
  codecs::set_frame_size(j.unit_header, frame, static_cast<uint16_t>(unit_width), static_cast<uint16_t>(frame.mcu_height));
  return j;
}

UnitPart restart_part(std::shared_ptr<const io::Source> source, const RestartJpeg& jpeg) {
  UnitPart part{std::move(source), jpeg.unit_header, nullptr};
  if (jpeg.restart_units) {
    auto layout = codecs::parse_entropy_layout(part.header);
    if (layout.ok()) part.entropy = std::move(layout).value();  // else windows decode from the unit's start
  }
  return part;
}

LevelModel restart_jpeg_level(const RestartJpeg& jpeg) {
  LevelModel level;
  level.info.compression = codecs::compression_name(codecs::Compression::kJpeg);
  level.desc.compression = codecs::Compression::kJpeg;
  level.desc.color = codecs::ColorSpace::kYCbCr;
  level.desc.width = jpeg.unit_width;
  level.desc.height = jpeg.unit_height;
  level.stream = jpeg.restart_units ? UnitStream::kRestartInterval : UnitStream::kStored;
  level.info.tiled = true;  // OpenSlide reports the units as the level's tiles
  level.info.tile_width = jpeg.unit_width;
  level.info.tile_height = jpeg.unit_height;
  return level;
}

std::vector<LevelModel> with_scaled_levels(const std::vector<LevelModel>& stored) {
  std::map<int64_t, LevelModel, std::greater<>> by_width;
  for (const LevelModel& l : stored) {
    by_width.insert_or_assign(l.info.width, l);
    for (int32_t denom = 2; denom <= 8; denom *= 2) {
      if (l.desc.width % denom != 0 || l.desc.height % denom != 0) continue;
      LevelModel scaled = l;  // same units and parts (shared), same directory (its quickhash), decoded smaller
      scaled.info.width = l.info.width / denom;
      scaled.info.height = l.info.height / denom;
      scaled.desc.width = l.desc.width / denom;
      scaled.desc.height = l.desc.height / denom;
      scaled.desc.scale_denom = denom;
      scaled.info.tile_width = scaled.desc.width;
      scaled.info.tile_height = scaled.desc.height;
      // The scaled size is rounded down: a last unit row may fall wholly outside it (drop it; rows do not
      // enter unit indices). A last column can only when it held fewer than `denom` pixels; it stays in the
      // grid (tiles_across is the unit table's row stride) and is never read.
      scaled.tiles_down = (scaled.info.height + scaled.desc.height - 1) / scaled.desc.height;
      by_width.insert_or_assign(scaled.info.width, std::move(scaled));
    }
  }
  std::vector<LevelModel> levels;
  for (auto& [width, level] : by_width) levels.push_back(std::move(level));
  return levels;
}

}  // namespace tilewise::formats
