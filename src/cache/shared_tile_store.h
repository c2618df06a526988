// SharedTileStore: decoded tiles in one shared-memory segment that several processes map, read and fill
// (DataLoader worker processes and DDP ranks on one host reading overlapping patches), so a tile one process
// decoded is a hit in the others. The process-wide TileCache (tile_cache.h) keeps its admission policy and
// in-flight reservations and stores its tiles here when the cache is shared.
//
// Segment: a header, then `shards` equal shards picked by the key's hash. Each shard holds a robust,
// process-shared mutex, a ring arena of variable-size entries (64-byte aligned; oldest evicted first), chained
// hash buckets indexing the live entries, a ring of recently missed key hashes (the admission "ghosts", shared
// so that a tile missed in one process and then in another is admitted), and its counters.
//
// Crash safety: every change to a shard, pixels included, is made while holding its mutex, and a reader
// copies pixels out under it too. A process that dies holding it (killed mid-write) leaves the mutex
// "owner dead"; the next process to lock it empties that shard (whatever the dead one was doing is dropped,
// never read half-written), marks the mutex consistent and carries on; `recovered` counts such repairs.
//
// Where the segment lives:
// - create(): an anonymous memfd segment. Processes forked afterwards share the mapping; other processes of
//   the same user attach through path() ("/proc/<pid>/fd/<fd>") while the creator lives. The memory is
//   freed when the last process that maps it exits, however it exits.
// - open_named(): the POSIX segment /dev/shm/tilewise-cache-<name>, created by the first process to open it
//   (others wait for it to be initialised) and shared by unrelated processes (DDP ranks). Each opener
//   registers its pid in the header; the last registered process to detach removes the name, and a process
//   that finds only dead pids registered takes the segment over.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/tile_key.h"
#include "tilewise/status.h"

namespace tilewise::cache {

struct CachedTile;

class SharedTileStore {
 public:
  struct Stats {
    uint64_t entries = 0;
    uint64_t bytes = 0;  // arena bytes the live entries take (headers and alignment included)
    uint64_t evictions = 0;
    uint64_t recovered = 0;  // shards emptied after a process died holding their lock
  };

  // A new anonymous segment with `arena_bytes` of tile space (at least 1 MiB).
  static Result<std::unique_ptr<SharedTileStore>> create(uint64_t arena_bytes);
  // Attaches to the segment at `path` (another process's path()).
  static Result<std::unique_ptr<SharedTileStore>> attach(const std::string& path);
  // Opens the named segment, creating it with `arena_bytes` of tile space when it does not exist yet (an
  // existing segment keeps its own size). Names are letters, digits, '-', '_' and '.'.
  static Result<std::unique_ptr<SharedTileStore>> open_named(const std::string& name, uint64_t arena_bytes);

  ~SharedTileStore();
  SharedTileStore(const SharedTileStore&) = delete;
  SharedTileStore& operator=(const SharedTileStore&) = delete;

  // Copies the tile under `key` into `out` (resized); false when absent.
  bool get(const TileKey& key, CachedTile* out);
  bool contains(const TileKey& key);
  // Stores a copy of `tile` (keeping an existing entry of the key); false when it cannot fit a shard.
  bool put(const TileKey& key, const CachedTile& tile);
  // Records a miss of `key`: true when it missed recently too (in any process), which consumes that record.
  bool missed_recently(const TileKey& key);
  void clear();

  Stats stats() const;
  uint64_t arena_bytes() const;    // tile space, all shards
  uint64_t segment_bytes() const;  // the whole mapping, headers and indexes included
  // Where another process attaches: "/proc/<pid>/fd/<fd>" (create()) or the name (open_named()).
  const std::string& path() const { return path_; }
  bool named() const { return !name_.empty(); }

  // open_named(): unregisters this process, removing the name when no other registered process lives
  // (also done on destruction).
  void release_name() { detach_named(); }

  // Test support: locks the shard of `key` and never unlocks it, as a process killed mid-write leaves it.
  void lock_and_abandon_for_testing(const TileKey& key);

  // The segment's header and a shard's (laid out in the .cc).
  struct Segment;
  struct Shard;

 private:
  SharedTileStore(int fd, Segment* segment, uint64_t bytes, std::string path, std::string name);
  void detach_named();

  int fd_ = -1;
  Segment* segment_ = nullptr;
  uint64_t mapped_bytes_ = 0;
  std::string path_;
  std::string name_;  // open_named(): the name to unlink when this is the last registered process
};

}  // namespace tilewise::cache
