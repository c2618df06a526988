// SharedBatch: one batch of a device loader read by the GPU and CPU helpers together - its claims (which
// items each side takes, batch_claims.h), the helpers' staging (staging.h; their regions go up in one upload
// when the batch is complete) and each item's status. The loader's tasks hold it by shared_ptr, so it
// outlives a cancelled loader's batch.
//
// Not synchronised: the loader takes claims and counts busy helpers under its own mutex; each item's slot
// and status are written only by the task that claimed the item.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "gpu/batch_claims.h"
#include "gpu/staging.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::gpu {

class SharedBatch {
 public:
  // A batch of claims.size() items of `item_bytes` each, for a buffer on `device`. Without staging (not
  // `helped`, or it could not be allocated) the GPU claims every item.
  SharedBatch(BatchClaims claims, const Device& device, size_t item_bytes, bool helped = true)
      : claims_(std::move(claims)), statuses_(static_cast<size_t>(claims_.size())), item_bytes_(item_bytes) {
    auto staging = helped ? Staging::for_device(device, item_bytes * static_cast<size_t>(claims_.size()))
                          : Result<Staging>(invalid_argument("no helpers"));
    if (staging.ok()) {
      staging_.emplace(std::move(staging).value());
    } else {
      claims_ = BatchClaims(claims_.size(), 1.0);
    }
  }

  BatchClaims& claims() { return claims_; }
  const BatchClaims& claims() const { return claims_; }
  // Whether helpers read part of this batch (it has staging).
  bool helped() const { return staging_.has_value(); }
  // Whether a helper may claim an item now.
  bool open_to_helpers() const { return staging_ && !claims_.exhausted(); }
  // Item `slot`'s pixels in the helpers' staging (host memory).
  uint8_t* helper_slot(int64_t slot) const { return staging_->data() + item_bytes_ * static_cast<size_t>(slot); }
  // Uploads the helpers' items [claims().cpu_first(), size) into `batch`, the batch's buffer; returns when done.
  Status upload_helpers(uint8_t* batch) const {
    const size_t at = item_bytes_ * static_cast<size_t>(claims_.cpu_first());
    const size_t bytes = item_bytes_ * static_cast<size_t>(claims_.size() - claims_.cpu_first());
    if (!staging_ || bytes == 0) return Status();
    return staging_->upload(batch + at, at, bytes);
  }

  std::vector<Status>& statuses() { return statuses_; }
  int cpu_busy = 0;  // helpers reading items now (under the loader's mutex)

 private:
  BatchClaims claims_;
  std::vector<Status> statuses_;
  size_t item_bytes_;
  std::optional<Staging> staging_;
};

}  // namespace tilewise::gpu
