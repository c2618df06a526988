// The device scheduler's decisions from its speed model, without a GPU: call sizes, the callers' assist,
// the cores against the lanes, the routing of large regions (first reads, best recent rate, re-measuring,
// a fixed share), the device loader's plan by codec and its learnt share; a fake clock drives the lanes'
// measurements through the scheduler.
#include "gpu/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <memory>
#include <vector>

#include "gpu/tile_lanes.h"

namespace tilewise::gpu {
namespace {

class FakeClock final : public Clock {
 public:
  double seconds() const override { return now.load(); }
  std::atomic<double> now{100};
};

constexpr CodecClass kJpeg = CodecClass::kJpeg;
constexpr CodecClass kJ2k = CodecClass::kOther;

TEST(Scheduler, CallsHoldABatchsWorthOfTilesAtTheMeasuredSpeedOfTheirCodec) {
  Scheduler s;
  EXPECT_EQ(s.tiles_per_call(kJpeg, 0.003, 64), 8u) << "unmeasured";
  s.record_gpu_call(kJpeg, 0.0001);  // 0.1 ms per tile
  EXPECT_EQ(s.tiles_per_call(kJpeg, 0.003, 64), 30u);
  EXPECT_EQ(s.tiles_per_call(kJpeg, 1.0, 64), 64u) << "at most the lanes' largest call";
  s.record_gpu_call(kJ2k, 0.004);  // nvJPEG2000: milliseconds per tile
  EXPECT_EQ(s.tiles_per_call(kJ2k, 0.003, 64), 1u) << "at least one tile";
  EXPECT_EQ(s.tiles_per_call(kJpeg, 0.003, 64), 30u) << "each codec class has its own speed";
  // A moving average: one slow call moves the estimate a tenth of the way.
  s.record_gpu_call(kJpeg, 0.0011);
  EXPECT_NEAR(s.gpu_seconds_per_tile(kJpeg), 0.0002, 1e-12);
}

TEST(Scheduler, ACallerDecodesItsLastTileWhenTheLanesWouldReachItLater) {
  Scheduler s;
  // Unmeasured lanes: assist only behind a long backlog.
  EXPECT_FALSE(s.cpu_is_sooner(kJpeg, 0, 100, 4, 65536, 1024));
  EXPECT_TRUE(s.cpu_is_sooner(kJpeg, 0, 1024, 4, 65536, 1024));
  s.record_gpu_call(kJpeg, 0.001);       // 1 ms per tile per lane
  for (int i = 0; i < 60; ++i) s.record_cpu_decode(kJpeg, 0.002, 65536 * 10);  // ~3 ns per pixel: ~0.2 ms a tile
  // 4 lanes: a tile 3 away waits (0 + 3 + 1) * 1 ms / 4 = 1 ms > the CPU's 0.2 ms.
  EXPECT_TRUE(s.cpu_is_sooner(kJpeg, 0, 3, 4, 65536, 1024));
  // The first in line of 64 lanes waits 1 / 64 ms: the lanes are sooner.
  EXPECT_FALSE(s.cpu_is_sooner(kJpeg, 0, 0, 64, 65536, 1024));
  // Tiles in flight count as waiting too.
  EXPECT_TRUE(s.cpu_is_sooner(kJpeg, 63, 0, 64, 65536, 1024));
}

TEST(Scheduler, TheCoresOutpaceTheLanesOnlyOnceMeasuredAndAtLeastTwiceAsFast) {
  Scheduler s;
  EXPECT_FALSE(s.cpu_outpaces_gpu(kJ2k, 57600, 16, 6)) << "unmeasured";
  s.record_gpu_call(kJ2k, 0.004);             // 4 ms per 240^2 tile on one lane; 6 lanes: 0.67 ms per tile
  for (int i = 0; i < 60; ++i) s.record_cpu_decode(kJ2k, 0.0035, 57600);  // 3.5 ms a tile; 16 cores: 0.22 ms
  EXPECT_TRUE(s.cpu_outpaces_gpu(kJ2k, 57600, 16, 6));
  EXPECT_FALSE(s.cpu_outpaces_gpu(kJ2k, 57600, 4, 6)) << "4 cores: 0.88 ms, slower than the lanes";
  EXPECT_FALSE(s.cpu_outpaces_gpu(kJ2k, 57600, 16, 0));
}

TEST(Scheduler, LargeRegionsGoToTheFasterSideAfterFirstReadsOfEachAndTheSlowerIsReMeasured) {
  Scheduler s;
  s.reset_large_regions(3);
  std::vector<Scheduler::Side> sides;
  auto route = [&](double lanes_seconds, double cpu_seconds) {
    const Scheduler::Side side = s.route_large_region();
    sides.push_back(side);
    s.record_large_read(side, 1e6, side == Scheduler::Side::kLanes ? lanes_seconds : cpu_seconds);
  };
  for (int i = 0; i < 6; ++i) route(0.001, 0.002);  // lanes twice as fast
  const std::vector<Scheduler::Side> first(sides.begin(), sides.begin() + 6);
  using S = Scheduler::Side;
  EXPECT_EQ(first, (std::vector<S>{S::kLanes, S::kLanes, S::kLanes, S::kCpu, S::kCpu, S::kCpu}));
  for (int i = 0; i < 32; ++i) route(0.001, 0.002);
  int cpu = 0;
  for (size_t i = 6; i < sides.size(); ++i) cpu += sides[i] == S::kCpu;
  EXPECT_EQ(cpu, 2) << "the slower side every 16th large read";
  // The best of the recent reads counts: a slow lanes read does not send the next regions to the CPU.
  route(0.01, 0.002);
  EXPECT_EQ(s.route_large_region(), S::kLanes);
  // Faster CPU reads win once they beat the lanes' best.
  for (int i = 0; i < 40; ++i) route(0.001, 0.0002);
  int late_cpu = 0;
  for (size_t i = sides.size() - 10; i < sides.size(); ++i) late_cpu += sides[i] == S::kCpu;
  EXPECT_GE(late_cpu, 9);
}

TEST(Scheduler, PlaneReadsRaceTheSidesPerCodecClassAndTileSizeApartFromLargeRegions) {
  Scheduler s;
  using S = Scheduler::Side;
  auto race = [&](CodecClass c, int64_t tile_pixels, int reads, double lanes_seconds, double cpu_seconds) {
    std::vector<S> sides;
    for (int i = 0; i < reads; ++i) {
      const S side = s.route_plane_read(c, tile_pixels);
      sides.push_back(side);
      s.record_plane_read(c, tile_pixels, side, 1e6, side == S::kLanes ? lanes_seconds : cpu_seconds);
    }
    return sides;
  };
  // JPEG 2000 channels of 128-pixel tiles: the cores read them 6x faster; JPEG: the lanes 2x.
  const std::vector<S> j2k = race(kJ2k, 128 * 128, 22, 0.006, 0.001);
  EXPECT_EQ(std::vector<S>(j2k.begin(), j2k.begin() + 6),
            (std::vector<S>{S::kLanes, S::kLanes, S::kLanes, S::kCpu, S::kCpu, S::kCpu}));
  EXPECT_EQ(std::count(j2k.begin() + 6, j2k.end(), S::kLanes), 1) << "the slower side every 16th read";
  const std::vector<S> jpeg = race(kJpeg, 128 * 128, 22, 0.001, 0.002);
  EXPECT_EQ(std::count(jpeg.begin() + 6, jpeg.end(), S::kCpu), 1);
  // JPEG 2000 of 512-pixel tiles races apart: there the lanes are 2x faster.
  const std::vector<S> large_tiles = race(kJ2k, 512 * 512, 22, 0.001, 0.002);
  EXPECT_EQ(std::count(large_tiles.begin() + 6, large_tiles.end(), S::kCpu), 1);
  EXPECT_EQ(s.route_large_region(), S::kLanes) << "large regions measure their own sides first";
  Scheduler forced(steady_seconds(), internal::GpuPolicy::kGpu);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(forced.route_plane_read(kJ2k, 128 * 128), S::kLanes);
    forced.record_plane_read(kJ2k, 128 * 128, S::kLanes, 1e6, 1.0);
  }
}

TEST(Scheduler, AForcedPolicyMakesTheLargeRegionAndLoaderDecisionsOneSides) {
  using internal::GpuPolicy;
  Scheduler gpu(steady_seconds(), GpuPolicy::kGpu), cpu(steady_seconds(), GpuPolicy::kCpu);
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(gpu.route_large_region(), Scheduler::Side::kLanes);
    gpu.record_large_read(Scheduler::Side::kLanes, 1e6, 1.0);  // however slow
    ASSERT_EQ(cpu.route_large_region(), Scheduler::Side::kCpu);
    cpu.record_large_read(Scheduler::Side::kCpu, 1e6, 1.0);
  }
  EXPECT_EQ(gpu.loader_plan(kJpeg, 16).helpers, 0) << "the GPU alone";
  EXPECT_EQ(gpu.loader_plan(kJ2k, 16).helpers, 0);
  EXPECT_EQ(cpu.loader_plan(kJpeg, 16).helpers, 15) << "every worker but one on the CPU";
  EXPECT_EQ(gpu.loader_plan(kJpeg, 16, 3).helpers, 3) << "a loader's explicit choice still holds";
}

