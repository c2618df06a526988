#include "formats/unit_stream.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "dicom/data_set.h"
#include "util/bytes.h"
#include "util/checked_math.h"

namespace tilewise::formats {

void CziUnitHeader::write(uint8_t (&to)[kSize]) const {
  std::memset(to, 0, kSize);
  for (int i = 0; i < 4; ++i) {
    to[i] = static_cast<uint8_t>(width >> (8 * i));
    to[4 + i] = static_cast<uint8_t>(height >> (8 * i));
  }
  to[8] = pixel_type;
  to[9] = compression;
}

namespace {

// The first range of the part's structure that [offset, offset + length) overlaps, or nullptr.
const io::ByteRange* overlapped_structure(const UnitPart& part, uint64_t offset, uint64_t length) {
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

// A Zeiss subblock: the description from the driver's header, which is dropped with the zstd header of
// compression 6 (its size, 1 or 3, then chunk type 1 and the flag of byte planes).
Result<codecs::TileDesc> czi_unit(const codecs::TileDesc& level_desc, std::vector<uint8_t>& bytes) {
  if (bytes.size() < CziUnitHeader::kSize) return corrupt("czi: the subblock is shorter than its header");
  const uint32_t w = internal::load_le32(bytes.data()), h = internal::load_le32(bytes.data() + 4);
  const uint8_t pixel_type = bytes[8], compression = bytes[9];
  if (w == 0 || h == 0 || w > static_cast<uint32_t>(level_desc.width) || h > static_cast<uint32_t>(level_desc.height)) {
    return corrupt("czi: a " + std::to_string(w) + "x" + std::to_string(h) + " subblock in a level of " +
                   std::to_string(level_desc.width) + "x" + std::to_string(level_desc.height) + " units");
  }
  // GRAY8, GRAY16, GRAY32FLOAT, BGR24, BGR48: bytes per pixel
  static constexpr int32_t kPixelBytes[] = {1, 2, 4, 3, 6};
  if (pixel_type > 4) return unsupported("czi: pixel type " + std::to_string(pixel_type));
  const int32_t pixel_bytes = kPixelBytes[pixel_type];
  codecs::TileDesc desc;
  desc.width = static_cast<int32_t>(w);
  desc.height = static_cast<int32_t>(h);
  desc.samples_per_pixel = pixel_type <= 2 ? 1 : 3;
  desc.bits_per_sample = 8 * pixel_bytes / desc.samples_per_pixel;
  desc.color = pixel_type <= 2 ? codecs::ColorSpace::kMinIsBlack : codecs::ColorSpace::kBgr;
  if (pixel_type == 2) desc.sample_format = codecs::SampleFormat::kFloat;
  size_t head = CziUnitHeader::kSize;
  switch (compression) {
    case 0: desc.compression = codecs::Compression::kNone; break;
    case 4: desc.compression = codecs::Compression::kJpegXr; break;
    case 5: desc.compression = codecs::Compression::kZstd; break;
    case 6: {
      desc.compression = codecs::Compression::kZstd;
      const std::span<const uint8_t> rest(bytes.data() + head, bytes.size() - head);
      if (rest.empty() || rest.size() < rest[0]) return corrupt("czi: zstd header is cut short");
      if (rest[0] == 3) {
        if (rest[1] != 1) return corrupt("czi: unexpected zstd chunk type " + std::to_string(rest[1]));
        desc.split_bytes = (rest[2] & 1) != 0;
      } else if (rest[0] != 1) {
        return corrupt("czi: unexpected zstd header length " + std::to_string(rest[0]));
      }
      head += rest[0];
      break;
    }
    default: return unsupported("czi: compression " + std::to_string(compression));
  }
  if (compression == 0 && bytes.size() - head != size_t{w} * h * static_cast<size_t>(pixel_bytes)) {
    return corrupt("czi: can't read " + std::to_string((bytes.size() - head) / static_cast<size_t>(pixel_bytes)) +
                   " pixels into a " + std::to_string(w) + "x" + std::to_string(h) + " image");
  }
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(head));
  return desc;
}

}  // namespace

bool units_share_desc(const LevelModel& level) { return level.stream != UnitStream::kCziSubblock; }

namespace {

// An uncompressed unit's samples in the file: `desc` describes them, rows of `row_bytes` from `offset`.
struct RawUnit {
  const io::Source* source = nullptr;
  uint64_t offset = 0;
  codecs::TileDesc desc;
  uint64_t row_bytes = 0;
};

// The unit as raw rows (read_unit_rows' conditions), or nullopt.
Result<std::optional<RawUnit>> raw_unit(const LevelModel& level, int64_t unit) {
  const std::optional<RawUnit> none;
  uint64_t offset = level.unit_offset(unit), length = level.unit_length(unit);
  const UnitPart& part = level.unit_part(unit);
  const io::Source& source = *part.source;
  if (!internal::range_inside(offset, length, source.size()) || overlapped_structure(part, offset, length) != nullptr) {
    return none;
  }
  codecs::TileDesc desc = level.desc;
  if (level.stream == UnitStream::kCziSubblock) {
    // The driver's header, then the subblock's samples: uncompressed ones only
    if (length < CziUnitHeader::kSize) return none;
    uint8_t head[CziUnitHeader::kSize];
    TW_RETURN_IF_ERROR(source.pread(head, offset));
    const uint32_t w = internal::load_le32(head), h = internal::load_le32(head + 4);
    if (head[9] != 0 || head[8] > 4 || w == 0 || h == 0 || w > static_cast<uint32_t>(level.desc.width) ||
        h > static_cast<uint32_t>(level.desc.height)) {
      return none;
    }
    const bool grey = head[8] <= 2;
    desc.width = static_cast<int32_t>(w);
    desc.height = static_cast<int32_t>(h);
    desc.samples_per_pixel = grey ? 1 : 3;
    desc.bits_per_sample = head[8] == 0 || head[8] == 3 ? 8 : head[8] == 2 ? 32 : 16;
    desc.sample_format = head[8] == 2 ? codecs::SampleFormat::kFloat : codecs::SampleFormat::kUnsigned;
    desc.color = grey ? codecs::ColorSpace::kMinIsBlack : codecs::ColorSpace::kBgr;
    desc.compression = codecs::Compression::kNone;
    offset += CziUnitHeader::kSize;
    length -= CziUnitHeader::kSize;
  } else if (level.stream != UnitStream::kStored) {
    return none;
  }
  if (desc.compression != codecs::Compression::kNone || desc.predictor != 1 || desc.planes != 1 || desc.split_bytes ||
      desc.bits_per_sample % 8 != 0 || desc.scale_denom != 1) {
    return none;
  }
  const uint64_t row_bytes = static_cast<uint64_t>(desc.width) * static_cast<uint64_t>(desc.samples_per_pixel) *
                             static_cast<uint64_t>(desc.bits_per_sample / 8);
  // The whole unit's rows must be there (a short one is read whole, and its error reported from that read)
  if (row_bytes == 0 || length < row_bytes * static_cast<uint64_t>(desc.height)) return none;
  return std::optional<RawUnit>(RawUnit{&source, offset, desc, row_bytes});
}

// Whether the decoder's output for these samples in `out` is the samples themselves (CpuDecoder::decode_native
// of an uncompressed unit in host order, or its RGB rendering of 8-bit RGB).
bool copies_as_stored(const codecs::TileDesc& d, const ImageView& out) {
  const int32_t bytes = d.bits_per_sample / 8;
  if (!out.device.is_cpu() || out.channels != d.samples_per_pixel || out.sample_bytes != bytes) return false;
  if (bytes > 1 && d.big_endian) return false;
  if (out.is_rgb8()) return d.color == codecs::ColorSpace::kRgb;
  return !(d.color == codecs::ColorSpace::kBgr && d.samples_per_pixel >= 3);
}

}  // namespace

Result<std::optional<codecs::TileDesc>> read_unit_rows(const LevelModel& level, int64_t unit, int32_t row, int32_t rows,
                                                       std::vector<uint8_t>& bytes) {
  if (row < 0 || rows <= 0) return std::optional<codecs::TileDesc>();
  TW_ASSIGN_OR_RETURN(const std::optional<RawUnit> raw, raw_unit(level, unit));
  if (!raw || row >= raw->desc.height) return std::optional<codecs::TileDesc>();
  codecs::TileDesc desc = raw->desc;
  const int32_t count = std::min(rows, desc.height - row);
  bytes.resize(static_cast<size_t>(raw->row_bytes) * static_cast<size_t>(count));
  TW_RETURN_IF_ERROR(raw->source->pread(bytes, raw->offset + raw->row_bytes * static_cast<uint64_t>(row)));
  desc.height = count;
  return std::optional<codecs::TileDesc>(desc);
}

Result<bool> read_unit_rows_into(const LevelModel& level, int64_t unit, int32_t row, const ImageView& out) {
  if (row < 0 || out.width <= 0 || out.height <= 0) return false;
  TW_ASSIGN_OR_RETURN(const std::optional<RawUnit> raw, raw_unit(level, unit));
  if (!raw || out.width != raw->desc.width || row + out.height > raw->desc.height || !copies_as_stored(raw->desc, out)) {
    return false;
  }
  const uint64_t at = raw->offset + raw->row_bytes * static_cast<uint64_t>(row);
  TW_RETURN_IF_ERROR(raw->source->pread_rows(out.data, out.stride, out.row_bytes(), out.height, at));
  return true;
}

Result<codecs::TileDesc> read_unit(const LevelModel& level, int64_t unit, std::vector<uint8_t>& bytes,
                                   bool splice_tables) {
  const uint64_t offset = level.unit_offset(unit);
  const uint64_t length = level.unit_length(unit);
  const UnitPart& part = level.unit_part(unit);
  const io::Source& source = *part.source;
  if (level.stream == UnitStream::kFrame) {
    TW_RETURN_IF_ERROR(source.read_frame(offset, bytes));
    return level.desc;
  }
  if (!internal::range_inside(offset, length, source.size())) {
    return corrupt(std::to_string(length) + " bytes would run past the end of the file (" +
                   std::to_string(source.size()) + " bytes)");
  }
  if (const io::ByteRange* hit = overlapped_structure(part, offset, length)) {
    return corrupt("its " + std::to_string(length) + " bytes overlap the file's " +
                   (hit->offset == 0 ? std::string("header") : "directory at offset " + std::to_string(hit->offset)));
  }
  switch (level.stream) {
    case UnitStream::kRestartInterval: {
      // The image's header, then the MCUs up to the next restart marker, which becomes the end of image.
      const size_t head = part.header.size();
      bytes.resize(head + length);
      std::memcpy(bytes.data(), part.header.data(), head);
      TW_RETURN_IF_ERROR(source.pread({bytes.data() + head, length}, offset));
      if (length < 2 || bytes[bytes.size() - 2] != 0xFF) return corrupt("the unit does not end with a JPEG marker");
      bytes.back() = 0xD9;
      return level.desc;
    }
    case UnitStream::kItems:
      bytes.resize(length);
      TW_RETURN_IF_ERROR(source.pread(bytes, offset));
      TW_RETURN_IF_ERROR(dicom::join_items(bytes));
      return level.desc;
    case UnitStream::kCziSubblock:
      bytes.resize(length);
      TW_RETURN_IF_ERROR(source.pread(bytes, offset));
      return czi_unit(level.desc, bytes);
    case UnitStream::kStored:
    case UnitStream::kFrame:
      break;
  }
  const auto tables = level.desc.jpeg_tables;
  // Splice: the tables without their EOI, then the tile without its SOI.
  const bool splice = splice_tables && tables.size() > 4 && length > 2;
  const size_t head = splice ? tables.size() - 2 : 0;
  bytes.resize(head + length);
  if (splice) std::memcpy(bytes.data(), tables.data(), head);
  TW_RETURN_IF_ERROR(source.pread({bytes.data() + head, length}, offset));
  if (!splice) return level.desc;
  bytes.erase(bytes.begin() + static_cast<long>(head), bytes.begin() + static_cast<long>(head) + 2);
  codecs::TileDesc desc = level.desc;
  desc.jpeg_tables = {};  // the stream carries them
  return desc;
}

}  // namespace tilewise::formats
