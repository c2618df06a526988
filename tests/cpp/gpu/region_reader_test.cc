// The device reader (gpu/region_reader.h) without a GPU: a DeviceContext over host memory, whose
// "GPU" decoders are CPU decoders behind the decoder contract's GPU rules (whole tiles only, complete
// streams). Every read must give exactly the host reader's pixels - through the lanes, in place, through the
// device tile cache, with the readers assisting, with the GPU backend refusing the codec or failing tiles
// (the CPU fallback) - so the device plan, crops, cache reservations and fallbacks are tested in CI.
#include "gpu/region_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <time.h>

#include "cache/tile_cache.h"
#include "codecs/cpu/cpu_decoder.h"
#include "formats/format_registry.h"
#include "io/source.h"
#include "region/host_region_reader.h"
#include "support/tiff_builder.h"
#include "tiff/tags.h"

namespace tilewise::gpu {
namespace {

// Device operations over host memory; streams are tokens (work runs at once, in order).
class HostOps final : public DeviceOps {
 public:
  int device() const override { return 0; }
  Result<void*> allocate(size_t bytes) override {
    ++live;
    return std::malloc(bytes);
  }
  void release(void* p) override {
    --live;
    std::free(p);
  }
  Result<Stream> acquire_stream() override { return Stream{&token_}; }
  void return_stream(Stream) override {}
  Status fill(uint8_t* dst, size_t pitch, int32_t w, int32_t h, const uint8_t rgb[3], Stream) override {
    for (int32_t y = 0; y < h; ++y)
      for (int32_t x = 0; x < w; ++x) std::memcpy(dst + y * pitch + x * 3, rgb, 3);
    return Status();
  }
  Status clear(uint8_t* dst, size_t pitch, size_t width_bytes, int32_t h, Stream) override {
    for (int32_t y = 0; y < h; ++y) std::memset(dst + y * pitch, 0, width_bytes);
    return Status();
  }
  Status copy_2d(uint8_t* dst, size_t dst_pitch, const uint8_t* src, size_t src_pitch, int32_t width_bytes,
                 int32_t height, bool src_on_host, Stream) override {
    for (int32_t y = 0; y < height; ++y) std::memcpy(dst + y * dst_pitch, src + y * src_pitch, width_bytes);
    if (src_on_host) ++host_copies;
    return Status();
  }
  Status synchronize(Stream) override { return Status(); }
  Result<void*> allocate_host(size_t bytes) override {
    ++host_allocations;
    return DeviceOps::allocate_host(bytes);
  }
  std::atomic<int> live{0};
  std::atomic<int> host_allocations{0};  // staging of regions shared with the CPU
  std::atomic<int> host_copies{0};       // uploads from host memory

 private:
  int token_ = 0;
};

// The "GPU" backend: whole tiles from complete streams, written as the device decoders write them (every
// row of the nominal tile); fails every tile whose first stored byte is in `fail_first_bytes`.
class WholeTileDecoder final : public codecs::Decoder {
 public:
  const char* backend() const override { return "fake-gpu"; }
  DeviceType output() const override { return DeviceType::kCuda; }
  bool needs_complete_streams() const override { return true; }
  bool window_decode() const override { return false; }
  Status can_decode(const codecs::TileDesc& d) const override { return codecs::CpuDecoder::supports(d); }
  void decode_batch(std::span<const codecs::DecodeRequest> requests, std::span<Status> statuses) override {
    for (size_t i = 0; i < requests.size(); ++i) {
      const codecs::DecodeRequest& r = requests[i];
      if (r.out.width != r.desc->width || r.out.height != r.desc->height || r.x != 0 || r.y != 0) {
        statuses[i] = internal_error("fake-gpu: not a whole tile");
        continue;
      }
      if (fail_every > 0 && ++seen % fail_every == 0) {
        statuses[i] = corrupt("fake-gpu: failed");
        continue;
      }
      ImageView host = r.out;
      host.device = {};
      statuses[i] = cpu_.decode(r.data, *r.desc, host);
    }
  }
  int fail_every = 0;

