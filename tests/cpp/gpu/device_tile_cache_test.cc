// The device tile cache's bookkeeping with host memory standing in for device memory.
#include "gpu/device_tile_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

namespace tilewise::gpu {
namespace {

struct Memory {
  std::set<void*> live;
  std::mutex mutex;
  bool fail = false;
};

DeviceTileCache make(size_t capacity, Memory& m) {
  return DeviceTileCache(
      capacity,
      [&m](size_t bytes) -> void* {
        std::lock_guard<std::mutex> lock(m.mutex);
        if (m.fail) return nullptr;
        void* p = std::malloc(bytes);
        m.live.insert(p);
        return p;
      },
      [&m](void* p) {
        std::lock_guard<std::mutex> lock(m.mutex);
        ASSERT_EQ(m.live.erase(p), 1u) << "freed twice or never allocated";
        std::free(p);
      });
}

cache::TileKey key(int64_t i) { return cache::TileKey{7, 0, i}; }

TEST(DeviceTileCache, MissReserveFillThenHit) {
  Memory m;
  {
    DeviceTileCache cache = make(1000, m);
    auto first = cache.acquire(key(1), 100);
    ASSERT_NE(first.entry, nullptr);
    EXPECT_FALSE(first.ready);
    first.pixels[0] = 42;
    // While it is being filled, another reader gets nothing (and decodes into its own scratch).
    EXPECT_EQ(cache.acquire(key(1), 100).entry, nullptr);
    cache.publish(first.entry, true);
    cache.release(first.entry);
    auto again = cache.acquire(key(1), 100);
    ASSERT_NE(again.entry, nullptr);
    EXPECT_TRUE(again.ready);
    EXPECT_EQ(again.pixels[0], 42);
    cache.release(again.entry);
    EXPECT_EQ(cache.stats().hits, 1u);
    EXPECT_EQ(cache.stats().entries, 1u);
    EXPECT_EQ(cache.stats().bytes, 100u);
  }
  EXPECT_TRUE(m.live.empty());
}

TEST(DeviceTileCache, FailedFillIsDroppedWhenReleased) {
  Memory m;
  DeviceTileCache cache = make(1000, m);
  auto r = cache.acquire(key(1), 100);
  cache.publish(r.entry, false);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(m.live.size(), 1u);  // the holder still has it
  cache.release(r.entry);
  EXPECT_TRUE(m.live.empty());
  auto again = cache.acquire(key(1), 100);  // a fresh reservation
  ASSERT_NE(again.entry, nullptr);
  EXPECT_FALSE(again.ready);
  cache.publish(again.entry, true);
  cache.release(again.entry);
}

TEST(DeviceTileCache, EvictsLeastRecentlyUsedButNeverPinnedOrUnfinished) {
  Memory m;
  DeviceTileCache cache = make(300, m);
  for (int i = 0; i < 3; ++i) {
    auto r = cache.acquire(key(i), 100);
    cache.publish(r.entry, true);
    cache.release(r.entry);
  }
  auto touched = cache.acquire(key(0), 100);  // 0 becomes most recent, and stays pinned
  ASSERT_TRUE(touched.ready);
  auto fourth = cache.acquire(key(3), 100);  // evicts 1, the least recently used unpinned
  ASSERT_NE(fourth.entry, nullptr);
  auto one = cache.acquire(key(1), 100);  // 1 was evicted: a new reservation (evicting 2)
  ASSERT_NE(one.entry, nullptr);
  EXPECT_FALSE(one.ready);
  // Now 0 (pinned), 3 and 1 (being filled) fill the cache: nothing can be evicted.
  EXPECT_EQ(cache.acquire(key(9), 100).entry, nullptr);
  EXPECT_EQ(cache.stats().bytes, 300u);
  for (auto* e : {touched.entry, fourth.entry, one.entry}) {
    if (e != touched.entry) cache.publish(e, true);
    cache.release(e);
  }
  EXPECT_EQ(m.live.size(), 3u);
}

TEST(DeviceTileCache, DisabledOversizedAndAllocationFailure) {
  Memory m;
  DeviceTileCache off = make(0, m);
  EXPECT_EQ(off.acquire(key(1), 10).entry, nullptr);
  DeviceTileCache small = make(50, m);
  EXPECT_EQ(small.acquire(key(1), 100).entry, nullptr);
  m.fail = true;
  EXPECT_EQ(small.acquire(key(2), 10).entry, nullptr);
  EXPECT_EQ(small.stats().entries, 0u);
}

TEST(DeviceTileCache, ConcurrentReadersKeepCountsConsistent) {
  Memory m;
  {
    DeviceTileCache cache = make(20 * 64, m);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&cache, t] {
        for (int i = 0; i < 2000; ++i) {
          auto r = cache.acquire(key((i * 7 + t) % 40), 64);
          if (!r.entry) continue;
          if (!r.ready) r.pixels[0] = static_cast<uint8_t>((i * 7 + t) % 40);
          if (!r.ready) cache.publish(r.entry, (i % 5) != 0);
          else EXPECT_EQ(r.pixels[0], static_cast<uint8_t>((i * 7 + t) % 40));
          cache.release(r.entry);
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_LE(cache.stats().bytes, 20u * 64);
    EXPECT_EQ(cache.stats().bytes, cache.stats().entries * 64);
    EXPECT_EQ(m.live.size(), cache.stats().entries);
  }
  EXPECT_TRUE(m.live.empty());
}

}  // namespace
}  // namespace tilewise::gpu
