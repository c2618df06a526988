#include "tiff/ifd_parser.h"

#include <algorithm>
#include <cstring>

#include "tiff/tags.h"
#include "util/checked_math.h"

namespace tilewise::tiff {

using internal::checked_mul;

uint64_t IfdParser::read_uint(const uint8_t* p, int bytes) const {
  uint64_t v = 0;
  if (little_endian_) {
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  } else {
    for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  }
  return v;
}

Result<std::vector<uint8_t>> IfdParser::payload(const RawEntry& e) const {
  const uint32_t unit = field_type_size(e.type);
  auto bytes = checked_mul(e.count, unit);
  if (!bytes || *bytes > limits_.max_tag_bytes) {
    return corrupt("tag " + std::to_string(e.tag) + " claims " + std::to_string(e.count) +
                   " values, more than the limit");
  }
  std::vector<uint8_t> out(*bytes);
  if (*bytes <= static_cast<uint64_t>(e.inline_bytes)) {
    if (*bytes) std::memcpy(out.data(), e.value, *bytes);
    return out;
  }
  const uint64_t offset = e.data_offset;
  if (!internal::range_inside(offset, *bytes, source_.size())) {
    return corrupt("tag " + std::to_string(e.tag) + " data (" + std::to_string(*bytes) + " bytes at offset " +
                   std::to_string(offset) + ") lies outside the file");
  }
  TW_RETURN_IF_ERROR(source_.pread(out, offset));
  return out;
}

Result<std::vector<uint64_t>> IfdParser::uints(const RawEntry& e) const {
  switch (e.type) {
    case kByte: case kUndefined: case kShort: case kLong: case kIfd: case kLong8: case kIfd8:
    case kSShort: case kSLong: case kSLong8: break;
    default:
      return corrupt("tag " + std::to_string(e.tag) + " has non-integer type " + std::to_string(e.type));
  }
  TW_ASSIGN_OR_RETURN(std::vector<uint8_t> raw, payload(e));
  const uint32_t unit = field_type_size(e.type);
  std::vector<uint64_t> out(e.count);
  const bool is_signed = e.type == kSShort || e.type == kSLong || e.type == kSLong8;
  for (uint64_t i = 0; i < e.count; ++i) {
    uint64_t v = read_uint(raw.data() + i * unit, static_cast<int>(unit));
    if (is_signed && (v >> (unit * 8 - 1)) & 1u) {
      return corrupt("tag " + std::to_string(e.tag) + " has a negative value");
    }
    out[i] = v;
  }
  return out;
}

Result<uint64_t> IfdParser::first_uint(const RawEntry& e) const {
  if (e.count < 1) return corrupt("tag " + std::to_string(e.tag) + " has no value");
  RawEntry one = e;
  one.count = 1;  // only the first value is meaningful; never read the rest
  TW_ASSIGN_OR_RETURN(std::vector<uint64_t> v, uints(one));
  return v[0];
}

Result<std::string> IfdParser::ascii(const RawEntry& e) const {
  TW_ASSIGN_OR_RETURN(std::vector<uint8_t> raw, payload(e));
  size_t len = 0;
  while (len < raw.size() && raw[len] != 0) ++len;
  return std::string(reinterpret_cast<const char*>(raw.data()), len);
}

Result<double> IfdParser::rational_as_double(const RawEntry& e) const {
  if (e.count < 1) return corrupt("tag " + std::to_string(e.tag) + " has no value");
  RawEntry one = e;
  one.count = 1;
  TW_ASSIGN_OR_RETURN(std::vector<uint8_t> raw, payload(one));
  switch (e.type) {
    case kRational: case kSRational: {
      uint64_t num = read_uint(raw.data(), 4), den = read_uint(raw.data() + 4, 4);
      double n = e.type == kSRational ? static_cast<double>(static_cast<int32_t>(num)) : static_cast<double>(num);
      double d = e.type == kSRational ? static_cast<double>(static_cast<int32_t>(den)) : static_cast<double>(den);
      return d == 0 ? 0.0 : n / d;
    }
    case kFloat: {
      uint32_t bits = static_cast<uint32_t>(read_uint(raw.data(), 4));
      float f;
      std::memcpy(&f, &bits, 4);
      return static_cast<double>(f);
    }
    case kDouble: {
      uint64_t bits = read_uint(raw.data(), 8);
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    default: {
      TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e));
      return static_cast<double>(v);
    }
  }
}

