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
  // `nice`: added to each worker thread's nice value when it starts (Linux: per thread), so that the pool's
  // work yields its cores to the process's other threads (the hybrid loader's CPU helpers). `name`: its
  // threads' name (util/thread_name.h).
  explicit ThreadPool(int threads, int nice = 0, const char* name = "tw-pool");
  // The size the pool was made with (it never shrinks; grow() may add threads).
  int initial_size() const { return initial_size_; }
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // Adds threads until the pool has at least `threads` (a pool never shrinks).
  void grow(int threads);

  // Calls fn(i) for every i in [0, n), on the calling thread and up to min(size(), max_helpers) pool
  // threads, and returns when all calls have returned.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int max_helpers = 1 << 30);

  // Runs task on a pool thread (fire and forget; the batch loader's region reads).
  void submit(std::function<void()> task);

 private:
  void worker_loop();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  const int initial_size_;
  const int nice_;
  const char* name_;  // a string literal
};

// The process-wide pools, all of this class and all re-created lazily in a forked child:
// - global_pool(): the decode pool that region reads spread their tiles over (parallel_for). Size:
//   set_worker_threads() or settings().num_threads or one per hardware thread, the caller included.
// - loader_pool(): the threads that run batch loaders' region reads (submit), grown to the largest
//   num_workers asked for; each read it runs spreads its tiles over global_pool() like any other caller.
ThreadPool& global_pool();
void set_global_pool_threads(int threads);
int global_pool_threads();
ThreadPool& loader_pool();
// - helper_pool(): the hybrid device loaders' CPU helpers (submit), apart from the loader pool so that a
//   loader's GPU tasks never wait behind its helpers' reads.
ThreadPool& helper_pool();

}  // namespace tilewise::internal
