#include "write/downsample.h"

namespace tilewise::write {

void halve_rgb(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst, int64_t dst_stride) {
  const int64_t out_width = (width + 1) / 2;
  const int64_t pairs = width / 2;  // output pixels with two input columns
  for (int32_t r = 0; 2 * r < rows; ++r) {
    const uint8_t* a = src + static_cast<int64_t>(2 * r) * src_stride;
    const uint8_t* b = 2 * r + 1 < rows ? a + src_stride : a;  // an odd last row repeats
    uint8_t* d = dst + static_cast<int64_t>(r) * dst_stride;
    // Plain loops over bytes: the compiler vectorises them (the sums fit 16 bits)
    for (int64_t i = 0; i < pairs * 3; i += 3) {
      const int64_t s = 2 * i;
      for (int c = 0; c < 3; ++c) {
        d[i + c] = static_cast<uint8_t>((a[s + c] + a[s + 3 + c] + b[s + c] + b[s + 3 + c] + 2) >> 2);
      }
    }
    if (out_width > pairs) {  // an odd last column repeats
      const int64_t s = 2 * pairs * 3, i = pairs * 3;
      for (int c = 0; c < 3; ++c) d[i + c] = static_cast<uint8_t>((2 * a[s + c] + 2 * b[s + c] + 2) >> 2);
    }
  }
}

}  // namespace tilewise::write
