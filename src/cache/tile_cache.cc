#include "cache/tile_cache.h"

#include <cstdlib>

#include "util/fork_safe.h"

namespace tilewise::cache {

namespace {
constexpr uint64_t kEntryOverhead = 96;  // list node, map node and control block, roughly
}

TileCache::TileCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

std::shared_ptr<const CachedTile> TileCache::get(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0) return nullptr;
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->tile;
}

void TileCache::put(const TileKey& key, std::shared_ptr<const CachedTile> tile) {
  const uint64_t bytes = tile->pixels.size() + kEntryOverhead;
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0 || bytes > capacity_) return;
  auto it = map_.find(key);
  if (it != map_.end()) {  // another thread decoded the same tile meanwhile: keep one copy
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  evict_to(capacity_ - bytes);
  lru_.push_front(Entry{key, std::move(tile), bytes});
  map_.emplace(key, lru_.begin());
  bytes_ += bytes;
}

void TileCache::evict_to(uint64_t budget) {
  while (bytes_ > budget && !lru_.empty()) {
    Entry& victim = lru_.back();
    bytes_ -= victim.bytes;
    map_.erase(victim.key);
    lru_.pop_back();
    ++evictions_;
  }
}

void TileCache::erase_slide(uint64_t slide) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->key.slide == slide) {
      bytes_ -= it->bytes;
      map_.erase(it->key);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

void TileCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  map_.clear();
  bytes_ = 0;
}

void TileCache::set_capacity(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = bytes;
  evict_to(bytes);
}

uint64_t TileCache::capacity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_;
}

bool TileCache::enabled() const { return capacity() > 0; }

CacheStats TileCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return CacheStats{hits_, misses_, evictions_, map_.size(), bytes_, capacity_};
}

void TileCache::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  hits_ = misses_ = evictions_ = 0;
}

TileCache& TileCache::global() {
  static auto* cache = new internal::ForkSafe<TileCache>([] {
    uint64_t capacity = kDefaultCapacity;
    if (const char* env = std::getenv("TILEWISE_CACHE_BYTES")) capacity = std::strtoull(env, nullptr, 10);
    return new TileCache(capacity);
  });
  return cache->get();
}

}  // namespace tilewise::cache