 private:
  codecs::CpuDecoder cpu_;
  int seen = 0;
};

class HostContext final : public DeviceContext {
 public:
  explicit HostContext(LaneOptions options = LaneOptions{false, 0}, int fail_every = 0, bool gpu_takes_tiles = true,
                       internal::GpuPolicy policy = internal::GpuPolicy::kAuto)
      : gpu_takes_tiles_(gpu_takes_tiles),
        cache_(1 << 20, [this](size_t n) -> void* { return *ops_.allocate(n); }, [this](void* p) { ops_.release(p); }),
        scheduler_(steady_seconds(), policy) {
    std::vector<std::unique_ptr<codecs::Decoder>> decoders;
    for (int i = 0; i < 2; ++i) {
      auto d = std::make_unique<WholeTileDecoder>();
      d->fail_every = fail_every;
      decoders.push_back(std::move(d));
    }
    options.host_cost = &host_cost();
    lanes_ = TileLanes::make(std::move(decoders), options, &scheduler_);
  }
  ~HostContext() override { lanes_->stop(); }
  DeviceOps& ops() override { return ops_; }
  Status can_decode(const codecs::TileDesc& d) const override {
    return gpu_takes_tiles_ ? codecs::CpuDecoder::supports(d) : unsupported("fake-gpu: refused");
  }
  Status can_decode_samples(const codecs::TileDesc& d) const override { return can_decode(d); }
  Result<TileLanes*> lanes() override { return lanes_.get(); }
  DeviceTileCache* tile_cache() override { return &cache_; }
  Scheduler& scheduler() override { return scheduler_; }
  bool in_place() const override { return in_place_; }
  TileLanes& started() { return *lanes_; }
  bool in_place_ = true;
  HostOps ops_;

 private:
  bool gpu_takes_tiles_;
  DeviceTileCache cache_;
  Scheduler scheduler_;  // its own: every context starts with nothing measured
  std::unique_ptr<TileLanes> lanes_;
};

// A source that counts its reads.
class CountingSource final : public io::Source {
 public:
  explicit CountingSource(std::shared_ptr<const io::Source> inner) : inner_(std::move(inner)) {}
  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    ++reads;
    return inner_->pread(out, offset);
  }
  uint64_t size() const override { return inner_->size(); }
  const std::string& name() const override { return inner_->name(); }
  mutable std::atomic<int> reads{0};

