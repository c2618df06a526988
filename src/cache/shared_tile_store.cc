#include "cache/shared_tile_store.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "cache/tile_cache.h"

namespace tilewise::cache {

namespace {

constexpr uint64_t kMagic = 0x3165686361437754ull;  // "TwCache1"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kAlign = 64;
constexpr uint64_t kPage = 4096;
constexpr int kPidSlots = 64;
constexpr uint64_t kShardTarget = 16ull << 20;  // arena bytes per shard before the store splits further
constexpr uint32_t kMaxShards = 64;
constexpr uint64_t kBytesPerBucket = 32ull << 10;  // one chain head per 32 KiB of arena
constexpr uint32_t kGhostSlots = 16384;            // as the per-process cache's admission history

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint32_t floor_pow2(uint64_t v) {
  uint32_t p = 1;
  while (uint64_t{p} * 2 <= v && p < (1u << 30)) p *= 2;
  return p;
}

uint64_t mix(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t key_hash(const TileKey& k) {
  const uint64_t h = mix(k.slide ^ mix(static_cast<uint64_t>(k.index) ^ mix(static_cast<uint32_t>(k.level))));
  return h == 0 ? 1 : h;  // 0 marks an empty ghost slot
}

bool process_alive(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

std::string errno_text() { return std::strerror(errno); }

// One arena record: a tile (kind 1) or the padding that skips the arena's end (kind 0).
struct Entry {
  uint64_t size;  // arena bytes, this header included (a multiple of kAlign)
  uint64_t next;  // the bucket chain: position + 1 of the next entry, 0 at its end
  uint64_t hash;
  uint64_t slide;
  int64_t index;
  int32_t level;
  int32_t width;
  int32_t height;
  uint32_t kind;
  uint64_t pixel_bytes;
};
static_assert(sizeof(Entry) == kAlign);

}  // namespace

struct SharedTileStore::Segment {
  uint64_t magic;
  uint32_t version;
  std::atomic<uint32_t> ready;
  uint64_t mapped_bytes;
  uint64_t shard_stride;  // bytes from one shard to the next
  uint64_t shard_arena;   // arena bytes per shard
  uint32_t shards;
  uint32_t buckets;  // per shard, a power of two
  uint32_t ghosts;   // per shard, a power of two
  uint32_t reserved;
  std::atomic<int32_t> pids[kPidSlots];  // open_named(): the processes registered
};
static_assert(sizeof(SharedTileStore::Segment) <= kPage);

struct SharedTileStore::Shard {
  pthread_mutex_t mutex;
  uint64_t head;  // position of the next entry (positions grow; the arena offset is position % arena)
  uint64_t tail;  // position of the oldest entry
  uint64_t entries;
  uint64_t live_bytes;
  uint64_t evictions;
  uint64_t recovered;
  // Followed by ghosts (uint64_t[ghosts]), buckets (uint64_t[buckets]) and the arena.
};

namespace {

// The parts of one shard, addressed from its start.
struct ShardView {
  SharedTileStore::Shard* s;
  uint64_t* ghosts;
  uint64_t* buckets;
  uint8_t* arena;
  uint64_t arena_bytes;
  uint32_t ghost_mask;
  uint32_t bucket_mask;

  Entry* at(uint64_t position) const { return reinterpret_cast<Entry*>(arena + position % arena_bytes); }

  void reset() const {
    s->head = s->tail = 0;
    s->entries = s->live_bytes = 0;
    std::memset(ghosts, 0, (uint64_t{ghost_mask} + 1) * sizeof(uint64_t));
    std::memset(buckets, 0, (uint64_t{bucket_mask} + 1) * sizeof(uint64_t));
  }

  Entry* find(const TileKey& k, uint64_t hash) const {
    for (uint64_t link = buckets[hash & bucket_mask]; link != 0;) {
      Entry* e = at(link - 1);
      if (e->hash == hash && e->slide == k.slide && e->level == k.level && e->index == k.index) return e;
      link = e->next;
    }
    return nullptr;
  }

  void unlink(uint64_t position, const Entry& e) const {
    uint64_t* link = &buckets[e.hash & bucket_mask];
    while (*link != 0 && *link != position + 1) link = &at(*link - 1)->next;
    if (*link != 0) *link = e.next;
  }

  void evict_oldest() const {
    const uint64_t position = s->tail;
    Entry* e = at(position);
    if (e->kind == 1) {
      unlink(position, *e);
      --s->entries;
      s->live_bytes -= e->size;
      ++s->evictions;
    }
    s->tail += e->size;
  }

  // Room for `bytes` (a multiple of kAlign, at most the arena) at the head, evicting the oldest entries;
  // returns its position.
  uint64_t allocate(uint64_t bytes) const {
    uint64_t pad = 0;
    for (;;) {
      const uint64_t offset = s->head % arena_bytes;
      pad = offset + bytes > arena_bytes ? arena_bytes - offset : 0;
      if (s->head + pad + bytes - s->tail <= arena_bytes) break;
      if (s->tail == s->head) {  // empty, and the entry and the padding before it do not fit: start over
        s->head = s->tail = (s->head / arena_bytes + 1) * arena_bytes;
        continue;
      }
      evict_oldest();
    }
    if (pad != 0) {
      Entry* p = at(s->head);
      std::memset(p, 0, sizeof(Entry));
      p->size = pad;
      s->head += pad;
    }
    const uint64_t position = s->head;
    s->head += bytes;
    return position;
  }
};

// Holds a shard's mutex; repairs the shard when its previous holder died holding it.
class ShardLock {
 public:
  explicit ShardLock(const ShardView& v) : v_(v) {
    int rc = pthread_mutex_lock(&v.s->mutex);
    if (rc == EOWNERDEAD) {  // its holder died mid-change: drop the shard's contents rather than trust them
      v.reset();
      ++v.s->recovered;
      pthread_mutex_consistent(&v.s->mutex);
      rc = 0;
    }
    locked_ = rc == 0;
  }
  ~ShardLock() {
    if (locked_) pthread_mutex_unlock(&v_.s->mutex);
  }
  bool locked() const { return locked_; }

 private:
  const ShardView& v_;
  bool locked_ = false;
};

}  // namespace

// The view of the shard a hash selects.
static ShardView view_of(SharedTileStore::Segment* seg, uint32_t shard) {
  auto* base = reinterpret_cast<uint8_t*>(seg) + kPage + uint64_t{shard} * seg->shard_stride;
  auto* s = reinterpret_cast<SharedTileStore::Shard*>(base);
  uint8_t* p = base + round_up(sizeof(SharedTileStore::Shard), kAlign);
  auto* ghosts = reinterpret_cast<uint64_t*>(p);
  p += uint64_t{seg->ghosts} * sizeof(uint64_t);
  auto* buckets = reinterpret_cast<uint64_t*>(p);
  p += uint64_t{seg->buckets} * sizeof(uint64_t);
  auto* arena = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(p), kAlign));
  return ShardView{s, ghosts, buckets, arena, seg->shard_arena, seg->ghosts - 1, seg->buckets - 1};
}

namespace {

struct Layout {
  uint32_t shards, buckets, ghosts;
  uint64_t shard_arena, shard_stride, mapped_bytes;
};

Layout layout_for(uint64_t arena_bytes) {
  Layout l{};
  arena_bytes = std::max<uint64_t>(arena_bytes, 1ull << 20);
  l.shards = std::min(kMaxShards, floor_pow2(std::max<uint64_t>(1, arena_bytes / kShardTarget)));
  l.shard_arena = arena_bytes / l.shards / kAlign * kAlign;
  l.buckets = std::max(64u, floor_pow2(l.shard_arena / kBytesPerBucket) * 2);
  l.ghosts = std::max(1024u, kGhostSlots / l.shards);
  const uint64_t index = round_up(sizeof(SharedTileStore::Shard), kAlign) +
                         (uint64_t{l.ghosts} + l.buckets) * sizeof(uint64_t) + kAlign;
  l.shard_stride = round_up(index + l.shard_arena, kPage);
  l.mapped_bytes = kPage + l.shard_stride * l.shards;
  return l;
}

Status init_segment(SharedTileStore::Segment* seg, const Layout& l) {
  seg->magic = kMagic;
  seg->version = kVersion;
  seg->mapped_bytes = l.mapped_bytes;
  seg->shard_stride = l.shard_stride;
  seg->shard_arena = l.shard_arena;
  seg->shards = l.shards;
  seg->buckets = l.buckets;
  seg->ghosts = l.ghosts;
  for (auto& pid : seg->pids) pid.store(0, std::memory_order_relaxed);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  for (uint32_t i = 0; i < l.shards; ++i) {
    ShardView v = view_of(seg, i);
    std::memset(v.s, 0, sizeof(SharedTileStore::Shard));
    if (pthread_mutex_init(&v.s->mutex, &attr) != 0) {
      pthread_mutexattr_destroy(&attr);
      return internal_error("shared tile cache: cannot initialise a process-shared mutex");
    }
    v.reset();  // a fresh mapping is zero already; this keeps the contract explicit
  }
  pthread_mutexattr_destroy(&attr);
  seg->ready.store(1, std::memory_order_release);
  return Status();
}

Result<SharedTileStore::Segment*> map_segment(int fd, uint64_t bytes, const std::string& where) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return io_error("shared tile cache " + where + ": cannot map " + std::to_string(bytes) +
                                       " bytes: " + errno_text());
  return static_cast<SharedTileStore::Segment*>(p);
}

Status check_segment(const SharedTileStore::Segment* seg, uint64_t file_bytes, const std::string& where) {
  if (seg->magic != kMagic || seg->version != kVersion || seg->mapped_bytes != file_bytes || seg->shards == 0 ||
      seg->shards > kMaxShards || (seg->buckets & (seg->buckets - 1)) != 0 || (seg->ghosts & (seg->ghosts - 1)) != 0 ||
      kPage + seg->shard_stride * seg->shards != file_bytes) {
    return corrupt("shared tile cache " + where + " is not a tilewise tile cache of this version");
  }
  return Status();
}

bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= 200 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
         });
}

}  // namespace

