// DeviceTileCache: decoded tiles kept in device memory, so that reads whose regions cut the same tiles (patches
// overlapping a tile, tiling with a stride below the tile size, concurrent readers of one neighbourhood)
// decode each tile once and compose from it.
//
// Synchronisation model: one mutex over the map and the LRU list, held only for bookkeeping. An entry is
// pinned by every reader holding it and is never evicted or freed while pinned. A reader that misses
// reserves the entry (pinned, not ready), has it decoded (the decode is complete on the device before
// publish(), see tile_lanes.h) and publishes it; until then other readers of the same key get no entry and
// decode into their own scratch (no waiting on each other). Only tiles cut by a region go through the cache:
// tiles wholly inside a region are decoded in place, as on the CPU path. Plain C++ (the device allocator is
// passed in), so it is unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>

#include "cache/tile_key.h"

namespace tilewise::gpu {

class DeviceTileCache {
 public:
  using Allocate = std::function<void*(size_t bytes)>;  // nullptr when out of memory
  using Release = std::function<void(void* p)>;
  DeviceTileCache(size_t capacity_bytes, Allocate allocate, Release release);
  ~DeviceTileCache();
  DeviceTileCache(const DeviceTileCache&) = delete;
  DeviceTileCache& operator=(const DeviceTileCache&) = delete;

  struct Entry;
  struct Lookup {
    Entry* entry = nullptr;  // pinned; nullptr: not cached (decode into scratch)
    uint8_t* pixels = nullptr;
    bool ready = false;      // true: decoded pixels to compose from; false: reserved for the caller to fill
  };
  // A ready entry, or a new reserved one of `bytes`; nothing when the key is being filled by another reader,
  // the cache is disabled, or no room can be made (everything pinned, or the allocation failed).
  Lookup acquire(const cache::TileKey& key, size_t bytes);
  // For a reserved entry: ok makes it ready for others; else it is dropped. The caller keeps its pin.
  void publish(Entry* entry, bool ok);
  // Unpins (every acquire that returned an entry is released once).
  void release(Entry* entry);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    size_t bytes = 0;
    size_t entries = 0;
  };
  Stats stats() const;

 private:
  bool make_room(size_t bytes);  // evicts unpinned ready entries, least recently used first (mutex held)
  void drop(Entry* entry);       // removes and frees an unpinned entry (mutex held)

  const size_t capacity_;
  Allocate allocate_;
  Release release_;
  mutable std::mutex mutex_;
  std::list<Entry*> lru_;  // front: most recently used
  std::unordered_map<cache::TileKey, Entry*, cache::TileKeyHash> map_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace tilewise::gpu
