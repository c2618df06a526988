#include "util/fork_safe.h"

#include <pthread.h>

namespace tilewise::internal {

namespace {

std::atomic<uint64_t> g_generation{0};

void on_fork_child() { g_generation.fetch_add(1, std::memory_order_relaxed); }

// Registered when the library is loaded, so before any fork the program can make after using it.
const bool g_registered = [] {
  pthread_atfork(nullptr, nullptr, on_fork_child);
  return true;
}();

}  // namespace

uint64_t fork_generation() {
  (void)g_registered;
  return g_generation.load(std::memory_order_relaxed);
}

}  // namespace tilewise::internal
