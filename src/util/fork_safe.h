// ForkSafe<T>: a lazily created process-wide object that is re-created in a forked child.
//
// After fork() only the forking thread exists in the child; any mutex another thread held stays locked
// forever and worker threads are gone. So a child must never touch its parent's pools, caches or locks.
// ForkSafe remembers the pid that created the object; a caller in a different process gets a fresh object,
// and the parent's copy is deliberately leaked (destroying it would join threads that do not exist or
// lock mutexes that may be held).
#pragma once

#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>

namespace tilewise::internal {

template <typename T>
class ForkSafe {
 public:
  explicit ForkSafe(std::function<T*()> make) : make_(std::move(make)) {}
  ForkSafe(const ForkSafe&) = delete;
  ForkSafe& operator=(const ForkSafe&) = delete;

  T& get() {
    Slot* slot = slot_.load(std::memory_order_acquire);
    const pid_t pid = ::getpid();
    while (slot == nullptr || slot->pid != pid) {
      auto* fresh = new Slot{pid, make_()};
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
    return (slot && slot->pid == ::getpid()) ? slot->object : nullptr;
  }

 private:
  struct Slot {
    pid_t pid;
    T* object;
  };
  std::function<T*()> make_;
  std::atomic<Slot*> slot_{nullptr};
};

}  // namespace tilewise::internal