 private:
  std::shared_ptr<const io::Source> inner_;
};

struct Fixture {
  std::shared_ptr<CountingSource> source;
  formats::SlideModel model;
  // Cache keys of this fixture's slide, apart from every other fixture's (the host tile cache is process-wide).
  const uint64_t device_uid = next_uid(), host_uid = next_uid();
  const bool grey16;
  static uint64_t next_uid() {
    static std::atomic<uint64_t> uid{1000};
    return uid++;
  }
  // grey16: 16-bit grey tiles, pixel (x, y) = x * 301 + y * 7 (wrapping), read as samples; else RGB tiles
  // (TiffBuilder::pattern) read as the RGB rendering.
  explicit Fixture(uint32_t w = 200, uint32_t h = 150, uint32_t tw = 64, uint32_t th = 32, bool grey16 = false)
      : grey16(grey16) {
    testing::TiffBuilder b;
    if (grey16) {
      std::vector<uint64_t> offs, counts;
      for (uint32_t ty = 0; ty < h; ty += th) {
        for (uint32_t tx = 0; tx < w; tx += tw) {
          std::vector<uint8_t> tile(static_cast<size_t>(tw) * th * 2);
          for (uint32_t y = 0; y < th; ++y) {
            for (uint32_t x = 0; x < tw; ++x) {
              const auto v = static_cast<uint16_t>((tx + x) * 301 + (ty + y) * 7);
              tile[(static_cast<size_t>(y) * tw + x) * 2] = static_cast<uint8_t>(v & 0xff);
              tile[(static_cast<size_t>(y) * tw + x) * 2 + 1] = static_cast<uint8_t>(v >> 8);
            }
          }
          offs.push_back(b.append(tile));
          counts.push_back(tile.size());
        }
      }
      b.add_ifd({b.longs(256, {w}), b.longs(257, {h}), b.shorts(258, {16}), b.shorts(259, {1}), b.shorts(262, {1}),
                 b.shorts(277, {1}), b.longs(322, {tw}), b.longs(323, {th}), b.offsets(324, offs),
                 b.offsets(325, counts)});
    } else {
      b.add_ifd(b.rgb_tiled_image(w, h, tw, th));
    }
    source = std::make_shared<CountingSource>(io::memory_source(b.finish(), "pattern.tif"));
    auto m = formats::open_model(source);
    EXPECT_TRUE(m.ok()) << m.status().message();
    model = std::move(m).value();
  }
  region::RegionRequest request(int64_t x, int64_t y, int64_t w, int64_t h, std::vector<uint8_t>& out,
                                Device device) const {
    const int32_t channels = grey16 ? 1 : 3, sample_bytes = grey16 ? 2 : 1;
    out.assign(static_cast<size_t>(w * h * channels * sample_bytes), 0xEE);
    region::RegionRequest r;
    r.level = &model.levels[0];
    r.level_label = "level 0";
    r.x = x;
    r.y = y;
    r.width = w;
    r.height = h;
    r.fill = {10, 20, 30};
    r.out = ImageView{out.data(), w * channels * sample_bytes, static_cast<int32_t>(w), static_cast<int32_t>(h),
                      channels, device, sample_bytes};
    return r;
  }
  // Reads through the device reader with `context` and through the host reader; the pixels must be equal.
  void expect_same(HostContext& context, int64_t x, int64_t y, int64_t w, int64_t h, bool use_cache = true) const {
    std::vector<uint8_t> device_px, host_px;
    region::RegionRequest d = request(x, y, w, h, device_px, Device{DeviceType::kCuda, 0});
    d.use_cache = use_cache;
    Status s = DeviceRegionReader(model, device_uid).read(d, &context);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(region::HostRegionReader(model, host_uid).read(request(x, y, w, h, host_px, Device{})).ok());
    ASSERT_EQ(device_px, host_px) << "region " << x << "," << y << " " << w << "x" << h;
  }
  // Reads every region as one device batch; each must equal the host reader's pixels.
  void expect_same_batch(HostContext& context, const std::vector<std::array<int64_t, 4>>& regions,
                         bool use_cache = true) const {
    std::vector<std::vector<uint8_t>> device_px(regions.size());
    std::vector<region::RegionRequest> requests;
    for (size_t i = 0; i < regions.size(); ++i) {
      const auto& r = regions[i];
      requests.push_back(request(r[0], r[1], r[2], r[3], device_px[i], Device{DeviceType::kCuda, 0}));
      requests.back().use_cache = use_cache;
    }
    const std::vector<Status> statuses = DeviceRegionReader(model, device_uid).read_batch(requests, &context);
    ASSERT_EQ(statuses.size(), regions.size());
    for (size_t i = 0; i < regions.size(); ++i) {
      const auto& r = regions[i];
      ASSERT_TRUE(statuses[i].ok()) << statuses[i].message();
      std::vector<uint8_t> host_px;
      ASSERT_TRUE(region::HostRegionReader(model, host_uid).read(request(r[0], r[1], r[2], r[3], host_px, Device{})).ok());
      ASSERT_EQ(device_px[i], host_px) << "batch item " << i << ": " << r[0] << "," << r[1] << " " << r[2] << "x" << r[3];
    }
  }
};

std::vector<std::array<int64_t, 4>> random_regions(int n, uint32_t seed, int64_t w, int64_t h, int64_t size) {
  std::mt19937 rng(seed);
  std::vector<std::array<int64_t, 4>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({static_cast<int64_t>(rng() % static_cast<uint32_t>(w + size)) - size / 2,
                   static_cast<int64_t>(rng() % static_cast<uint32_t>(h + size)) - size / 2, size, size});
  }
  return out;
}

const int64_t kRegions[][4] = {{0, 0, 64, 32},   {0, 0, 200, 150}, {13, 7, 100, 90}, {199, 149, 1, 1},
                               {63, 31, 2, 2},   {-10, -20, 50, 60}, {180, 140, 50, 30}, {500, 500, 8, 8},
                               {64, 32, 128, 64}, {0, 128, 64, 22}};

TEST(DeviceRegionReader, GivesTheHostReadersPixelsThroughTheLanes) {
  Fixture f;
  HostContext context;
  for (const auto& r : kRegions) f.expect_same(context, r[0], r[1], r[2], r[3]);
  EXPECT_GT(context.started().stats().gpu_tiles, 0u);
  EXPECT_EQ(context.started().stats().cpu_tiles, 0u);  // assist off
  // Scratch is released; what stays allocated is the device tile cache's entries.
  EXPECT_EQ(context.ops_.live.load(), static_cast<int>(context.tile_cache()->stats().entries));
}

