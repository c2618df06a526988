// Windows low in JPEG tiles decoded from the MCU row above them (codecs/jpeg/tile_resume.h): through the public
// read path, every window equals the same read with the MCU index off, for tables in JPEGTables and in the
// tiles, YCbCr 4:2:0 / 4:2:2 / 4:4:4 and Aperio's RGB components; deep windows are counted as resumed; a
// tile damaged below the checkpoint still reports its error.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "support/encoders.h"
#include "support/tiff_builder.h"
#include "tiff/tags.h"
#include "tilewise/config.h"
#include "tilewise/slide.h"

namespace tilewise {
namespace {

using testing::TiffBuilder;

struct Layout {
  int h_samp, v_samp;
  bool rgb_components, abbreviated;
};

std::vector<uint8_t> textured_tile(int size, int col, int row) {
  std::vector<uint8_t> px(static_cast<size_t>(size) * size * 3);
  std::mt19937 rng(static_cast<uint32_t>(col * 31 + row));
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int v = ((x + col * size) * (c + 2) + (y + row * size) * (3 - c)) / 3 + static_cast<int>(rng() % 48);
        px[(static_cast<size_t>(y) * size + x) * 3 + c] = static_cast<uint8_t>(v & 0xFF);
      }
    }
  }
  return px;
}

// A 2 x 2 grid of JPEG tiles (512 x 512). `damage_tile`: that tile's entropy data is cut short.
std::vector<uint8_t> jpeg_tiff(const Layout& k, int damage_tile = -1) {
  constexpr int kTile = 256;
  TiffBuilder b;
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> counts;
  std::vector<uint8_t> tables;
  for (int t = 0; t < 4; ++t) {
    testing::Encoded e = testing::jpeg_encode(textured_tile(kTile, t % 2, t / 2), kTile, kTile, 3, k.rgb_components,
                                              k.h_samp, k.v_samp, k.abbreviated);
    if (t == damage_tile) e.image.resize(e.image.size() * 3 / 4);
    tables = e.tables;
    offsets.push_back(b.append(e.image));
    counts.push_back(static_cast<uint32_t>(e.image.size()));
  }
  std::vector<testing::TagSpec> tags = {
      b.longs(tiff::kImageWidth, {2 * kTile}),
      b.longs(tiff::kImageLength, {2 * kTile}),
      b.shorts(tiff::kBitsPerSample, {8, 8, 8}),
      b.shorts(tiff::kCompression, {7}),
      b.shorts(tiff::kPhotometric,
               {static_cast<uint16_t>(k.rgb_components ? tiff::kPhotometricRgb : tiff::kPhotometricYCbCr)}),
      b.shorts(tiff::kSamplesPerPixel, {3}),
      b.shorts(tiff::kPlanarConfiguration, {1}),
      b.longs(tiff::kTileWidth, {kTile}),
      b.longs(tiff::kTileLength, {kTile}),
      b.offsets(tiff::kTileOffsets, offsets),
      b.longs(tiff::kTileByteCounts, counts),
  };
  if (!k.rgb_components) {
    tags.push_back(
        b.shorts(tiff::kYCbCrSubSampling, {static_cast<uint16_t>(k.h_samp), static_cast<uint16_t>(k.v_samp)}));
  }
  if (!tables.empty()) tags.push_back(b.bytes(tiff::kJpegTables, tables));
  b.add_ifd(tags);
  return b.finish();
}

std::vector<uint8_t> read(const Slide& slide, int64_t x, int64_t y, int32_t w, int32_t h, Status* status = nullptr) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * 3);
  ReadOptions options;
  options.use_cache = false;
  options.threads = 1;
  const Status s = slide.read_region(x, y, 0, w, h, ImageView{px.data(), int64_t{w} * 3, w, h, 3, {}}, options);
  if (status)
    *status = s;
  else
    EXPECT_TRUE(s.ok()) << s.message();
  return px;
}

class TileResume : public ::testing::TestWithParam<Layout> {};