SharedTileStore::SharedTileStore(int fd, Segment* segment, uint64_t bytes, std::string path, std::string name)
    : fd_(fd), segment_(segment), mapped_bytes_(bytes), path_(std::move(path)), name_(std::move(name)) {}

SharedTileStore::~SharedTileStore() {
  detach_named();
  if (segment_ != nullptr) munmap(segment_, mapped_bytes_);
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<SharedTileStore>> SharedTileStore::create(uint64_t arena_bytes) {
  const Layout l = layout_for(arena_bytes);
  const int fd = memfd_create("tilewise-tile-cache", MFD_CLOEXEC);
  if (fd < 0) return io_error("shared tile cache: memfd_create failed: " + errno_text());
  if (ftruncate(fd, static_cast<off_t>(l.mapped_bytes)) != 0) {
    close(fd);
    return io_error("shared tile cache: cannot size the segment to " + std::to_string(l.mapped_bytes) +
                    " bytes: " + errno_text());
  }
  const std::string path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd);
  Result<Segment*> seg = map_segment(fd, l.mapped_bytes, path);
  if (!seg.ok()) {
    close(fd);
    return seg.status();
  }
  if (Status s = init_segment(*seg, l); !s.ok()) {
    munmap(*seg, l.mapped_bytes);
    close(fd);
    return s;
  }
  return std::unique_ptr<SharedTileStore>(new SharedTileStore(fd, *seg, l.mapped_bytes, path, ""));
}

