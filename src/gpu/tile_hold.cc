#include "gpu/tile_hold.h"

namespace tilewise::gpu {

Status TileHold::reserve(std::vector<DeviceTile>& tiles, uint64_t slide_uid, int32_t cache_level) {
  const size_t tile_bytes = tile_bytes_;
  size_t slots = 0;
  for (DeviceTile& t : tiles) {
    if (t.in_place) continue;
    if (cache_) {
      auto found = cache_->acquire(cache::TileKey{slide_uid, cache_level, t.planned.tile.index()}, tile_bytes);
      if (found.entry) {
        held_.emplace_back(found.entry, !found.ready);
        t.cached = found.entry;
        t.cached_pixels = found.pixels;
        t.cache_hit = found.ready;
        continue;
      }
    }
    t.scratch_slot = slots++;
  }
  if (slots > 0) {
    TW_ASSIGN_OR_RETURN(scratch_, ops_.allocate(slots * tile_bytes));
  }
  return Status();
}

uint8_t* TileHold::pixels(const DeviceTile& t) const {
  return t.cached ? t.cached_pixels : static_cast<uint8_t*>(scratch_) + t.scratch_slot * tile_bytes_;
}

void TileHold::publish(const DeviceTile& t, bool ok) {
  if (!t.cached) return;
  for (auto& [entry, pending] : held_) {
    if (entry == t.cached && pending) {
      cache_->publish(entry, ok);
      pending = false;
    }
  }
}

TileHold::~TileHold() {
  if (held_.empty() && !scratch_) return;
  (void)ops_.synchronize(stream_);
  for (auto& [entry, pending] : held_) {
    if (pending) cache_->publish(entry, false);
    cache_->release(entry);
  }
  if (scratch_) ops_.release(scratch_);
}

}  // namespace tilewise::gpu
