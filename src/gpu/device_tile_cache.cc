#include "gpu/device_tile_cache.h"

namespace tilewise::gpu {

struct DeviceTileCache::Entry {
  cache::TileKey key;
  uint8_t* pixels = nullptr;
  size_t bytes = 0;
  int pins = 0;
  bool ready = false;
  bool in_map = true;  // false once dropped while pinned: freed by the last release
  std::list<Entry*>::iterator lru;
};

DeviceTileCache::DeviceTileCache(size_t capacity_bytes, Allocate allocate, Release release)
    : capacity_(capacity_bytes), allocate_(std::move(allocate)), release_(std::move(release)) {}

DeviceTileCache::~DeviceTileCache() {
  for (auto& [key, e] : map_) {
    release_(e->pixels);
    delete e;
  }
}

DeviceTileCache::Lookup DeviceTileCache::acquire(const cache::TileKey& key, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0) return {};
  auto it = map_.find(key);
  if (it != map_.end()) {
    Entry* e = it->second;
    if (!e->ready) return {};  // another reader is filling it
    ++e->pins;
    lru_.splice(lru_.begin(), lru_, e->lru);
    ++hits_;
    return {e, e->pixels, true};
  }
  ++misses_;
  if (bytes > capacity_ || !make_room(bytes)) return {};
  auto* pixels = static_cast<uint8_t*>(allocate_(bytes));
  if (!pixels) return {};
  auto* e = new Entry{key, pixels, bytes, 1, false, true, {}};
  lru_.push_front(e);
  e->lru = lru_.begin();
  map_.emplace(key, e);
  bytes_ += bytes;
  return {e, pixels, false};
}

void DeviceTileCache::publish(Entry* e, bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ok) {
    e->ready = true;
    return;
  }
  // Out of the map now; the memory goes when the owner releases its pin.
  map_.erase(e->key);
  lru_.erase(e->lru);
  bytes_ -= e->bytes;
  e->in_map = false;
}

void DeviceTileCache::release(Entry* e) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--e->pins > 0 || e->in_map) return;
  release_(e->pixels);
  delete e;
}

bool DeviceTileCache::make_room(size_t bytes) {
  auto it = lru_.end();  // scanning from the least recently used end
  while (bytes_ + bytes > capacity_) {
    Entry* victim = nullptr;
    while (it != lru_.begin()) {
      --it;
      if ((*it)->pins == 0 && (*it)->ready) {
        victim = *it;
        break;
      }
    }
    if (!victim) return false;  // everything left is held or being filled
    it = std::next(it);         // the node after the victim stays valid when the victim's is erased
    drop(victim);
  }
  return true;
}

void DeviceTileCache::drop(Entry* e) {
  map_.erase(e->key);
  lru_.erase(e->lru);
  bytes_ -= e->bytes;
  release_(e->pixels);
  delete e;
}

DeviceTileCache::Stats DeviceTileCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return Stats{hits_, misses_, bytes_, map_.size()};
}

}  // namespace tilewise::gpu