Result<std::unique_ptr<SharedTileStore>> SharedTileStore::attach(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return io_error("shared tile cache " + path + ": cannot open: " + errno_text());
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kPage)) {
    close(fd);
    return corrupt("shared tile cache " + path + " is not a tilewise tile cache (too small)");
  }
  const auto bytes = static_cast<uint64_t>(st.st_size);
  Result<Segment*> seg = map_segment(fd, bytes, path);
  if (!seg.ok()) {
    close(fd);
    return seg.status();
  }
  Status s = (*seg)->ready.load(std::memory_order_acquire) == 1 ? check_segment(*seg, bytes, path)
                                                                 : corrupt("shared tile cache " + path + " is not ready");
  if (!s.ok()) {
    munmap(*seg, bytes);
    close(fd);
    return s;
  }
  return std::unique_ptr<SharedTileStore>(new SharedTileStore(fd, *seg, bytes, path, ""));
}

Result<std::unique_ptr<SharedTileStore>> SharedTileStore::open_named(const std::string& name, uint64_t arena_bytes) {
  if (!valid_name(name)) {
    return invalid_argument("shared tile cache name '" + name + "': use letters, digits, '-', '_' and '.'");
  }
  const std::string shm_name = "/tilewise-cache-" + name;
  const int fd = shm_open(shm_name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("shared tile cache " + shm_name + ": cannot open: " + errno_text());
  // The file lock orders creation, registration and removal among the processes sharing the name.
  if (flock(fd, LOCK_EX) != 0) {
    close(fd);
    return io_error("shared tile cache " + shm_name + ": cannot lock: " + errno_text());
  }
  auto fail = [&](Status s, Segment* seg, uint64_t bytes) -> Result<std::unique_ptr<SharedTileStore>> {
    if (seg != nullptr) munmap(seg, bytes);
    flock(fd, LOCK_UN);
    close(fd);
    return s;
  };
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(io_error("shared tile cache " + shm_name + ": " + errno_text()), nullptr, 0);
  Segment* seg = nullptr;
  uint64_t bytes = static_cast<uint64_t>(st.st_size);
  if (bytes >= kPage) {  // initialised under the file lock: not ready means its creator died initialising it
    Result<Segment*> mapped = map_segment(fd, bytes, shm_name);
    if (!mapped.ok()) return fail(mapped.status(), nullptr, 0);
    if ((*mapped)->ready.load(std::memory_order_acquire) == 1) {
      seg = *mapped;
    } else {
      munmap(*mapped, bytes);
      bytes = 0;
    }
  } else {
    bytes = 0;
  }
  if (bytes == 0) {  // the first opener creates it
    const Layout l = layout_for(arena_bytes);
    bytes = l.mapped_bytes;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      shm_unlink(shm_name.c_str());
      return fail(io_error("shared tile cache " + shm_name + ": cannot size it: " + errno_text()), nullptr, 0);
    }
    Result<Segment*> mapped = map_segment(fd, bytes, shm_name);
    if (!mapped.ok()) {
      shm_unlink(shm_name.c_str());
      return fail(mapped.status(), nullptr, 0);
    }
    seg = *mapped;
    if (Status s = init_segment(seg, l); !s.ok()) {
      shm_unlink(shm_name.c_str());
      return fail(s, seg, bytes);
    }
  } else if (Status s = check_segment(seg, bytes, shm_name); !s.ok()) {
    return fail(s, seg, bytes);
  }
  // Register: reuse the slot of a dead process or an empty one.
  const int32_t self = getpid();
  for (auto& pid : seg->pids) {
    const int32_t held = pid.load(std::memory_order_relaxed);
    if (held == 0 || !process_alive(held)) {
      pid.store(self, std::memory_order_relaxed);
      break;
    }
  }
  flock(fd, LOCK_UN);
  return std::unique_ptr<SharedTileStore>(new SharedTileStore(fd, seg, bytes, name, name));
}

