// CUDA kernels of the GPU layer (composing outputs). Compiled for sm_90 (H100/H200) plus PTX for newer parts.
#include <cuda_runtime.h>

#include <cstdint>

namespace tilewise::gpu {

namespace {
// One thread per output pixel of the rectangle; rows `pitch` bytes apart.
__global__ void fill_rgb_kernel(uint8_t* dst, size_t pitch, int32_t width, int32_t height, uint8_t r, uint8_t g,
                                uint8_t b) {
  const int32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const int32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  uint8_t* p = dst + static_cast<size_t>(y) * pitch + static_cast<size_t>(x) * 3;
  p[0] = r;
  p[1] = g;
  p[2] = b;
}
dim3 grid_for(int32_t width, int32_t height, dim3 block) {
  return dim3((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
}
}  // namespace

cudaError_t launch_fill_rgb(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                            cudaStream_t stream) {
  if (width <= 0 || height <= 0) return cudaSuccess;
  if (rgb[0] == rgb[1] && rgb[1] == rgb[2]) {
    return cudaMemset2DAsync(dst, pitch, rgb[0], static_cast<size_t>(width) * 3, height, stream);
  }
  const dim3 block(32, 8);
  fill_rgb_kernel<<<grid_for(width, height, block), block, 0, stream>>>(dst, pitch, width, height, rgb[0], rgb[1], rgb[2]);
  return cudaGetLastError();
}

}  // namespace tilewise::gpu
