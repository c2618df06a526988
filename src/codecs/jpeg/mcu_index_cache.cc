#include "codecs/jpeg/mcu_index_cache.h"

#include <sys/mman.h>

#include <array>
#include <list>
#include <memory_resource>
#include <new>
#include <unordered_map>

#include "util/fork_safe.h"
#include "util/settings.h"

#if defined(__SANITIZE_ADDRESS__)
#define TILEWISE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TILEWISE_LSAN 1
#endif
#endif
#ifdef TILEWISE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace tilewise::codecs {

namespace {

struct Key {
  const void* units;
  int64_t unit;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    const uint64_t h = reinterpret_cast<uintptr_t>(k.units) * 0x9E3779B97F4A7C15ull ^
                       static_cast<uint64_t>(k.unit) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 31));
  }
};

constexpr size_t kShards = 16;

// Pages straight from the kernel for the entries' pool. Entries are small and live long; allocated from the
// malloc heap between the per-read buffers (output arrays, decoder pools) they kept it from shrinking: a
// random-patch run held 63 MiB of heap for 9 MiB in use. The pool (below) carves them from large chunks
// that this resource maps and unmaps.
class MappedResource final : public std::pmr::memory_resource {
  void* do_allocate(size_t bytes, size_t) override {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef TILEWISE_LSAN
    // The entries' nodes hold weak references to unit tables; LeakSanitizer scans heap blocks, not mapped
    // pages, and would report a closed slide's table block (kept by those references until the entry ages
    // out) as leaked.
    __lsan_register_root_region(p, bytes);
#endif
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t) override {
#ifdef TILEWISE_LSAN
    __lsan_unregister_root_region(p, bytes);
#endif
    munmap(p, bytes);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
};

}  // namespace

struct McuIndexCache::Shard {
  struct Node {
    Key key;
    std::weak_ptr<const void> owner;
    std::shared_ptr<Entry> entry;
    uint64_t bytes;
  };
  explicit Shard(std::pmr::memory_resource* pool) : lru(pool), map(pool), tables(pool) {}
  std::mutex mutex;
  std::pmr::list<Node> lru;  // most recently used first
  std::pmr::unordered_map<Key, std::pmr::list<Node>::iterator, KeyHash> map;
  std::pmr::unordered_map<const void*, uint32_t> tables;  // entries per unit table, so a close skips shards
  uint64_t bytes = 0;

  void insert(Node node) {
    bytes += node.bytes;
    ++tables[node.key.units];
    lru.push_front(std::move(node));
    map.emplace(lru.front().key, lru.begin());
  }
  void erase(std::pmr::list<Node>::iterator it) {
    bytes -= it->bytes;
    if (auto t = tables.find(it->key.units); t != tables.end() && --t->second == 0) tables.erase(t);
    map.erase(it->key);
    lru.erase(it);
  }
  void evict_to(uint64_t budget) {
    while (bytes > budget && !lru.empty()) erase(std::prev(lru.end()));
  }
};

// One pool under one lock (std::pmr::synchronized_pool_resource keeps a pool per thread: entries made on one
// thread and freed on another were not reused, and 2 threads dropping and rebuilding the index grew the
// process by 20 MiB). Taken only to create or free an entry, never to read one.
class LockedPool final : public std::pmr::memory_resource {
 public:
  explicit LockedPool(std::pmr::memory_resource* upstream) : pool_(std::pmr::pool_options{0, 16 << 10}, upstream) {}

 private:
  void* do_allocate(size_t bytes, size_t align) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return pool_.allocate(bytes, align);
  }
  void do_deallocate(void* p, size_t bytes, size_t align) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.deallocate(p, bytes, align);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
  std::mutex mutex_;
  std::pmr::unsynchronized_pool_resource pool_;
};

struct McuIndexCache::Impl {
  MappedResource pages;
  // Entries are created under a shard's lock but may be freed by whichever reader drops the last
  // reference to an evicted one: the pool locks itself.
  LockedPool pool{&pages};
  std::array<std::unique_ptr<Shard>, kShards> shards;  // declared after the pool: destroyed before it
  std::atomic<uint64_t> capacity;
  Impl() {
    for (auto& s : shards) s = std::make_unique<Shard>(&pool);
  }
};

namespace {
std::atomic<uint64_t>& configured_capacity() {
  static std::atomic<uint64_t> bytes{internal::settings().mcu_index_bytes};
  return bytes;
}
}  // namespace

