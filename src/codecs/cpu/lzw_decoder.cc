// TIFF LZW decoder. Hand-written because no maintained library of this field exposes TIFF's LZW variant on
// its own (libtiff keeps it internal to its I/O stack); it is small, and bounded by the output span. It
// copies each code's string from where it was first written instead of walking its prefixes: 2.7x libtiff's
// way on 16-bit tissue tiles (bench/RESULTS.md, "2 cores: channels against slideio, bioio and wsidicom").

#include <array>
#include <cstring>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

Result<size_t> lzw_decode(std::span<const uint8_t> in, std::span<uint8_t> out) {
  constexpr uint32_t kClear = 256, kEnd = 257, kFirst = 258, kMaxCodes = 4096;
  if (in.size() >= 2 && in[0] == 0 && (in[1] & 1)) {
    return unsupported("lzw: old-style (LSB-first) LZW is not supported");
  }
  // Every string of the table is a run of bytes already written, so a code is (offset in out, length): a
  // new code is the previous string and the first byte of the one after it, which follows it in the
  // output, i.e. the previous string's run one byte longer. Codes below 256 are their own byte.
  static const std::array<uint8_t, 256 + 16> kBytes = [] {
    std::array<uint8_t, 256 + 16> b{};
    for (int i = 0; i < 256; ++i) b[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
    return b;
  }();
  const uint8_t* start[kMaxCodes];
  uint32_t length[kMaxCodes];
  for (uint32_t i = 0; i < 256; ++i) start[i] = &kBytes[i], length[i] = 1;
  uint8_t* const dst = out.data();
  const size_t capacity = out.size();
  const uint8_t* const src = in.data();
  const size_t in_size = in.size();
  uint32_t next = kFirst, width = 9, limit = 511;  // limit: the code at which the width grows (early change)
  uint32_t previous = kClear;                       // kClear: no previous string
  uint64_t bitbuf = 0;                              // unread bits, left-aligned
  uint32_t bits = 0;
  size_t pos = 0, written = 0;
  for (;;) {
    if (bits < width) {
      if (pos + 8 <= in_size) {
        // Whole bytes up to 63 bits; the next byte's leading bits land where the next refill puts them
        // again (OR of equal bits).
        uint64_t word;
        std::memcpy(&word, src + pos, 8);
        bitbuf |= __builtin_bswap64(word) >> bits;
        const uint32_t take = (63 - bits) >> 3;
        pos += take;
        bits += take * 8;
      } else {
        while (bits <= 56 && pos < in_size) {
          bitbuf |= uint64_t{src[pos++]} << (56 - bits);
          bits += 8;
        }
        if (bits < width) break;  // input exhausted without an end code: accepted, as libtiff does
      }
    }
    const uint32_t code = static_cast<uint32_t>(bitbuf >> (64 - width));
    bitbuf <<= width;
    bits -= width;
    if (code == kClear) {
      next = kFirst, width = 9, limit = 511, previous = kClear;
      continue;
    }
    if (code == kEnd) break;
    const size_t room = capacity - written;
    uint8_t* const at = dst + written;
    size_t len;
    if (code < next) {
      len = length[code];
      const uint8_t* from = start[code];
      if (len <= 16 && room >= 16) {
        // The run lies wholly before `at` (or in kBytes): all 16 bytes are loaded before any is stored;
        // those past `len` are overwritten by the strings that follow.
        uint8_t block[16];
        std::memcpy(block, from, 16);
        std::memcpy(at, block, 16);
      } else {
        if (room == 0) return capacity;
        std::memcpy(at, from, len <= room ? len : room);
      }
    } else if (code == next && previous != kClear) {
      // KwKwK: the previous string (just before `at`) and its own first byte.
      const size_t prev_len = length[previous];
      len = prev_len + 1;
      const uint8_t* prev = at - prev_len;
      const size_t n = len <= room ? len : room;
      for (size_t i = 0; i < n; ++i) at[i] = prev[i < prev_len ? i : 0];
    } else {
      return corrupt("lzw: invalid code " + std::to_string(code) + " at byte " + std::to_string(pos));
    }
    if (previous != kClear && next < kMaxCodes) {
      const uint32_t prev_len = length[previous];
      start[next] = at - prev_len;
      length[next] = prev_len + 1;
      ++next;
    }
    // A stream that decodes to more than the chunk is cut at the chunk's end, as libtiff and tifffile do
    // (seen in real PerkinElmer QPTIFF strips, 3 bytes over): the string's first bytes fill what is left.
    if (len >= room) return capacity;
    written += len;
    previous = code;
    if (next >= limit && width < 12) {
      ++width;
      limit = (1u << width) - 1;
    }
  }
  return written;
}

}  // namespace tilewise::codecs
