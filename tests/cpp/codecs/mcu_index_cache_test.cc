// McuIndexCache: the byte budget (least recently used out), entries of a dead unit table never matched
// by a new one at the same address, a closed table's entries erased, capacity 0 turning it off, and
// concurrent readers (run under TSan).
#include "codecs/jpeg/mcu_index_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tilewise::codecs {
namespace {

constexpr size_t kPoints = 33;  // a 4,096-pixel unit of 16-pixel MCUs

TEST(McuIndexCache, KeepsEntriesWithinItsBudgetLeastRecentlyUsedOut) {
  const uint64_t one = McuIndexCache::entry_bytes(kPoints);
  McuIndexCache cache(one * 16 * 4);  // 4 entries per shard
  auto table = std::make_shared<int>(0);
  auto first = cache.entry(table, 0, kPoints);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(cache.entry(table, 0, kPoints), first);  // found again
  EXPECT_EQ(first->index.points.capacity(), kPoints);
  for (int64_t unit = 1; unit < 1000; ++unit) ASSERT_NE(cache.entry(table, unit, kPoints), nullptr);
  EXPECT_LE(cache.size_bytes(), cache.capacity());
  EXPECT_LE(cache.entries(), 64u);
  EXPECT_GT(cache.entries(), 16u);
  EXPECT_EQ(cache.size_bytes(), cache.entries() * one);
  EXPECT_NE(cache.entry(table, 0, kPoints), first);  // evicted long ago: a new entry
  cache.set_capacity(0);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.entry(table, 1, kPoints), nullptr);  // off
}

TEST(McuIndexCache, ADeadTablesEntriesAreNotAnotherTablesAtTheSameAddress) {
  McuIndexCache cache(1 << 20);
  static int storage = 0;  // both tables at this address, each with its own owner (as a reused allocation)
  std::shared_ptr<McuIndexCache::Entry> old;
  {
    std::shared_ptr<const void> table(&storage, [](const void*) {});
    old = cache.entry(table, 5, kPoints);
    old->index.points.push_back(codecs::McuCheckpoint{123, {1, 2, 3, 0}});
    EXPECT_EQ(cache.entry(table, 5, kPoints), old);
  }
  std::shared_ptr<const void> later(&storage, [](const void*) {});
  auto fresh = cache.entry(later, 5, kPoints);
  EXPECT_NE(fresh, old);
  EXPECT_EQ(fresh->index.points.size(), 1u);  // only the unit's start
  EXPECT_EQ(cache.entries(), 1u);
  // A live table at the same address with another owner is not matched either.
  std::shared_ptr<const void> other(&storage, [](const void*) {});
  EXPECT_NE(cache.entry(other, 5, kPoints), fresh);
}

TEST(McuIndexCache, ErasingATableDropsItsEntriesAndKeepsTheOthers) {
  McuIndexCache cache(1 << 22);
  auto closing = std::make_shared<int>(0), open = std::make_shared<int>(0);
  for (int64_t unit = 0; unit < 200; ++unit) {
    ASSERT_NE(cache.entry(closing, unit, kPoints), nullptr);
    ASSERT_NE(cache.entry(open, unit, kPoints), nullptr);
  }
  auto kept = cache.entry(open, 7, kPoints);
  ASSERT_EQ(cache.entries(), 400u);
  cache.erase_units(closing.get());
  EXPECT_EQ(cache.entries(), 200u);
  EXPECT_EQ(cache.size_bytes(), 200 * McuIndexCache::entry_bytes(kPoints));
  EXPECT_EQ(cache.entry(open, 7, kPoints), kept);  // the other table's entries stay
  cache.erase_units(closing.get());                 // nothing left of it: no change
  EXPECT_EQ(cache.entries(), 200u);
  for (int64_t unit = 0; unit < 50; ++unit) ASSERT_NE(cache.entry(closing, unit, kPoints), nullptr);  // reusable
  EXPECT_EQ(cache.entries(), 250u);
}

TEST(McuIndexCache, ConcurrentReadersOfSharedAndEvictedEntries) {
  McuIndexCache cache(McuIndexCache::entry_bytes(kPoints) * 16 * 8);
  auto table = std::make_shared<int>(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4000; ++i) {
        const int64_t unit = (i * 7 + t) % 300;
        auto e = cache.entry(table, unit, kPoints);
        std::lock_guard<std::mutex> lock(e->mutex);
        if (e->index.points.size() < kPoints) e->index.points.push_back(codecs::McuCheckpoint{uint32_t(unit), {}});
        ASSERT_EQ(e->index.points.back().bit, e->index.points.size() > 1 ? uint32_t(unit) : 0u);
        if (i % 500 == 0 && t == 0) cache.set_capacity(cache.capacity());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.size_bytes(), cache.capacity());
}

}  // namespace
}  // namespace tilewise::codecs
