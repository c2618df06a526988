// How tilewise's host threads wait for work queued on a CUDA stream.
//
// CUDA's default scheduling (cudaDeviceScheduleAuto) spins while the process has fewer active contexts than
// cores: a thread in cudaStreamSynchronize polls at 100% of a core for as long as the GPU works. A long wait
// (nvJPEG2000's batches take milliseconds per tile) sleeps instead, on an event made with
// cudaEventBlockingSync (one per thread and device, reused), leaving the core to the CPU helpers; a short one
// (JPEG's engines) still polls, since waking costs more than the core it frees (bench/RESULTS.md, "How host
// threads wait for the GPU").
//   TILEWISE_GPU_WAIT=auto    the default: waits the caller marks long sleep, short ones poll;
//   TILEWISE_GPU_WAIT=block   every wait sleeps;
//   TILEWISE_GPU_WAIT=spin    every wait is cudaStreamSynchronize (CUDA's scheduling), for comparison;
//   TILEWISE_GPU_WAIT=device  as block, and the device's scheduling set to cudaDeviceScheduleBlockingSync
//                             (set_device_wait_policy), so that waits inside nvImageCodec and nvJPEG sleep
//                             too. Process-wide and shared with other users of the device's primary context
//                             (PyTorch, CuPy): never done unless asked.
#pragma once

#include <cuda_runtime.h>

namespace tilewise::codecs::nvimgcodec {

// What the caller expects of a wait: short (a JPEG batch, a copy) or long (a batch of milliseconds per tile).
enum class Wait { kShort, kLong };

// Waits until the work queued on `stream` so far is complete (the current device must be the stream's).
cudaError_t wait_for_stream(cudaStream_t stream, Wait expected);

// Applies TILEWISE_GPU_WAIT=device to `device` (once per device; nothing for the other policies).
void set_device_wait_policy(int device);

}  // namespace tilewise::codecs::nvimgcodec
