#include "write/plane_bands.h"

#include <algorithm>
#include <future>

namespace tilewise::write {

Status write_level0(PyramidWriter& pyramid, int64_t height, const BandReader& read, const BandWritten& written) {
  for (int64_t y = 0; y < height;) {
    const auto rows = static_cast<int32_t>(std::min<int64_t>(pyramid.level0_capacity(), height - y));
    TW_RETURN_IF_ERROR(read(y, rows, pyramid.level0_rows(rows)));
    TW_RETURN_IF_ERROR(pyramid.added(rows));
    y += rows;
    TW_RETURN_IF_ERROR(written(rows));
  }
  return Status();
}

Status write_level0_overlapped(PyramidWriter& pyramid, BandOps& ops, int64_t height, const BandReader& read,
                               const BandWritten& written) {
  const int32_t capacity = pyramid.level0_capacity();
  const ImageView shape = pyramid.level0_rows(capacity);
  uint8_t* staging[2];
  for (uint8_t*& band : staging) {
    TW_ASSIGN_OR_RETURN(band, ops.allocate(static_cast<size_t>(shape.stride) * capacity));
  }
  auto rows_at = [&](int64_t y) { return static_cast<int32_t>(std::min<int64_t>(capacity, height - y)); };
  auto staged = [&](int i, int32_t rows) {
    return ImageView{staging[i], shape.stride, shape.width, rows, shape.channels, shape.device, shape.sample_bytes};
  };
  auto start = [&](int i, int64_t y) {
    return std::async(std::launch::async, read, y, rows_at(y), staged(i, rows_at(y)));
  };
  std::future<Status> pending = start(0, 0);
  Status s;
  for (int64_t y = 0, i = 0; y < height && s.ok(); i = 1 - i) {
    const int32_t rows = rows_at(y);
    s = pending.get();
    if (!s.ok()) break;
    if (y + rows < height) pending = start(static_cast<int>(1 - i), y + rows);
    s = ops.copy_rows(staged(static_cast<int>(i), rows), pyramid.level0_rows(rows));
    if (s.ok()) s = pyramid.added(rows);
    y += rows;
    if (s.ok()) s = written(rows);
  }
  if (pending.valid()) pending.wait();  // its staging band is the ops'
  return s;
}

}  // namespace tilewise::write
