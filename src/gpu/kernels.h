// Launchers of the CUDA kernels in kernels.cu (used by the CUDA DeviceOps, cuda_ops.cc).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/device_copy.h"

namespace tilewise::gpu {

// Copies at most this many rectangles per kernel launch.
inline constexpr size_t kCopiesPerLaunch = 512;

// Fills a width x height RGB rectangle of dst (rows `pitch` bytes apart) with rgb.
cudaError_t launch_fill_rgb(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                            cudaStream_t stream);
// Queues the sample copy (device to device): one thread per pixel.
cudaError_t launch_copy_samples(const SampleCopy& copy, cudaStream_t stream);
// Queues every copy (device to device), one launch per kCopiesPerLaunch.
cudaError_t launch_copy_batch(const DeviceCopy* copies, size_t count, cudaStream_t stream);

}  // namespace tilewise::gpu
