// The CUDA kernels of the device BandOps (device_band_ops.cc): padding a tile row and halving rows of 8-bit
// RGB, as the host does (band_ops.h, downsample.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tilewise::write {

// BandOps::pad of 8-bit RGB.
cudaError_t launch_pad_rgb8(uint8_t* top, int64_t stride, int64_t width, int64_t padded, int32_t rows, int32_t tile,
                            cudaStream_t stream);
// halve() of 8-bit RGB: each output sample the mean of its 2 x 2 box rounded half up (or, `nearest`, the
// box's top-left pixel), an odd last column or row repeating the edge.
cudaError_t launch_halve_rgb8(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst,
                              int64_t dst_stride, bool nearest, cudaStream_t stream);

}  // namespace tilewise::write
