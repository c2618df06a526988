#include "tilewise/config.h"

#include <cstdlib>
#include <atomic>

#include "cache/tile_cache.h"
#include "codecs/jpeg/mcu_index_cache.h"
#include "util/settings.h"
#include "util/thread_pool.h"

namespace tilewise {

void set_cache_capacity(uint64_t bytes) {
  if (cache::TileCache::global().shared_store() != nullptr) unsetenv("TILEWISE_SHARED_CACHE");  // no longer shared
  cache::TileCache::set_global_capacity(bytes);
}
uint64_t cache_capacity() { return cache::TileCache::global().capacity(); }
CacheStats cache_stats() { return cache::TileCache::global().stats(); }
Status set_shared_cache(uint64_t bytes, const std::string& name) {
  Result<std::unique_ptr<cache::SharedTileStore>> store =
      name.empty() ? cache::SharedTileStore::create(bytes) : cache::SharedTileStore::open_named(name, bytes);
  if (!store.ok()) return store.status();
  std::shared_ptr<cache::SharedTileStore> shared(std::move(store).value());
  setenv("TILEWISE_SHARED_CACHE", shared->path().c_str(), 1);
  cache::TileCache::share_global(std::move(shared));
  return Status();
}
std::string shared_cache_path() {
  std::shared_ptr<cache::SharedTileStore> store = cache::TileCache::global().shared_store();
  return store ? store->path() : std::string();
}
uint64_t shared_cache_segment_bytes() {
  std::shared_ptr<cache::SharedTileStore> store = cache::TileCache::global().shared_store();
  return store ? store->segment_bytes() : 0;
}
void clear_cache() { cache::TileCache::global().clear(); }
void reset_cache_stats() { cache::TileCache::global().reset_stats(); }
void set_mcu_index_capacity(uint64_t bytes) { codecs::McuIndexCache::set_global_capacity(bytes); }
McuIndexStats mcu_index_stats() {
  const codecs::McuIndexCache& cache = codecs::McuIndexCache::global();
  return McuIndexStats{cache.entries(), cache.size_bytes(), cache.capacity(), cache.resumed()};
}
void set_worker_threads(int threads) { internal::set_global_pool_threads(threads); }
int worker_threads() { return internal::global_pool_threads(); }

namespace {
std::atomic<uint64_t> g_max_region_bytes{internal::settings().max_region_bytes};
}  // namespace

void set_max_region_bytes(uint64_t bytes) { g_max_region_bytes.store(bytes); }
uint64_t max_region_bytes() { return g_max_region_bytes.load(); }

Status check_region_size(int64_t width, int64_t height, int64_t pixel_bytes) {
  if (width < 0 || height < 0 || pixel_bytes < 0) {
    return invalid_argument("region size " + std::to_string(width) + "x" + std::to_string(height) + " is negative");
  }
  unsigned __int128 bytes = static_cast<unsigned __int128>(width) * static_cast<uint64_t>(height) *
                                 static_cast<uint64_t>(pixel_bytes);
  if (bytes > max_region_bytes()) {
    return out_of_memory("a " + std::to_string(width) + "x" + std::to_string(height) + " region exceeds the " +
                         std::to_string(max_region_bytes()) + "-byte region limit (set_max_region_bytes)");
  }
  return Status();
}

}  // namespace tilewise
