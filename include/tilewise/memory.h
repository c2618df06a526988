// Pixel buffers for region outputs in host memory.
//
// Large buffers (1 MiB and up) come from a process-wide pool: fresh ones are mapped with transparent huge
// pages requested, and released ones are kept (up to a byte budget) for reuse, so repeated large reads do
// not pay first-touch page faults again. The bindings allocate every array they return here and release
// it when the array's last reference goes away; a buffer is never reused while anyone holds it.
// Thread-safe. In a forked child the pool starts empty. Device buffers: tilewise/gpu.h.
#pragma once

#include <cstddef>

namespace tilewise {

// Returns a buffer of at least `bytes` bytes (64-byte aligned), or nullptr when memory is exhausted.
void* allocate_pixels(size_t bytes);
// Returns a buffer obtained from allocate_pixels(bytes) (same size) to the pool.
void free_pixels(void* buffer, size_t bytes);
// Byte budget of released buffers kept for reuse (default 512 MiB; 0 keeps none).
void set_pixel_pool_capacity(size_t bytes);
size_t pixel_pool_cached_bytes();

}  // namespace tilewise
