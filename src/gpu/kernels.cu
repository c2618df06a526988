// CUDA kernels of the GPU layer (composing outputs). Compiled for sm_90 (H100/H200) plus PTX for newer parts.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/device_copy.h"
#include "gpu/kernels.h"

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
// The copies of one launch travel as the kernel's parameter (__grid_constant__: no staging buffer, no
// upload; CUDA 12.1+ allows parameters up to 32 KiB).
struct CopyTable {
  int32_t count;
  DeviceCopy copies[kCopiesPerLaunch];
};
static_assert(sizeof(CopyTable) < 32000, "kernel parameters are limited to 32 KiB");

// Block x = one copy; blocks along y share its rows; threads stride along a row's bytes (coalesced).
__global__ void copy_batch_kernel(const __grid_constant__ CopyTable table) {
  const DeviceCopy& c = table.copies[blockIdx.x];
  for (int32_t row = blockIdx.y; row < c.height; row += gridDim.y) {
    const uint8_t* s = c.src + static_cast<size_t>(row) * c.src_pitch;
    uint8_t* d = c.dst + static_cast<size_t>(row) * c.dst_pitch;
    for (int32_t b = threadIdx.x; b < c.width_bytes; b += blockDim.x) d[b] = s[b];
  }
}

// One thread per pixel: sample `from_sample` of the source pixel to sample `to_sample` of the output pixel.
template <typename T>
__global__ void copy_samples_kernel(const SampleCopy c) {
  const int32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const int32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= c.width || y >= c.height) return;
  const uint8_t* s = c.src + static_cast<size_t>(y) * c.src_pitch + static_cast<size_t>(x) * c.from_pixel;
  uint8_t* d = c.dst + static_cast<size_t>(y) * c.dst_pitch + static_cast<size_t>(x) * c.to_pixel;
  reinterpret_cast<T*>(d)[c.to_sample] = reinterpret_cast<const T*>(s)[c.from_sample];
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

namespace tilewise::gpu {

cudaError_t launch_copy_samples(const SampleCopy& c, cudaStream_t stream) {
  if (c.width <= 0 || c.height <= 0) return cudaSuccess;
  const dim3 block(32, 8);
  const dim3 grid = grid_for(c.width, c.height, block);
  switch (c.sample_bytes) {
    case 1: copy_samples_kernel<uint8_t><<<grid, block, 0, stream>>>(c); break;
    case 2: copy_samples_kernel<uint16_t><<<grid, block, 0, stream>>>(c); break;
    case 4: copy_samples_kernel<uint32_t><<<grid, block, 0, stream>>>(c); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_copy_batch(const DeviceCopy* copies, size_t count, cudaStream_t stream) {
  CopyTable table;
  for (size_t first = 0; first < count; first += kCopiesPerLaunch) {
    table.count = static_cast<int32_t>(count - first < kCopiesPerLaunch ? count - first : kCopiesPerLaunch);
    int32_t rows = 1;
    for (int32_t i = 0; i < table.count; ++i) {
      table.copies[i] = copies[first + static_cast<size_t>(i)];
      rows = table.copies[i].height > rows ? table.copies[i].height : rows;
    }
    const dim3 grid(static_cast<unsigned>(table.count), static_cast<unsigned>(rows < 16 ? rows : 16));
    copy_batch_kernel<<<grid, 256, 0, stream>>>(table);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace tilewise::gpu