TEST(DeviceRegionReader, ReadsTheLevelsOwnSamplesAsTheHostReaderDoes) {
  Fixture f(200, 150, 64, 32, /*grey16=*/true);
  ASSERT_EQ(f.model.levels[0].desc.bits_per_sample, 16);
  HostContext context;
  for (const auto& r : kRegions) f.expect_same(context, r[0], r[1], r[2], r[3]);
  EXPECT_GT(context.started().stats().gpu_tiles, 0u);
  const uint64_t decoded = context.started().stats().gpu_tiles;
  f.expect_same(context, 13, 7, 100, 90);  // cut tiles again: from the device tile cache
  EXPECT_EQ(context.started().stats().gpu_tiles, decoded);
  f.expect_same_batch(context, random_regions(24, 5, 200, 150, 40), /*use_cache=*/false);
  HostContext scratch;
  scratch.in_place_ = false;
  for (const auto& r : kRegions) f.expect_same(scratch, r[0], r[1], r[2], r[3], /*use_cache=*/false);
  HostContext refused(LaneOptions{false, 0}, 0, /*gpu_takes_tiles=*/false);
  for (const auto& r : kRegions) f.expect_same(refused, r[0], r[1], r[2], r[3]);
  EXPECT_EQ(refused.started().stats().gpu_tiles, 0u);
  HostContext failing(LaneOptions{false, 0}, /*fail_every=*/3);
  for (const auto& r : kRegions) f.expect_same(failing, r[0], r[1], r[2], r[3], /*use_cache=*/false);
  Fixture large(1024, 512, 64, 32, /*grey16=*/true);
  HostContext cpu(LaneOptions{false, 0}, 0, true, internal::GpuPolicy::kCpu);
  large.expect_same(cpu, -20, 300, 700, 300, /*use_cache=*/false);  // a large region read on the CPU side
  EXPECT_EQ(cpu.ops_.host_allocations.load(), 1);
}

TEST(DeviceRegionReader, ABatchOfRgbAndSampleRegionsIsRefused) {
  Fixture f(200, 150, 64, 32, /*grey16=*/true);
  HostContext context;
  std::vector<uint8_t> a, b(64 * 64 * 3);
  std::vector<region::RegionRequest> requests{f.request(0, 0, 64, 64, a, Device{DeviceType::kCuda, 0}),
                                              f.request(0, 0, 64, 64, a, Device{DeviceType::kCuda, 0})};
  requests[1].out = ImageView{b.data(), 64 * 3, 64, 64, 3, Device{DeviceType::kCuda, 0}};
  for (const Status& s : DeviceRegionReader(f.model, f.device_uid).read_batch(requests, &context)) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  }
}

TEST(DeviceRegionReader, LargeRegionsGoToTheSideThatReadsThemFaster) {
  Fixture f(1024, 512, 64, 32);  // 16 x 16 tiles
  HostContext context;
  auto lanes_tiles = [&] { return context.started().stats().gpu_tiles; };
  auto cpu_reads = [&] { return context.ops_.host_allocations.load(); };  // the CPU side's pinned staging
  // The first three large reads go to the lanes (the first sets them up), the next three to the CPU.
  f.expect_same(context, 0, 0, 1024, 512, /*use_cache=*/false);
  f.expect_same(context, 13, 7, 900, 480, /*use_cache=*/false);
  f.expect_same(context, 0, 0, 1024, 512, /*use_cache=*/false);
  EXPECT_EQ(cpu_reads(), 0);
  const uint64_t after_lanes = lanes_tiles();
  EXPECT_GT(after_lanes, 0u);
  f.expect_same(context, -20, 300, 700, 300, /*use_cache=*/false);  // reaching past the level: background too
  f.expect_same(context, 0, 0, 1024, 512, /*use_cache=*/false);
  f.expect_same(context, 13, 7, 900, 480, /*use_cache=*/false);
  EXPECT_EQ(cpu_reads(), 3);
  // Each CPU tile row uploaded when its last tile is written (7 rows and the background below the level,
  // then 16 rows, then 16 rows).
  EXPECT_EQ(context.ops_.host_copies.load(), 8 + 16 + 16);
  EXPECT_EQ(lanes_tiles(), after_lanes) << "the CPU's reads decode nothing on the lanes";
  // From then on the faster side reads them, the slower one every 16th read: both sides over 40 reads.
  for (int i = 0; i < 40; ++i) f.expect_same(context, 64 * (i % 3), 32 * (i % 2), 900, 400, /*use_cache=*/false);
  EXPECT_GT(lanes_tiles(), after_lanes);
  EXPECT_GT(cpu_reads(), 3);
  EXPECT_LT(cpu_reads(), 3 + 40);
  f.expect_same(context, 100, 100, 200, 100);  // 4 x 5 tiles: not a large region, lanes only
  EXPECT_EQ(context.ops_.live.load(), static_cast<int>(context.tile_cache()->stats().entries));
}

TEST(DeviceRegionReader, MoreFirstReadsGiveEachSideMoreReadsBeforeTheRatesRoute) {
  Fixture f(1024, 512, 64, 32);  // 16 x 16 tiles
  HostContext context;
  context.scheduler().reset_large_regions(/*first_reads=*/5);
  auto cpu_reads = [&] { return context.ops_.host_allocations.load(); };  // the CPU side's pinned staging
  for (int i = 0; i < 5; ++i) f.expect_same(context, 16 * i, 8 * i, 900, 400, /*use_cache=*/false);
  EXPECT_EQ(cpu_reads(), 0) << "five to the lanes first";
  for (int i = 0; i < 5; ++i) f.expect_same(context, 16 * i, 8 * i, 900, 400, /*use_cache=*/false);
  EXPECT_EQ(cpu_reads(), 5) << "then five to the CPU";
}

