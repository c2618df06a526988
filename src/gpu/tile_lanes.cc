#include "gpu/tile_lanes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "util/settings.h"
#include "util/thread_name.h"

namespace tilewise::gpu {

namespace {

CodecClass class_of(const codecs::DecodeRequest& r) { return codec_class(*r.desc); }

int64_t job_pixels(const LaneJob& j) {
  return j.cpu_pixels > 0 ? j.cpu_pixels : int64_t{j.request.desc->width} * j.request.desc->height;
}

Status shut_down() { return internal_error("gpu: the decode lanes were shut down"); }

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
  size_t per_call;  // tiles per call for this entry's jobs (0: by the measured speed)
};

class Lanes final : public TileLanes {
 public:
  Lanes(std::vector<std::unique_ptr<codecs::Decoder>> decoders, const LaneOptions& options, Scheduler* scheduler)
      : options_(options),
        own_scheduler_(scheduler ? nullptr : std::make_unique<Scheduler>()),
        scheduler_(scheduler ? *scheduler : *own_scheduler_),
        decoders_(std::move(decoders)) {
    traces_.resize(decoders_.size());
    lane_calls_.resize(decoders_.size());
    for (size_t i = 0; i < decoders_.size(); ++i) {
      threads_.emplace_back([this, i] { run(i, decoders_[i].get(), traces_[i]); });
    }
  }
  ~Lanes() override { stop(); }

  // Stops the lanes (finishing their current batch) and fails what is still queued.
  void stop() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      for (Entry* e : queue_) {
        for (size_t i = e->front; i < e->back; ++i) {
          e->jobs[i].status = shut_down();
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
    write_trace();
  }

  void decode(std::span<LaneJob> jobs, const CpuAssist& cpu_assist, size_t per_call) override {
    if (jobs.empty()) return;
    Group group;
    group.remaining = jobs.size();
    Entry entry{jobs.data(), 0, jobs.size(), &group, std::min(per_call, options_.max_batch)};
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) {
      for (LaneJob& j : jobs) j.status = shut_down();
      return;
    }
    queue_.push_back(&entry);
    if (entry.per_call > 0) {
      work_.notify_all();  // one call per lane: every idle lane takes its share at once
    } else {
      work_.notify_one();
    }
    if (cpu_assist && options_.cpu_assist) {
      while (entry.front < entry.back && cpu_is_sooner(entry)) {
        const size_t i = --entry.back;
        if (entry.front == entry.back) queue_.erase(std::find(queue_.begin(), queue_.end(), &entry));
        lock.unlock();
        const double started = scheduler_.now();
        Status s;
        {
          StageClock clock(options_.host_cost, HostStage::kAssist);
          s = cpu_assist(i);
        }
        const double took = scheduler_.now() - started;
        lock.lock();
        scheduler_.record_cpu_decode(class_of(jobs[i].request), took, job_pixels(jobs[i]));
        jobs[i].status = std::move(s);
        jobs[i].on_gpu = false;
        --group.remaining;
        ++stats_.cpu_tiles;
      }
    }
    StageClock waiting(options_.host_cost, HostStage::kWait);
    group.done.wait(lock, [&] { return group.remaining == 0; });
  }

  int lane_count() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(threads_.size());
  }

  LaneStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    LaneStats s = stats_;
    s.lanes = static_cast<int>(threads_.size());
    for (const Entry* e : queue_) s.queued += e->back - e->front;
    return s;
  }

  bool cpu_outpaces_gpu(const codecs::TileDesc& desc, int cpu_threads) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return scheduler_.cpu_outpaces_gpu(codec_class(desc), int64_t{desc.width} * desc.height, cpu_threads,
                                       threads_.size());
  }

 private:
  // Tiles per nvImageCodec call: about options_.batch_seconds of work at the measured speed, at most max_batch. Slow
  // codecs (nvJPEG2000 takes milliseconds per tile) get small batches, so that a caller's tile is not held
  // behind a long batch while its thread could decode it (mutex held).
  size_t batch_cap(const codecs::DecodeRequest& first) const {
    return scheduler_.tiles_per_call(class_of(first), options_.batch_seconds, options_.max_batch);
  }

  // Whether the caller should decode the last unclaimed job of `entry` itself (mutex held).
  bool cpu_is_sooner(const Entry& entry) const {
    const LaneJob& job = entry.jobs[entry.back - 1];
    return scheduler_.cpu_is_sooner(class_of(job.request), in_flight_, backlog_before_last(entry), threads_.size(),
                                    job_pixels(job), options_.assist_backlog);
  }

  // Whether `lane` should leave the sized call at the front of the queue to a faster idle lane (mutex held).
  // A lane can be about twice as slow as the others on every call for the life of the process
  // (bench/RESULTS.md, "a slow lane"); a large region's reads, dealt one call per lane in one round, end
  // with their slowest call, so such a lane leaves them to the others while one of those is idle. It still
  // takes the loader's calls.
  bool leave_to_others(size_t lane) const {
    if (queue_.front()->per_call == 0 || !slow_lane(lane)) return false;
    for (size_t other = 0; other < lane_calls_.size(); ++other) {
      if (other != lane && lane_calls_[other].idle && !slow_lane(other)) return true;
    }
    return false;
  }

  // A lane whose recent sized calls took kSlowLane x the other lanes' per tile (medians of each lane's last
  // kLaneSamples); every kReprobeCalls sized calls it is measured again (mutex held).
  bool slow_lane(size_t lane) const {
    const LaneCalls& me = lane_calls_[lane];
    if (me.count < kMinSamples || sized_calls_ - me.last_call > kReprobeCalls) return false;
    std::vector<double> others;
    for (size_t other = 0; other < lane_calls_.size(); ++other) {
      if (other != lane && lane_calls_[other].count >= kMinSamples) others.push_back(lane_calls_[other].median());
    }
    if (others.empty()) return false;
    std::nth_element(others.begin(), others.begin() + others.size() / 2, others.end());
    return me.median() > kSlowLane * others[others.size() / 2];
  }

  // Unclaimed jobs queued ahead of the last unclaimed job of `entry` (mutex held).
  size_t backlog_before_last(const Entry& entry) const {
    size_t ahead = entry.back - entry.front - 1;
    for (const Entry* e : queue_) {
      if (e == &entry) break;
      ahead += e->back - e->front;
    }
    return ahead;
  }

  // One nvImageCodec call of a lane, for options_.trace_path.
  struct CallTrace {
    int64_t claimed_ns;
    int64_t returned_ns;
    uint32_t tiles;
    uint32_t per_call;
  };

  static int64_t monotonic_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Appends the lanes' calls to the trace file (after the lanes are joined; once).
  void write_trace() {
    if (options_.trace_path.empty()) return;
    std::FILE* f = std::fopen(options_.trace_path.c_str(), "a");
    if (!f) return;
    for (size_t lane = 0; lane < traces_.size(); ++lane) {
      for (const CallTrace& c : traces_[lane]) {
        std::fprintf(f, "%zu,%lld,%lld,%u,%u\n", lane, static_cast<long long>(c.claimed_ns),
                     static_cast<long long>(c.returned_ns), c.tiles, c.per_call);
      }
    }
    std::fclose(f);
    traces_.clear();
  }

  void run(size_t lane, codecs::Decoder* decoder, std::vector<CallTrace>& trace) {
    internal::set_thread_name("tw-lane");
    if (options_.warm_up) {
      // Jobs queued meanwhile wait for it (or are assisted); a warming lane is not idle for leave_to_others.
      {
        std::lock_guard<std::mutex> lock(mutex_);
        lane_calls_[lane].idle = false;
      }
      decoder->warm_up();
      std::lock_guard<std::mutex> lock(mutex_);
      lane_calls_[lane].idle = true;
    }
    std::vector<LaneJob*> batch;
    std::vector<Group*> groups;
    std::vector<codecs::DecodeRequest> requests;
    std::vector<Status> statuses;
    const bool tracing = !options_.trace_path.empty();
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !leave_to_others(lane)); });
      if (stopping_) return;
      lane_calls_[lane].idle = false;
      batch.clear();
      groups.clear();
      const Entry* first = queue_.front();
      // A call sized by its caller (per_call) measures a different regime - per tile, one large call costs a
      // fraction of a small one's - so it leaves the speed estimate that sizes the others' calls alone.
      const bool sized = first->per_call > 0;
      const size_t cap = sized ? first->per_call : batch_cap(first->jobs[first->front].request);
      while (batch.size() < cap && !queue_.empty()) {
        Entry* e = queue_.front();
        while (batch.size() < cap && e->front < e->back) {
          batch.push_back(&e->jobs[e->front++]);
          groups.push_back(e->group);
        }
        if (e->front == e->back) queue_.pop_front();
      }
      if (!queue_.empty()) {  // another lane takes the rest; a sized call only one of the faster lanes may take
        if (queue_.front()->per_call > 0) {
          work_.notify_all();
        } else {
          work_.notify_one();
        }
      }
      in_flight_ += batch.size();
      lock.unlock();
      const int64_t claimed = tracing ? monotonic_ns() : 0;
      requests.clear();
      for (LaneJob* j : batch) requests.push_back(j->request);
      statuses.assign(batch.size(), Status());
      const double started = scheduler_.now();
      {
        StageClock clock(options_.host_cost, HostStage::kCall);
        decoder->decode_batch(requests, statuses);
      }
      const double per_tile = (scheduler_.now() - started) / static_cast<double>(batch.size());
      if (tracing && trace.size() < kMaxTraced) {
        trace.push_back(CallTrace{claimed, monotonic_ns(), static_cast<uint32_t>(batch.size()),
                                  static_cast<uint32_t>(sized ? cap : 0)});
      }
      lock.lock();
      in_flight_ -= batch.size();
      bool seen[2] = {false, false};
      for (const codecs::DecodeRequest& r : requests) seen[static_cast<size_t>(class_of(r))] = true;
      for (const CodecClass c : {CodecClass::kJpeg, CodecClass::kOther}) {
        if (seen[static_cast<size_t>(c)] && !sized) scheduler_.record_gpu_call(c, per_tile);
      }
      if (sized) lane_calls_[lane].add(per_tile, ++sized_calls_);
      lane_calls_[lane].idle = true;  // before the callers return: their next read sees this lane idle
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
  size_t in_flight_ = 0;  // tiles the lanes have claimed and not finished
  LaneStats stats_;
  const std::unique_ptr<Scheduler> own_scheduler_;  // when none was given (tests)
  Scheduler& scheduler_;  // the tile speeds (updated under mutex_) and the decisions made from them
  static constexpr size_t kLaneSamples = 5;
  static constexpr size_t kMinSamples = 3;
  static constexpr uint64_t kReprobeCalls = 64;
  static constexpr double kSlowLane = 1.4;
  // Each lane's recent sized calls (seconds per tile), and whether it waits for work now.
  struct LaneCalls {
    double samples[kLaneSamples] = {};
    size_t count = 0;       // samples taken (the last kLaneSamples kept)
    uint64_t last_call = 0;  // sized_calls_ at its last sample
    bool idle = true;
    void add(double per_tile, uint64_t call) {
      samples[count++ % kLaneSamples] = per_tile;
      last_call = call;
    }
    double median() const {
      const size_t n = std::min(count, kLaneSamples);
      double kept[kLaneSamples];
      std::copy(samples, samples + n, kept);
      std::nth_element(kept, kept + n / 2, kept + n);
      return kept[n / 2];
    }
  };
  std::vector<LaneCalls> lane_calls_;
  uint64_t sized_calls_ = 0;  // sized calls made by all lanes
  std::vector<std::unique_ptr<codecs::Decoder>> decoders_;
  std::vector<std::vector<CallTrace>> traces_;  // per lane, written by its thread only (options_.trace_path)
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<TileLanes> TileLanes::make(std::vector<std::unique_ptr<codecs::Decoder>> decoders,
                                           const LaneOptions& options, Scheduler* scheduler) {
  return std::make_unique<Lanes>(std::move(decoders), options, scheduler);
}

LaneOptions TileLanes::options_from_settings(int lanes) {
  const internal::Settings& settings = internal::settings();
  LaneOptions options;
  options.cpu_assist = settings.gpu_cpu_assist;
  options.batch_seconds = settings.gpu_batch_ms / 1000.0;
  options.max_batch = static_cast<size_t>(settings.gpu_batch_tiles);
  options.assist_backlog = static_cast<size_t>(lanes) * options.max_batch * 4;
  options.trace_path = settings.gpu_trace;
  return options;
}

}  // namespace tilewise::gpu