void SharedTileStore::detach_named() {
  if (name_.empty() || segment_ == nullptr || flock(fd_, LOCK_EX) != 0) return;
  const int32_t self = getpid();
  bool registered = false, others = false;
  for (auto& pid : segment_->pids) {
    const int32_t held = pid.load(std::memory_order_relaxed);
    if (held == self) {
      pid.store(0, std::memory_order_relaxed);
      registered = true;
    } else if (held != 0 && process_alive(held)) {
      others = true;
    }
  }
  // Only a registered process removes the name (a forked child of one is not registered).
  if (registered && !others) shm_unlink(("/tilewise-cache-" + name_).c_str());
  flock(fd_, LOCK_UN);
  name_.clear();
}

namespace {
ShardView view_for(SharedTileStore::Segment* seg, uint64_t hash) {
  return view_of(seg, static_cast<uint32_t>((hash >> 40) & (seg->shards - 1)));
}
}  // namespace

bool SharedTileStore::get(const TileKey& key, CachedTile* out) {
  const uint64_t hash = key_hash(key);
  const ShardView v = view_for(segment_, hash);
  ShardLock lock(v);
  if (!lock.locked()) return false;
  const Entry* e = v.find(key, hash);
  if (e == nullptr) return false;
  out->width = e->width;
  out->height = e->height;
  out->pixels.assign(reinterpret_cast<const uint8_t*>(e + 1), reinterpret_cast<const uint8_t*>(e + 1) + e->pixel_bytes);
  return true;
}

