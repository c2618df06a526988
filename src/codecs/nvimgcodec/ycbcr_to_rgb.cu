// Aperio JPEG 2000 colour conversion on the GPU, part of the nvImageCodec backend (nvJPEG2000 hands the raw
// components back). Compiled for sm_90 (H100/H200) plus PTX for newer parts.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace tilewise::codecs::nvimgcodec {

namespace {
// Aperio JPEG 2000 (33003) YCbCr -> RGB with the integer tables of the CPU decoder (jpeg2000_decoder.cc),
// so both paths give the same pixels. The tables travel by value as the kernel's parameter (3 KiB).
struct YCbCrTables {
  int16_t r_cr[256];
  int32_t g_cb[256];
  int32_t g_cr[256];
  int16_t b_cb[256];
};

__device__ inline uint8_t clamp8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

__global__ void ycbcr_to_rgb_kernel(uint8_t* pixels, size_t pitch, int32_t width, int32_t height, YCbCrTables t) {
  const int32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const int32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  uint8_t* p = pixels + static_cast<size_t>(y) * pitch + static_cast<size_t>(x) * 3;
  const int luma = p[0], cb = p[1], cr = p[2];
  p[0] = clamp8(luma + t.r_cr[cr]);
  p[1] = clamp8(luma + ((t.g_cb[cb] + t.g_cr[cr]) >> 16));
  p[2] = clamp8(luma + t.b_cb[cb]);
}

YCbCrTables make_tables() {
  YCbCrTables t;
  for (int i = 0; i < 256; ++i) {
    t.r_cr[i] = static_cast<int16_t>(std::lround(1.402 * (i - 128)));
    t.g_cb[i] = static_cast<int32_t>(std::lround(65536 * (0.5 - 0.34414 * (i - 128))));
    t.g_cr[i] = static_cast<int32_t>(std::lround(65536 * -0.71414 * (i - 128)));
    t.b_cb[i] = static_cast<int16_t>(std::lround(1.772 * (i - 128)));
  }
  return t;
}

dim3 grid_for(int32_t width, int32_t height, dim3 block) {
  return dim3((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
}
}  // namespace

cudaError_t launch_ycbcr_to_rgb(uint8_t* pixels, size_t pitch, int32_t width, int32_t height, cudaStream_t stream) {
  if (width <= 0 || height <= 0) return cudaSuccess;
  static const YCbCrTables tables = make_tables();
  const dim3 block(32, 8);
  ycbcr_to_rgb_kernel<<<grid_for(width, height, block), block, 0, stream>>>(pixels, pitch, width, height, tables);
  return cudaGetLastError();
}

}  // namespace tilewise::codecs::nvimgcodec
