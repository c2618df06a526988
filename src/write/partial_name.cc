#include "write/partial_name.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

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

Result<PartialFolder> PartialFolder::create(const std::string& folder, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::exists(folder, ec) && !std::filesystem::is_empty(folder, ec)) {
    return invalid_argument(folder + ": exists and is not empty; the " + what + " is written to a new folder");
  }
  const std::string temp = partial_name(folder);
  std::filesystem::remove_all(temp, ec);
  if (::mkdir(temp.c_str(), 0777) != 0) return io_error(folder + ": cannot create " + temp + ": " + std::strerror(errno));
  return PartialFolder(folder, temp);
}

PartialFolder::PartialFolder(PartialFolder&& other) noexcept
    : folder_(std::move(other.folder_)), temp_(std::exchange(other.temp_, std::string())), committed_(other.committed_) {}

PartialFolder::~PartialFolder() {
  if (!committed_ && !temp_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_, ec);
  }
}

Status PartialFolder::commit() {
  if (std::rename(temp_.c_str(), folder_.c_str()) != 0) {
    // An empty folder of that name (create() allowed it): replace it
    std::error_code ec;
    std::filesystem::remove(folder_, ec);
    if (std::rename(temp_.c_str(), folder_.c_str()) != 0) {
      return io_error(folder_ + ": cannot rename " + temp_ + " to it (" + std::strerror(errno) + ")");
    }
  }
  committed_ = true;
  return Status();
}

}  // namespace tilewise::write
