// The GPU lane scheduler with fake decoders (no GPU needed): batching across callers, CPU assist, failures
// and shutdown. Runs under ASan/UBSan and TSan in CI.
#include "gpu/tile_lanes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tilewise::gpu {
namespace {

// "Decodes" by writing the stream's first byte into out[0]; a stream starting with 0xEE fails. Can be held at
// a gate to keep the lane busy.
class FakeDecoder final : public codecs::Decoder {
 public:
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    bool gate_open = true;
    double seconds_per_tile = 0;  // a slow "GPU"
    int entered = 0;
    std::vector<size_t> batch_sizes;
    std::vector<int> batch_decoders;  // which decoder made each call (its id)
    std::vector<std::pair<int, char>> events;  // (decoder id, 'w' warm-up or 'd' decode), in order
  };
  explicit FakeDecoder(Shared* shared, int id = 0, double slowdown = 1) : shared_(shared), id_(id), slowdown_(slowdown) {}
  const char* backend() const override { return "fake"; }
  DeviceType output() const override { return DeviceType::kCuda; }
  Status can_decode(const codecs::TileDesc&) const override { return Status(); }
  void decode_batch(std::span<const codecs::DecodeRequest> requests, std::span<Status> statuses) override {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    ++shared_->entered;
    shared_->events.emplace_back(id_, 'd');
    shared_->batch_sizes.push_back(requests.size());
    shared_->batch_decoders.push_back(id_);
    shared_->cv.notify_all();
    shared_->cv.wait(lock, [&] { return shared_->gate_open; });
    if (shared_->seconds_per_tile > 0) {
      const double seconds = shared_->seconds_per_tile * slowdown_ * static_cast<double>(requests.size());
      lock.unlock();  // decoders of several lanes "decode" at the same time
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      lock.lock();
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].data[0] == 0xEE) {
        statuses[i] = corrupt("fake: bad tile");
      } else {
        requests[i].out.data[0] = requests[i].data[0];
        statuses[i] = Status();
      }
    }
  }
  void warm_up() override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->events.emplace_back(id_, 'w');
  }

 private:
  Shared* shared_;
  int id_;
  double slowdown_;
};

std::unique_ptr<TileLanes> make_lanes(FakeDecoder::Shared* shared, int count, LaneOptions options) {
  std::vector<std::unique_ptr<codecs::Decoder>> decoders;
  for (int i = 0; i < count; ++i) decoders.push_back(std::make_unique<FakeDecoder>(shared, i));
  return TileLanes::make(std::move(decoders), options);
}

struct Work {
  std::unique_ptr<codecs::TileDesc> desc = std::make_unique<codecs::TileDesc>();  // stays put when Work moves
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> out;
  std::vector<LaneJob> jobs;
  explicit Work(size_t n, uint8_t first = 1) : bytes(n), out(n, 0), jobs(n) {
    desc->compression = codecs::Compression::kJpeg;
    for (size_t i = 0; i < n; ++i) {
      bytes[i] = static_cast<uint8_t>(first + i);
      jobs[i].request.data = std::span<const uint8_t>(&bytes[i], 1);
      jobs[i].request.desc = desc.get();
      jobs[i].request.out.data = &out[i];
    }
  }
};

void set_gate(FakeDecoder::Shared& s, bool open) {
  std::lock_guard<std::mutex> lock(s.mutex);
  s.gate_open = open;
  s.cv.notify_all();
}

void wait_entered(FakeDecoder::Shared& s, int n) {
  std::unique_lock<std::mutex> lock(s.mutex);
  s.cv.wait(lock, [&] { return s.entered >= n; });
}

