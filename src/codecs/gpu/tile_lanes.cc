#include "codecs/gpu/tile_lanes.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "util/fork_safe.h"

namespace tilewise::codecs::gpu {

namespace {

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::clamp(std::atoi(v), lo, hi);
}

struct Group {
  std::condition_variable done;
  size_t remaining;
};

// One caller's jobs in the queue; jobs [front, back) are not claimed yet.
struct Entry {
  LaneJob* jobs;
  size_t front;
  size_t back;
  Group* group;
};

class Lanes final : public TileLanes {
 public:
  Lanes(std::vector<std::unique_ptr<GpuDecoder>> decoders, const LaneOptions& options)
      : options_(options), decoders_(std::move(decoders)) {
    for (auto& d : decoders_) threads_.emplace_back([this, decoder = d.get()] { run(decoder); });
  }
  ~Lanes() override { stop(); }

  // Stops the lanes (finishing their current batch) and fails what is still queued.
  void stop() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      for (Entry* e : queue_) {
        for (size_t i = e->front; i < e->back; ++i) {
          e->jobs[i].status = internal_error("gpu: the decode lanes were shut down");
          if (--e->group->remaining == 0) e->group->done.notify_one();
        }
        e->front = e->back;
      }
      queue_.clear();
    }
    work_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    decoders_.clear();
  }

  void decode(std::span<LaneJob> jobs, const CpuAssist& cpu_assist) override {
    if (jobs.empty()) return;
    Group group;
    group.remaining = jobs.size();
    Entry entry{jobs.data(), 0, jobs.size(), &group};
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) {
      for (LaneJob& j : jobs) j.status = internal_error("gpu: the decode lanes were shut down");
      return;
    }
    queue_.push_back(&entry);
    work_.notify_one();
    if (cpu_assist && options_.cpu_assist) {
      while (entry.front < entry.back && backlog_before_last(entry) >= options_.assist_backlog) {
        const size_t i = --entry.back;
        if (entry.front == entry.back) queue_.erase(std::find(queue_.begin(), queue_.end(), &entry));
        lock.unlock();
        Status s = cpu_assist(i);
        lock.lock();
        jobs[i].status = std::move(s);
        jobs[i].on_gpu = false;
        --group.remaining;
        ++stats_.cpu_tiles;
      }
    }
    group.done.wait(lock, [&] { return group.remaining == 0; });
  }

  LaneStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    LaneStats s = stats_;
    s.lanes = static_cast<int>(threads_.size());
    for (const Entry* e : queue_) s.queued += e->back - e->front;
    return s;
  }

 private:
  // Unclaimed jobs queued ahead of the last unclaimed job of `entry` (mutex held).
  size_t backlog_before_last(const Entry& entry) const {
    size_t ahead = entry.back - entry.front - 1;
    for (const Entry* e : queue_) {
      if (e == &entry) break;
      ahead += e->back - e->front;
    }
    return ahead;
  }

  void run(GpuDecoder* decoder) {
    std::vector<LaneJob*> batch;
    std::vector<Group*> groups;
    std::vector<DeviceTileRequest> requests;
    std::vector<Status> statuses;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch.clear();
      groups.clear();
      while (batch.size() < kMaxBatch && !queue_.empty()) {
        Entry* e = queue_.front();
        while (batch.size() < kMaxBatch && e->front < e->back) {
          batch.push_back(&e->jobs[e->front++]);
          groups.push_back(e->group);
        }
        if (e->front == e->back) queue_.pop_front();
      }
      if (!queue_.empty()) work_.notify_one();  // another lane takes the rest
      lock.unlock();
      requests.clear();
      for (LaneJob* j : batch) requests.push_back(j->request);
      statuses.assign(batch.size(), Status());
      decoder->decode_batch(requests, statuses);
      lock.lock();
      for (size_t k = 0; k < batch.size(); ++k) {
        batch[k]->status = std::move(statuses[k]);
        batch[k]->on_gpu = true;
        // Last use of the caller's memory: it may return as soon as the mutex is released.
        if (--groups[k]->remaining == 0) groups[k]->done.notify_one();
      }
      stats_.gpu_tiles += batch.size();
      ++stats_.batches;
    }
  }

  const LaneOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<Entry*> queue_;
  bool stopping_ = false;
  LaneStats stats_;
  std::vector<std::unique_ptr<GpuDecoder>> decoders_;
  std::vector<std::thread> threads_;
};

struct Registry {
  std::mutex mutex;
  std::map<int, std::unique_ptr<TileLanes>> lanes;
};

Registry& registry() {
  static auto* r = new internal::ForkSafe<Registry>([] {
    auto* reg = new Registry();
    at_gpu_shutdown([] {
      Registry& g = registry();
      std::lock_guard<std::mutex> lock(g.mutex);
      for (auto& [device, lanes] : g.lanes) lanes->stop();
    });
    return reg;
  });
  return r->get();
}

}  // namespace

std::unique_ptr<TileLanes> TileLanes::make(std::vector<std::unique_ptr<GpuDecoder>> decoders,
                                           const LaneOptions& options) {
  return std::make_unique<Lanes>(std::move(decoders), options);
}

Result<TileLanes*> TileLanes::get(int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.lanes.find(device);
  if (it != r.lanes.end()) return static_cast<TileLanes*>(it->second.get());
  TW_RETURN_IF_ERROR(device_status(device));
  const int count = env_int("TILEWISE_GPU_LANES", 2, 1, 8);
  std::vector<std::unique_ptr<GpuDecoder>> decoders;
  for (int i = 0; i < count; ++i) {
    TW_ASSIGN_OR_RETURN(auto decoder, GpuDecoder::create(device));
    decoders.push_back(std::move(decoder));
  }
  LaneOptions options;
  const char* assist = std::getenv("TILEWISE_GPU_CPU_ASSIST");
  options.cpu_assist = !(assist && assist[0] == '0');
  options.assist_backlog = static_cast<size_t>(
      env_int("TILEWISE_GPU_ASSIST_BACKLOG", count * static_cast<int>(kMaxBatch) / 2, 0, 1 << 20));
  auto lanes = make(std::move(decoders), options);
  TileLanes* out = lanes.get();
  r.lanes.emplace(device, std::move(lanes));
  return out;
}

LaneStats lane_stats(int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.lanes.find(device);
  return it == r.lanes.end() ? LaneStats{} : it->second->stats();
}

}  // namespace tilewise::codecs::gpu
