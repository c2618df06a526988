// Names of tilewise's threads, as top -H, py-spy, gdb and /proc/PID/task/*/comm show them, so that a
// process's CPU time can be told apart by thread (bench/common.py's thread_cpu_seconds sums it per name).
//   tw-decode      global_pool(): tiles of region reads
//   tw-loader      loader_pool(): batch loaders' region reads and device batch reads
//   tw-helper      helper_pool(): hybrid loaders' CPU helpers
//   tw-lane        the GPU decode lanes (their nvImageCodec calls and waits)
//   tw-nvimgcodec  threads nvImageCodec and the CUDA runtime start while a decoder is created (a new thread
//                  takes its creator's name on Linux: ScopedThreadName around the creation)
#pragma once

#include <string>

namespace tilewise::internal {

// Names the calling thread (at most 15 characters are kept; harmless where unsupported).
void set_thread_name(const char* name);

// Renames the calling thread for its scope, so that threads it starts inherit `name`; restores the old one.
class ScopedThreadName {
 public:
  explicit ScopedThreadName(const char* name);
  ~ScopedThreadName();
  ScopedThreadName(const ScopedThreadName&) = delete;
  ScopedThreadName& operator=(const ScopedThreadName&) = delete;

 private:
  std::string previous_;
};

}  // namespace tilewise::internal
