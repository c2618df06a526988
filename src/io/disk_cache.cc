#include "io/disk_cache.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "io/digest.h"
#include "util/settings.h"

namespace tilewise::io {

namespace {

namespace fs = std::filesystem;

void warn_once(const std::string& message) {
  static std::once_flag once;
  std::call_once(once, [&] { std::fprintf(stderr, "tilewise: disk cache off: %s\n", message.c_str()); });
}

// A page's checksum as stored: 0 means absent, so a page whose CRC-32 is 0 is stored as 1 (and fetched again
// each time it is read: harmless, and one page in four billion).
uint32_t stored_crc(const uint8_t* p, size_t n) {
  const uint32_t crc = libdeflate_crc32(0, p, n);
  return crc == 0 ? 1 : crc;
}

bool pread_all(int fd, void* out, size_t n, uint64_t offset) {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, n -= static_cast<size_t>(got), offset += static_cast<uint64_t>(got);
  }
  return true;
}

bool pwrite_all(int fd, const void* in, size_t n, uint64_t offset) {
  const auto* p = static_cast<const uint8_t*>(in);
  while (n > 0) {
    const ssize_t put = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put, n -= static_cast<size_t>(put), offset += static_cast<uint64_t>(put);
  }
  return true;
}

int open_sized(const fs::path& path, uint64_t size) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || (static_cast<uint64_t>(st.st_size) != size && ::ftruncate(fd, static_cast<off_t>(size)) != 0)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Deletes the objects used least recently (their checksum file's modification time) until the folder's
// allocated bytes fit the budget; `keep` (the object being opened) stays.
void keep_budget(const fs::path& folder, uint64_t budget, const std::string& keep) {
  struct Object {
    fs::file_time_type used;
    std::string key;
    uint64_t bytes;
  };
  std::vector<Object> objects;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".pages") continue;
    const std::string key = it->path().stem().string();
    uint64_t bytes = 0;
    for (const char* ext : {".data", ".pages"}) {
      struct stat st;
      if (::stat((folder / (key + ext)).c_str(), &st) == 0) bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    }
    std::error_code time_ec;
    objects.push_back({fs::last_write_time(it->path(), time_ec), key, bytes});
    total += bytes;
  }
  if (total <= budget) return;
  std::sort(objects.begin(), objects.end(), [](const Object& a, const Object& b) { return a.used < b.used; });
  for (const Object& o : objects) {
    if (total <= budget) break;
    if (o.key == keep) continue;
    std::error_code rm;
    fs::remove(folder / (o.key + ".pages"), rm);  // the checksums first: a reader left with data alone misses
    fs::remove(folder / (o.key + ".data"), rm);
    total -= std::min(total, o.bytes);
  }
}

}  // namespace

std::shared_ptr<const DiskCache> DiskCache::open(const std::string& name, uint64_t size, const std::string& version) {
  const internal::Settings& s = internal::settings();
  if (s.http_disk_cache.empty() || version.empty() || size == 0) return nullptr;
  const fs::path folder(s.http_disk_cache);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    warn_once(s.http_disk_cache + ": " + ec.message());
    return nullptr;
  }
  const std::string key = sha256_hex(name + "\n" + std::to_string(size) + "\n" + version).substr(0, 40);
  const uint64_t pages = (size + kPage - 1) / kPage;
  const int data = open_sized(folder / (key + ".data"), size);
  const int sums = data < 0 ? -1 : open_sized(folder / (key + ".pages"), pages * 4);
  if (data < 0 || sums < 0) {
    warn_once(s.http_disk_cache + ": " + std::strerror(errno));
    if (data >= 0) ::close(data);
    return nullptr;
  }
  ::futimens(sums, nullptr);  // used now (the budget deletes the least recently used first)
  keep_budget(folder, s.http_disk_cache_bytes, key);
  return std::make_shared<const DiskCache>(data, sums, size, s.http_disk_cache_bytes);
}

DiskCache::DiskCache(int data_fd, int pages_fd, uint64_t size, uint64_t budget)
    : data_fd_(data_fd), pages_fd_(pages_fd), size_(size), budget_(budget) {}

DiskCache::~DiskCache() {
  ::close(data_fd_);
  ::close(pages_fd_);
}

uint32_t DiskCache::page_length(uint64_t page) const {
  return static_cast<uint32_t>(std::min(kPage, size_ - page * kPage));
}

ByteRange DiskCache::pages_around(ByteRange range) const {
  const uint64_t from = range.offset / kPage * kPage;
  const uint64_t to = std::min(size_, (range.offset + range.length + kPage - 1) / kPage * kPage);
  return {from, to > from ? to - from : 0};
}

bool DiskCache::has(ByteRange range) const {
  if (range.length == 0 || range.offset + range.length > size_) return false;
  const uint64_t first = range.offset / kPage, last = (range.offset + range.length - 1) / kPage;
  std::vector<uint32_t> sums(last - first + 1);
  if (!pread_all(pages_fd_, sums.data(), sums.size() * 4, first * 4)) return false;
  return std::find(sums.begin(), sums.end(), 0u) == sums.end();
}

bool DiskCache::read(std::span<uint8_t> out, uint64_t offset) const {
  if (out.empty() || offset + out.size() > size_) return false;
  const uint64_t first = offset / kPage, last = (offset + out.size() - 1) / kPage;
  std::vector<uint32_t> sums(last - first + 1);
  if (!pread_all(pages_fd_, sums.data(), sums.size() * 4, first * 4)) return false;
  if (std::find(sums.begin(), sums.end(), 0u) != sums.end()) return false;
  const uint64_t from = first * kPage, to = std::min(size_, (last + 1) * kPage);
  std::vector<uint8_t> pages(to - from);
  if (!pread_all(data_fd_, pages.data(), pages.size(), from)) return false;
  bool intact = true;
  for (uint64_t p = first; p <= last; ++p) {
    if (stored_crc(pages.data() + (p - first) * kPage, page_length(p)) == sums[p - first]) continue;
    const uint32_t absent = 0;  // damaged: forgotten, so that the fetch that follows stores it again
    (void)pwrite_all(pages_fd_, &absent, 4, p * 4);
    intact = false;
  }
  if (!intact) return false;
  std::copy_n(pages.begin() + static_cast<ptrdiff_t>(offset - from), out.size(), out.begin());
  return true;
}

void DiskCache::write(std::span<const uint8_t> bytes, uint64_t offset) const {
  if (bytes.empty() || offset % kPage != 0 || offset >= size_) return;
  const uint64_t first = offset / kPage;
  const uint64_t end = std::min<uint64_t>(size_, offset + bytes.size());
  // Whole pages only (the object's last page is whole when it ends the object).
  const uint64_t count = end == size_ ? (end - offset + kPage - 1) / kPage : (end - offset) / kPage;
  if (count == 0) return;
  std::vector<uint32_t> sums(count);
  if (!pread_all(pages_fd_, sums.data(), count * 4, first * 4)) return;
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t p = first + k;
    const uint32_t length = page_length(p);
    const uint8_t* page = bytes.data() + k * kPage;
    const uint32_t crc = stored_crc(page, length);
    // A page present already is written again: the fetched bytes are the object's, and the copy on disk may
    // be damaged in a way only a read of it would find.
    if (sums[k] == 0 && written_.fetch_add(length) + length > budget_) return;  // this object fills the budget
    if (!pwrite_all(data_fd_, page, length, p * kPage)) return;
    if (!pwrite_all(pages_fd_, &crc, 4, p * 4)) return;  // after its page: a checksum never names missing bytes
  }
}

}  // namespace tilewise::io
