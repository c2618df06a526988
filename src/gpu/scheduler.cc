#include "gpu/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "util/settings.h"

namespace tilewise::gpu {

namespace {

// Exponentially weighted moving average; 0 means "not measured yet".
void update(std::atomic<double>& average, double sample) {
  const double a = average.load(std::memory_order_relaxed);
  average.store(a == 0 ? sample : 0.9 * a + 0.1 * sample, std::memory_order_relaxed);
}

class SteadySeconds final : public Clock {
 public:
  double seconds() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

CodecClass codec_class(const codecs::TileDesc& desc) {
  return desc.compression == codecs::Compression::kJpeg ? CodecClass::kJpeg : CodecClass::kOther;
}

CodecClass codec_class(const LevelInfo& level) {
  return level.compression == codecs::compression_name(codecs::Compression::kJpeg) ? CodecClass::kJpeg
                                                                                     : CodecClass::kOther;
}

const Clock& steady_seconds() {
  static const SteadySeconds clock;
  return clock;
}

Scheduler::Scheduler(const Clock& clock, internal::GpuPolicy policy) : clock_(clock), policy_(policy) {}

size_t Scheduler::tiles_per_call(CodecClass c, double batch_seconds, size_t max_tiles) const {
  const double per_tile = gpu_seconds_per_tile(c);
  if (per_tile == 0) return std::min<size_t>(8, max_tiles);
  return static_cast<size_t>(std::clamp(batch_seconds / per_tile, 1.0, static_cast<double>(max_tiles)));
}

bool Scheduler::cpu_is_sooner(CodecClass c, size_t in_flight, size_t ahead, size_t lanes, int64_t pixels,
                              size_t unmeasured_backlog) const {
  const double gpu = gpu_seconds_per_tile(c);
  if (gpu == 0) return ahead >= unmeasured_backlog;  // the lanes not measured yet
  // The tile waits for the tiles the lanes are decoding now and for those queued ahead of it, then its own.
  const double gpu_wait =
      static_cast<double>(in_flight + ahead + 1) * gpu / static_cast<double>(std::max<size_t>(1, lanes));
  return gpu_wait > cpu_seconds_per_pixel(c) * static_cast<double>(pixels);
}

bool Scheduler::cpu_outpaces_gpu(CodecClass c, int64_t tile_pixels, int cpu_threads, size_t lanes) const {
  const double gpu = gpu_seconds_per_tile(c);
  if (gpu == 0 || lanes == 0) return false;
  const double cpu = cpu_seconds_per_pixel(c) * static_cast<double>(tile_pixels) / std::max(1, cpu_threads);
  return 2 * cpu < gpu / static_cast<double>(lanes);
}

void Scheduler::record_gpu_call(CodecClass c, double seconds_per_tile) { update(gpu_tile_[index(c)], seconds_per_tile); }

void Scheduler::record_cpu_decode(CodecClass c, double seconds, int64_t pixels) {
  if (pixels > 0) update(cpu_pixel_[index(c)], seconds / static_cast<double>(pixels));
}

double SideRace::Rates::best() const {
  double best = 0;
  for (const auto& r : recent) best = std::max(best, r.load(std::memory_order_relaxed));
  return best;
}

ReadSide SideRace::route(uint64_t remeasure_every) {
  const uint64_t n = routed_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t first = first_reads_.load(std::memory_order_relaxed);
  bool to_lanes;
  if (lanes_.reads.load(std::memory_order_relaxed) < first) {
    to_lanes = true;
  } else if (cpu_.reads.load(std::memory_order_relaxed) < first) {
    to_lanes = false;
  } else {
    to_lanes = (lanes_.best() >= cpu_.best()) != (n % remeasure_every == remeasure_every - 1);
  }
  return to_lanes ? ReadSide::kLanes : ReadSide::kCpu;
}

void SideRace::record(ReadSide side, double amount, double seconds) {
  if (amount <= 0 || seconds <= 0) return;
  Rates& s = side == ReadSide::kLanes ? lanes_ : cpu_;
  const uint64_t n = s.reads.fetch_add(1, std::memory_order_relaxed);
  if (n > 0) s.recent[n % kRecent].store(amount / seconds, std::memory_order_relaxed);
}

void SideRace::reset(int first_reads) {
  for (Rates* side : {&lanes_, &cpu_}) {
    for (auto& r : side->recent) r.store(0, std::memory_order_relaxed);
    side->reads.store(0, std::memory_order_relaxed);
  }
  routed_.store(0, std::memory_order_relaxed);
  first_reads_.store(static_cast<uint64_t>(std::max(0, first_reads)), std::memory_order_relaxed);
}

Scheduler::Side Scheduler::forced_or(SideRace& race) {
  if (policy_ == internal::GpuPolicy::kGpu) return Side::kLanes;
  if (policy_ == internal::GpuPolicy::kCpu) return Side::kCpu;
  return race.route(kRemeasureEvery);
}

Scheduler::Side Scheduler::route_large_region() { return forced_or(large_); }

void Scheduler::record_large_read(Side side, double pixels, double seconds) { large_.record(side, pixels, seconds); }

void Scheduler::reset_large_regions(int first_reads) { large_.reset(first_reads); }

SideRace& Scheduler::plane_race(CodecClass c, int64_t tile_pixels) {
  const size_t size = tile_pixels <= 128 * 128 ? 0 : tile_pixels <= 256 * 256 ? 1 : tile_pixels <= 512 * 512 ? 2 : 3;
  return planes_[index(c)][size];
}

Scheduler::Side Scheduler::route_plane_read(CodecClass c, int64_t tile_pixels) {
  return forced_or(plane_race(c, tile_pixels));
}

void Scheduler::record_plane_read(CodecClass c, int64_t tile_pixels, Side side, double samples, double seconds) {
  plane_race(c, tile_pixels).record(side, samples, seconds);
}

LoaderPlan Scheduler::loader_plan(CodecClass c, int workers, int helpers, int gpu_run) const {
  LoaderPlan plan;
  // JPEG's GPU path keeps ~6 of the host's cores busy itself (the lanes' nvImageCodec calls), so half the
  // workers help; nvJPEG2000 needs about one core and decodes slower than the cores, so all but 1/8 help.
  const int by_codec = c == CodecClass::kJpeg ? workers / 2 : workers - workers / 8;
  const int by_policy = policy_ == internal::GpuPolicy::kGpu   ? 0
                        : policy_ == internal::GpuPolicy::kCpu ? workers - 1
                                                               : by_codec;
  plan.helpers = helpers >= 0 ? helpers : by_policy;
  plan.helpers = std::clamp(plan.helpers, 0, std::max(0, workers - 1));
  // JPEG: the GPU's first run takes a learnt share of the batch, so that its tiles are deduplicated over many
  // regions and its calls are full. Slower GPU codecs: runs of 8 regions, each claimed when the last is read,
  // so that the helpers take the rest.
  plan.gpu_run = gpu_run >= 0 ? gpu_run : (c == CodecClass::kJpeg ? 0 : 8);
  plan.helper_share = helper_share_[index(c)].load(std::memory_order_relaxed);
  return plan;
}

double Scheduler::record_loader_batch(CodecClass c, double share, bool gpu_needed_second_run) {
  // The helpers fell behind (the GPU needed a second run): give them less; they kept up: more. The share
  // settles where both sides finish a batch together.
  constexpr double kStep = 1.0 / 32;
  const double next = std::clamp(share + (gpu_needed_second_run ? -kStep : kStep), 0.0, 0.9);
  helper_share_[index(c)].store(next, std::memory_order_relaxed);
  return next;
}

void Scheduler::count_loader_gpu_read(int64_t regions) {
  loader_gpu_regions_.fetch_add(static_cast<uint64_t>(regions), std::memory_order_relaxed);
  loader_gpu_reads_.fetch_add(1, std::memory_order_relaxed);
}

void Scheduler::count_loader_cpu_regions(int64_t regions) {
  loader_cpu_regions_.fetch_add(static_cast<uint64_t>(regions), std::memory_order_relaxed);
}

Scheduler::LoaderCounts Scheduler::loader_counts() const {
  return LoaderCounts{loader_gpu_regions_.load(std::memory_order_relaxed),
                      loader_gpu_reads_.load(std::memory_order_relaxed),
                      loader_cpu_regions_.load(std::memory_order_relaxed)};
}

Scheduler& device_scheduler(int device) {
  static std::mutex mutex;
  static auto* schedulers = new std::map<int, std::unique_ptr<Scheduler>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Scheduler>& s = (*schedulers)[device];
  if (!s) s = std::make_unique<Scheduler>(steady_seconds(), internal::settings().gpu_policy);
  return *s;
}

}  // namespace tilewise::gpu
