#include "write/downsample.h"

#include <cstring>
#include <type_traits>

namespace tilewise::write {

namespace {

template <typename T>
T mean4(T a, T b, T c, T d) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>((static_cast<double>(a) + b + c + d) * 0.25);
  } else {
    using Wide = std::conditional_t<(sizeof(T) < 4), int32_t, int64_t>;
    // Rounded half up; for signed samples the shift floors, which is rounding half up too
    return static_cast<T>((static_cast<Wide>(a) + b + c + d + 2) >> 2);
  }
}

// Rows are read through memcpy into typed values: the views' rows need not be aligned for T.
template <typename T, int kSamples>
void halve_rows(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, int32_t samples, uint8_t* dst,
                int64_t dst_stride) {
  const int32_t s = kSamples > 0 ? kSamples : samples;
  const int64_t out_width = (width + 1) / 2;
  auto load = [](const uint8_t* p, int64_t i) {
    T v;
    std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return v;
  };
  for (int32_t r = 0; 2 * r < rows; ++r) {
    const uint8_t* a = src + static_cast<int64_t>(2 * r) * src_stride;
    const uint8_t* b = 2 * r + 1 < rows ? a + src_stride : a;  // an odd last row repeats
    uint8_t* d = dst + static_cast<int64_t>(r) * dst_stride;
    auto put = [&](int64_t x, int64_t left, int64_t right) {
      for (int32_t c = 0; c < s; ++c) {
        const T v = mean4(load(a, left + c), load(a, right + c), load(b, left + c), load(b, right + c));
        std::memcpy(d + (x * s + c) * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
      }
    };
    const int64_t pairs = width / 2;
    for (int64_t x = 0; x < pairs; ++x) put(x, 2 * x * s, (2 * x + 1) * s);
    if (out_width > pairs) put(pairs, 2 * pairs * s, 2 * pairs * s);  // an odd last column repeats
  }
}

}  // namespace

void halve(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, int32_t samples, SampleType type,
           uint8_t* dst, int64_t dst_stride) {
  switch (type) {
    case SampleType::kUint8:
      if (samples == 3) return halve_rows<uint8_t, 3>(src, src_stride, width, rows, samples, dst, dst_stride);
      return halve_rows<uint8_t, 0>(src, src_stride, width, rows, samples, dst, dst_stride);
    case SampleType::kUint16:
      if (samples == 1) return halve_rows<uint16_t, 1>(src, src_stride, width, rows, samples, dst, dst_stride);
      return halve_rows<uint16_t, 0>(src, src_stride, width, rows, samples, dst, dst_stride);
    case SampleType::kUint32: return halve_rows<uint32_t, 0>(src, src_stride, width, rows, samples, dst, dst_stride);
    case SampleType::kInt8: return halve_rows<int8_t, 0>(src, src_stride, width, rows, samples, dst, dst_stride);
    case SampleType::kInt16: return halve_rows<int16_t, 0>(src, src_stride, width, rows, samples, dst, dst_stride);
    case SampleType::kInt32: return halve_rows<int32_t, 0>(src, src_stride, width, rows, samples, dst, dst_stride);
    case SampleType::kFloat32: return halve_rows<float, 0>(src, src_stride, width, rows, samples, dst, dst_stride);
  }
}

}  // namespace tilewise::write
