#include "util/worker_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace tilewise::internal {
namespace {

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

WorkerProcessPool make_pool(size_t max_idle = 4, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  return WorkerProcessPool("test", [] { return Result<std::string>(std::string(TILEWISE_TEST_WORKER)); }, max_idle,
                           timeout);
}

std::string call(WorkerProcessPool& pool, const std::string& what, const std::string& body, Status* status = nullptr) {
  std::vector<uint8_t> out(body.size());
  Result<size_t> r = pool.call(bytes(what), bytes(body), out);
  if (status) *status = r.ok() ? Status::ok_status() : r.status();
  if (!r.ok()) return "";
  return std::string(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(*r));
}

TEST(WorkerProcessPool, AnswersAndReusesOneHelper) {
  auto pool = make_pool();
  EXPECT_EQ(call(pool, "echo", "tile bytes"), "tile bytes");
  EXPECT_EQ(call(pool, "reverse", "abc"), "cba");
  EXPECT_EQ(call(pool, "echo", ""), "");
  EXPECT_EQ(pool.spawned(), 1u);
}

TEST(WorkerProcessPool, TheHelpersOwnErrorsKeepItInService) {
  auto pool = make_pool();
  Status s;
  call(pool, "fail", "this stream", &s);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.message(), "cannot: this stream");
  EXPECT_EQ(call(pool, "echo", "next"), "next");
  EXPECT_EQ(pool.spawned(), 1u);
}

TEST(WorkerProcessPool, AHelperThatDiesIsACorruptInputAndIsReplaced) {
  auto pool = make_pool();
  for (const char* what : {"segv", "abort", "exit"}) {
    Status s;
    call(pool, what, "poison", &s);
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << what;
    EXPECT_NE(s.message().find("test: the decoder process died on this stream"), std::string::npos) << s.message();
    EXPECT_EQ(call(pool, "echo", "after"), "after") << what;
  }
  Status s;
  call(pool, "segv", "", &s);
  // SIGSEGV itself, or SIGABRT where AddressSanitizer's handler takes it first; ThreadSanitizer's handler
  // reports the signal and exits with its own status, 66.
  EXPECT_TRUE(s.message().find("(signal 11: ") != std::string::npos ||
              s.message().find("(signal 6: ") != std::string::npos ||
              (kThreadSanitizer && s.message().find("(exit status 66)") != std::string::npos))
      << s.message();
  call(pool, "exit", "", &s);
  EXPECT_NE(s.message().find("exit status 7"), std::string::npos) << s.message();
  EXPECT_EQ(pool.spawned(), 5u);  // one, and one more after each of the four deaths that had a call after it
}

TEST(WorkerProcessPool, AHelperThatHangsIsStoppedAtTheTimeout) {
  auto pool = make_pool(4, std::chrono::milliseconds(300));
  Status s;
  const auto start = std::chrono::steady_clock::now();
  call(pool, "hang", "", &s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("did not answer in time"), std::string::npos) << s.message();
  EXPECT_EQ(call(pool, "echo", "after"), "after");
}

TEST(WorkerProcessPool, ARepliesLargerThanTheOutputAreRefused) {
  auto pool = make_pool();
  Status s;
  call(pool, "flood", "12345", &s);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("malformed reply"), std::string::npos) << s.message();
}

// This process's children, from /proc (every thread's list: a helper's parent is the thread that spawned it).
std::vector<pid_t> children() {
  std::vector<pid_t> pids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "children");
    pid_t pid;
    while (in >> pid) pids.push_back(pid);
  }
  return pids;
}

bool ended(pid_t pid) {  // a zombie: dead, not yet reaped
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

TEST(WorkerProcessPool, AnIdleHelperKilledFromOutsideIsReplacedUnnoticed) {
  auto pool = make_pool();
  const std::vector<pid_t> before = children();
  ASSERT_EQ(call(pool, "echo", "first"), "first");
  std::vector<pid_t> helpers;
  for (pid_t pid : children()) {
    if (std::find(before.begin(), before.end(), pid) == before.end()) helpers.push_back(pid);
  }
  ASSERT_EQ(helpers.size(), 1u);
  ASSERT_EQ(::kill(helpers[0], SIGKILL), 0);
  for (int i = 0; i < 500 && !ended(helpers[0]); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(ended(helpers[0]));
  EXPECT_EQ(call(pool, "echo", "again"), "again");
  EXPECT_EQ(pool.spawned(), 2u);
}

TEST(WorkerProcessPool, ConcurrentCallersEachGetTheirOwnAnswer) {
  auto pool = make_pool(8);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string body = std::to_string(t) + ":" + std::string(static_cast<size_t>(i * 997 % 70000), 'x');
        if (i % 17 == 5) {
          Status s;
          call(pool, "abort", body, &s);
          if (s.code() != StatusCode::kCorrupt) ++wrong;
          continue;
        }
        if (call(pool, "echo", body) != body) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(pool.spawned(), 8u + 8u * 3u);  // at most one per thread plus one per crash
}

TEST(WorkerProcessPool, WorksInAProcessWithoutStandardStreams) {
  // With fds 0-2 closed, the socket pair takes the lowest numbers: the helper's end must still reach fd 3.
  int saved[3];
  for (int fd = 0; fd < 3; ++fd) saved[fd] = ::dup(fd);
  for (int fd = 0; fd < 3; ++fd) ::close(fd);
  std::string got;
  {
    auto pool = make_pool();
    got = call(pool, "echo", "no stdin");
  }
  for (int fd = 0; fd < 3; ++fd) {
    ::dup2(saved[fd], fd);
    ::close(saved[fd]);
  }
  EXPECT_EQ(got, "no stdin");
}

TEST(WorkerProcessPool, AMissingHelperIsAClearError) {
  WorkerProcessPool pool("jpeg-xr", [] { return Result<std::string>(unsupported("the helper was not found")); }, 1,
                         std::chrono::seconds(1));
  std::vector<uint8_t> out(4);
  Result<size_t> r = pool.call(bytes("echo"), bytes("abcd"), out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  WorkerProcessPool bad("jpeg-xr", [] { return Result<std::string>(std::string("/nonexistent/helper")); }, 1,
                        std::chrono::seconds(1));
  r = bad.call(bytes("echo"), bytes("abcd"), out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/helper"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tilewise::internal
