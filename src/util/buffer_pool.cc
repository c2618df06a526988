#include "util/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>

#include "tilewise/memory.h"
#include "util/fork_safe.h"

namespace tilewise::internal {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;

void unmap_all(std::multimap<size_t, void*>& buffers) {
  for (auto& [size, p] : buffers) ::munmap(p, size);
  buffers.clear();
}
}  // namespace

BufferPool::~BufferPool() { unmap_all(free_); }

size_t BufferPool::mapped_size(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

void* BufferPool::acquire(size_t bytes) {
  if (bytes < kMinPooled) return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  const size_t size = mapped_size(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest cached buffer that fits, if it is not more than twice the request.
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= 2 * size) {
      void* p = it->second;
      cached_ -= it->first;
      live_.emplace(p, it->first);
      free_.erase(it);
      return p;
    }
  }
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  ::madvise(p, size, MADV_HUGEPAGE);  // advisory: the kernel may decline
  std::lock_guard<std::mutex> lock(mutex_);
  live_.emplace(p, size);
  return p;
}

void BufferPool::release(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes < kMinPooled) {
    std::free(p);
    return;
  }
  std::multimap<size_t, void*> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto live = live_.find(p);  // a reused buffer may be larger than the request that returns it
    if (live == live_.end()) return;  // not ours: never unmap what we did not map
    const size_t size = live->second;
    live_.erase(live);
    free_.emplace(size, p);
    cached_ += size;
    trim_locked(dropped);
  }
  unmap_all(dropped);
}

void BufferPool::trim_locked(std::multimap<size_t, void*>& dropped) {
  // Drop the largest buffers first until the budget and the count limit hold.
  while (!free_.empty() && (cached_ > capacity_ || free_.size() > kMaxCachedBuffers)) {
    auto last = std::prev(free_.end());
    cached_ -= last->first;
    dropped.insert(*last);
    free_.erase(last);
  }
}

void BufferPool::set_capacity(size_t bytes) {
  std::multimap<size_t, void*> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    capacity_ = bytes;
    trim_locked(dropped);
  }
  unmap_all(dropped);
}

size_t BufferPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

BufferPool& BufferPool::global() {
  static auto* pool = new ForkSafe<BufferPool>([] { return new BufferPool(size_t{512} << 20); });
  return pool->get();
}

}  // namespace tilewise::internal

namespace tilewise {
void* allocate_pixels(size_t bytes) { return internal::BufferPool::global().acquire(bytes); }
void free_pixels(void* buffer, size_t bytes) { internal::BufferPool::global().release(buffer, bytes); }
void set_pixel_pool_capacity(size_t bytes) { internal::BufferPool::global().set_capacity(bytes); }
size_t pixel_pool_cached_bytes() { return internal::BufferPool::global().cached_bytes(); }
}  // namespace tilewise