TEST(Scheduler, DeviceLoadersHelpByCodecAndLearnTheHelpersShare) {
  Scheduler s;
  const LoaderPlan jpeg = s.loader_plan(kJpeg, 16);
  EXPECT_EQ(jpeg.helpers, 8) << "JPEG's GPU path needs cores itself: half the workers help";
  EXPECT_EQ(jpeg.gpu_run, 0) << "a learnt share";
  EXPECT_DOUBLE_EQ(jpeg.helper_share, 0.25);
  const LoaderPlan j2k = s.loader_plan(kJ2k, 16);
  EXPECT_EQ(j2k.helpers, 14);
  EXPECT_EQ(j2k.gpu_run, 8);
  EXPECT_EQ(s.loader_plan(kJpeg, 16, 3, 4).helpers, 3) << "the loader's own choice";
  EXPECT_EQ(s.loader_plan(kJpeg, 16, 3, 4).gpu_run, 4);
  EXPECT_EQ(s.loader_plan(kJpeg, 1).helpers, 0) << "at least one worker for the GPU";
  EXPECT_EQ(s.loader_plan(kJpeg, 4, 9).helpers, 3);
  // The share moves by 1/32 per batch, down when the GPU needed a second run, and is kept per codec.
  double share = jpeg.helper_share;
  share = s.record_loader_batch(kJpeg, share, false);
  EXPECT_DOUBLE_EQ(share, 0.25 + 1.0 / 32);
  share = s.record_loader_batch(kJpeg, share, true);
  share = s.record_loader_batch(kJpeg, share, true);
  EXPECT_DOUBLE_EQ(share, 0.25 - 1.0 / 32);
  EXPECT_DOUBLE_EQ(s.loader_plan(kJpeg, 16).helper_share, share) << "a later loader starts from it";
  EXPECT_DOUBLE_EQ(s.loader_plan(kJ2k, 16).helper_share, 0.25);
  for (int i = 0; i < 100; ++i) share = s.record_loader_batch(kJpeg, share, false);
  EXPECT_DOUBLE_EQ(share, 0.9) << "the GPU keeps a part";
  for (int i = 0; i < 100; ++i) share = s.record_loader_batch(kJpeg, share, true);
  EXPECT_DOUBLE_EQ(share, 0.0);
  s.count_loader_gpu_read(60);
  s.count_loader_gpu_read(4);
  s.count_loader_cpu_regions(64);
  const Scheduler::LoaderCounts counts = s.loader_counts();
  EXPECT_EQ(counts.gpu_regions, 64u);
  EXPECT_EQ(counts.gpu_reads, 2u);
  EXPECT_EQ(counts.cpu_regions, 64u);
}

