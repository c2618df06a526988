#include "util/thread_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "util/fork_safe.h"
#include "util/settings.h"
#include "util/thread_name.h"

namespace tilewise::internal {

namespace {

struct Job {
  const std::function<void(int64_t)>* fn;
  int64_t n;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mutex;
  std::condition_variable finished;

  // Claims and runs indices until none remain.
  void run() {
    int64_t ran = 0;
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      (*fn)(i);
      ++ran;
    }
    if (ran > 0 && done.fetch_add(ran, std::memory_order_acq_rel) + ran == n) {
      std::lock_guard<std::mutex> lock(mutex);
      finished.notify_all();
    }
  }
};

}  // namespace

ThreadPool::ThreadPool(int threads, int nice, const char* name) : initial_size_(threads), nice_(nice), name_(name) {
  grow(threads);
}

int ThreadPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(threads_.size());
}

void ThreadPool::grow(int threads) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (static_cast<int>(threads_.size()) < threads) threads_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker_loop() {
  set_thread_name(name_);
  if (nice_ > 0) {
    // Linux applies nice values per thread; raising one's own needs no privilege. Failure is harmless.
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    setpriority(PRIO_PROCESS, tid, getpriority(PRIO_PROCESS, tid) + nice_);
  }
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int max_helpers) {
  if (n <= 0) return;
  if (n == 1) {
    fn(0);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;  // valid until this call returns, and helpers only call it while indices remain
  job->n = n;
  int64_t helpers = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    helpers = std::min<int64_t>({n - 1, static_cast<int64_t>(threads_.size()), int64_t{max_helpers}});
    for (int64_t i = 0; i < helpers; ++i) queue_.push_back([job] { job->run(); });
  }
  if (helpers == 0) {
    job->run();  // no pool threads: everything on the caller
    return;
  }
  // One wake-up per helper: notify_all would wake every idle thread of the pool for a few helpers, a
  // herd that serialised on the queue mutex when many threads read small regions at once.
  for (int64_t i = 0; i < helpers; ++i) wake_.notify_one();
  job->run();
  std::unique_lock<std::mutex> lock(job->mutex);
  job->finished.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == n; });
}

namespace {

std::atomic<int> g_requested_threads{0};

int default_threads() {
  int requested = g_requested_threads.load(std::memory_order_relaxed);
  if (requested > 0) return requested;
  if (settings().num_threads > 0) return settings().num_threads;
  // hardware_concurrency() asks the kernel (it reads /sys or calls sched_getaffinity): once is enough.
  static const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return hw;
}

// The pool is replaced when its size changes; the replaced pool is kept alive (and its threads joined)
// only by in-flight callers through the shared_ptr.
struct PoolHolder {
  std::mutex mutex;
  std::shared_ptr<ThreadPool> pool;
  std::atomic<ThreadPool*> current{nullptr};  // pool.get(), read without the mutex
};

ForkSafe<PoolHolder>& holder() {
  static auto* h = new ForkSafe<PoolHolder>([] { return new PoolHolder(); });
  return *h;
}

}  // namespace

ThreadPool& global_pool() {
  PoolHolder& h = holder().get();
  // Pool threads are one fewer than the target: the calling thread always works too.
  const int wanted = default_threads() - 1;
  // Every region read asks for the pool: the common case takes no lock.
  if (ThreadPool* p = h.current.load(std::memory_order_acquire); p && p->initial_size() == wanted) return *p;
  std::lock_guard<std::mutex> lock(h.mutex);
  if (!h.pool || h.pool->initial_size() != wanted) {
    // An old pool is never destroyed while a caller may still use it: it is intentionally leaked when
    // replaced (resizing is rare and happens at configuration time).
    if (h.pool) new std::shared_ptr<ThreadPool>(h.pool);
    h.pool = std::make_shared<ThreadPool>(wanted, 0, "tw-decode");
    h.current.store(h.pool.get(), std::memory_order_release);
  }
  return *h.pool;
}

void set_global_pool_threads(int threads) { g_requested_threads.store(threads < 0 ? 0 : threads); }
int global_pool_threads() { return default_threads(); }

ThreadPool& loader_pool() {
  // Lives for the process (its threads run tasks that may outlive any loader); leaked at exit.
  static auto* pool = new ForkSafe<ThreadPool>([] { return new ThreadPool(0, 0, "tw-loader"); });
  return pool->get();
}

ThreadPool& helper_pool() {
  static auto* pool = new ForkSafe<ThreadPool>([] { return new ThreadPool(0, 0, "tw-helper"); });
  return pool->get();
}

}  // namespace tilewise::internal
