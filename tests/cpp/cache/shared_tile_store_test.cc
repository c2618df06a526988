#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "cache/shared_tile_store.h"
#include "cache/tile_cache.h"

namespace tilewise::cache {
namespace {

CachedTile tile_of(size_t bytes, uint8_t value, int32_t width = 1) {
  CachedTile t;
  t.width = width;
  t.height = 1;
  t.pixels.assign(bytes, value);
  return t;
}

std::unique_ptr<SharedTileStore> store_of(uint64_t bytes) {
  auto store = SharedTileStore::create(bytes);
  EXPECT_TRUE(store.ok()) << store.status().message();
  return std::move(store).value();
}

// Runs `child` in a forked process and returns its exit status.
template <typename F>
int in_child(F child) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(SharedTileStore, TilesPutByAForkedChildAreReadByItsParent) {
  auto store = store_of(4 << 20);
  ASSERT_EQ(in_child([&] { return store->put({7, 0, 1}, tile_of(5000, 9, 50)) ? 0 : 1; }), 0);
  CachedTile got;
  ASSERT_TRUE(store->get({7, 0, 1}, &got));
  EXPECT_EQ(got.width, 50);
  EXPECT_EQ(got.pixels, std::vector<uint8_t>(5000, 9));
  EXPECT_FALSE(store->get({7, 0, 2}, &got));
  EXPECT_FALSE(store->get({8, 0, 1}, &got));
  EXPECT_TRUE(store->contains({7, 0, 1}));
  EXPECT_EQ(store->stats().entries, 1u);
}

TEST(SharedTileStore, AnotherProcessAttachesByPath) {
  auto store = store_of(2 << 20);
  ASSERT_TRUE(store->put({1, 2, 3}, tile_of(100, 4)));
  ASSERT_EQ(in_child([&] {
              auto attached = SharedTileStore::attach(store->path());
              if (!attached.ok()) return 1;
              CachedTile got;
              if (!(*attached)->get({1, 2, 3}, &got) || got.pixels != std::vector<uint8_t>(100, 4)) return 2;
              return (*attached)->put({1, 2, 4}, tile_of(100, 5)) ? 0 : 3;
            }),
            0);
  EXPECT_TRUE(store->contains({1, 2, 4}));
  EXPECT_GT(store->segment_bytes(), store->arena_bytes());
  EXPECT_FALSE(SharedTileStore::attach("/proc/self/status").ok());  // not a tile cache
}

TEST(SharedTileStore, EvictsTheOldestAndKeepsEveryTileIntactAcrossTheArenasEnd) {
  auto store = store_of(1 << 20);  // one shard of 1 MiB
  std::mt19937 rng(5);
  std::vector<size_t> sizes;
  for (int i = 0; i < 400; ++i) {
    sizes.push_back(1000 + rng() % 60000);
    ASSERT_TRUE(store->put({3, 0, i}, tile_of(sizes.back(), static_cast<uint8_t>(i))));
  }
  const SharedTileStore::Stats s = store->stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(s.entries + s.evictions, 400u);
  EXPECT_LE(s.bytes, store->arena_bytes());
  EXPECT_TRUE(store->contains({3, 0, 399}));
  EXPECT_FALSE(store->contains({3, 0, 0}));
  size_t held = 0;
  for (int i = 0; i < 400; ++i) {
    CachedTile got;
    if (!store->get({3, 0, i}, &got)) continue;
    ++held;
    ASSERT_EQ(got.pixels, std::vector<uint8_t>(sizes[i], static_cast<uint8_t>(i))) << "tile " << i;
  }
  EXPECT_EQ(held, s.entries);
  EXPECT_FALSE(store->put({3, 0, 999}, tile_of(2 << 20, 1)));  // larger than a shard: refused
}

TEST(SharedTileStore, TilesOfMoreThanHalfTheArenaTakeItOneAtATime) {
  auto store = store_of(1 << 20);  // one shard of 1 MiB: the second such tile cannot follow the first
  const size_t big = 600 << 10;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store->put({6, 0, i}, tile_of(i % 2 ? 1000 : big, static_cast<uint8_t>(i + 1))));
    CachedTile got;
    ASSERT_TRUE(store->get({6, 0, i}, &got)) << i;
    EXPECT_EQ(got.pixels, std::vector<uint8_t>(i % 2 ? 1000 : big, static_cast<uint8_t>(i + 1))) << i;
  }
  EXPECT_LE(store->stats().bytes, store->arena_bytes());
  EXPECT_GT(store->stats().evictions, 0u);
}

