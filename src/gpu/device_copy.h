// DeviceCopy: one rectangle copy between two buffers in device memory (DeviceOps::copy_batch; the CUDA
// kernels take it as it is, so this header stays plain C++17 for nvcc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tilewise::gpu {

// One sample of every pixel of a width x height rectangle, from pixels of from_pixel bytes to pixels of
// to_pixel bytes (DeviceOps::copy_samples: a channel moved into its place among the output's channels).
struct SampleCopy {
  uint8_t* dst;
  const uint8_t* src;
  size_t dst_pitch;
  size_t src_pitch;
  size_t to_pixel;
  size_t from_pixel;
  int32_t to_sample;
  int32_t from_sample;
  int32_t sample_bytes;  // 1, 2 or 4
  int32_t width;         // pixels
  int32_t height;        // rows
};

struct DeviceCopy {
  uint8_t* dst;
  const uint8_t* src;
  size_t dst_pitch;
  size_t src_pitch;
  int32_t width_bytes;  // bytes per row
  int32_t height;       // rows
};

}  // namespace tilewise::gpu
