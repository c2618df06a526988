#include "region/batch_tiles.h"

namespace tilewise::region {

void BatchTiles::add_use(int64_t index, uint64_t tile_bytes) {
  Slot& slot = slots_[index];
  if (slot.uses == 1) {  // becoming shared
    if (shared_bytes_ + tile_bytes > kMaxBytes) return;  // over the budget: stays a single use
    shared_bytes_ += tile_bytes;
  }
  ++slot.uses;
}

bool BatchTiles::shared(int64_t index) const {
  const auto it = slots_.find(index);
  return it != slots_.end() && it->second.uses > 1;
}

Result<const uint8_t*> BatchTiles::use(int64_t index, int32_t width, int32_t height, const ImageView& like,
                                       const std::function<Status(const ImageView&)>& decode) {
  Slot& slot = slots_[index];
  if (!slot.decoded) {
    slot.decoded = true;
    if (!spare_.empty()) {
      slot.pixels = std::move(spare_.back());
      spare_.pop_back();
    }
    const size_t pixel = like.pixel_bytes();
    slot.pixels.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * pixel);  // reused: not cleared
    slot.status = decode(ImageView{slot.pixels.data(), static_cast<int64_t>(width * pixel), width, height, like.channels,
                                   {}, like.sample_bytes});
  }
  if (!slot.status.ok()) return slot.status;
  return static_cast<const uint8_t*>(slot.pixels.data());
}

void BatchTiles::done(int64_t index) {
  const auto it = slots_.find(index);
  if (it == slots_.end() || ++it->second.ended < it->second.uses) return;
  if (it->second.pixels.capacity() > 0) spare_.push_back(std::move(it->second.pixels));
  slots_.erase(it);
}

}  // namespace tilewise::region