bool SharedTileStore::contains(const TileKey& key) {
  const uint64_t hash = key_hash(key);
  const ShardView v = view_for(segment_, hash);
  ShardLock lock(v);
  return lock.locked() && v.find(key, hash) != nullptr;
}

bool SharedTileStore::put(const TileKey& key, const CachedTile& tile) {
  const uint64_t hash = key_hash(key);
  const ShardView v = view_for(segment_, hash);
  const uint64_t bytes = round_up(sizeof(Entry) + tile.pixels.size(), kAlign);
  if (bytes > v.arena_bytes) return false;
  ShardLock lock(v);
  if (!lock.locked()) return false;
  if (v.find(key, hash) != nullptr) return true;  // another process stored it meanwhile: keep one copy
  const uint64_t position = v.allocate(bytes);
  Entry* e = v.at(position);
  *e = Entry{bytes, v.buckets[hash & v.bucket_mask], hash, key.slide, key.index, key.level,
             tile.width, tile.height, 1, tile.pixels.size()};
  std::memcpy(e + 1, tile.pixels.data(), tile.pixels.size());
  v.buckets[hash & v.bucket_mask] = position + 1;
  ++v.s->entries;
  v.s->live_bytes += bytes;
  return true;
}

bool SharedTileStore::missed_recently(const TileKey& key) {
  const uint64_t hash = key_hash(key);
  const ShardView v = view_for(segment_, hash);
  ShardLock lock(v);
  if (!lock.locked()) return false;
  uint64_t& slot = v.ghosts[(hash >> 8) & v.ghost_mask];
  if (slot == hash) {
    slot = 0;
    return true;
  }
  slot = hash;  // a direct-mapped history: a newer miss takes the slot of an older one
  return false;
}

void SharedTileStore::clear() {
  for (uint32_t i = 0; i < segment_->shards; ++i) {
    const ShardView v = view_of(segment_, i);
    ShardLock lock(v);
    if (lock.locked()) v.reset();
  }
}

SharedTileStore::Stats SharedTileStore::stats() const {
  Stats st;
  for (uint32_t i = 0; i < segment_->shards; ++i) {
    const ShardView v = view_of(segment_, i);
    ShardLock lock(v);
    if (!lock.locked()) continue;
    st.entries += v.s->entries;
    st.bytes += v.s->live_bytes;
    st.evictions += v.s->evictions;
    st.recovered += v.s->recovered;
  }
  return st;
}

uint64_t SharedTileStore::arena_bytes() const { return segment_->shard_arena * segment_->shards; }

uint64_t SharedTileStore::segment_bytes() const { return mapped_bytes_; }

void SharedTileStore::lock_and_abandon_for_testing(const TileKey& key) {
  const ShardView v = view_for(segment_, key_hash(key));
  pthread_mutex_lock(&v.s->mutex);
}

}  // namespace tilewise::cache
