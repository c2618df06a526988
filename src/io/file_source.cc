#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "io/dicomweb.h"
#include "io/http_source.h"
#include "io/gcs.h"
#include "io/s3.h"
#include "io/source.h"
#include "util/checked_math.h"

namespace tilewise::io {
namespace {

// Owns one read-only descriptor opened with O_CLOEXEC; pread() never moves a file position, so one
// descriptor serves every thread. A forked child inherits the descriptor and can keep reading it.
class FileSource final : public Source {
 public:
  FileSource(int fd, uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  ~FileSource() override { ::close(fd_); }

  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    if (!internal::range_inside(offset, out.size(), size_)) {
      return corrupt("read of " + std::to_string(out.size()) + " bytes at offset " + std::to_string(offset) +
                     " is past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return io_error(std::string("read failed at offset ") + std::to_string(offset + done) + ": " +
                        std::strerror(errno));
      }
      if (n == 0) {
        return corrupt("file ended at offset " + std::to_string(offset + done) + " (truncated while open?)");
      }
      done += static_cast<size_t>(n);
    }
    return Status();
  }

  // preadv: the kernel copies each row from the page cache into its place, with no staging buffer between
  // (a whole uncompressed plane is copied once, not twice: bench/RESULTS.md, "2 cores: channels against
  // slideio, bioio and wsidicom").
  Status pread_rows(uint8_t* dst, int64_t dst_stride, size_t row_bytes, int32_t rows, uint64_t offset) const override {
    if (rows <= 0 || row_bytes == 0) return Status();
    if (dst_stride == static_cast<int64_t>(row_bytes)) return pread({dst, row_bytes * static_cast<size_t>(rows)}, offset);
    if (!internal::range_inside(offset, static_cast<uint64_t>(rows) * row_bytes, size_)) {
      return pread({dst, row_bytes * static_cast<size_t>(rows)}, offset);  // its "past the end" error
    }
    constexpr int32_t kRowsPerCall = IOV_MAX < 1024 ? IOV_MAX : 1024;
    iovec iov[kRowsPerCall];
    for (int32_t first = 0; first < rows; first += kRowsPerCall) {
      const int32_t count = std::min(kRowsPerCall, rows - first);
      for (int32_t r = 0; r < count; ++r) iov[r] = {dst + (first + r) * dst_stride, row_bytes};
      const uint64_t at = offset + static_cast<uint64_t>(first) * row_bytes;
      ssize_t n;
      do {
        n = ::preadv(fd_, iov, count, static_cast<off_t>(at));
      } while (n < 0 && errno == EINTR);
      if (n < 0 || static_cast<uint64_t>(n) != static_cast<uint64_t>(count) * row_bytes) {
        // Short or failed (a file cut while open, an I/O error): these rows again, with pread's errors
        TW_RETURN_IF_ERROR(Source::pread_rows(dst + first * dst_stride, dst_stride, row_bytes, count, at));
      }
    }
    return Status();
  }

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  bool is_local_file() const override { return true; }

 private:
  int fd_;
  uint64_t size_;
  std::string path_;
};

}  // namespace

Result<std::shared_ptr<const Source>> open_file(const std::string& path, const HttpAuth& auth) {
  if (is_dicomweb_url(path)) {
    TW_ASSIGN_OR_RETURN(auto series, DicomWebSeries::open(path, auth));
    return std::shared_ptr<const Source>(std::move(series));
  }
  if (is_http_url(path)) return open_http(path, auth);
  return open_file(path);
}

Result<std::shared_ptr<const Source>> open_file(const std::string& path) {
  if (is_dicomweb_url(path)) return open_file(path, HttpAuth{});
  if (is_http_url(path)) return open_http(path);  // every format reads through Source: remote slides too
  if (is_s3_url(path)) return open_s3(path);
  if (is_gcs_url(path)) return open_gcs(path);
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return not_found(path + ": no such file");
    return io_error(path + ": cannot open: " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path + (S_ISDIR(st.st_mode) ? ": is a directory" : ": is not a regular file"));
  }
  return std::shared_ptr<const Source>(std::make_shared<FileSource>(fd, static_cast<uint64_t>(st.st_size), path));
}

}  // namespace tilewise::io
