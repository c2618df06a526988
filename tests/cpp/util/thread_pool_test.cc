#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>

#include "util/checked_math.h"
#include "util/thread_name.h"
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

TEST(ThreadPool, WorkersRunAtTheirNiceValueAndCallersKeepTheirs) {
  auto nice_of_this_thread = [] { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); };
  const int mine = nice_of_this_thread();
  if (mine + 5 > 19) GTEST_SKIP() << "this thread is already at nice " << mine;
  ThreadPool pool(1, 5);
  std::promise<int> seen;
  pool.submit([&] { seen.set_value(nice_of_this_thread()); });
  EXPECT_EQ(seen.get_future().get(), mine + 5);
  EXPECT_EQ(nice_of_this_thread(), mine);
}

std::string name_of_this_thread() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

TEST(ThreadPool, WorkersCarryThePoolsName) {
  ThreadPool pool(1, 0, "tw-test-pool");
  std::promise<std::string> seen;
  pool.submit([&] { seen.set_value(name_of_this_thread()); });
  EXPECT_EQ(seen.get_future().get(), "tw-test-pool");
}

TEST(ThreadName, AScopedNameIsInheritedByNewThreadsAndRestored) {
  ScopedThreadName outer("tw-before");  // the test's own thread gets its name back at the end
  std::string child;
  {
    ScopedThreadName scoped("tw-a-very-long-name");  // cut to 15 characters
    EXPECT_EQ(name_of_this_thread(), "tw-a-very-long-");
    std::thread([&] { child = name_of_this_thread(); }).join();
  }
  EXPECT_EQ(child, "tw-a-very-long-");
  EXPECT_EQ(name_of_this_thread(), "tw-before");
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

#include "util/buffer_pool.h"

namespace tilewise::internal {
namespace {

TEST(BufferPool, ReusesReleasedLargeBuffersWithinItsBudget) {
  BufferPool pool(16 << 20);
  void* a = pool.acquire(5 << 20);
  ASSERT_NE(a, nullptr);
  static_cast<uint8_t*>(a)[(5 << 20) - 1] = 1;  // the whole request is usable
  pool.release(a, 5 << 20);
  EXPECT_EQ(pool.cached_bytes(), size_t{6} << 20);  // rounded up to 2 MiB
  void* b = pool.acquire(4 << 20);                  // fits in the cached 6 MiB buffer
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  void* c = pool.acquire(1 << 20);  // a cached buffer more than twice the request is not used
  pool.release(b, 4 << 20);         // returns with its real (6 MiB) size
  EXPECT_EQ(pool.cached_bytes(), size_t{6} << 20);
  pool.release(c, 1 << 20);
  EXPECT_EQ(pool.cached_bytes(), size_t{8} << 20);
  void* big = pool.acquire(12 << 20);
  pool.release(big, 12 << 20);  // 20 MiB cached > 16 MiB budget: the largest is dropped
  EXPECT_EQ(pool.cached_bytes(), size_t{8} << 20);
  pool.set_capacity(0);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  void* small = pool.acquire(1000);  // small buffers are plain heap allocations
  ASSERT_NE(small, nullptr);
  pool.release(small, 1000);
  EXPECT_EQ(pool.cached_bytes(), 0u);
}

}  // namespace
}  // namespace tilewise::internal