namespace {
std::vector<uint32_t> narrow(const std::vector<uint64_t>& v) {
  std::vector<uint32_t> out;
  out.reserve(v.size());
  for (uint64_t x : v) out.push_back(x > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(x));
  return out;
}
uint32_t clamp32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v); }

// Tags that the pyramid's layout and the decoding of its pixels depend on; a damaged one fails the directory.
bool needed_for_pixels(uint16_t tag) {
  switch (tag) {
    case kNewSubfileType: case kImageWidth: case kImageLength: case kBitsPerSample: case kCompression:
    case kPhotometric: case kSamplesPerPixel: case kRowsPerStrip: case kStripOffsets: case kStripByteCounts:
    case kTileWidth: case kTileLength: case kTileOffsets: case kTileByteCounts: case kPlanarConfiguration:
    case kPredictor: case kSampleFormat: case kExtraSamples: case kJpegTables:
    case kSubIfds: case kImageDepth:
      return true;
    default:
      return false;
  }
}
}  // namespace

Status IfdParser::apply(const RawEntry& e, Ifd& ifd) const {
  auto set_string = [&](std::optional<std::string>& field) -> Status {
    TW_ASSIGN_OR_RETURN(field, ascii(e));
    return Status();
  };
  auto set_float = [&](std::optional<double>& field) -> Status {
    TW_ASSIGN_OR_RETURN(field, rational_as_double(e));
    return Status();
  };
  switch (e.tag) {
    case kNewSubfileType: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.new_subfile_type = clamp32(v); break; }
    case kImageWidth: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.width = clamp32(v); break; }
    case kImageLength: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.height = clamp32(v); break; }
    case kBitsPerSample: {  // an empty list keeps the default (1), as if the tag were absent
      TW_ASSIGN_OR_RETURN(auto v, uints(e));
      if (!v.empty()) ifd.bits_per_sample = narrow(v);
      break;
    }
    case kCompression: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.compression = clamp32(v); break; }
    case kPhotometric: {
      TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e));
      ifd.photometric = clamp32(v);
      ifd.has_photometric = true;
      break;
    }
    case kSamplesPerPixel: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.samples_per_pixel = clamp32(v); break; }
    case kRowsPerStrip: {
      TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e));
      if (!ifd.tiled) ifd.chunk_height = clamp32(v);
      break;
    }
    case kStripOffsets: if (!ifd.tiled) { TW_ASSIGN_OR_RETURN(ifd.chunk_offsets, uints(e)); } break;
    case kStripByteCounts: if (!ifd.tiled) { TW_ASSIGN_OR_RETURN(ifd.chunk_byte_counts, uints(e)); } break;
    case kTileWidth: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.chunk_width = clamp32(v); break; }
    case kTileLength: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.chunk_height = clamp32(v); break; }
    case kTileOffsets: { TW_ASSIGN_OR_RETURN(ifd.chunk_offsets, uints(e)); break; }
    case kTileByteCounts: { TW_ASSIGN_OR_RETURN(ifd.chunk_byte_counts, uints(e)); break; }
    case kPlanarConfiguration: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.planar_configuration = clamp32(v); break; }
    case kPredictor: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.predictor = clamp32(v); break; }
    case kOrientation: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.orientation = clamp32(v); break; }
    case kSampleFormat: { TW_ASSIGN_OR_RETURN(auto v, uints(e)); ifd.sample_format = narrow(v); break; }
    case kExtraSamples: { TW_ASSIGN_OR_RETURN(auto v, uints(e)); ifd.extra_samples = narrow(v); break; }
    case kJpegTables: { TW_ASSIGN_OR_RETURN(ifd.jpeg_tables, payload(e)); break; }
    case kIccProfile: { TW_ASSIGN_OR_RETURN(ifd.icc_profile, payload(e)); break; }
    case kXmp: {
      TW_ASSIGN_OR_RETURN(auto bytes, payload(e));
      std::string text(bytes.begin(), bytes.end());
      ifd.xmp = text.substr(0, text.find('\0'));
      break;
    }
    case kSubIfds: { TW_ASSIGN_OR_RETURN(ifd.sub_ifd_offsets, uints(e)); break; }
    case kResolutionUnit: { TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e)); ifd.resolution_unit = clamp32(v); break; }
    case kImageDescription: return set_string(ifd.image_description);
    case kMake: return set_string(ifd.make);
    case kModel: return set_string(ifd.model);
    case kSoftware: return set_string(ifd.software);
    case kDateTime: return set_string(ifd.date_time);
    case kArtist: return set_string(ifd.artist);
    case kHostComputer: return set_string(ifd.host_computer);
    case kCopyright: return set_string(ifd.copyright);
    case kDocumentName: return set_string(ifd.document_name);
    case kXResolution: return set_float(ifd.x_resolution);
    case kYResolution: return set_float(ifd.y_resolution);
    case kXPosition: return set_float(ifd.x_position);
    case kYPosition: return set_float(ifd.y_position);
    case kImageDepth: {
      TW_ASSIGN_OR_RETURN(uint64_t v, first_uint(e));
      if (v > 1) return unsupported("volumetric image (ImageDepth " + std::to_string(v) + ")");
      break;
    }
    default:
      // Tags tilewise does not use are skipped without reading their data; NDPI's vendor tags are kept.
      if (ndpi_ && e.tag >= 32768) {
        PrivateTag t{e.tag, e.type, e.count, {}};
        TW_ASSIGN_OR_RETURN(t.payload, payload(e));
        ifd.private_tags.push_back(std::move(t));
      }
      break;
  }
  return Status();
}

