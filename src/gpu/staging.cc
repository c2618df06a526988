#include "gpu/staging.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "gpu/device_context.h"

namespace tilewise::gpu {

Result<Staging> Staging::allocate(DeviceOps* ops, size_t bytes) {
  if (!ops) {
    void* p = std::malloc(std::max<size_t>(1, bytes));
    if (!p) return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of staging");
    return Staging(nullptr, static_cast<uint8_t*>(p), bytes);
  }
  TW_ASSIGN_OR_RETURN(void* p, ops->allocate_host(bytes));
  return Staging(ops, static_cast<uint8_t*>(p), bytes);
}

Result<Staging> Staging::for_device(const Device& device, size_t bytes) {
  if (device.is_cpu()) return allocate(nullptr, bytes);
  TW_ASSIGN_OR_RETURN(DeviceContext * context, device_context(device.index));
  return allocate(&context->ops(), bytes);
}

Staging::Staging(Staging&& other) noexcept
    : ops_(other.ops_), data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

Staging& Staging::operator=(Staging&& other) noexcept {
  if (this != &other) {
    this->~Staging();
    ops_ = other.ops_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Staging::~Staging() {
  if (!data_) return;
  if (ops_) {
    ops_->release_host(data_);
  } else {
    std::free(data_);
  }
}

Status Staging::upload_rows(uint8_t* dst, size_t dst_pitch, size_t offset, size_t row_bytes, int64_t rows,
                            Stream stream) const {
  if (rows <= 0 || row_bytes == 0) return Status();
  const uint8_t* src = data_ + offset;
  if (!ops_) {
    for (int64_t y = 0; y < rows; ++y) std::memcpy(dst + y * dst_pitch, src + y * row_bytes, row_bytes);
    return Status();
  }
  return ops_->copy_2d(dst, dst_pitch, src, row_bytes, static_cast<int32_t>(row_bytes), static_cast<int32_t>(rows),
                       /*src_on_host=*/true, stream);
}

Status Staging::upload(uint8_t* dst, size_t offset, size_t bytes) const {
  if (bytes == 0) return Status();
  if (!ops_) {
    std::memcpy(dst, data_ + offset, bytes);
    return Status();
  }
  TW_ASSIGN_OR_RETURN(StreamLease stream, StreamLease::acquire(*ops_));
  // A copy_2d row is at most 2 GiB: larger uploads go as rows of 1 GiB.
  constexpr size_t kRow = size_t{1} << 30;
  for (size_t done = 0; done < bytes; done += kRow) {
    const size_t n = std::min(kRow, bytes - done);
    TW_RETURN_IF_ERROR(upload_rows(dst + done, n, offset + done, n, 1, stream.get()));
  }
  return ops_->synchronize(stream.get());
}

Status fill_view(const ImageView& view, const uint8_t rgb[3]) {
  if (!view.data || view.width <= 0 || view.height <= 0) return Status();
  if (view.device.is_cpu()) {
    for (int32_t y = 0; y < view.height; ++y) {
      uint8_t* row = view.row(y);
      for (int32_t x = 0; x < view.width; ++x) std::memcpy(row + 3 * x, rgb, 3);
    }
    return Status();
  }
  TW_ASSIGN_OR_RETURN(DeviceContext * context, device_context(view.device.index));
  DeviceOps& ops = context->ops();
  TW_ASSIGN_OR_RETURN(StreamLease stream, StreamLease::acquire(ops));
  TW_RETURN_IF_ERROR(ops.fill(view.data, static_cast<size_t>(view.stride), view.width, view.height, rgb, stream.get()));
  return ops.synchronize(stream.get());
}

}  // namespace tilewise::gpu
