// DeviceCopy: one rectangle copy between two buffers in device memory (DeviceOps::copy_batch; the CUDA
// kernels take it as it is, so this header stays plain C++17 for nvcc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tilewise::gpu {

struct DeviceCopy {
  uint8_t* dst;
  const uint8_t* src;
  size_t dst_pitch;
  size_t src_pitch;
  int32_t width_bytes;  // bytes per row
  int32_t height;       // rows
};

}  // namespace tilewise::gpu
