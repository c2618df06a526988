// A disk cache of remote objects' bytes (TILEWISE_HTTP_DISK_CACHE: a folder; TILEWISE_HTTP_DISK_CACHE_BYTES:
// its budget), so that a second epoch over remote slides, or a second process, reads what the first fetched
// from local disk instead of the network.
//
// Layout: one sparse data file per object version, `<key>.data`, holding the object's bytes at their own
// offsets, and `<key>.pages`, a CRC-32 per 1 KiB page of it (0: absent). The key is the SHA-256 of the
// object's name, size and version (ETag, else Last-Modified): a replaced object gets a new key and its old
// bytes age out; an object without a version is not cached on disk. A page is written before its checksum,
// and every page read is checked against its checksum, so a torn write, a crash or a damaged file reads as a
// miss (fetched again), never as wrong pixels. Processes may share the folder: writes of one page by two
// processes carry the same bytes. The budget is kept when an object is opened, by deleting the objects used
// least recently (by the time their checksum file was opened) until the folder fits; an object larger than
// the budget stops writing at it.
//
// Thread behaviour: every method is const and safe from any number of threads (positional reads and writes).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "io/source.h"

namespace tilewise::io {

class DiskCache {
 public:
  static constexpr uint64_t kPage = 1024;  // small: a fetch rounds out to whole pages

  // The cache of one object version, or nullptr when disk caching is off, the object has no version, or the
  // folder cannot be used (the reason is reported once on stderr; reads go to the network).
  static std::shared_ptr<const DiskCache> open(const std::string& name, uint64_t size, const std::string& version);
  ~DiskCache();

  // Copies [offset, offset + out.size()) when every page of it is present and intact; damaged pages are
  // marked absent.
  bool read(std::span<uint8_t> out, uint64_t offset) const;
  // Whether every page of the range is marked present (not verified: read() checks).
  bool has(ByteRange range) const;
  // Stores the whole pages inside `bytes`, which start at `offset` (a page boundary); the object's last page
  // may be short.
  void write(std::span<const uint8_t> bytes, uint64_t offset) const;
  // The range rounded out to whole pages, clipped to the object.
  ByteRange pages_around(ByteRange range) const;

  DiskCache(int data_fd, int pages_fd, uint64_t size, uint64_t budget);
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

 private:
  uint32_t page_length(uint64_t page) const;
  int data_fd_, pages_fd_;
  uint64_t size_, budget_;
  mutable std::atomic<uint64_t> written_{0};
};

}  // namespace tilewise::io
