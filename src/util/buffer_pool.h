// BufferPool: reusable large buffers (see include/tilewise/memory.h for the contract).
//
// Synchronisation: one mutex guards the free list; it is held only to find, insert or drop an entry,
// never while mapping, unmapping or touching memory.
#pragma once

#include <cstddef>
#include <map>
#include <unordered_map>
#include <mutex>

namespace tilewise::internal {

class BufferPool {
 public:
  static constexpr size_t kMinPooled = size_t{1} << 20;  // smaller requests go straight to malloc
  static constexpr size_t kMaxCachedBuffers = 16;

  explicit BufferPool(size_t capacity) : capacity_(capacity) {}
  ~BufferPool();

  void* acquire(size_t bytes);
  void release(void* p, size_t bytes);
  void set_capacity(size_t bytes);
  size_t cached_bytes() const;

  static BufferPool& global();

 private:
  static size_t mapped_size(size_t bytes);
  void trim_locked(std::multimap<size_t, void*>& dropped);

  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;         // mapped size -> buffer
  std::unordered_map<void*, size_t> live_;     // handed-out pooled buffers -> mapped size
  size_t cached_ = 0;
  size_t capacity_;
};

}  // namespace tilewise::internal
