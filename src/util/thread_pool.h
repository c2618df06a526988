// A persistent worker pool with caller-helping parallel_for.
//
// Synchronisation model: one mutex-protected FIFO of helper tasks. parallel_for(n, fn) publishes a Job
// (an atomic "next index" counter) and enqueues up to min(n - 1, threads) helpers; the calling thread and
// the helpers all claim indices from the same counter until none remain, so the caller never blocks on a
// busy pool and nested or concurrent parallel_for calls from many user threads cannot deadlock. fn must
// not throw. Jobs are reference-counted: a helper that starts after the job finished finds no index and
// returns at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tilewise::internal {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }

  // Calls fn(i) for every i in [0, n), on the calling thread and up to size() pool threads, and returns
  // when all calls have returned.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

  // Runs task on a pool thread (fire and forget; used by the loader).
  void submit(std::function<void()> task);

 private:
  void worker_loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// The process-wide pool (re-created lazily in a forked child). Size: set_worker_threads() or
// TILEWISE_NUM_THREADS or one per hardware thread.
ThreadPool& global_pool();
void set_global_pool_threads(int threads);
int global_pool_threads();

}  // namespace tilewise::internal