TEST(TileLanes, DecodesEveryJobOnTheLanes) {
  FakeDecoder::Shared shared;
  auto lanes = make_lanes(&shared, 2, LaneOptions{false, 0});
  Work w(150);
  lanes->decode(w.jobs, nullptr);
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    ASSERT_TRUE(w.jobs[i].status.ok()) << i;
    EXPECT_TRUE(w.jobs[i].on_gpu);
    EXPECT_EQ(w.out[i], w.bytes[i]);
  }
  for (size_t b : shared.batch_sizes) EXPECT_LE(b, LaneOptions().max_batch);
  EXPECT_EQ(lanes->stats().gpu_tiles, 150u);
  EXPECT_EQ(lanes->stats().cpu_tiles, 0u);
}

TEST(TileLanes, EachLaneWarmsItsDecoderOnceBeforeItsFirstCall) {
  for (bool warm : {true, false}) {
    FakeDecoder::Shared shared;
    LaneOptions options{false, 0, 0.002};
    options.warm_up = warm;
    auto lanes = make_lanes(&shared, 3, options);
    Work w(200);  // first bytes 1-200: none is the fake's bad tile (0xEE)
    lanes->decode(w.jobs, nullptr, /*per_call=*/10);  // sized calls: every lane takes some
    lanes->stop();
    std::vector<int> warm_ups(3, 0);
    std::vector<bool> decoded(3, false);
    for (auto [id, what] : shared.events) {
      if (what == 'w') {
        EXPECT_FALSE(decoded[static_cast<size_t>(id)]) << "decoder " << id << " warmed after a call";
        ++warm_ups[static_cast<size_t>(id)];
      } else {
        decoded[static_cast<size_t>(id)] = true;
      }
    }
    // Warm-ups happen when the lanes start, whether or not a lane gets work.
    for (int id = 0; id < 3; ++id) EXPECT_EQ(warm_ups[static_cast<size_t>(id)], warm ? 1 : 0) << id;
    for (size_t i = 0; i < w.jobs.size(); ++i) ASSERT_TRUE(w.jobs[i].status.ok()) << i;
  }
}

TEST(TileLanes, MergesTheTilesOfConcurrentCallersIntoOneBatch) {
  FakeDecoder::Shared shared;
  // (batch_seconds large: the gate makes the held batch look slow, which would shrink later batches)
  auto lanes = make_lanes(&shared, 1, LaneOptions{false, 0, 1e9});
  set_gate(shared, false);
  Work first(1);
  std::thread holder([&] { lanes->decode(first.jobs, nullptr); });
  wait_entered(shared, 1);  // the only lane is busy with `first`
  std::vector<Work> works;
  for (int t = 0; t < 8; ++t) works.emplace_back(4, static_cast<uint8_t>(10 * (t + 1)));
  std::vector<std::thread> callers;
  for (auto& w : works) callers.emplace_back([&] { lanes->decode(w.jobs, nullptr); });
  // Let the 8 callers queue their 32 tiles before the lane comes back.
  while (lanes->stats().queued < 32) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  set_gate(shared, true);
  holder.join();
  for (auto& c : callers) c.join();
  for (auto& w : works) {
    for (size_t i = 0; i < w.jobs.size(); ++i) {
      ASSERT_TRUE(w.jobs[i].status.ok());
      EXPECT_EQ(w.out[i], w.bytes[i]);
    }
  }
  size_t largest = 0;
  for (size_t b : shared.batch_sizes) largest = std::max(largest, b);
  EXPECT_GT(largest, 4u) << "tiles of different callers were never decoded in one batch";
  EXPECT_EQ(lanes->stats().gpu_tiles, 33u);
}

