#include "codecs/cpu/pixel_convert.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace tilewise::codecs {

void undo_horizontal_predictor(uint8_t* data, int64_t row_bytes, int64_t rows, int spp) {
  for (int64_t y = 0; y < rows; ++y) {
    uint8_t* row = data + y * row_bytes;
    for (int64_t i = spp; i < row_bytes; ++i) row[i] = static_cast<uint8_t>(row[i] + row[i - spp]);
  }
}

void join_byte_planes(uint8_t* data, size_t bytes, std::vector<uint8_t>& scratch) {
  scratch.assign(data, data + bytes);
  const size_t half = bytes / 2;
  for (size_t i = 0; i < half; ++i) {
    data[2 * i] = scratch[i];
    data[2 * i + 1] = scratch[half + i];
  }
}

void narrow_16_to_8(uint8_t* data, int64_t row_bytes, int64_t rows, const TileDesc& desc) {
  const int spp = desc.samples_per_pixel;
  const int64_t samples = row_bytes / 2;
  // The top 8 of the significant bits, as libtiff's readers (the high byte) and OpenSlide's NGR reader
  // (12-bit samples shifted by 4, higher bits cut) take them.
  const int shift = (desc.significant_bits > 8 && desc.significant_bits <= 16 ? desc.significant_bits : 16) - 8;
  for (int64_t y = 0; y < rows; ++y) {
    uint8_t* row = data + y * row_bytes;
    uint16_t previous[64] = {};
    for (int64_t i = 0; i < samples; ++i) {
      const uint8_t* p = row + 2 * i;
      uint16_t v = desc.big_endian ? static_cast<uint16_t>(p[0] << 8 | p[1]) : static_cast<uint16_t>(p[1] << 8 | p[0]);
      if (desc.predictor == 2) {
        const int c = static_cast<int>(i % spp);
        if (i >= spp) v = static_cast<uint16_t>(v + previous[c]);
        previous[c] = v;
      }
      row[i] = static_cast<uint8_t>(v >> shift);  // i < 2 * i: never overwrites a sample not yet read
    }
  }
}

void to_host_samples(uint8_t* data, int64_t row_bytes, int64_t rows, const TileDesc& desc) {
  const int bytes = desc.bits_per_sample / 8;
  const int spp = desc.samples_per_pixel;
  const int64_t samples = row_bytes / bytes;
  const bool swap = desc.big_endian != (std::endian::native == std::endian::big);
  for (int64_t y = 0; y < rows; ++y) {
    uint8_t* row = data + y * row_bytes;
    if (swap) {
      for (int64_t i = 0; i < samples; ++i) std::reverse(row + i * bytes, row + (i + 1) * bytes);
    }
    if (desc.predictor == 2 && bytes == 2) {
      for (int64_t i = spp; i < samples; ++i) {
        uint16_t v, left;
        std::memcpy(&v, row + 2 * i, 2);
        std::memcpy(&left, row + 2 * (i - spp), 2);
        v = static_cast<uint16_t>(v + left);
        std::memcpy(row + 2 * i, &v, 2);
      }
    }
  }
}

void samples_to_rgb(const uint8_t* src, int64_t row_bytes, const TileDesc& desc, const ImageView& out) {
  const int spp = desc.samples_per_pixel;
  for (int64_t y = 0; y < out.height; ++y) {
    const uint8_t* s = src + y * row_bytes;
    uint8_t* d = out.row(y);
    if (spp >= 3 && desc.color == ColorSpace::kBgr) {
      for (int32_t x = 0; x < out.width; ++x, s += spp, d += 3) {
        d[0] = s[2];
        d[1] = s[1];
        d[2] = s[0];
      }
    } else if (spp >= 3) {
      if (spp == 3) {
        std::memcpy(d, s, static_cast<size_t>(out.width) * 3);
      } else {
        for (int32_t x = 0; x < out.width; ++x, s += spp, d += 3) {
          d[0] = s[0];
          d[1] = s[1];
          d[2] = s[2];
        }
      }
    } else {
      const bool invert = desc.color == ColorSpace::kMinIsWhite;
      for (int32_t x = 0; x < out.width; ++x, s += spp, d += 3) {
        const uint8_t v = invert ? static_cast<uint8_t>(255 - s[0]) : s[0];
        d[0] = d[1] = d[2] = v;
      }
    }
  }
}

}  // namespace tilewise::codecs
