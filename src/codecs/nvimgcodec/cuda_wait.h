// How tilewise's host threads wait for work queued on a CUDA stream.
//
// CUDA's default scheduling (cudaDeviceScheduleAuto) spins while the process has fewer active contexts than
// cores: a thread in cudaStreamSynchronize polls at 100% of a core for as long as the GPU works. For
// nvJPEG2000, whose batches take milliseconds per tile, that kept 8.6 of the H200 host's 16 cores busy for
// 457 patches/s with the GPU alone; sleeping instead (an event made with cudaEventBlockingSync, one per
// thread and device, reused), 1.1 cores for the same 481 - cores the hybrid loader's CPU helpers then use.
// For JPEG's hardware engines (batches of ~2 ms) sleeping saved 1.3-1.6 of ~7.7 cores but the wake-up cost
// the loader 1-6% of its rate (four alternating pairs), so short waits still poll (bench/RESULTS.md).
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