// Derives and checks the decode-unit layout once all entries are known.
Status IfdParser::finish(Ifd& ifd) const {
  if (ifd.width == 0 || ifd.height == 0) {
    return corrupt("image size " + std::to_string(ifd.width) + "x" + std::to_string(ifd.height) + " is empty");
  }
  if (ifd.samples_per_pixel == 0 || ifd.samples_per_pixel > 64) {
    return corrupt("SamplesPerPixel " + std::to_string(ifd.samples_per_pixel) + " is invalid");
  }
  if (!ifd.tiled) {
    ifd.chunk_width = ifd.width;
    if (ifd.chunk_height == 0 || ifd.chunk_height > ifd.height) ifd.chunk_height = ifd.height;
  }
  if (ifd.chunk_width == 0 || ifd.chunk_height == 0) {
    return corrupt("tile size " + std::to_string(ifd.chunk_width) + "x" + std::to_string(ifd.chunk_height) +
                   " is invalid");
  }
  const uint64_t expected = ifd.chunk_count();
  const char* what = ifd.tiled ? "tile" : "strip";
  if (ifd.chunk_offsets.size() < expected) {
    return corrupt(std::string(what) + " offsets table has " + std::to_string(ifd.chunk_offsets.size()) +
                   " entries, the image needs " + std::to_string(expected));
  }
  if (ifd.chunk_byte_counts.size() < expected) {
    return corrupt(std::string(what) + " byte counts table has " + std::to_string(ifd.chunk_byte_counts.size()) +
                   " entries, the image needs " + std::to_string(expected));
  }
  ifd.chunk_offsets.resize(expected);
  ifd.chunk_byte_counts.resize(expected);
  return Status();
}

