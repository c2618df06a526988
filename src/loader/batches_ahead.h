// How many batches a loader starts ahead of its consumer.
//
// Into host memory: its `prefetch`. Into a device: at least as many as fit kDeviceAheadBytes of batch
// output, up to kMaxDeviceAhead, and never fewer than its prefetch. The GPU's
// decode lanes must not run dry while a finished batch goes to the consumer and the next one's tiles are
// planned and read (bench/RESULTS.md, "why the lanes wait at prefetch 4"). Eight batches of 64 256^2 patches
// are ~100 MiB of output (and ~400 MiB of tile scratch while they decode).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tilewise::loader {

constexpr size_t kDeviceAheadBytes = size_t{128} << 20;
constexpr int kMaxDeviceAhead = 8;

// `prefetch` >= 1; `batch_bytes`: one batch's output.
inline int64_t batches_ahead(int prefetch, bool to_device, size_t batch_bytes) {
  if (!to_device) return prefetch;
  const int by_bytes =
      static_cast<int>(std::clamp<size_t>(kDeviceAheadBytes / std::max<size_t>(1, batch_bytes), 1, kMaxDeviceAhead));
  return std::max(prefetch, by_bytes);
}

}  // namespace tilewise::loader