McuIndexCache& McuIndexCache::global() {
  // Never destroyed (readers on other threads may outlive static destruction at exit); a forked child gets
  // a fresh one (its parent's locks may be held by threads the child does not have), with the capacity
  // last configured.
  static auto* cache =
      new internal::ForkSafe<McuIndexCache>([] { return new McuIndexCache(configured_capacity().load()); });
  return cache->get();
}

void McuIndexCache::set_global_capacity(uint64_t bytes) {
  configured_capacity().store(bytes);
  global().set_capacity(bytes);
}

McuIndexCache::McuIndexCache(uint64_t capacity_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->capacity = capacity_bytes;
}

McuIndexCache::~McuIndexCache() = default;

std::optional<McuCheckpoint> McuIndexCache::Entry::reach(const EntropyLayout& layout,
                                                                 std::span<const uint8_t> entropy, int64_t mcus,
                                                                 int32_t spacing, size_t k, size_t later_k,
                                                                 std::optional<McuCheckpoint>* later) {
  std::lock_guard<std::mutex> lock(mutex);
  if (unusable) return std::nullopt;
  const Status s = extend_mcu_index(layout, entropy, mcus, k + 1, index, spacing);
  if (!s.ok() || index.points.size() <= k) {
    unusable = true;
    return std::nullopt;
  }
  if (later != nullptr && later_k < index.points.size()) *later = index.points[later_k];
  return index.points[k];
}

uint64_t McuIndexCache::entry_bytes(size_t points) {
  // The entry (its lock, the index), its checkpoints, the shared pointer's block, the LRU and map nodes.
  return sizeof(Entry) + points * sizeof(McuCheckpoint) + 32 + sizeof(Shard::Node) + 32 + 48;
}

std::shared_ptr<McuIndexCache::Entry> McuIndexCache::entry(const std::shared_ptr<const void>& units, int64_t unit,
                                                           size_t points) {
  const uint64_t budget = impl_->capacity.load(std::memory_order_relaxed) / kShards;
  if (budget == 0) return nullptr;
  const Key key{units.get(), unit};
  Shard& shard = *impl_->shards[KeyHash{}(key) % kShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (auto found = shard.map.find(key); found != shard.map.end()) {
    const auto it = found->second;
    const bool same_owner = !it->owner.expired() && !it->owner.owner_before(units) && !units.owner_before(it->owner);
    if (same_owner) {
      shard.lru.splice(shard.lru.begin(), shard.lru, it);
      return it->entry;
    }
    shard.erase(it);  // a closed slide's table, its address reused
  }
  auto entry = std::allocate_shared<Entry>(std::pmr::polymorphic_allocator<Entry>(&impl_->pool), &impl_->pool);
  entry->index.points.reserve(points);  // never grows past it: one allocation, as counted
  const uint64_t bytes = entry_bytes(points);
  shard.insert(Shard::Node{key, units, entry, bytes});
  shard.evict_to(budget);
  return entry;  // held by the caller even when evicted at once (a budget smaller than one entry)
}

void McuIndexCache::erase_units(const void* units) {
  for (auto& shard : impl_->shards) {
    std::lock_guard<std::mutex> lock(shard->mutex);
    if (!shard->tables.contains(units)) continue;
    for (auto it = shard->lru.begin(); it != shard->lru.end();) {
      const auto node = it++;
      if (node->key.units == units) shard->erase(node);
    }
  }
}

uint64_t McuIndexCache::capacity() const { return impl_->capacity.load(std::memory_order_relaxed); }

void McuIndexCache::set_capacity(uint64_t bytes) {
  impl_->capacity.store(bytes, std::memory_order_relaxed);
  for (auto& shard : impl_->shards) {
    std::lock_guard<std::mutex> lock(shard->mutex);
    shard->evict_to(bytes / kShards);
  }
}

uint64_t McuIndexCache::size_bytes() const {
  uint64_t total = 0;
  for (auto& shard : impl_->shards) {
    std::lock_guard<std::mutex> lock(shard->mutex);
    total += shard->bytes;
  }
  return total;
}

uint64_t McuIndexCache::entries() const {
  uint64_t total = 0;
  for (auto& shard : impl_->shards) {
    std::lock_guard<std::mutex> lock(shard->mutex);
    total += shard->map.size();
  }
  return total;
}

}  // namespace tilewise::codecs
