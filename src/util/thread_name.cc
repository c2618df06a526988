#include "util/thread_name.h"

#include <pthread.h>

namespace tilewise::internal {

void set_thread_name(const char* name) {
#if defined(__linux__)
  char buffer[16];
  size_t n = 0;
  for (; name[n] != '\0' && n < sizeof buffer - 1; ++n) buffer[n] = name[n];
  buffer[n] = '\0';
  pthread_setname_np(pthread_self(), buffer);
#else
  (void)name;
#endif
}

ScopedThreadName::ScopedThreadName(const char* name) {
#if defined(__linux__)
  char buffer[16] = {};
  if (pthread_getname_np(pthread_self(), buffer, sizeof buffer) == 0) previous_ = buffer;
#endif
  set_thread_name(name);
}

ScopedThreadName::~ScopedThreadName() {
  if (!previous_.empty()) set_thread_name(previous_.c_str());
}

}  // namespace tilewise::internal
