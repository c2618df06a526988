// How tilewise's host threads wait for work queued on a CUDA stream.
//
// CUDA's default scheduling (cudaDeviceScheduleAuto) spins while the process has fewer active contexts than
// cores: a thread in cudaStreamSynchronize polls at 100% of a core for as long as the GPU works. A long wait
// (nvJPEG2000's batches take milliseconds per tile) sleeps instead, on an event made with
// cudaEventBlockingSync (one per thread and device, reused), leaving the core to the CPU helpers; a short one
// (JPEG's engines) still polls, since waking costs more than the core it frees (bench/RESULTS.md, "How host
// threads wait for the GPU").
// Setting the device's scheduling to cudaDeviceScheduleBlockingSync makes the waits inside nvImageCodec
// sleep too, but it is shared with every other user of the primary context: only on request
// (TILEWISE_GPU_BLOCKING_SYNC, gpu/cuda_ops.cc).
#pragma once

#include <cuda_runtime.h>

namespace tilewise::codecs::nvimgcodec {

// What the caller expects of a wait: short (a JPEG batch, a copy) or long (a batch of milliseconds per tile).
enum class Wait { kShort, kLong };

// Waits until the work queued on `stream` so far is complete (the current device must be the stream's).
cudaError_t wait_for_stream(cudaStream_t stream, Wait expected);

}  // namespace tilewise::codecs::nvimgcodec
