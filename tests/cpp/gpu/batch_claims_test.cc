#include "gpu/batch_claims.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace tilewise::gpu {
namespace {

using Claim = std::pair<int64_t, int64_t>;

TEST(BatchClaims, TheGpuTakesItsShareThenEverythingTheHelpersLeft) {
  BatchClaims c(64, 0.5);
  EXPECT_EQ(c.take_front(), Claim(0, 32));
  EXPECT_EQ(c.gpu_runs(), 1);
  EXPECT_EQ(c.take_back(), 63);
  EXPECT_EQ(c.take_back(), 62);
  // The helpers fell behind: the GPU's second run takes all 30 left.
  EXPECT_EQ(c.take_front(), Claim(32, 30));
  EXPECT_EQ(c.gpu_runs(), 2);
  EXPECT_TRUE(c.exhausted());
  EXPECT_EQ(c.take_front().second, 0);
  EXPECT_EQ(c.take_back(), -1);
  EXPECT_EQ(c.gpu_runs(), 2);
  EXPECT_EQ(c.cpu_first(), 62);
  EXPECT_DOUBLE_EQ(c.cpu_share(), 2.0 / 64);
}

TEST(BatchClaims, InRunsTheGpuAndTheHelpersMeetWhereTheirSpeedsPutThem) {
  BatchClaims c = BatchClaims::in_runs(10, 4);
  EXPECT_TRUE(c.fixed_runs());
  EXPECT_EQ(c.take_front(), Claim(0, 4));
  EXPECT_EQ(c.take_back(), 9);
  EXPECT_EQ(c.take_front(), Claim(4, 4));  // a second run of the same size, not everything left
  EXPECT_EQ(c.take_back(), 8);
  EXPECT_TRUE(c.exhausted());
  EXPECT_EQ(c.take_front().second, 0);
  EXPECT_EQ(c.gpu_runs(), 2);
  EXPECT_EQ(c.cpu_first(), 8);
  // The last run takes only what is left; a run of 0 is taken as 1.
  BatchClaims d = BatchClaims::in_runs(5, 3);
  EXPECT_EQ(d.take_front(), Claim(0, 3));
  EXPECT_EQ(d.take_front(), Claim(3, 2));
  EXPECT_EQ(BatchClaims::in_runs(5, 0).take_front(), Claim(0, 1));
  EXPECT_FALSE(BatchClaims(5, 0.5).fixed_runs());
}

TEST(BatchClaims, HelpersThatKeepUpLeaveTheGpuOneRun) {
  BatchClaims c(10, 0.6);
  EXPECT_EQ(c.take_front(), Claim(0, 6));
  for (int64_t want = 9; want >= 6; --want) EXPECT_EQ(c.take_back(), want);
  EXPECT_EQ(c.take_front().second, 0);
  EXPECT_EQ(c.gpu_runs(), 1);
  EXPECT_EQ(c.cpu_first(), 6);
}

TEST(BatchClaims, HelpersAloneTakeEveryItemFromTheBack) {
  BatchClaims c(5, 0.5);
  for (int64_t want = 4; want >= 0; --want) EXPECT_EQ(c.take_back(), want);
  EXPECT_EQ(c.take_back(), -1);
  EXPECT_EQ(c.take_front().second, 0);
  EXPECT_EQ(c.gpu_runs(), 0);
  EXPECT_EQ(c.cpu_first(), 0);
  EXPECT_DOUBLE_EQ(c.cpu_share(), 1.0);
}

TEST(BatchClaims, AWholeShareLeavesTheHelpersNothing) {
  BatchClaims c(10, 1.0);
  EXPECT_EQ(c.take_front(), Claim(0, 10));
  EXPECT_EQ(c.take_back(), -1);
  EXPECT_EQ(c.cpu_first(), 10);
  // The first run is at least one item, at most the batch, for any share.
  EXPECT_EQ(BatchClaims(10, 0.0).take_front().second, 1);
  EXPECT_EQ(BatchClaims(10, 7.0).take_front().second, 10);
  EXPECT_EQ(BatchClaims(10, -1.0).take_front().second, 1);
  BatchClaims empty(0, 0.5);
  EXPECT_TRUE(empty.exhausted());
  EXPECT_EQ(empty.take_front().second, 0);
  EXPECT_EQ(empty.take_back(), -1);
  EXPECT_DOUBLE_EQ(empty.cpu_share(), 0.0);
}

// One GPU taker and several helpers at random speeds, under one mutex as the loader holds it: every item is
// taken exactly once, the GPU's items are the front and the helpers' the back.
TEST(BatchClaims, ConcurrentTakersClaimEachItemOnce) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const int64_t n = 1 + seed * 7 % 97;
    BatchClaims c(n, 0.1 * (seed % 11));
    std::mutex mutex;
    std::vector<int> owner(static_cast<size_t>(n), 0);  // 1: GPU, 2: a helper
    auto pause = [](std::mt19937& rng) { std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200)); };
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
      std::mt19937 rng(seed);
      for (;;) {
        std::pair<int64_t, int64_t> run;
        {
          std::lock_guard<std::mutex> lock(mutex);
          run = c.take_front();
        }
        if (run.second == 0) return;
        for (int64_t i = run.first; i < run.first + run.second; ++i) ++owner[static_cast<size_t>(i)];
        pause(rng);
      }
    });
    for (int h = 0; h < 4; ++h) {
      threads.emplace_back([&, h] {
        std::mt19937 rng(seed * 10 + static_cast<uint32_t>(h));
        for (;;) {
          int64_t i;
          {
            std::lock_guard<std::mutex> lock(mutex);
            i = c.take_back();
          }
          if (i < 0) return;
          owner[static_cast<size_t>(i)] += 2;
          pause(rng);
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(owner[static_cast<size_t>(i)], i < c.cpu_first() ? 1 : 2) << "seed " << seed << " item " << i;
    }
  }
}

}  // namespace
}  // namespace tilewise::gpu