TEST(TileLanes, CallersDecodeTheirOwnTilesWhileTheLanesAreBusy) {
  FakeDecoder::Shared shared;
  auto lanes = make_lanes(&shared, 1, LaneOptions{true, 0});
  set_gate(shared, false);
  Work first(1);
  std::thread holder([&] { lanes->decode(first.jobs, nullptr); });
  wait_entered(shared, 1);
  Work mine(10, 100);
  std::atomic<int> assisted{0};
  lanes->decode(mine.jobs, [&](size_t i) {
    ++assisted;
    mine.out[i] = static_cast<uint8_t>(mine.bytes[i] + 1);  // marks the CPU's work
    return Status();
  });
  EXPECT_EQ(assisted.load(), 10);  // the lane was held: the caller did everything
  for (size_t i = 0; i < mine.jobs.size(); ++i) {
    EXPECT_TRUE(mine.jobs[i].status.ok());
    EXPECT_FALSE(mine.jobs[i].on_gpu);
    EXPECT_EQ(mine.out[i], mine.bytes[i] + 1);
  }
  set_gate(shared, true);
  holder.join();
  EXPECT_EQ(lanes->stats().cpu_tiles, 10u);
  EXPECT_EQ(lanes->stats().gpu_tiles, 1u);
}

TEST(TileLanes, NoAssistBelowTheBacklog) {
  FakeDecoder::Shared shared;
  auto lanes = make_lanes(&shared, 1, LaneOptions{true, 1000});
  Work w(20);
  lanes->decode(w.jobs, [&](size_t) -> Status {
    ADD_FAILURE() << "assisted below the backlog";
    return Status();
  });
  for (auto& j : w.jobs) EXPECT_TRUE(j.on_gpu && j.status.ok());
}

TEST(TileLanes, CallersAssistWhenTheMeasuredLanesAreSlowerThanTheirCpu) {
  FakeDecoder::Shared shared;
  shared.seconds_per_tile = 0.005;
  auto lanes = make_lanes(&shared, 1, LaneOptions{true, 1000});  // the backlog rule alone would never assist
  Work warm(1);
  lanes->decode(warm.jobs, [](size_t) { return Status(); });  // measures the lane: 5 ms per tile
  set_gate(shared, false);
  Work first(1);
  std::thread holder([&] { lanes->decode(first.jobs, nullptr); });
  wait_entered(shared, 2);  // the lane is busy
  Work w(8);
  w.desc->width = w.desc->height = 16;  // 256 pixels: microseconds on a CPU
  lanes->decode(w.jobs, [](size_t) { return Status(); });
  for (auto& j : w.jobs) EXPECT_TRUE(j.status.ok() && !j.on_gpu);
  EXPECT_EQ(lanes->stats().cpu_tiles, 8u) << "8 tiles x 5 ms queued on a busy lane, yet the caller did not help";
  set_gate(shared, true);
  holder.join();
}

TEST(TileLanes, SlowCodecsGetSmallBatches) {
  FakeDecoder::Shared shared;
  shared.seconds_per_tile = 0.002;
  auto lanes = make_lanes(&shared, 1, LaneOptions{false, 0, 0.005});
  Work warm(1);
  lanes->decode(warm.jobs, nullptr);  // measures 2 ms per tile: at most ~2 tiles per 5 ms batch
  Work w(12);
  lanes->decode(w.jobs, nullptr);
  for (size_t i = 1; i < shared.batch_sizes.size(); ++i) EXPECT_LE(shared.batch_sizes[i], 3u);
  for (auto& j : w.jobs) EXPECT_TRUE(j.status.ok());
}

TEST(TileLanes, ASpreadReadGoesToEveryLaneInOneRound) {
  FakeDecoder::Shared shared;
  shared.seconds_per_tile = 0.002;  // measured slow: by speed, calls of at most ~2 tiles
  auto lanes = make_lanes(&shared, 4, LaneOptions{false, 0, 0.005});
  Work warm(1);
  lanes->decode(warm.jobs, nullptr);
  shared.seconds_per_tile = 0;
  set_gate(shared, false);
  Work w(100);
  std::thread caller([&] { lanes->decode(w.jobs, nullptr, /*per_call=*/25); });
  wait_entered(shared, 5);  // the warm-up's call and one call on each of the 4 lanes, all held at the gate
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    ASSERT_EQ(shared.batch_sizes.size(), 5u);
    for (size_t i = 1; i < 5; ++i) EXPECT_EQ(shared.batch_sizes[i], 25u);
  }
  EXPECT_EQ(lanes->lane_count(), 4);
  EXPECT_EQ(lanes->stats().queued, 0u);
  set_gate(shared, true);
  caller.join();
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    ASSERT_TRUE(w.jobs[i].status.ok());
    EXPECT_EQ(w.out[i], w.bytes[i]);
  }
  EXPECT_EQ(shared.batch_sizes.size(), 5u);
}

