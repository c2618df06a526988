// Region reads through the public API over generated uncompressed slides, checked against the pattern the
// builder wrote (so every pixel has a known expected value).
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "support/tiff_builder.h"
#include "tiff/tags.h"
#include "tilewise/tilewise.h"

namespace tilewise {
namespace {

using testing::TiffBuilder;

Slide make_slide(uint32_t w, uint32_t h, uint32_t tw, uint32_t th) {
  TiffBuilder b;
  b.add_ifd(b.rgb_tiled_image(w, h, tw, th));
  auto slide = Slide::open_memory(b.finish(), "pattern.tif");
  EXPECT_TRUE(slide.ok()) << slide.status().message();
  return std::move(slide).value();
}

// A zeroed RGB buffer per region in `px`, and a view on each.
std::vector<ImageView> views_for(const std::vector<LevelRegion>& regions, std::vector<std::vector<uint8_t>>& px) {
  std::vector<ImageView> views;
  px.clear();
  for (const LevelRegion& r : regions) {
    px.emplace_back(static_cast<size_t>(r.width * r.height * 3), 0);  // moving px keeps each buffer in place
    views.push_back(ImageView{px.back().data(), r.width * 3, static_cast<int32_t>(r.width),
                              static_cast<int32_t>(r.height), 3, {}});
  }
  return views;
}

// A 128 x 64 level of 64 x 64 tiles whose tile (1,0) points past the end of the file ("damaged.tif").
Slide damaged_slide() {
  TiffBuilder b;
  auto tags = b.rgb_tiled_image(128, 64, 64, 64);
  for (auto& t : tags) {
    if (t.tag == tiff::kTileOffsets) t = b.longs(tiff::kTileOffsets, {16, 1u << 30});
  }
  b.add_ifd(tags);
  auto slide = Slide::open_memory(b.finish(), "damaged.tif");
  EXPECT_TRUE(slide.ok()) << slide.status().message();
  return std::move(slide).value();
}

// Checks every pixel of a region read at (x, y) against the pattern, or the fill colour outside.
void expect_region(const Slide& slide, int64_t x, int64_t y, int64_t w, int64_t h, const ReadOptions& opt = {}) {
  std::vector<uint8_t> buf(static_cast<size_t>(w * h * 3), 0xEE);
  Status s = slide.read_region(x, y, 0, w, h, ImageView{buf.data(), w * 3, static_cast<int32_t>(w), static_cast<int32_t>(h), 3, {}}, opt);
  ASSERT_TRUE(s.ok()) << s.message();
  const auto fill = opt.fill.value_or(std::array<uint8_t, 3>{255, 255, 255});
  const LevelInfo& l = slide.level(0);
  for (int64_t r = 0; r < h; ++r) {
    for (int64_t c = 0; c < w; ++c) {
      const int64_t px = x + c, py = y + r;
      uint8_t want[3] = {fill[0], fill[1], fill[2]};
      if (px >= 0 && py >= 0 && px < l.width && py < l.height) {
        TiffBuilder::pattern(static_cast<uint32_t>(px), static_cast<uint32_t>(py), want);
      }
      const uint8_t* got = &buf[static_cast<size_t>((r * w + c) * 3)];
      ASSERT_TRUE(got[0] == want[0] && got[1] == want[1] && got[2] == want[2])
          << "region (" << x << "," << y << " " << w << "x" << h << ") pixel (" << c << "," << r << ")";
    }
  }
}

TEST(RegionReader, AlignedUnalignedTinyAndWholeLevelReads) {
  Slide slide = make_slide(200, 150, 64, 32);  // edge tiles on both axes
  expect_region(slide, 0, 0, 64, 32);
  expect_region(slide, 64, 32, 128, 64);
  expect_region(slide, 13, 7, 100, 90);
  expect_region(slide, 199, 149, 1, 1);
  expect_region(slide, 63, 31, 2, 2);
  expect_region(slide, 0, 0, 200, 150);
  expect_region(slide, 150, 100, 50, 50);
}

TEST(RegionReader, OutOfBoundsPartsGetTheFillColour) {
  Slide slide = make_slide(200, 150, 64, 32);
  expect_region(slide, -10, -20, 50, 60);
  expect_region(slide, 180, 140, 50, 30);
  expect_region(slide, -5, -5, 210, 160);
  expect_region(slide, 500, 500, 20, 20);
  expect_region(slide, -100, 0, 50, 10);
  ReadOptions black;
  black.fill = std::array<uint8_t, 3>{0, 0, 0};
  expect_region(slide, -30, 140, 80, 40, black);
}

TEST(RegionReader, ResultsAreTheSameWithAndWithoutTheCache) {
  Slide slide = make_slide(256, 256, 64, 64);
  set_cache_capacity(64 << 20);
  reset_cache_stats();
  expect_region(slide, 10, 10, 100, 100);  // first touch: windows decoded, nothing cached
  EXPECT_EQ(cache_stats().entries, 0u);
  expect_region(slide, 10, 10, 100, 100);  // second touch: the 4 edge tiles are admitted
  EXPECT_EQ(cache_stats().entries, 4u);
  expect_region(slide, 10, 10, 100, 100);  // third: served from the cache
  CacheStats s = cache_stats();
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.misses, 8u);
  ReadOptions no_cache;
  no_cache.use_cache = false;
  expect_region(slide, 10, 10, 100, 100, no_cache);
  set_cache_capacity(0);
  expect_region(slide, 33, 17, 150, 120);
  set_cache_capacity(256 << 20);
}

TEST(RegionReader, OneThreadOrThePoolGiveTheSamePixels) {
  Slide slide = make_slide(300, 200, 64, 32);
  for (int threads : {1, 2, 0}) {
    ReadOptions opt;
    opt.threads = threads;
    opt.use_cache = false;
    expect_region(slide, 13, 7, 250, 180, opt);
    expect_region(slide, -5, 190, 40, 40, opt);
  }
}

TEST(RegionReader, ManyRegionsInOneCallEqualSingleReads) {
  Slide slide = make_slide(300, 200, 64, 32);
  const std::vector<LevelRegion> regions{{0, 0, 64, 32}, {13, 7, 100, 90}, {-10, -20, 50, 60}, {290, 190, 30, 30}};
  std::vector<std::vector<uint8_t>> px;
  std::vector<ImageView> views = views_for(regions, px);
  const std::vector<Status> statuses = slide.read_level_regions(0, regions, views);
  ASSERT_EQ(statuses.size(), regions.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    ASSERT_TRUE(statuses[i].ok()) << statuses[i].message();
    std::vector<uint8_t> one(px[i].size(), 1);
    const LevelRegion& r = regions[i];
    ASSERT_TRUE(slide.read_level_region(0, r.x, r.y, r.width, r.height,
                                        ImageView{one.data(), r.width * 3, static_cast<int32_t>(r.width),
                                                  static_cast<int32_t>(r.height), 3, {}}).ok());
    EXPECT_EQ(px[i], one) << "region " << i;
  }
  // Mismatched counts, a missing level and views on two devices are refused, naming the file.
  EXPECT_EQ(slide.read_level_regions(0, regions, std::span<const ImageView>(views).first(2))[0].code(),
            StatusCode::kInvalidArgument);
  EXPECT_NE(slide.read_level_regions(3, regions, views)[0].message().find("pattern.tif: level 3"), std::string::npos);
  views[1].device = Device{DeviceType::kCuda, 0};
  EXPECT_EQ(slide.read_level_regions(0, regions, views)[3].code(), StatusCode::kInvalidArgument);
}

TEST(RegionReader, ManyThreadsReadOneSlideConsistently) {
  Slide slide = make_slide(512, 384, 64, 64);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      for (int i = 0; i < 30; ++i) {
        const int64_t x = static_cast<int64_t>(rng() % 600) - 50, y = static_cast<int64_t>(rng() % 450) - 50;
        const int64_t w = 1 + rng() % 150, h = 1 + rng() % 150;
        std::vector<uint8_t> a(static_cast<size_t>(w * h * 3)), b(a.size());
        ImageView va{a.data(), w * 3, static_cast<int32_t>(w), static_cast<int32_t>(h), 3, {}};
        ImageView vb{b.data(), w * 3, static_cast<int32_t>(w), static_cast<int32_t>(h), 3, {}};
        ReadOptions no_cache;
        no_cache.use_cache = false;
        if (!slide.read_region(x, y, 0, w, h, va).ok() || !slide.read_region(x, y, 0, w, h, vb, no_cache).ok() || a != b) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  expect_region(slide, 100, 100, 300, 200);
}

TEST(RegionReader, SparseTilesReadAsBackground) {
  TiffBuilder b;
  auto tags = b.rgb_tiled_image(128, 64, 64, 64);
  for (auto& t : tags) {
    if (t.tag == tiff::kTileByteCounts) {
      std::vector<uint32_t> counts = {0, 64 * 64 * 3};
      t = b.longs(tiff::kTileByteCounts, counts);
    }
  }
  b.add_ifd(tags);
  auto slide = Slide::open_memory(b.finish(), "sparse.tif");
  ASSERT_TRUE(slide.ok());
  std::vector<uint8_t> buf(128 * 64 * 3);
  ASSERT_TRUE(slide->read_region(0, 0, 0, 128, 64, ImageView{buf.data(), 384, 128, 64, 3, {}}).ok());
  EXPECT_EQ(buf[0], 255);
  EXPECT_EQ(buf[(63 * 128 + 63) * 3], 255);  // last pixel of the sparse tile
  uint8_t want[3];
  TiffBuilder::pattern(127, 63, want);
  EXPECT_EQ(buf[(63 * 128 + 127) * 3], want[0]);
  EXPECT_EQ(buf[(63 * 128 + 10) * 3 + 1], 255);
}

// One call of regions read on the calling thread (threads = 1, as loader workers read) decodes a tile that
// several of them cut once for the call (region/batch_tiles.h): the pixels must be the pattern's, with the
// cache on or off, for neighbouring, overlapping and repeated regions; a damaged tile fails exactly the
// regions that need it.
TEST(RegionReader, RegionsOfOneCallShareTheTilesTheyCut) {
  Slide slide = make_slide(300, 200, 64, 32);
  std::vector<LevelRegion> regions;
  for (int64_t x = 0; x + 40 <= 300; x += 20) regions.push_back({x, 5, 40, 50});  // each tile cut by 2-3 regions
  regions.push_back({10, 10, 100, 100});
  regions.push_back({10, 10, 100, 100});  // the same region twice
  regions.push_back({-5, 150, 40, 80});   // partly outside
  ReadOptions opt;
  opt.threads = 1;
  for (bool cache : {false, true}) {
    opt.use_cache = cache;
    std::vector<std::vector<uint8_t>> px;
    const std::vector<ImageView> views = views_for(regions, px);
    const std::vector<Status> statuses = slide.read_level_regions(0, regions, views, opt);
    for (size_t i = 0; i < regions.size(); ++i) {
      ASSERT_TRUE(statuses[i].ok()) << statuses[i].message();
      const LevelRegion& r = regions[i];
      for (int64_t y = 0; y < r.height; ++y) {
        for (int64_t x = 0; x < r.width; ++x) {
          uint8_t want[3] = {255, 255, 255};
          if (r.x + x >= 0 && r.y + y >= 0 && r.x + x < 300 && r.y + y < 200) {
            TiffBuilder::pattern(static_cast<uint32_t>(r.x + x), static_cast<uint32_t>(r.y + y), want);
          }
          const uint8_t* got = &px[i][static_cast<size_t>((y * r.width + x) * 3)];
          ASSERT_TRUE(got[0] == want[0] && got[1] == want[1] && got[2] == want[2])
              << "cache " << cache << " region " << i << " pixel (" << x << "," << y << ")";
        }
      }
    }
  }
  Slide damaged = damaged_slide();
  const std::vector<LevelRegion> cuts{{10, 0, 40, 40}, {50, 0, 40, 40}, {70, 10, 40, 40}, {20, 20, 30, 30}};
  std::vector<uint8_t> buf(cuts.size() * 40 * 40 * 3);
  std::vector<ImageView> views;
  for (size_t i = 0; i < cuts.size(); ++i) {
    views.push_back(ImageView{buf.data() + i * 40 * 40 * 3, cuts[i].width * 3, static_cast<int32_t>(cuts[i].width),
                              static_cast<int32_t>(cuts[i].height), 3, {}});
  }
  opt.use_cache = false;
  const std::vector<Status> statuses = damaged.read_level_regions(0, cuts, views, opt);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].message();
  EXPECT_TRUE(statuses[3].ok()) << statuses[3].message();
  for (size_t i : {size_t{1}, size_t{2}}) {
    EXPECT_EQ(statuses[i].code(), StatusCode::kCorrupt) << i;
    EXPECT_NE(statuses[i].message().find("damaged.tif: level 0 tile (1,0)"), std::string::npos) << statuses[i].message();
  }
}

TEST(RegionReader, DamagedTilesNameFileLevelTileAndOffset) {
  Slide slide = damaged_slide();
  std::vector<uint8_t> buf(128 * 64 * 3);
  ImageView view{buf.data(), 384, 128, 64, 3, {}};
  Status s = slide.read_region(0, 0, 0, 128, 64, view);
  ASSERT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("damaged.tif: level 0 tile (1,0) at offset 1073741824"), std::string::npos) << s.message();
  // The undamaged tile still reads.
  EXPECT_TRUE(slide.read_region(0, 0, 0, 64, 64, view).ok());
}

TEST(RegionReader, InvalidRequestsAreRefused) {
  Slide slide = make_slide(64, 64, 64, 64);
  std::vector<uint8_t> buf(64 * 64 * 3);
  ImageView view{buf.data(), 192, 64, 64, 3, {}};
  EXPECT_EQ(slide.read_region(0, 0, 1, 10, 10, view).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(slide.read_region(0, 0, -1, 10, 10, view).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(slide.read_region(0, 0, 0, -1, 10, view).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(slide.read_region(0, 0, 0, 65, 10, view).code(), StatusCode::kInvalidArgument);  // view too small
  EXPECT_TRUE(slide.read_region(0, 0, 0, 0, 0, view).ok());
  EXPECT_EQ(check_region_size(1 << 30, 1 << 30).code(), StatusCode::kOutOfMemory);
  EXPECT_TRUE(check_region_size(1000, 1000).ok());
}

}  // namespace
}  // namespace tilewise
