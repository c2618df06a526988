#include "write/band_kernels.h"

namespace tilewise::write {

namespace {

// One thread per pixel of the tile row that lies outside the image's (width x rows): it takes the pixel
// it repeats (the last column's, of the last row).
__global__ void pad_rgb8(uint8_t* top, int64_t stride, int64_t width, int64_t padded, int32_t rows, int32_t tile) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int32_t r = static_cast<int32_t>(blockIdx.y);
  if (x >= padded || r >= tile || (x < width && r < rows)) return;
  const int64_t sx = x < width ? x : width - 1;
  const int32_t sr = r < rows ? r : rows - 1;
  const uint8_t* s = top + sr * stride + 3 * sx;
  uint8_t* d = top + r * stride + 3 * x;
  d[0] = s[0];
  d[1] = s[1];
  d[2] = s[2];
}

__global__ void halve_rgb8(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst,
                           int64_t dst_stride, bool nearest) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int32_t r = static_cast<int32_t>(blockIdx.y);
  if (x >= (width + 1) / 2) return;
  const int64_t x0 = 2 * x, x1 = 2 * x + 1 < width ? 2 * x + 1 : 2 * x;
  const uint8_t* a = src + static_cast<int64_t>(2 * r) * src_stride;
  const uint8_t* b = 2 * r + 1 < rows ? a + src_stride : a;
  uint8_t* d = dst + r * dst_stride + 3 * x;
  for (int c = 0; c < 3; ++c) {
    d[c] = nearest ? a[3 * x0 + c]
                   : static_cast<uint8_t>((a[3 * x0 + c] + a[3 * x1 + c] + b[3 * x0 + c] + b[3 * x1 + c] + 2) >> 2);
  }
}

constexpr int kThreads = 256;

unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

cudaError_t launch_pad_rgb8(uint8_t* top, int64_t stride, int64_t width, int64_t padded, int32_t rows, int32_t tile,
                            cudaStream_t stream) {
  if (padded <= 0 || tile <= 0) return cudaSuccess;
  pad_rgb8<<<dim3(blocks(padded), static_cast<unsigned>(tile)), kThreads, 0, stream>>>(top, stride, width, padded, rows, tile);
  return cudaGetLastError();
}

cudaError_t launch_halve_rgb8(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst,
                              int64_t dst_stride, bool nearest, cudaStream_t stream) {
  const int32_t out_rows = (rows + 1) / 2;
  if (width <= 0 || out_rows <= 0) return cudaSuccess;
  halve_rgb8<<<dim3(blocks((width + 1) / 2), static_cast<unsigned>(out_rows)), kThreads, 0, stream>>>(
      src, src_stride, width, rows, dst, dst_stride, nearest);
  return cudaGetLastError();
}

}  // namespace tilewise::write
