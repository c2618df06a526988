// JPEG marker-level parsing without decoding: where a stream's header ends and what its frame is (size,
// MCU size, restart interval), and where its restart markers are. For formats that store one large JPEG and
// read it by restart interval (Hamamatsu NDPI, VMS), so that a window of it decodes without the rest.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::codecs {

struct JpegFrame {
  uint64_t sof_offset = 0;      // offset of the SOF marker (0xFF 0xCn) from the stream's start
  uint64_t header_end = 0;      // offset just past the SOS segment: the first entropy-coded byte
  uint32_t width = 0;           // as the SOF states (0 when it does not: some NDPI levels over 65,535)
  uint32_t height = 0;
  int components = 0;
  int mcu_width = 8;            // 8 x the largest horizontal sampling factor
  int mcu_height = 8;
  uint32_t restart_interval = 0;  // MCUs per restart interval (DRI); 0 = none
  uint8_t sof_marker = 0;         // 0xC0 baseline, 0xC1 extended sequential, 0xC2 progressive, ...
  int scan_components = 0;        // components in the first scan (== components: interleaved)
  bool has_comment = false;       // a COM segment came before SOS
  std::string comment;            // the first COM segment, up to its first NUL
};

// Parses the markers from SOI through the first SOS of `bytes` (a stream's beginning). Corrupt when the
// markers are malformed; OutOfRange-like Corrupt "header continues past the bytes given" when `bytes`
// ends before the SOS segment does (the caller may retry with more).
Result<JpegFrame> parse_jpeg_frame(std::span<const uint8_t> bytes);

// True when parse_jpeg_frame failed only because the bytes ended too soon.
bool frame_needs_more_bytes(const Status& s);

// Sets the SOF's height and width fields of a header (bytes up to header_end) to the given size.
void set_frame_size(std::span<uint8_t> header, const JpegFrame& frame, uint16_t width, uint16_t height);

// Scans entropy-coded bytes for restart markers (0xFF 0xD0-0xD7): appends to `after` the offset (relative
// to `bytes`, plus `base`) of the byte following each. A scan may run over consecutive chunks of a stream:
// `pending_ff` carries a chunk's last byte being 0xFF into the next call.
void find_restart_markers(std::span<const uint8_t> bytes, uint64_t base, bool& pending_ff, std::vector<uint64_t>& after);

}  // namespace tilewise::codecs
