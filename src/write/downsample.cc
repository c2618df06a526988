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

// Typed rows (the writers' bands are allocated by std::vector and their strides are whole pixels, so rows
// are aligned for T); plain indexed loops, which the compiler vectorises for the common cases (8-bit RGB,
// one 16-bit sample): the halving of a 20,480^2 RGB level took 1.5 s of CPU through memcpy'd loads.
template <typename T, int kSamples>
void halve_rows(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, int32_t samples, uint8_t* dst,
                int64_t dst_stride) {
  const int64_t s = kSamples > 0 ? kSamples : samples;
  const int64_t pairs = width / 2;
  for (int32_t r = 0; 2 * r < rows; ++r) {
    const T* a = reinterpret_cast<const T*>(src + static_cast<int64_t>(2 * r) * src_stride);
    const T* b = 2 * r + 1 < rows ? reinterpret_cast<const T*>(src + static_cast<int64_t>(2 * r + 1) * src_stride) : a;
    T* d = reinterpret_cast<T*>(dst + static_cast<int64_t>(r) * dst_stride);
    for (int64_t x = 0; x < pairs; ++x) {
      for (int64_t c = 0; c < s; ++c) {
        const int64_t left = 2 * x * s + c;
        d[x * s + c] = mean4(a[left], a[left + s], b[left], b[left + s]);
      }
    }
    if (width % 2) {  // an odd last column repeats
      for (int64_t c = 0; c < s; ++c) {
        const int64_t left = 2 * pairs * s + c;
        d[pairs * s + c] = mean4(a[left], a[left], b[left], b[left]);
      }
    }
  }
}

// Each output pixel the top-left pixel of its box, whatever its samples.
void take_top_left(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, int64_t pixel_bytes, uint8_t* dst,
                   int64_t dst_stride) {
  const int64_t out_width = (width + 1) / 2;
  for (int32_t r = 0; 2 * r < rows; ++r) {
    const uint8_t* a = src + static_cast<int64_t>(2 * r) * src_stride;
    uint8_t* d = dst + static_cast<int64_t>(r) * dst_stride;
    for (int64_t x = 0; x < out_width; ++x) std::memcpy(d + x * pixel_bytes, a + 2 * x * pixel_bytes, static_cast<size_t>(pixel_bytes));
  }
}

}  // namespace

void halve(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, int32_t samples, SampleType type,
           uint8_t* dst, int64_t dst_stride, Downsample filter) {
  if (filter == Downsample::kNearest) {
    return take_top_left(src, src_stride, width, rows, int64_t{samples} * sample_bytes(type), dst, dst_stride);
  }
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
