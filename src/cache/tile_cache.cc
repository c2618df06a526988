#include "cache/tile_cache.h"

#include "util/fork_safe.h"
#include "util/settings.h"

namespace tilewise::cache {

namespace {
constexpr uint64_t kEntryOverhead = 96;  // list node, map node and control block, roughly
}

TileCache::TileCache(uint64_t capacity_bytes, size_t ghost_keys)
    : capacity_(capacity_bytes), ghost_capacity_(ghost_keys) {}

TileCache::Lookup TileCache::lookup(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return lookup_locked(key);
}

bool TileCache::contains(const TileKey& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return map_.count(key) > 0 || in_flight_.count(key) > 0;
}

TileCache::Lookup TileCache::acquire(const TileKey& key, bool admit_first_use) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (capacity_ == 0) return {};
  if (in_flight_.count(key)) {
    landed_.wait(lock, [&] { return !in_flight_.count(key); });
    auto it = map_.find(key);
    if (it != map_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second);
      return {it->second->tile, false, false};
    }
    return {};  // its decode failed (or did not fit): decode for yourself
  }
  Lookup found = lookup_locked(key);
  if (!found.tile && (found.seen_recently || admit_first_use)) {
    in_flight_.emplace(key, true);
    found.reserved = true;
  }
  return found;
}

void TileCache::abandon(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  end_reservation_locked(key);
}

void TileCache::end_reservation_locked(const TileKey& key) {
  if (in_flight_.erase(key)) landed_.notify_all();
}

TileCache::Lookup TileCache::lookup_locked(const TileKey& key) {
  if (capacity_ == 0) return {};
  auto it = map_.find(key);
  if (it != map_.end()) {
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second);
    return {it->second->tile, false, false};
  }
  ++misses_;
  auto ghost = ghosts_.find(key);
  if (ghost != ghosts_.end()) {
    ghosts_.erase(ghost);  // its stale entry in ghost_order_ is skipped when it reaches the front
    return {nullptr, true, false};
  }
  const uint64_t seq = ++ghost_seq_;
  ghosts_[key] = seq;
  ghost_order_.emplace_back(key, seq);
  while (ghost_order_.size() > ghost_capacity_) {
    const auto& [old_key, old_seq] = ghost_order_.front();
    auto g = ghosts_.find(old_key);
    if (g != ghosts_.end() && g->second == old_seq) ghosts_.erase(g);
    ghost_order_.pop_front();
  }
  return {nullptr, false, false};
}

void TileCache::put(const TileKey& key, std::shared_ptr<const CachedTile> tile) {
  const uint64_t bytes = tile->pixels.size() + kEntryOverhead;
  std::lock_guard<std::mutex> lock(mutex_);
  end_reservation_locked(key);  // before any early return: waiters must not wait for a put that never comes
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
  ghosts_.clear();
  ghost_order_.clear();
  bytes_ = 0;
}

void TileCache::set_capacity(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = bytes;
  evict_to(bytes);
  if (bytes == 0) {
    ghosts_.clear();
    ghost_order_.clear();
  }
}

uint64_t TileCache::capacity() const { return capacity_.load(std::memory_order_relaxed); }

bool TileCache::enabled() const { return capacity() > 0; }

CacheStats TileCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return CacheStats{hits_, misses_, evictions_, map_.size(), bytes_, capacity_.load()};
}

void TileCache::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  hits_ = misses_ = evictions_ = 0;
}

namespace {
std::atomic<uint64_t>& configured_capacity() {
  static std::atomic<uint64_t> bytes{internal::settings().cache_bytes};
  return bytes;
}
}  // namespace

TileCache& TileCache::global() {
  static auto* cache = new internal::ForkSafe<TileCache>([] { return new TileCache(configured_capacity().load()); });
  return cache->get();
}

void TileCache::set_global_capacity(uint64_t bytes) {
  configured_capacity().store(bytes);
  global().set_capacity(bytes);
}

}  // namespace tilewise::cache