TEST_P(TileResume, WindowsEqualTheReadWithoutTheIndex) {
  auto slide = Slide::open_memory(jpeg_tiff(GetParam()), "jpeg-tiles.tif");
  ASSERT_TRUE(slide.ok()) << slide.status().message();
  std::mt19937 rng(3);
  const uint64_t resumed_before = mcu_index_stats().resumed;
  for (int i = 0; i < 60; ++i) {
    const int64_t x = static_cast<int64_t>(rng() % 480) - 10, y = static_cast<int64_t>(rng() % 480) - 10;
    const int32_t w = 1 + static_cast<int32_t>(rng() % 300), h = 1 + static_cast<int32_t>(rng() % 300);
    set_mcu_index_capacity(64 << 20);
    const std::vector<uint8_t> with = read(*slide, x, y, w, h);
    const std::vector<uint8_t> again = read(*slide, x, y, w, h);  // from the index built by the first read
    set_mcu_index_capacity(0);
    const std::vector<uint8_t> without = read(*slide, x, y, w, h);
    ASSERT_EQ(0, std::memcmp(with.data(), without.data(), with.size()))
        << "window " << x << "," << y << " " << w << "x" << h;
    ASSERT_EQ(0, std::memcmp(again.data(), without.data(), again.size())) << "window " << x << "," << y;
  }
  set_mcu_index_capacity(64 << 20);
  // A window that starts 200 rows into the top tiles is decoded from their row checkpoints.
  const uint64_t before = mcu_index_stats().resumed;
  read(*slide, 100, 200, 64, 64);
  EXPECT_GT(mcu_index_stats().resumed, before);
  EXPECT_GT(mcu_index_stats().resumed, resumed_before);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TileResume,
                         ::testing::Values(Layout{2, 2, false, true}, Layout{2, 2, false, false},
                                           Layout{2, 1, false, true}, Layout{1, 1, false, true},
                                           Layout{1, 1, true, true}, Layout{1, 1, true, false}));

// Threads indexing and resuming the same tiles at once (one entry lock per tile, the shared layouts) read
// what one thread reads without the index.
TEST(TileResumeThreads, ManyThreadsReadDeepWindowsConsistently) {
  auto slide = Slide::open_memory(jpeg_tiff(Layout{2, 2, false, true}), "threads.tif");
  ASSERT_TRUE(slide.ok());
  std::vector<std::array<int64_t, 2>> windows;
  for (int i = 0; i < 24; ++i) windows.push_back({(i * 37) % 400, 40 + (i * 53) % 200});
  set_mcu_index_capacity(0);
  std::vector<std::vector<uint8_t>> want;
  for (const auto& w : windows) want.push_back(read(*slide, w[0], w[1], 96, 96));
  set_mcu_index_capacity(64 << 20);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < windows.size(); ++k) {
        const size_t i = (k + static_cast<size_t>(t) * 5) % windows.size();
        if (read(*slide, windows[i][0], windows[i][1], 96, 96) != want[i]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(TileResumeDamage, ATileCutShortStillReportsItsError) {
  auto slide = Slide::open_memory(jpeg_tiff(Layout{2, 2, false, true}, /*damage_tile=*/0), "cut.tif");
  ASSERT_TRUE(slide.ok());
  set_mcu_index_capacity(64 << 20);
  for (int64_t y : {20, 120, 230}) {  // above the cut, and at it
    Status s;
    read(*slide, 10, y, 40, 20, &s);
    if (y >= 230) {
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.message().find("tile (0,0)"), std::string::npos) << s.message();
    } else {
      EXPECT_TRUE(s.ok()) << "row " << y << ": " << s.message();  // the data above the cut is whole
    }
  }
  // Every window at the tile's bottom fails, with the index or without it.
  for (uint64_t capacity : {uint64_t{64} << 20, uint64_t{0}}) {
    set_mcu_index_capacity(capacity);
    Status s;
    read(*slide, 0, 240, 16, 16, &s);
    EXPECT_FALSE(s.ok());
  }
  set_mcu_index_capacity(64 << 20);
}

}  // namespace
}  // namespace tilewise
