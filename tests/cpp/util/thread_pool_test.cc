#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "util/checked_math.h"
#include "util/thread_pool.h"

namespace tilewise::internal {
namespace {

TEST(ThreadPool, RunsEveryIndexExactlyOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(1000, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, ConcurrentAndNestedCallersDoNotDeadlock) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&] {
      for (int r = 0; r < 20; ++r) {
        pool.parallel_for(10, [&](int64_t) { pool.parallel_for(5, [&](int64_t) { total++; }); });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 8 * 20 * 10 * 5);
}

TEST(ThreadPool, ZeroThreadsRunsInline) {
  ThreadPool pool(0);
  const auto caller = std::this_thread::get_id();
  int n = 0;
  pool.parallel_for(5, [&](int64_t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++n;
  });
  EXPECT_EQ(n, 5);
}

TEST(CheckedMath, DetectsOverflowAndRanges) {
  EXPECT_FALSE(checked_mul(UINT64_MAX / 2, 3).has_value());
  EXPECT_EQ(*checked_mul(1000, 1000), 1000000u);
  EXPECT_FALSE(checked_add(UINT64_MAX, 1).has_value());
  EXPECT_TRUE(range_inside(10, 5, 15));
  EXPECT_FALSE(range_inside(10, 6, 15));
  EXPECT_FALSE(range_inside(UINT64_MAX, 2, 15));
  EXPECT_EQ(floor_div(-1, 256), -1);
  EXPECT_EQ(floor_div(-256, 256), -1);
  EXPECT_EQ(floor_div(255, 256), 0);
}

}  // namespace
}  // namespace tilewise::internal