TEST(SharedTileStore, AMissRecordedInOneProcessAdmitsTheNextInAnother) {
  auto store = store_of(1 << 20);
  ASSERT_EQ(in_child([&] { return store->missed_recently({4, 1, 7}) ? 1 : 0; }), 0);
  EXPECT_TRUE(store->missed_recently({4, 1, 7}));  // recorded by the child
  EXPECT_FALSE(store->missed_recently({4, 1, 7}));  // that record was consumed
  EXPECT_FALSE(store->missed_recently({4, 1, 8}));
}

TEST(SharedTileStore, AProcessKilledHoldingAShardLeavesItEmptiedNotCorrupt) {
  auto store = store_of(1 << 20);
  ASSERT_TRUE(store->put({5, 0, 1}, tile_of(1000, 1)));
  ASSERT_EQ(in_child([&] {
              store->lock_and_abandon_for_testing({5, 0, 1});
              return 0;  // exits holding the lock, as a worker killed mid-write does
            }),
            0);
  CachedTile got;
  EXPECT_FALSE(store->get({5, 0, 1}, &got));  // the shard was emptied on recovery
  EXPECT_EQ(store->stats().recovered, 1u);
  ASSERT_TRUE(store->put({5, 0, 2}, tile_of(1000, 2)));
  ASSERT_TRUE(store->get({5, 0, 2}, &got));
  EXPECT_EQ(got.pixels[0], 2);
}

TEST(SharedTileStore, NamedSegmentsAreSharedAndRemovedByTheLastRegisteredProcess) {
  const std::string name = "test-" + std::to_string(getpid());
  const std::string file = "/dev/shm/tilewise-cache-" + name;
  auto first = SharedTileStore::open_named(name, 1 << 20);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE((*first)->put({9, 0, 0}, tile_of(10, 3)));
  // Another process opens the same name and sees the tile; it registers, then unregisters on exit.
  ASSERT_EQ(in_child([&] {
              auto other = SharedTileStore::open_named(name, 8 << 20);  // the existing size is kept
              if (!other.ok() || (*other)->arena_bytes() != (*first)->arena_bytes()) return 1;
              return (*other)->contains({9, 0, 0}) ? 0 : 2;
            }),
            0);
  struct stat st {};
  EXPECT_EQ(stat(file.c_str(), &st), 0);  // this process is still registered
  first->reset();
  EXPECT_NE(stat(file.c_str(), &st), 0);
  EXPECT_FALSE(SharedTileStore::open_named("bad/name", 1 << 20).ok());
}

TEST(TileCacheShared, AdmissionReservationsAndStatsOverTheStore) {
  std::shared_ptr<SharedTileStore> store = store_of(2 << 20);
  TileCache cache(1 << 20);
  cache.share(store);
  EXPECT_EQ(cache.capacity(), store->arena_bytes());
  const TileKey key{11, 0, 5};
  TileCache::Lookup first = cache.acquire(key, false);
  EXPECT_FALSE(first.tile || first.seen_recently || first.reserved);
  // The second miss, in another process, is admitted there and its decode lands in the store.
  ASSERT_EQ(in_child([&] {
              TileCache child(0);
              child.share(store);
              TileCache::Lookup again = child.acquire(key, false);
              if (!again.reserved) return 1;
              auto t = std::make_shared<CachedTile>(tile_of(300, 6));
              child.put(key, t);
              return 0;
            }),
            0);
  TileCache::Lookup hit = cache.acquire(key, false);
  ASSERT_NE(hit.tile, nullptr);
  EXPECT_EQ(hit.tile->pixels, std::vector<uint8_t>(300, 6));
  EXPECT_TRUE(cache.contains(key));
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1u);
  cache.clear();
  EXPECT_FALSE(cache.contains(key));
  cache.set_capacity(1 << 20);  // per-process again
  EXPECT_EQ(cache.shared_store(), nullptr);
  EXPECT_EQ(cache.capacity(), 1u << 20);
}

}  // namespace
}  // namespace tilewise::cache