// A decoder whose calls take `seconds` of the fake clock per tile.
class ClockedDecoder final : public codecs::Decoder {
 public:
  ClockedDecoder(FakeClock* clock, double seconds) : clock_(clock), seconds_(seconds) {}
  const char* backend() const override { return "fake-gpu"; }
  DeviceType output() const override { return DeviceType::kCpu; }
  Status can_decode(const codecs::TileDesc&) const override { return Status(); }
  void decode_batch(std::span<const codecs::DecodeRequest> requests, std::span<Status> statuses) override {
    double now = clock_->now.load();
    while (!clock_->now.compare_exchange_weak(now, now + seconds_ * static_cast<double>(requests.size()))) {
    }
    for (Status& s : statuses) s = Status();
  }

 private:
  FakeClock* clock_;
  double seconds_;
};

TEST(Scheduler, TheLanesMeasureTheirCallsOnTheSchedulersClock) {
  FakeClock clock;
  Scheduler s(clock);
  std::vector<std::unique_ptr<codecs::Decoder>> decoders;
  decoders.push_back(std::make_unique<ClockedDecoder>(&clock, 0.002));
  LaneOptions options{false, 0};
  options.warm_up = false;
  auto lanes = TileLanes::make(std::move(decoders), options, &s);
  codecs::TileDesc desc;
  desc.compression = codecs::Compression::kJpeg2000;
  desc.width = desc.height = 16;
  std::vector<uint8_t> byte(1);
  std::vector<LaneJob> jobs(4);
  for (LaneJob& j : jobs) {
    j.request.desc = &desc;
    j.request.data = byte;
  }
  lanes->decode(jobs, nullptr);
  for (const LaneJob& j : jobs) EXPECT_TRUE(j.status.ok() && j.on_gpu);
  EXPECT_NEAR(s.gpu_seconds_per_tile(kJ2k), 0.002, 1e-9) << "measured on the injected clock";
  EXPECT_EQ(s.gpu_seconds_per_tile(kJpeg), 0) << "another codec class is not";
  EXPECT_EQ(s.tiles_per_call(kJ2k, 0.003, LaneOptions().max_batch), 1u);
  lanes->stop();
}

}  // namespace
}  // namespace tilewise::gpu
