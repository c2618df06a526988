#include "codecs/jpeg/markers.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "util/bytes.h"

namespace tilewise::codecs {

namespace {

constexpr const char* kNeedMore = "jpeg: the header continues past the bytes read";

bool is_sof(uint8_t m) {
  return (m >= 0xC0 && m <= 0xC3) || (m >= 0xC5 && m <= 0xC7) || (m >= 0xC9 && m <= 0xCB) || (m >= 0xCD && m <= 0xCF);
}

uint32_t be16(const uint8_t* p) { return internal::load_be16(p); }

}  // namespace

bool frame_needs_more_bytes(const Status& s) { return s.code() == StatusCode::kCorrupt && s.message() == kNeedMore; }

Result<JpegFrame> parse_jpeg_frame(std::span<const uint8_t> b) {
  JpegFrame f;
  if (b.size() < 2 || b[0] != 0xFF || b[1] != 0xD8) return corrupt("jpeg: the stream does not start with SOI");
  bool have_sof = false;
  size_t pos = 2;
  for (;;) {
    if (pos + 4 > b.size()) return corrupt(kNeedMore);
    if (b[pos] != 0xFF) return corrupt("jpeg: expected a marker at offset " + std::to_string(pos));
    const uint8_t marker = b[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7)) {  // no segment
      pos += 2;
      continue;
    }
    const uint32_t length = be16(&b[pos + 2]);
    if (length < 2) return corrupt("jpeg: a marker segment at offset " + std::to_string(pos) + " has length < 2");
    if (pos + 2 + length > b.size()) return corrupt(kNeedMore);
    const uint8_t* seg = &b[pos + 4];
    if (is_sof(marker)) {
      if (length < 8) return corrupt("jpeg: SOF segment is too short");
      f.sof_offset = pos;
      f.sof_marker = marker;
      f.height = be16(seg + 1);
      f.width = be16(seg + 3);
      f.components = seg[5];
      if (length < 8 + 3u * static_cast<uint32_t>(f.components)) return corrupt("jpeg: SOF segment is too short");
      int hmax = 1, vmax = 1;
      for (int c = 0; c < f.components; ++c) {
        const uint8_t sampling = seg[6 + 3 * c + 1];
        hmax = std::max(hmax, sampling >> 4);
        vmax = std::max(vmax, sampling & 15);
      }
      f.mcu_width = 8 * hmax;
      f.mcu_height = 8 * vmax;
      have_sof = true;
    } else if (marker == 0xFE && !f.has_comment) {
      f.comment.assign(reinterpret_cast<const char*>(seg), length - 2);
      f.comment.resize(std::min(f.comment.size(), f.comment.find('\0')));
      f.has_comment = true;
    } else if (marker == 0xDD) {
      if (length < 4) return corrupt("jpeg: DRI segment is too short");
      f.restart_interval = be16(seg);
    } else if (marker == 0xDA) {
      if (!have_sof) return corrupt("jpeg: SOS before any SOF");
      if (length < 3) return corrupt("jpeg: SOS segment is too short");
      f.scan_components = seg[0];
      f.header_end = pos + 2 + length;
      return f;
    } else if (marker == 0xD9) {
      return corrupt("jpeg: EOI before any SOS");
    }
    pos += 2 + length;
  }
}

void set_frame_size(std::span<uint8_t> header, const JpegFrame& frame, uint16_t width, uint16_t height) {
  uint8_t* p = header.data() + frame.sof_offset + 5;  // marker(2) length(2) precision(1)
  p[0] = static_cast<uint8_t>(height >> 8);
  p[1] = static_cast<uint8_t>(height);
  p[2] = static_cast<uint8_t>(width >> 8);
  p[3] = static_cast<uint8_t>(width);
}

void find_restart_markers(std::span<const uint8_t> bytes, uint64_t base, bool& pending_ff, std::vector<uint64_t>& after) {
  size_t i = 0;
  if (pending_ff && !bytes.empty()) {
    if (bytes[0] >= 0xD0 && bytes[0] <= 0xD7) after.push_back(base + 1);
    pending_ff = false;
    i = bytes[0] == 0xFF ? 0 : 1;  // 0xFF 0xFF: the second may start a marker
  }
  while (i < bytes.size()) {
    const void* ff = std::memchr(bytes.data() + i, 0xFF, bytes.size() - i);
    if (!ff) return;
    const size_t at = static_cast<size_t>(static_cast<const uint8_t*>(ff) - bytes.data());
    if (at + 1 >= bytes.size()) {
      pending_ff = true;
      return;
    }
    const uint8_t m = bytes[at + 1];
    if (m >= 0xD0 && m <= 0xD7) after.push_back(base + at + 2);
    i = m == 0xFF ? at + 1 : at + 2;
  }
}

}  // namespace tilewise::codecs
