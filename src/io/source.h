// Positional, stateless byte sources.
//
// Thread behaviour: every method is const and safe to call from any number of threads at once; there is
// no seek position. pread() reads exactly out.size() bytes or fails: a read past the end is Corrupt (the
// file claims data it does not have), an operating-system failure is IoError.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::io {

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

class Source {
 public:
  virtual ~Source() = default;
  virtual Status pread(std::span<uint8_t> out, uint64_t offset) const = 0;
  virtual uint64_t size() const = 0;
  // The path or a label; used as the first element of error context chains.
  virtual const std::string& name() const = 0;
  // True for a file of the local file system (whose folder may hold a slide's other files).
  virtual bool is_local_file() const { return false; }
  // A hint that these ranges are about to be read (a region's tiles): remote sources fetch them together,
  // coalesced and in parallel, so that the reads that follow cost no round trip. Local sources ignore it.
  virtual void prefetch(std::span<const ByteRange> ranges) const { (void)ranges; }
  // The fetched bytes a remote source keeps in memory (what a prefetch may fetch ahead of the reads that
  // use it without evicting them); 0 for sources that fetch nothing.
  virtual uint64_t cache_bytes() const { return 0; }
  // The offset in the file name() names that `offset` of this source reads (the same, except for sources
  // spliced from pieces of a file: io/spliced_source.h); for error messages.
  virtual uint64_t file_offset(uint64_t offset) const { return offset; }
  // Sources of numbered frames rather than bytes (a DICOMweb instance: io/dicomweb.h; the levels of
  // UnitStream::kFrame read their units through it): frame `number` (1-based) whole into `out`. Byte sources
  // refuse it as Unsupported.
  virtual Status read_frame(uint64_t number, std::vector<uint8_t>& out) const {
    (void)number, (void)out;
    return unsupported(name() + ": not a source of frames");
  }
  // A hint that these frames are about to be read (a region's): fetched together, several per request.
  virtual void prefetch_frames(std::span<const uint64_t> numbers) const { (void)numbers; }
  // Reads `rows` consecutive rows of `row_bytes` bytes from `offset` into rows `dst_stride` bytes apart
  // from `dst`: full-width rows of stored samples straight into their place in a caller's image. Fails as
  // pread() does; the default reads row by row.
  virtual Status pread_rows(uint8_t* dst, int64_t dst_stride, size_t row_bytes, int32_t rows, uint64_t offset) const {
    for (int32_t r = 0; r < rows; ++r) {
      TW_RETURN_IF_ERROR(pread({dst + r * dst_stride, row_bytes}, offset + static_cast<uint64_t>(r) * row_bytes));
    }
    return Status();
  }
};

struct HttpAuth;

// Opens a regular file for positional reads. NotFound when absent, InvalidArgument for a directory or
// other non-regular file, IoError otherwise. An http:// or https:// URL opens for range reads instead
// (io/http_source.h), an s3://bucket/key URL for signed range reads (io/s3.h), a gs://bucket/object URL
// with a bearer token (io/gcs.h).
Result<std::shared_ptr<const Source>> open_file(const std::string& path);
// The same, HTTP(S) requests carrying `auth` (io/http_source.h); a DICOMweb series URL
// (.../studies/<uid>/series/<uid>) opens the series (io/dicomweb.h), which the DICOM driver reads.
Result<std::shared_ptr<const Source>> open_file(const std::string& path, const HttpAuth& auth);

// A source over bytes held in memory.
std::shared_ptr<const Source> memory_source(std::vector<uint8_t> bytes, std::string name);

// A source whose reads call `read` (which must fill `out` exactly, from any thread, or fail): file objects.
using ReadAt = std::function<Status(std::span<uint8_t> out, uint64_t offset)>;
std::shared_ptr<const Source> callback_source(ReadAt read, uint64_t size, std::string name);

}  // namespace tilewise::io
