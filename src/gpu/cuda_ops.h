// The CUDA side of the GPU layer: whether a device can be used, and the CUDA implementation of DeviceOps
// (device_ops.h) with its per-device memory and stream pools.
//
// Device buffers come from a per-device cache of blocks (size classes at most 25% apart) instead of a
// cudaMalloc/cudaFree per read: cudaFree synchronises the whole device, so with many readers every freed
// patch would stall every decode lane. A freed block is reusable once an event recorded at the free on the
// legacy default stream has completed, i.e. after the work that blocking streams (PyTorch's and CuPy's
// default streams) queued before the free; work a consumer queued on its own non-blocking stream must be
// finished before it drops the array (as with any DLPack producer). The cache holds at most
// settings().gpu_pool_bytes of idle blocks per device and is emptied when cudaMalloc fails.
#pragma once

#include "gpu/device_ops.h"
#include "tilewise/status.h"

namespace tilewise::gpu {

// Ok when CUDA device `index` can be read to: this build has the GPU path, the device exists (else
// InvalidArgument) and nvImageCodec 0.8 loads (else Unsupported with the reason).
Status device_status(int index);

// The calling thread's current CUDA device (cudaGetDevice: what torch.cuda.set_device or cudaSetDevice chose);
// 0 when there is none or this build has no GPU path.
int current_device();

// The CUDA operations of `device` (process-wide; re-created in a forked child). Requires device_status ok.
DeviceOps& cuda_ops(int device);

}  // namespace tilewise::gpu
