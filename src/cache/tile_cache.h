// TileCache: a byte-budget LRU of decoded tiles, shared by every open slide in the process.
//
// Admission: a tile is cached on its second request within a short history, not its first. lookup()
// remembers the keys of recent misses (a bounded "ghost" list holding keys only); a miss whose key is in
// that list reports seen_recently, and the caller then decodes the whole tile and put()s it. On a first
// miss the caller decodes only the part of the tile its region needs, which for random patches is a
// fraction of the work, and nothing is cached. Overlapping reads (sliding windows, neighbouring patches)
// touch tiles repeatedly and so get them cached; a random sampler never fills the cache with tiles that
// will not be read again.
//
// In-flight decodes: acquire() reserves the key of an admitted miss for its caller, who decodes the tile and
// put()s it (or abandon()s it on failure); concurrent acquire()s of that key wait for it instead of decoding
// the same tile again (neighbouring patches read by several workers at once need the same tiles). A caller
// never holds a reservation while waiting for another, so waits cannot form a cycle.
//
// Thread behaviour: all methods are thread-safe; one mutex guards the map and the recency list and is held
// only for lookups, splices and inserts (never while decoding or copying pixels); enabled() takes no lock. Values are immutable and
// reference-counted, so a reader keeps using a tile after it has been evicted. A capacity of 0 disables the
// cache (get misses without counting, put does nothing). In a forked child a fresh, empty cache is used.
//
// Shared: with a SharedTileStore (share()), tiles live in shared memory instead, read and filled by every
// process that maps it (shared_tile_store.h), and so does the admission history; reservations stay within
// the process, hits and misses are this process's, entries, bytes and evictions the store's. A forked
// child's fresh cache shares the store its parent shared.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cache/shared_tile_store.h"
#include "cache/tile_key.h"
#include "tilewise/config.h"

namespace tilewise::cache {

struct CachedTile {
  int32_t width = 0;
  int32_t height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3, packed rows
};

class TileCache {
 public:
  struct Lookup {
    std::shared_ptr<const CachedTile> tile;  // null on a miss
    bool seen_recently = false;              // on a miss: the key missed recently too (admit it now)
    bool reserved = false;                   // acquire(): the caller decodes the tile, then put() or abandon()
  };

  explicit TileCache(uint64_t capacity_bytes, size_t ghost_keys = 16384);

  Lookup lookup(const TileKey& key);
  // Whether the key is cached (or being decoded), without counting a use: no statistics, recency or
  // admission change.
  bool contains(const TileKey& key) const;
  // lookup(), waiting for a decode of the key in flight; a miss that is admitted (seen recently, or
  // `admit_first_use`) is reserved for the caller.
  Lookup acquire(const TileKey& key, bool admit_first_use);
  // Ends the caller's reservation without a tile (its decode failed): waiters decode for themselves.
  void abandon(const TileKey& key);
  std::shared_ptr<const CachedTile> get(const TileKey& key) { return lookup(key).tile; }
  void put(const TileKey& key, std::shared_ptr<const CachedTile> tile);
  void erase_slide(uint64_t slide);
  void clear();

  // Per-process again, with a budget of `bytes` (the store is released).
  void set_capacity(uint64_t bytes);
  // Keeps tiles in `store` (null: per-process, of the last per-process budget); the capacity becomes the
  // store's tile space.
  void share(std::shared_ptr<SharedTileStore> store);
  std::shared_ptr<SharedTileStore> shared_store() const;
  uint64_t capacity() const;
  bool enabled() const;
  CacheStats stats() const;
  void reset_stats();

  // The process-wide cache (re-created empty in a forked child), of settings().cache_bytes at start.
  static TileCache& global();
  // Sets the process-wide cache's capacity and remembers it, so that the cache a forked child re-creates
  // (ForkSafe) starts with the capacity its parent configured rather than the default.
  static void set_global_capacity(uint64_t bytes);
  // Moves the process-wide cache into `store` (null: back to per-process); forked children share it too.
  static void share_global(std::shared_ptr<SharedTileStore> store);

 private:
  struct Entry {
    TileKey key;
    std::shared_ptr<const CachedTile> tile;
    uint64_t bytes;
  };
  void evict_to(uint64_t budget);  // requires mutex_
  Lookup lookup_locked(const TileKey& key);
  void end_reservation_locked(const TileKey& key);
  Lookup shared_lookup(SharedTileStore& store, const TileKey& key);
  bool reserve(const TileKey& key);

  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<TileKey, std::list<Entry>::iterator, TileKeyHash> map_;
  // Written under mutex_; read without it by enabled() (every region read asks).
  std::atomic<uint64_t> capacity_;
  // Keys of recent misses, oldest first in ghost_order_ (bounded by ghost_capacity_).
  std::unordered_map<TileKey, uint64_t, TileKeyHash> ghosts_;  // key -> sequence number of its latest miss
  std::deque<std::pair<TileKey, uint64_t>> ghost_order_;
  size_t ghost_capacity_;
  uint64_t ghost_seq_ = 0;
  uint64_t bytes_ = 0;
  std::unordered_map<TileKey, bool, TileKeyHash> in_flight_;  // reserved keys
  std::condition_variable landed_;                            // a reservation ended
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
  std::shared_ptr<SharedTileStore> shared_;  // set: tiles and admission history live there
  std::atomic<bool> sharing_{false};          // shared_ is set (read without the mutex)
  uint64_t local_capacity_ = 0;               // the per-process budget while shared
};

}  // namespace tilewise::cache
