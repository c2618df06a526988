#include "codecs/cpu/lzw_encoder.h"

#include <array>

namespace tilewise::codecs {

namespace {

// Codes written most significant bit first.
class BitWriter {
 public:
  explicit BitWriter(std::vector<uint8_t>& out) : out_(out) {}
  void put(uint32_t code, uint32_t width) {
    buffer_ = (buffer_ << width) | code;
    bits_ += width;
    while (bits_ >= 8) {
      bits_ -= 8;
      out_.push_back(static_cast<uint8_t>(buffer_ >> bits_));
    }
  }
  void flush() {
    if (bits_ > 0) out_.push_back(static_cast<uint8_t>(buffer_ << (8 - bits_)));
    bits_ = 0;
  }

 private:
  std::vector<uint8_t>& out_;
  uint64_t buffer_ = 0;
  uint32_t bits_ = 0;
};

}  // namespace

std::vector<uint8_t> lzw_encode(std::span<const uint8_t> in) {
  constexpr uint32_t kClear = 256, kEnd = 257, kFirst = 258, kFull = 4094;
  constexpr uint32_t kSlots = 1u << 13;  // open addressing over (prefix, byte) keys; never more than 4096 used
  std::vector<uint8_t> out;
  out.reserve(in.size() / 2 + 16);
  BitWriter bits(out);
  std::array<uint32_t, kSlots> keys;
  std::array<uint16_t, kSlots> codes;
  uint32_t next = kFirst, width = 9, max_code = 511;
  auto reset = [&] {
    keys.fill(UINT32_MAX);
    next = kFirst, width = 9, max_code = 511;
  };
  // After each code written the table gains an entry; the width grows when the next entry would not fit,
  // and a full table is cleared (libtiff's encoder, which every TIFF reader's decoder follows).
  auto grow = [&] {
    if (++next == kFull) {
      bits.put(kClear, width);
      reset();
    } else if (next > max_code) {
      ++width;
      max_code = (1u << width) - 1;
    }
  };
  reset();
  bits.put(kClear, width);
  if (in.empty()) {
    bits.put(kEnd, width);
    bits.flush();
    return out;
  }
  uint32_t prefix = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    const uint32_t key = (prefix << 8) | in[i];
    uint32_t slot = (key * 2654435761u) >> (32 - 13);
    while (keys[slot] != UINT32_MAX && keys[slot] != key) slot = (slot + 1) & (kSlots - 1);
    if (keys[slot] == key) {
      prefix = codes[slot];
      continue;
    }
    bits.put(prefix, width);
    keys[slot] = key;
    codes[slot] = static_cast<uint16_t>(next);
    grow();
    prefix = in[i];
  }
  bits.put(prefix, width);
  grow();
  bits.put(kEnd, width);
  bits.flush();
  return out;
}

}  // namespace tilewise::codecs
