// Staging: host memory whose pixels go up to a device in parts as they are written - the CPU's share of a
// device read (a large region's rows decoded on the cores, a device loader's helpers' regions).
//
// For a device it is page-locked (DeviceOps::allocate_host: an upload from pageable memory is staged by the
// driver and synchronous), so that each part's upload is queued on a stream and runs while later parts are
// still being written. For the host (no DeviceOps: a host loader scheduled as a device loader, in tests) it
// is ordinary memory and an upload is a copy made at once.
//
// The owner synchronises the streams it queued uploads on before the staging goes (its memory is then
// returned to the per-process pool). Not synchronised: threads write disjoint parts and one thread uploads
// each part.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/device_ops.h"
#include "tilewise/status.h"
#include "tilewise/image_view.h"

namespace tilewise::gpu {

class Staging {
 public:
  // `bytes` of staging for uploads through `ops` (nullptr: to host memory).
  static Result<Staging> allocate(DeviceOps* ops, size_t bytes);
  // Staging for uploads to `device` (its context's operations; the host's for a CPU device).
  static Result<Staging> for_device(const Device& device, size_t bytes);
  Staging(Staging&& other) noexcept;
  Staging& operator=(Staging&& other) noexcept;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging();

  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }

  // Queues the upload of `rows` rows of `row_bytes` bytes, from `offset` in the staging (rows `row_bytes`
  // apart) to `dst` (rows `dst_pitch` apart), on `stream`.
  Status upload_rows(uint8_t* dst, size_t dst_pitch, size_t offset, size_t row_bytes, int64_t rows,
                     Stream stream) const;
  // Uploads `bytes` from `offset` in the staging to `dst` on a stream of its own; returns when done.
  Status upload(uint8_t* dst, size_t offset, size_t bytes) const;

 private:
  Staging(DeviceOps* ops, uint8_t* data, size_t bytes) : ops_(ops), data_(data), bytes_(bytes) {}
  DeviceOps* ops_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

// Fills `view` (3 channels, host or device memory) with `rgb`; returns when done.
Status fill_view(const ImageView& view, const uint8_t rgb[3]);

}  // namespace tilewise::gpu
