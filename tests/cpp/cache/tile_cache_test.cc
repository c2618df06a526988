#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cache/tile_cache.h"

namespace tilewise::cache {
namespace {

std::shared_ptr<const CachedTile> tile(size_t bytes, uint8_t value = 0) {
  auto t = std::make_shared<CachedTile>();
  t->width = 1;
  t->height = 1;
  t->pixels.assign(bytes, value);
  return t;
}

TEST(TileCache, EvictsLeastRecentlyUsedWithinTheByteBudget) {
  TileCache cache(3 * (1000 + 96));
  cache.put({1, 0, 1}, tile(1000, 1));
  cache.put({1, 0, 2}, tile(1000, 2));
  cache.put({1, 0, 3}, tile(1000, 3));
  ASSERT_NE(cache.get({1, 0, 1}), nullptr);  // 1 becomes most recent; 2 is now the oldest
  cache.put({1, 0, 4}, tile(1000, 4));
  EXPECT_EQ(cache.get({1, 0, 2}), nullptr);
  EXPECT_NE(cache.get({1, 0, 1}), nullptr);
  EXPECT_NE(cache.get({1, 0, 3}), nullptr);
  EXPECT_EQ(cache.get({1, 0, 4})->pixels[0], 4);
  CacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_LE(s.bytes, s.capacity);
}

TEST(TileCache, ZeroCapacityDisablesAndShrinkingEvicts) {
  TileCache cache(1 << 20);
  for (int i = 0; i < 10; ++i) cache.put({1, 0, i}, tile(10000));
  EXPECT_EQ(cache.stats().entries, 10u);
  cache.set_capacity(3 * 10096);
  EXPECT_EQ(cache.stats().entries, 3u);
  cache.set_capacity(0);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.stats().entries, 0u);
  cache.put({1, 0, 99}, tile(10));
  EXPECT_EQ(cache.get({1, 0, 99}), nullptr);
  EXPECT_EQ(cache.stats().misses, 0u);  // a disabled cache counts nothing
}

TEST(TileCache, KeysSeparateSlidesAndLevelsAndEraseSlideDropsOnlyThatSlide) {
  TileCache cache(1 << 20);
  cache.put({1, 0, 5}, tile(10, 1));
  cache.put({2, 0, 5}, tile(10, 2));
  cache.put({1, 1, 5}, tile(10, 3));
  EXPECT_EQ(cache.get({2, 0, 5})->pixels[0], 2);
  EXPECT_EQ(cache.get({1, 1, 5})->pixels[0], 3);
  cache.erase_slide(1);
  EXPECT_EQ(cache.get({1, 0, 5}), nullptr);
  EXPECT_EQ(cache.get({1, 1, 5}), nullptr);
  EXPECT_NE(cache.get({2, 0, 5}), nullptr);
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST(TileCache, AdmitsTilesOnTheirSecondRecentMiss) {
  TileCache cache(1 << 20, /*ghost_keys=*/3);
  EXPECT_FALSE(cache.lookup({1, 0, 1}).seen_recently);
  EXPECT_TRUE(cache.lookup({1, 0, 1}).seen_recently);
  EXPECT_FALSE(cache.lookup({1, 0, 1}).seen_recently);  // consumed: the caller was told to admit it
  // The ghost list is bounded: a key pushed out by newer misses counts as new again.
  cache.lookup({1, 0, 2});
  cache.lookup({1, 0, 3});
  cache.lookup({1, 0, 4});
  cache.lookup({1, 0, 5});
  EXPECT_FALSE(cache.lookup({1, 0, 2}).seen_recently);
  EXPECT_TRUE(cache.lookup({1, 0, 5}).seen_recently);
  cache.put({1, 0, 5}, tile(10, 5));
  auto hit = cache.lookup({1, 0, 5});
  ASSERT_NE(hit.tile, nullptr);
  EXPECT_FALSE(hit.seen_recently);
}

TEST(TileCache, EvictedTilesStayValidForHolders) {
  TileCache cache(1100);
  cache.put({1, 0, 1}, tile(1000, 9));
  auto held = cache.get({1, 0, 1});
  cache.put({1, 0, 2}, tile(1000, 8));  // evicts tile 1
  EXPECT_EQ(cache.get({1, 0, 1}), nullptr);
  EXPECT_EQ(held->pixels[999], 9);
}

TEST(TileCache, AnAdmittedMissIsReservedAndConcurrentReadersWaitForIt) {
  TileCache cache(1 << 20);
  const TileKey key{7, 0, 3};
  // Not admitted (first miss, no first-use admission): no reservation.
  EXPECT_FALSE(cache.acquire(key, false).reserved);
  // Admitted on first use: reserved for exactly one of many concurrent readers; the others get its tile.
  const TileKey hot{7, 0, 4};
  std::atomic<int> reserved{0}, got{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      TileCache::Lookup l = cache.acquire(hot, true);
      if (l.reserved) {
        ++reserved;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive while it decodes
        cache.put(hot, tile(100, 9));
      } else if (l.tile && l.tile->pixels[0] == 9) {
        ++got;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(reserved.load(), 1);
  EXPECT_EQ(got.load(), 7);
  // An abandoned reservation releases its waiters with a plain miss.
  const TileKey bad{7, 0, 5};
  ASSERT_TRUE(cache.acquire(bad, true).reserved);
  std::thread waiter([&] {
    TileCache::Lookup l = cache.acquire(bad, true);
    EXPECT_EQ(l.tile, nullptr);
    EXPECT_FALSE(l.reserved);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cache.abandon(bad);
  waiter.join();
  // A disabled cache reserves nothing.
  TileCache off(0);
  EXPECT_FALSE(off.acquire(hot, true).reserved);
}

TEST(TileCache, ConcurrentGetsAndPutsStayConsistent) {
  TileCache cache(200 * 1096);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        const int64_t k = (i * 7 + t) % 500;
        auto got = cache.get({3, 0, k});
        if (got && got->pixels[0] != static_cast<uint8_t>(k)) ++wrong;
        if (!got) cache.put({3, 0, k}, tile(1000, static_cast<uint8_t>(k)));
        if (i % 1000 == 0) cache.stats();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  CacheStats s = cache.stats();
  EXPECT_LE(s.bytes, s.capacity);
  EXPECT_EQ(s.hits + s.misses, 8u * 5000u);
}

}  // namespace
}  // namespace tilewise::cache