TEST(DeviceRegionReader, ForcedPoliciesReadEveryLargeRegionOnOneSide) {
  Fixture f(1024, 512, 64, 32);  // 16 x 16 tiles
  HostContext cpu(LaneOptions{false, 0}, 0, true, internal::GpuPolicy::kCpu);
  f.expect_same(cpu, 0, 0, 1024, 512, /*use_cache=*/false);
  f.expect_same(cpu, 13, 7, 900, 480, /*use_cache=*/false);
  f.expect_same(cpu, -20, 300, 700, 300, /*use_cache=*/false);  // reaching past the level: background too
  EXPECT_EQ(cpu.ops_.host_allocations.load(), 3) << "each on the CPU";
  EXPECT_EQ(cpu.started().stats().gpu_tiles, 0u);
  HostContext gpu(LaneOptions{false, 0}, 0, true, internal::GpuPolicy::kGpu);
  for (int i = 0; i < 8; ++i) f.expect_same(gpu, 16 * i, 8 * i, 900, 400, /*use_cache=*/false);
  EXPECT_EQ(gpu.ops_.host_allocations.load(), 0) << "each through the lanes";
  EXPECT_GT(gpu.started().stats().gpu_tiles, 0u);
}

TEST(DeviceRegionReader, ATileWhoseBytesCannotBeReadFailsALargeRegionWithItsContext) {
  Fixture f(1024, 512, 64, 32);  // 16 x 16 tiles: the lanes' tiles are read on the decode pool
  auto units = std::make_shared<formats::UnitTable>(*f.model.levels[0].units);
  units->offsets[16 * 2 + 5] = uint64_t{1} << 40;  // tile (5, 2): past the end of the file
  f.model.levels[0].units = units;
  HostContext context;
  std::vector<uint8_t> px;
  region::RegionRequest d = f.request(0, 0, 1024, 512, px, Device{DeviceType::kCuda, 0});
  d.use_cache = false;
  const Status s = DeviceRegionReader(f.model, f.device_uid).read(d, &context);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.message();
  EXPECT_NE(s.message().find("tile (5,2)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("past the end of the file"), std::string::npos) << s.message();
}

TEST(DeviceRegionReader, CutTilesAreComposedFromTheDeviceTileCacheOnTheSecondRead) {
  Fixture f;
  HostContext context;
  f.expect_same(context, 13, 7, 100, 90);
  const auto first = context.tile_cache()->stats();
  const uint64_t decoded = context.started().stats().gpu_tiles;
  f.expect_same(context, 13, 7, 100, 90);
  EXPECT_GT(context.tile_cache()->stats().hits, first.hits);
  EXPECT_EQ(context.started().stats().gpu_tiles, decoded) << "every tile of the second read was a cache hit";
  f.expect_same(context, 13, 7, 100, 90, /*use_cache=*/false);
  EXPECT_GT(context.started().stats().gpu_tiles, decoded);
}

TEST(DeviceRegionReader, ScratchInsteadOfInPlaceGivesTheSamePixels) {
  Fixture f;
  HostContext context;
  context.in_place_ = false;
  for (const auto& r : kRegions) f.expect_same(context, r[0], r[1], r[2], r[3], /*use_cache=*/false);
  EXPECT_EQ(context.ops_.live.load(), 0) << "scratch must be released";
}

// convert's reads: whole-width bands of level 0, one after another, into a band whose rows are wider than the
// level (padded to whole output tiles), on a thread of their own; the padding is never written.
TEST(DeviceRegionReader, WholeWidthBandsGoIntoAWiderBandAsTheHostReaderReadsThem) {
  Fixture f(1000, 500, 64, 32);
  for (const internal::GpuPolicy policy : {internal::GpuPolicy::kGpu, internal::GpuPolicy::kCpu}) {
    HostContext context(LaneOptions{false, 0}, 0, true, policy);
    constexpr int64_t kPadded = 1024, kBand = 96;
    std::vector<uint8_t> band(static_cast<size_t>(kPadded * 3 * kBand));
    for (int64_t y = 0; y < 500; y += kBand) {
      const int64_t rows = std::min<int64_t>(kBand, 500 - y);
      std::fill(band.begin(), band.end(), uint8_t{0xEE});
      region::RegionRequest d;
      d.level = &f.model.levels[0];
      d.level_label = "level 0";
      d.y = y;
      d.width = 1000;
      d.height = rows;
      d.use_cache = false;
      d.out = ImageView{band.data(), kPadded * 3, 1000, static_cast<int32_t>(rows), 3, Device{DeviceType::kCuda, 0}};
      Status s;
      std::thread reader([&] { s = DeviceRegionReader(f.model, f.device_uid).read(d, &context); });
      reader.join();
      ASSERT_TRUE(s.ok()) << s.message();
      std::vector<uint8_t> host_px;
      ASSERT_TRUE(region::HostRegionReader(f.model, f.host_uid).read(f.request(0, y, 1000, rows, host_px, Device{})).ok());
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* row = band.data() + r * kPadded * 3;
        ASSERT_TRUE(std::equal(row, row + 1000 * 3, host_px.data() + r * 1000 * 3)) << "band at " << y << ", row " << r;
        ASSERT_TRUE(std::all_of(row + 1000 * 3, row + kPadded * 3, [](uint8_t v) { return v == 0xEE; }))
            << "padding written, band at " << y << ", row " << r;
      }
    }
  }
}

TEST(DeviceRegionReader, ReadersAssistTheLanesWithCpuDecodesAndUploads) {
  Fixture f;
  HostContext context(LaneOptions{true, 0});  // assist at once
  for (const auto& r : kRegions) f.expect_same(context, r[0], r[1], r[2], r[3], /*use_cache=*/false);
  EXPECT_GT(context.started().stats().cpu_tiles, 0u);
}

TEST(DeviceRegionReader, HostCostIsCountedByStageWithinTheProcesssCpuTime) {
  Fixture f(512, 384, 64, 32);
  HostContext context(LaneOptions{true, 0});  // lanes and assisting readers both decode
  std::vector<std::vector<uint8_t>> px(6);
  std::vector<region::RegionRequest> requests;
  for (int i = 0; i < 6; ++i) {
    requests.push_back(f.request(7 + 41 * i, 5 + 29 * i, 150, 130, px[static_cast<size_t>(i)], Device{DeviceType::kCuda, 0}));
    requests.back().use_cache = false;
  }
  timespec start{}, end{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  for (const Status& s : DeviceRegionReader(f.model, f.device_uid).read_batch(requests, &context)) {
    ASSERT_TRUE(s.ok()) << s.message();
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
  const uint64_t process_ns = static_cast<uint64_t>((end.tv_sec - start.tv_sec) * 1000000000ll + (end.tv_nsec - start.tv_nsec));
  const HostCostSnapshot h = context.host_cost().snapshot();
  const LaneStats lanes = context.started().stats();
  EXPECT_GT(h[HostStage::kRead], 0u);     // tile bytes and code streams, for every tile decoded
  EXPECT_GT(h[HostStage::kCompose], 0u);  // the crops and the stream's synchronisation
  EXPECT_EQ(h[HostStage::kCall] > 0, lanes.gpu_tiles > 0);
  EXPECT_EQ(h[HostStage::kAssist] > 0, lanes.cpu_tiles > 0);
  EXPECT_GT(lanes.gpu_tiles + lanes.cpu_tiles, 0u);
  // The stages are disjoint stretches of the threads' own clocks within the read: their sum is part of the
  // process's CPU time over it.
  uint64_t stages = 0;
  for (uint64_t ns : h.ns) stages += ns;
  EXPECT_LE(stages, process_ns);
}

TEST(DeviceRegionReader, ATileTheReaderDecodesForBusyLanesIsReadOnce) {
  Fixture f(512, 384, 64, 32);  // 8 x 12 tiles
  for (const bool batch : {false, true}) {
    HostContext context(LaneOptions{true, 0});  // assist at once
    std::vector<uint8_t> px;
    region::RegionRequest d = f.request(13, 7, 400, 300, px, Device{DeviceType::kCuda, 0});
    d.use_cache = false;
    const int before = f.source->reads.load();
    if (batch) {
      const std::vector<Status> s = DeviceRegionReader(f.model, f.device_uid).read_batch({&d, 1}, &context);
      ASSERT_TRUE(s[0].ok()) << s[0].message();
    } else {
      const Status s = DeviceRegionReader(f.model, f.device_uid).read(d, &context);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    EXPECT_GT(context.started().stats().cpu_tiles, 0u) << (batch ? "batch" : "single");
    EXPECT_EQ(f.source->reads.load() - before, 7 * 10) << "one read per tile the region touches";
    std::vector<uint8_t> host_px;
    ASSERT_TRUE(region::HostRegionReader(f.model, f.host_uid).read(f.request(13, 7, 400, 300, host_px, Device{})).ok());
    EXPECT_EQ(px, host_px);
  }
}

TEST(DeviceRegionReader, TilesTheGpuFailsOnFallBackToTheCpu) {
  Fixture f;
  HostContext context(LaneOptions{false, 0}, /*fail_every=*/3);
  for (const auto& r : kRegions) f.expect_same(context, r[0], r[1], r[2], r[3]);
  // A failed tile's cache reservation is dropped, not published: a later read decodes it again, correctly.
  for (const auto& r : kRegions) f.expect_same(context, r[0], r[1], r[2], r[3]);
}

TEST(DeviceRegionReader, ACodecTheGpuRefusesIsDecodedOnTheCpuAndUploaded) {
  Fixture f;
  HostContext context(LaneOptions{false, 0}, 0, /*gpu_takes_tiles=*/false);
  for (const auto& r : kRegions) f.expect_same(context, r[0], r[1], r[2], r[3]);
  EXPECT_EQ(context.started().stats().gpu_tiles, 0u);
}

TEST(DeviceRegionReader, ManyConcurrentReadersShareTheLanesAndTheCache) {
  Fixture f(512, 384, 64, 64);
  HostContext context(LaneOptions{true, 16});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      for (int i = 0; i < 40; ++i) {
        const int64_t x = static_cast<int64_t>(rng() % 560) - 24, y = static_cast<int64_t>(rng() % 420) - 18;
        std::vector<uint8_t> device_px, host_px;
        region::RegionRequest d = f.request(x, y, 96, 80, device_px, Device{DeviceType::kCuda, 0});
        Status ds = DeviceRegionReader(f.model, f.device_uid).read(d, &context);
        Status hs = region::HostRegionReader(f.model, f.host_uid).read(f.request(x, y, 96, 80, host_px, Device{}));
        if (!ds.ok() || !hs.ok() || device_px != host_px) {
          if (failures++ == 0) {
            size_t k = 0;
            while (k < device_px.size() && device_px[k] == host_px[k]) ++k;
            ADD_FAILURE() << ds.message() << " | " << hs.message() << " at " << x << "," << y << " first diff byte " << k;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(DeviceRegionReader, ABatchGivesTheHostReadersPixelsAndDecodesEachSharedTileOnce) {
  Fixture f;
  HostContext context;
  std::vector<std::array<int64_t, 4>> regions;
  for (const auto& r : kRegions) regions.push_back({r[0], r[1], r[2], r[3]});
  f.expect_same_batch(context, regions, /*use_cache=*/false);
  // Every region of kRegions together touches each of the 4 x 5 tiles; many touch the same ones.
  EXPECT_EQ(context.started().stats().gpu_tiles, 20u);
  EXPECT_EQ(context.ops_.live.load(), static_cast<int>(context.tile_cache()->stats().entries)) << "scratch released";
}

TEST(DeviceRegionReader, BatchesOfRandomRegionsInEveryMode) {
  Fixture f(512, 384, 64, 64);
  const auto regions = random_regions(48, 7, 512, 384, 96);
  {
    HostContext context;  // lanes only, with the cache (the second pass hits it)
    f.expect_same_batch(context, regions);
    f.expect_same_batch(context, regions);
    EXPECT_GT(context.tile_cache()->stats().hits, 0u);
  }
  {
    HostContext context(LaneOptions{true, 0});  // the reader assists at once
    f.expect_same_batch(context, regions, /*use_cache=*/false);
    EXPECT_GT(context.started().stats().cpu_tiles, 0u);
  }
  {
    HostContext context(LaneOptions{true, 0});  // assisting into cache reservations
    f.expect_same_batch(context, regions);
    f.expect_same_batch(context, regions);
  }
  {
    HostContext context;
    context.in_place_ = false;
    f.expect_same_batch(context, random_regions(20, 8, 512, 384, 128), /*use_cache=*/false);
    EXPECT_EQ(context.ops_.live.load(), 0);
  }
  {
    HostContext context(LaneOptions{false, 0}, /*fail_every=*/3);  // GPU failures fall back per region
    f.expect_same_batch(context, regions);
    f.expect_same_batch(context, regions);
  }
  {
    HostContext context(LaneOptions{false, 0}, 0, /*gpu_takes_tiles=*/false);
    f.expect_same_batch(context, regions);
    EXPECT_EQ(context.started().stats().gpu_tiles, 0u);
  }
}

// The fixture's level made positioned (as MIRAX levels are): each unit drawn in two parts at scattered
// places, overlapping each other and the level's edges, some of them whole units.
void make_positioned(Fixture& f, uint32_t seed) {
  formats::LevelModel& l = f.model.levels[0];
  std::mt19937 rng(seed);
  std::vector<formats::PlacedTile> tiles;
  const int64_t units = l.tiles_across * l.tiles_down;
  for (int64_t u = 0; u < units; ++u) {
    for (int part = 0; part < 2; ++part) {
      formats::PlacedTile t;
      const bool whole = rng() % 3 == 0;
      t.width = whole ? l.desc.width : 8 + static_cast<int32_t>(rng() % (l.desc.width - 8));
      t.height = whole ? l.desc.height : 8 + static_cast<int32_t>(rng() % (l.desc.height - 8));
      t.src_x = static_cast<int32_t>(rng() % (l.desc.width - t.width + 1));
      t.src_y = static_cast<int32_t>(rng() % (l.desc.height - t.height + 1));
      t.x = static_cast<int64_t>(rng() % (l.info.width + 40)) - 20;
      t.y = static_cast<int64_t>(rng() % (l.info.height + 40)) - 20;
      t.unit = u;
      tiles.push_back(t);
    }
  }
  l.placement = formats::make_placement(std::move(tiles));
}

TEST(DeviceRegionReader, PositionedLevelsGiveTheHostReadersPixelsSinglyAndInBatches) {
  Fixture f(512, 384, 64, 64);
  make_positioned(f, 3);
  const auto regions = random_regions(40, 9, 560, 420, 120);
  {
    HostContext context;
    for (const auto& r : regions) f.expect_same(context, r[0], r[1], r[2], r[3]);
    // A single region is a batch of one: a unit shown in two parts of it is decoded once, on the lanes.
    EXPECT_GT(context.started().stats().gpu_tiles, 0u);
    f.expect_same_batch(context, regions);
    f.expect_same_batch(context, regions);  // through the device tile cache
    EXPECT_GT(context.started().stats().gpu_tiles, 0u);
  }
  {
    HostContext context(LaneOptions{true, 0});
    context.in_place_ = false;
    f.expect_same_batch(context, regions, /*use_cache=*/false);
  }
}

TEST(DeviceRegionReader, ABatchFailsOnlyTheRegionsThatNeedABadTile) {
  testing::TiffBuilder b;
  auto tags = b.rgb_tiled_image(256, 64, 64, 64);
  for (auto& t : tags) {  // tile (2,0) lies past the end of the file
    if (t.tag == tiff::kTileOffsets) t = b.longs(tiff::kTileOffsets, {16, 16, 1u << 30, 16});
  }
  b.add_ifd(tags);
  auto bad = formats::open_model(io::memory_source(b.finish(), "bad.tif"));
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  HostContext context;
  std::vector<std::vector<uint8_t>> px(3);
  auto req = [&](size_t i, int64_t x) {
    px[i].assign(40 * 40 * 3, 0);
    region::RegionRequest r;
    r.level = &bad->levels[0];
    r.level_label = "level 0";
    r.x = x;
    r.width = r.height = 40;
    r.out = ImageView{px[i].data(), 40 * 3, 40, 40, 3, Device{DeviceType::kCuda, 0}};
    return r;
  };
  const std::vector<region::RegionRequest> requests{req(0, 10), req(1, 140), req(2, 200)};
  const std::vector<Status> statuses = DeviceRegionReader(*bad, 4242).read_batch(requests, &context);
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].message();
  EXPECT_FALSE(statuses[1].ok());
  EXPECT_NE(statuses[1].message().find("tile (2,0)"), std::string::npos) << statuses[1].message();
  EXPECT_TRUE(statuses[2].ok()) << statuses[2].message();
}

TEST(DeviceRegionReader, RefusesBadRequestsBeforeTouchingTheDevice) {
  Fixture f;
  HostContext context;
  std::vector<uint8_t> px;
  region::RegionRequest r = f.request(0, 0, 10, 10, px, Device{DeviceType::kCuda, 0});
  r.width = -1;
  EXPECT_EQ(DeviceRegionReader(f.model, f.device_uid).read(r, &context).code(), StatusCode::kInvalidArgument);
  r = f.request(0, 0, 10, 10, px, Device{DeviceType::kCuda, 0});
  r.out.width = 5;
  EXPECT_EQ(DeviceRegionReader(f.model, f.device_uid).read(r, &context).code(), StatusCode::kInvalidArgument);
  r.width = 0;
  EXPECT_TRUE(DeviceRegionReader(f.model, f.device_uid).read(r, &context).ok());
}

}  // namespace
}  // namespace tilewise::gpu
