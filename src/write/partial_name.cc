#include "write/partial_name.h"

#include <unistd.h>

#include <atomic>

namespace tilewise::write {

std::string partial_name(const std::string& path) {
  static std::atomic<unsigned long> calls{0};
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : p.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  return dir + "." + name + ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(calls.fetch_add(1));
}

}  // namespace tilewise::write
