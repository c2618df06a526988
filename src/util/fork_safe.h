// ForkSafe<T>: a lazily created process-wide object that is re-created in a forked child.
//
// After fork() only the forking thread exists in the child; any mutex another thread held stays locked
// forever and worker threads are gone. So a child must never touch its parent's pools, caches or locks.
// ForkSafe remembers the fork generation that created the object (fork_generation(): bumped in every child
// by a pthread_atfork handler, so the hot path reads an atomic instead of calling getpid(), a system call);
// a caller in a later generation gets a fresh object, and the parent's copy is deliberately leaked
// (destroying it would join threads that do not exist or lock mutexes that may be held).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace tilewise::internal {

// 0 in the process that loaded the library; one more in each forked child than in its parent.
uint64_t fork_generation();

template <typename T>
class ForkSafe {
 public:
  explicit ForkSafe(std::function<T*()> make) : make_(std::move(make)) {}
  ForkSafe(const ForkSafe&) = delete;
  ForkSafe& operator=(const ForkSafe&) = delete;

  T& get() {
    Slot* slot = slot_.load(std::memory_order_acquire);
    const uint64_t generation = fork_generation();
    while (slot == nullptr || slot->generation != generation) {
      auto* fresh = new Slot{generation, make_()};
      if (slot_.compare_exchange_strong(slot, fresh, std::memory_order_acq_rel)) {
        slot = fresh;  // the previous slot (another process's) is leaked on purpose
        break;
      }
      delete fresh->object;
      delete fresh;
    }
    return *slot->object;
  }

  // The object of the current process, if one was created here.
  T* peek() {
    Slot* slot = slot_.load(std::memory_order_acquire);
    return (slot && slot->generation == fork_generation()) ? slot->object : nullptr;
  }

 private:
  struct Slot {
    uint64_t generation;
    T* object;
  };
  std::function<T*()> make_;
  std::atomic<Slot*> slot_{nullptr};
};

}  // namespace tilewise::internal
