// TIFF LZW decoder. Hand-written because no maintained library of this field exposes TIFF's LZW variant on
// its own (libtiff keeps it internal to its I/O stack); it is small, and bounded by the output span.

#include <array>
#include <cstring>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

Result<size_t> lzw_decode(std::span<const uint8_t> in, std::span<uint8_t> out) {
  constexpr int kClear = 256, kEnd = 257, kFirst = 258, kMaxCodes = 4096;
  // Each code is (prefix code, last byte, length); strings are expanded backwards into the output.
  std::array<uint16_t, kMaxCodes> prefix{};
  std::array<uint8_t, kMaxCodes> suffix{};
  std::array<uint16_t, kMaxCodes> length{};
  std::array<uint8_t, kMaxCodes> first{};
  for (int i = 0; i < 256; ++i) {
    suffix[i] = static_cast<uint8_t>(i);
    first[i] = static_cast<uint8_t>(i);
    length[i] = 1;
  }
  if (in.size() >= 2 && in[0] == 0 && (in[1] & 1)) {
    return unsupported("lzw: old-style (LSB-first) LZW is not supported");
  }

  int next = kFirst, width = 9, previous = -1;
  uint64_t bitbuf = 0;
  int bits = 0;
  size_t pos = 0, written = 0;
  for (;;) {
    while (bits < width && pos < in.size()) {
      bitbuf = (bitbuf << 8) | in[pos++];
      bits += 8;
    }
    if (bits < width) break;  // input exhausted without an end code: accepted, as libtiff does
    const int code = static_cast<int>((bitbuf >> (bits - width)) & ((1u << width) - 1));
    bits -= width;
    if (code == kEnd) break;
    if (code == kClear) {
      next = kFirst;
      width = 9;
      previous = -1;
      continue;
    }
    int emit;
    uint8_t head;
    if (code < next) {
      emit = code;
      head = first[code];
    } else if (code == next && previous >= 0) {
      emit = -1;  // KwKwK case: previous string + its own first byte
      head = first[previous];
    } else {
      return corrupt("lzw: invalid code " + std::to_string(code) + " at byte " + std::to_string(pos));
    }
    if (previous >= 0 && next < kMaxCodes) {
      prefix[next] = static_cast<uint16_t>(previous);
      suffix[next] = head;
      first[next] = first[previous];
      length[next] = static_cast<uint16_t>(length[previous] + 1);
      if (emit < 0) emit = next;
      ++next;
    } else if (emit < 0) {
      return corrupt("lzw: code table overflow");
    }
    const size_t len = length[emit];
    // A stream that decodes to more than the chunk is cut at the chunk's end, as libtiff and tifffile do
    // (seen in real PerkinElmer QPTIFF strips, 3 bytes over): the string's first bytes fill what is left.
    const size_t room = out.size() - written;
    int c = emit;
    for (size_t i = len; i-- > 0;) {
      if (i < room) out[written + i] = suffix[c];
      c = prefix[c];
    }
    if (len >= room) return out.size();
    written += len;
    previous = code;
    // Early change: the code width grows one code before the table fills the current width.
    if (next + 1 >= (1 << width) && width < 12) ++width;
  }
  return written;
}

}  // namespace tilewise::codecs