TEST(TileLanes, SizedCallsLeaveTheSpeedEstimateOfTheOthersAlone) {
  FakeDecoder::Shared shared;
  shared.seconds_per_tile = 0.002;
  auto lanes = make_lanes(&shared, 1, LaneOptions{false, 0, 0.005});
  Work warm(1);
  lanes->decode(warm.jobs, nullptr);  // measures 2 ms per tile: calls of at most ~2 tiles per 5 ms
  shared.seconds_per_tile = 0;        // a region's large calls: per tile, nearly free
  Work region(100);
  lanes->decode(region.jobs, nullptr, /*per_call=*/10);
  shared.seconds_per_tile = 0.002;
  const size_t before = shared.batch_sizes.size();
  Work w(12);
  lanes->decode(w.jobs, nullptr);
  for (size_t i = before; i < shared.batch_sizes.size(); ++i) EXPECT_LE(shared.batch_sizes[i], 3u);
  for (auto& j : w.jobs) EXPECT_TRUE(j.status.ok());
}

TEST(TileLanes, ALaneSlowerThanTheOthersLeavesSizedCallsToIdleFasterLanes) {
  FakeDecoder::Shared shared;
  shared.seconds_per_tile = 0.0004;  // 10 ms per call of 25; decoder 2 takes 3x as long
  std::vector<std::unique_ptr<codecs::Decoder>> decoders;
  for (int i = 0; i < 3; ++i) decoders.push_back(std::make_unique<FakeDecoder>(&shared, i, i == 2 ? 3.0 : 1.0));
  auto lanes = TileLanes::make(std::move(decoders), LaneOptions{false, 0});
  auto calls_of = [&](int id, size_t from) {
    std::lock_guard<std::mutex> lock(shared.mutex);
    size_t n = 0;
    for (size_t i = from; i < shared.batch_decoders.size(); ++i) n += shared.batch_decoders[i] == id ? 1 : 0;
    return n;
  };
  // Reads of three calls, one per lane, until every lane has made at least three (its speed is known).
  for (int read = 0; read < 40 && (calls_of(0, 0) < 3 || calls_of(1, 0) < 3 || calls_of(2, 0) < 3); ++read) {
    Work w(75);
    lanes->decode(w.jobs, nullptr, /*per_call=*/25);
    for (auto& j : w.jobs) ASSERT_TRUE(j.status.ok());
  }
  ASSERT_GE(calls_of(2, 0), 3u) << "the slow lane was never measured";
  // Reads of two calls: the two faster lanes are idle at each read's start and take both.
  size_t from;
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    from = shared.batch_decoders.size();
  }
  for (int read = 0; read < 10; ++read) {
    Work w(50);
    lanes->decode(w.jobs, nullptr, /*per_call=*/25);
    for (size_t i = 0; i < w.jobs.size(); ++i) {
      ASSERT_TRUE(w.jobs[i].status.ok());
      EXPECT_EQ(w.out[i], w.bytes[i]);
    }
  }
  EXPECT_EQ(calls_of(2, from), 0u);
  EXPECT_EQ(calls_of(0, from) + calls_of(1, from), 20u);
  // Calls sized by speed (the loader's) still go to every lane, the slow one too.
  shared.seconds_per_tile = 0.002;
  Work loader(60);
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&, c] { lanes->decode(std::span<LaneJob>(loader.jobs).subspan(c * 20, 20), nullptr); });
  }
  for (auto& t : callers) t.join();
  for (auto& j : loader.jobs) EXPECT_TRUE(j.status.ok());
}