Result<Ifd> IfdParser::parse(uint64_t offset, uint64_t* next) const {
  const int count_size = big_tiff_ ? 8 : 2;
  const int entry_size = big_tiff_ ? 20 : 12;
  const int next_size = big_tiff_ || ndpi_ ? 8 : 4;
  uint8_t count_buf[8];
  if (!internal::range_inside(offset, count_size, source_.size())) {
    return corrupt("IFD offset " + std::to_string(offset) + " lies outside the file");
  }
  TW_RETURN_IF_ERROR(source_.pread({count_buf, static_cast<size_t>(count_size)}, offset));
  const uint64_t count = read_uint(count_buf, count_size);
  if (count == 0 || count > 65535) {
    return corrupt("IFD at offset " + std::to_string(offset) + " has " + std::to_string(count) + " entries");
  }
  const uint64_t table_bytes = count * entry_size + next_size;
  if (!internal::range_inside(offset + count_size, table_bytes, source_.size())) {
    return corrupt("IFD at offset " + std::to_string(offset) + " with " + std::to_string(count) +
                   " entries runs past the end of the file");
  }
  std::vector<uint8_t> table(table_bytes);
  TW_RETURN_IF_ERROR(source_.pread(table, offset + count_size));
  *next = read_uint(table.data() + count * entry_size, next_size);
  std::vector<uint8_t> high;  // NDPI: the high halves of the value/offset fields
  if (ndpi_) {
    high.resize(count * 4);
    if (!internal::range_inside(offset + count_size + table_bytes, high.size(), source_.size())) {
      return corrupt("NDPI IFD at offset " + std::to_string(offset) + ": its 64-bit offset extensions run past the end of the file");
    }
    TW_RETURN_IF_ERROR(source_.pread(high, offset + count_size + table_bytes));
  }

  Ifd ifd;
  ifd.offset = offset;
  ifd.end = offset + count_size + table_bytes + high.size();
  ifd.little_endian = little_endian_;
  std::vector<RawEntry> entries(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* p = table.data() + i * entry_size;
    RawEntry& e = entries[i];
    e.tag = static_cast<uint16_t>(read_uint(p, 2));
    e.type = static_cast<uint16_t>(read_uint(p + 2, 2));
    e.count = read_uint(p + 4, big_tiff_ ? 8 : 4);
    std::memset(e.value, 0, sizeof e.value);
    std::memcpy(e.value, p + (big_tiff_ ? 12 : 8), big_tiff_ ? 8 : 4);
    e.inline_bytes = big_tiff_ ? 8 : 4;
    if (ndpi_) {
      // Join the high half: an out-of-line offset, or a single LONG-sized value that needs 64 bits.
      const uint64_t hi = read_uint(high.data() + i * 4, 4);
      const uint64_t lo = read_uint(e.value, 4);
      const uint64_t size = field_type_size(e.type) * e.count;
      if (hi != 0 && e.count == 1 && (e.type == kLong || e.type == kSLong || e.type == kIfd)) {
        e.type = e.type == kSLong ? kSLong8 : kLong8;  // the value itself is 64-bit
        const uint64_t wide = lo | hi << 32;
        for (int b = 0; b < 8; ++b) e.value[little_endian_ ? b : 7 - b] = static_cast<uint8_t>(wide >> (8 * b));
        e.inline_bytes = 8;
      } else if (size > 4) {
        e.data_offset = lo | hi << 32;
      }
    }
    if (!ndpi_ || field_type_size(e.type) * e.count <= static_cast<uint64_t>(e.inline_bytes)) {
      e.data_offset = read_uint(e.value, e.inline_bytes);
    }
    if (e.tag == kTileWidth || e.tag == kTileLength) ifd.tiled = true;
  }
  for (const RawEntry& e : entries) {
    if (field_type_size(e.type) == 0) continue;  // unknown field type: ignored, as libtiff does
    Status s = apply(e, ifd);
    if (!s.ok() && s.code() == StatusCode::kCorrupt && !needed_for_pixels(e.tag)) {
      // Metadata the pixels do not need: the directory stays readable without it (OpenSlide reads such a
      // file too: it reads a tag only when it needs it).
      const std::string tag = "tag " + std::to_string(e.tag);
      ifd.skipped_tags.push_back(s.message().rfind(tag, 0) == 0 ? s.message() : tag + ": " + s.message());
      continue;
    }
    TW_RETURN_IF_ERROR(s.with_context("IFD at offset " + std::to_string(offset)));
  }
  TW_RETURN_IF_ERROR(finish(ifd).with_context("IFD at offset " + std::to_string(offset)));
  if (ndpi_) {
    std::sort(ifd.private_tags.begin(), ifd.private_tags.end(),
              [](const PrivateTag& a, const PrivateTag& b) { return a.tag < b.tag; });
  }
  return ifd;
}

}  // namespace tilewise::tiff
