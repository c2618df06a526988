#include "cache/tile_cache.h"

#include <cstdio>
#include <cstdlib>

#include "util/fork_safe.h"
#include "util/settings.h"

namespace tilewise::cache {

namespace {
constexpr uint64_t kEntryOverhead = 96;  // list node, map node and control block, roughly
}

TileCache::TileCache(uint64_t capacity_bytes, size_t ghost_keys)
    : capacity_(capacity_bytes), ghost_capacity_(ghost_keys) {}

TileCache::Lookup TileCache::lookup(const TileKey& key) {
  if (std::shared_ptr<SharedTileStore> store = shared_store()) return shared_lookup(*store, key);
  std::lock_guard<std::mutex> lock(mutex_);
  return lookup_locked(key);
}

bool TileCache::contains(const TileKey& key) const {
  std::shared_ptr<SharedTileStore> store;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.count(key) > 0 || in_flight_.count(key) > 0) return true;
    store = shared_;
  }
  return store != nullptr && store->contains(key);
}

TileCache::Lookup TileCache::shared_lookup(SharedTileStore& store, const TileKey& key) {
  auto tile = std::make_shared<CachedTile>();
  const bool hit = store.get(key, tile.get());
  const bool seen = !hit && store.missed_recently(key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(hit ? hits_ : misses_);
  }
  if (hit) return {std::move(tile), false, false};
  return {nullptr, seen, false};
}

bool TileCache::reserve(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.emplace(key, true).second;
}

TileCache::Lookup TileCache::acquire(const TileKey& key, bool admit_first_use) {
  if (std::shared_ptr<SharedTileStore> store = shared_store()) {
    bool waited = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (in_flight_.count(key)) {  // a thread of this process is decoding it
        landed_.wait(lock, [&] { return !in_flight_.count(key); });
        waited = true;
      }
    }
    Lookup found = shared_lookup(*store, key);
    if (waited) return {std::move(found.tile), false, false};  // a miss now: its decode failed or did not fit
    if (!found.tile && (found.seen_recently || admit_first_use)) found.reserved = reserve(key);
    return found;
  }
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
  if (std::shared_ptr<SharedTileStore> store = shared_store()) {
    store->put(key, *tile);  // before the reservation ends, so that its waiters find it
    std::lock_guard<std::mutex> lock(mutex_);
    end_reservation_locked(key);
    return;
  }
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
  if (std::shared_ptr<SharedTileStore> store = shared_store()) store->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  map_.clear();
  ghosts_.clear();
  ghost_order_.clear();
  bytes_ = 0;
}

void TileCache::set_capacity(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  shared_.reset();
  sharing_.store(false, std::memory_order_relaxed);
  capacity_ = bytes;
  evict_to(bytes);
  if (bytes == 0) {
    ghosts_.clear();
    ghost_order_.clear();
  }
}

void TileCache::share(std::shared_ptr<SharedTileStore> store) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (store == nullptr) {
    if (shared_ != nullptr) capacity_ = local_capacity_;
    shared_.reset();
    sharing_.store(false, std::memory_order_relaxed);
    return;
  }
  if (shared_ == nullptr) local_capacity_ = capacity_;
  evict_to(0);  // the per-process entries; from now on tiles live in the store
  evictions_ = 0;
  ghosts_.clear();
  ghost_order_.clear();
  capacity_ = store->arena_bytes();
  shared_ = std::move(store);
  sharing_.store(true, std::memory_order_relaxed);
}

std::shared_ptr<SharedTileStore> TileCache::shared_store() const {
  if (!sharing_.load(std::memory_order_relaxed)) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return shared_;
}

uint64_t TileCache::capacity() const { return capacity_.load(std::memory_order_relaxed); }

bool TileCache::enabled() const { return capacity() > 0; }

CacheStats TileCache::stats() const {
  if (std::shared_ptr<SharedTileStore> store = shared_store()) {
    const SharedTileStore::Stats shared = store->stats();
    std::lock_guard<std::mutex> lock(mutex_);
    return CacheStats{hits_, misses_, shared.evictions, shared.entries, shared.bytes, capacity_.load()};
  }
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

// The store the process-wide cache shares (null: per-process). A store once shared here stays mapped until
// the process exits (its holder is never freed), so that a forked child, whose fresh cache shares it too,
// never meets a freed store, a lock or a destructor of its parent's.
std::atomic<std::shared_ptr<SharedTileStore>*>& shared_holder() {
  static std::atomic<std::shared_ptr<SharedTileStore>*> holder{nullptr};
  return holder;
}

void hold_for_the_process(std::shared_ptr<SharedTileStore> store) {
  if (store != nullptr && store->named()) {  // the last registered process to exit removes the name
    static std::mutex mutex;
    static auto* named = new std::vector<SharedTileStore*>();
    std::lock_guard<std::mutex> lock(mutex);
    if (named->empty()) {
      std::atexit([] {
        std::lock_guard<std::mutex> at_exit(mutex);
        for (SharedTileStore* s : *named) s->release_name();
      });
    }
    named->push_back(store.get());
  }
  shared_holder().store(store ? new std::shared_ptr<SharedTileStore>(std::move(store)) : nullptr,
                        std::memory_order_release);
}

// TILEWISE_SHARED_CACHE: the path of another process's store (inherited from the process that shared its
// cache) or the name of a store to open or create with TILEWISE_CACHE_BYTES of tile space.
std::shared_ptr<SharedTileStore> store_from_environment() {
  const char* where = std::getenv("TILEWISE_SHARED_CACHE");
  if (where == nullptr || *where == 0) return nullptr;
  Result<std::unique_ptr<SharedTileStore>> store =
      where[0] == '/' ? SharedTileStore::attach(where)
                      : SharedTileStore::open_named(where, internal::settings().cache_bytes);
  if (!store.ok()) {
    std::fprintf(stderr, "tilewise: TILEWISE_SHARED_CACHE=%s: %s; using a per-process tile cache\n", where,
                 store.status().message().c_str());
    return nullptr;
  }
  return std::shared_ptr<SharedTileStore>(std::move(store).value());
}

std::shared_ptr<SharedTileStore> global_store() {
  static const bool from_environment = [] {
    if (std::shared_ptr<SharedTileStore> store = store_from_environment()) hold_for_the_process(std::move(store));
    return true;
  }();
  (void)from_environment;
  std::shared_ptr<SharedTileStore>* held = shared_holder().load(std::memory_order_acquire);
  return held != nullptr ? *held : nullptr;
}
}  // namespace

TileCache& TileCache::global() {
  static auto* cache = new internal::ForkSafe<TileCache>([] {
    auto* fresh = new TileCache(configured_capacity().load());
    if (std::shared_ptr<SharedTileStore> store = global_store()) fresh->share(std::move(store));
    return fresh;
  });
  return cache->get();
}

void TileCache::set_global_capacity(uint64_t bytes) {
  configured_capacity().store(bytes);
  TileCache& cache = global();
  hold_for_the_process(nullptr);
  cache.set_capacity(bytes);
}

void TileCache::share_global(std::shared_ptr<SharedTileStore> store) {
  TileCache& cache = global();
  hold_for_the_process(store);
  cache.share(std::move(store));
}

}  // namespace tilewise::cache