TEST(TileLanes, TheTraceHasOneLinePerCall) {
  const std::string path = ::testing::TempDir() + "tile_lanes_trace.csv";
  std::remove(path.c_str());
  FakeDecoder::Shared shared;
  LaneOptions options{false, 0};
  options.trace_path = path;
  auto lanes = make_lanes(&shared, 2, options);
  Work w(100);
  lanes->decode(w.jobs, nullptr, /*per_call=*/50);
  Work v(3);
  lanes->decode(v.jobs, nullptr);
  lanes->stop();
  std::ifstream in(path);
  std::string line;
  size_t calls = 0, tiles = 0, sized = 0;
  while (std::getline(in, line)) {
    long long lane = -1, claimed = 0, returned = 0;
    unsigned n = 0, per_call = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lld,%lld,%lld,%u,%u", &lane, &claimed, &returned, &n, &per_call), 5) << line;
    EXPECT_TRUE(lane == 0 || lane == 1) << line;
    EXPECT_LE(claimed, returned) << line;
    ++calls;
    tiles += n;
    if (per_call == 50) ++sized;
  }
  EXPECT_EQ(calls, shared.batch_sizes.size());
  EXPECT_EQ(tiles, 103u);
  EXPECT_EQ(sized, 2u) << "the 100 tiles in two calls of 50";
  std::remove(path.c_str());
}

TEST(TileLanes, FailuresAndCpuErrorsArePerJob) {
  FakeDecoder::Shared shared;
  auto lanes = make_lanes(&shared, 2, LaneOptions{false, 0});
  Work w(6);
  w.bytes[3] = 0xEE;
  lanes->decode(w.jobs, nullptr);
  for (size_t i = 0; i < w.jobs.size(); ++i) EXPECT_EQ(w.jobs[i].status.ok(), i != 3) << i;
  EXPECT_NE(w.jobs[3].status.message().find("fake: bad tile"), std::string::npos);

  auto assisting = make_lanes(&shared, 1, LaneOptions{true, 0});
  set_gate(shared, false);
  const int before = shared.entered;
  Work first(1);
  std::thread holder([&] { assisting->decode(first.jobs, nullptr); });
  wait_entered(shared, before + 1);
  Work mine(3);
  assisting->decode(mine.jobs, [&](size_t i) { return i == 1 ? io_error("cpu: cannot read") : Status(); });
  EXPECT_TRUE(mine.jobs[0].status.ok());
  EXPECT_FALSE(mine.jobs[1].status.ok());
  EXPECT_TRUE(mine.jobs[2].status.ok());
  set_gate(shared, true);
  holder.join();
}

TEST(TileLanes, StopFailsQueuedJobsAndLaterCalls) {
  FakeDecoder::Shared shared;
  auto lanes = make_lanes(&shared, 1, LaneOptions{false, 0});
  set_gate(shared, false);
  Work first(1);
  std::thread holder([&] { lanes->decode(first.jobs, nullptr); });
  wait_entered(shared, 1);
  Work queued(5);
  std::thread waiter([&] { lanes->decode(queued.jobs, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::thread stopper([&] { lanes->stop(); });
  waiter.join();  // returns once stop() failed its queued jobs, while the lane is still busy
  for (auto& j : queued.jobs) {
    EXPECT_FALSE(j.status.ok());
    EXPECT_NE(j.status.message().find("shut down"), std::string::npos);
  }
  set_gate(shared, true);  // the lane finishes its batch; stop() joins it
  stopper.join();
  holder.join();
  EXPECT_TRUE(first.jobs[0].status.ok());
  Work late(2);
  lanes->decode(late.jobs, nullptr);
  for (auto& j : late.jobs) EXPECT_FALSE(j.status.ok());
}

}  // namespace
}  // namespace tilewise::gpu
