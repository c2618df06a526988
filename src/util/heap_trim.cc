#include "util/heap_trim.h"

#include <atomic>
#include <chrono>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tilewise::internal {

void trim_heap_after_close() {
#if defined(__GLIBC__)
  using Clock = std::chrono::steady_clock;
  static std::atomic<int64_t> last{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
  int64_t previous = last.load(std::memory_order_relaxed);
  if (now - previous < 1000 || !last.compare_exchange_strong(previous, now, std::memory_order_relaxed)) return;
  malloc_trim(0);
#endif
}

}  // namespace tilewise::internal
