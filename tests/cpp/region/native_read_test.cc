// Region reads of a level's own samples (16-bit grey here) through the host reader: every pixel equals
// the value written, outside the level reads 0, and the tile cache, the tiles a batch shares and the RGB
// rendering of the same level never mix their pixels.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cache/tile_cache.h"
#include "formats/format_registry.h"
#include "io/source.h"
#include "region/host_region_reader.h"
#include "support/tiff_builder.h"
#include "tiff/tags.h"

namespace tilewise::region {
namespace {

constexpr uint32_t kWidth = 100, kHeight = 70, kTile = 32;

uint16_t value(int64_t x, int64_t y) { return static_cast<uint16_t>(x * 300 + y + 7); }

// A tiled 16-bit grey TIFF (uncompressed, little-endian) of value(x, y).
formats::SlideModel grey16_model() {
  testing::TiffBuilder b;
  const uint32_t across = (kWidth + kTile - 1) / kTile, down = (kHeight + kTile - 1) / kTile;
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> counts;
  for (uint32_t ty = 0; ty < down; ++ty) {
    for (uint32_t tx = 0; tx < across; ++tx) {
      std::vector<uint8_t> tile(kTile * kTile * 2, 0);
      for (uint32_t y = 0; y < kTile; ++y) {
        for (uint32_t x = 0; x < kTile; ++x) {
          const uint16_t v = value(tx * kTile + x, ty * kTile + y);
          std::memcpy(&tile[(y * kTile + x) * 2], &v, 2);
        }
      }
      offsets.push_back(b.append(tile));
      counts.push_back(static_cast<uint32_t>(tile.size()));
    }
  }
  std::vector<uint32_t> offsets32(offsets.begin(), offsets.end());
  b.add_ifd({b.longs(tiff::kImageWidth, {kWidth}), b.longs(tiff::kImageLength, {kHeight}),
             b.shorts(tiff::kBitsPerSample, {16}), b.shorts(tiff::kCompression, {1}),
             b.shorts(tiff::kPhotometric, {1}), b.shorts(tiff::kSamplesPerPixel, {1}),
             b.longs(tiff::kTileWidth, {kTile}), b.longs(tiff::kTileLength, {kTile}),
             b.longs(tiff::kTileOffsets, offsets32), b.longs(tiff::kTileByteCounts, counts)});
  auto model = formats::open_model(io::memory_source(b.finish(), "grey16.tif"));
  EXPECT_TRUE(model.ok()) << model.status().message();
  return std::move(model).value();
}

struct Reader {
  formats::SlideModel model = grey16_model();
  HostRegionReader reader{model, 4242};
  RegionRequest request(int64_t x, int64_t y, int64_t w, int64_t h, std::vector<uint8_t>& px, bool native,
                        bool cache) const {
    const int channels = native ? 1 : 3, sample = native ? 2 : 1;
    px.assign(static_cast<size_t>(w * h * channels * sample), 0xEE);
    RegionRequest r;
    r.level = &model.levels[0];
    r.level_label = "level 0";
    r.x = x;
    r.y = y;
    r.width = w;
    r.height = h;
    r.out = ImageView{px.data(), w * channels * sample, static_cast<int32_t>(w), static_cast<int32_t>(h), channels,
                      {}, sample};
    r.use_cache = cache;
    return r;
  }
};

void expect_values(const std::vector<uint8_t>& px, int64_t x, int64_t y, int64_t w, int64_t h) {
  for (int64_t r = 0; r < h; ++r) {
    for (int64_t c = 0; c < w; ++c) {
      const int64_t lx = x + c, ly = y + r;
      const uint16_t want = lx >= 0 && ly >= 0 && lx < kWidth && ly < kHeight ? value(lx, ly) : 0;
      uint16_t got;
      std::memcpy(&got, &px[static_cast<size_t>((r * w + c) * 2)], 2);
      ASSERT_EQ(got, want) << "region (" << x << "," << y << " " << w << "x" << h << ") pixel (" << c << "," << r << ")";
    }
  }
}

TEST(NativeRead, SixteenBitSamplesAsWrittenWithAndWithoutTheCache) {
  Reader f;
  cache::TileCache::global().set_capacity(64 << 20);
  for (bool cache : {false, true, true}) {  // the second cached pass reads cut tiles from the cache
    for (const auto& r : {std::array<int64_t, 4>{0, 0, 100, 70}, {5, 3, 40, 50}, {-10, 60, 30, 30}, {90, -4, 20, 10}}) {
      std::vector<uint8_t> px;
      const Status s = f.reader.read(f.request(r[0], r[1], r[2], r[3], px, true, cache));
      ASSERT_TRUE(s.ok()) << s.message();
      expect_values(px, r[0], r[1], r[2], r[3]);
    }
  }
  // The RGB rendering of the same level, after its samples were cached: the high byte, grey.
  std::vector<uint8_t> rgb;
  ASSERT_TRUE(f.reader.read(f.request(5, 3, 40, 50, rgb, false, true)).ok());
  for (int64_t i = 0; i < 40 * 50; ++i) {
    const uint8_t want = static_cast<uint8_t>(value(5 + i % 40, 3 + i / 40) >> 8);
    ASSERT_EQ(rgb[static_cast<size_t>(3 * i)], want) << i;
    ASSERT_EQ(rgb[static_cast<size_t>(3 * i + 1)], want) << i;
  }
}

TEST(NativeRead, ABatchOfRegionsSharingTilesGivesEachItsSamples) {
  Reader f;
  std::vector<std::vector<uint8_t>> px(12);
  std::vector<RegionRequest> requests;
  for (int i = 0; i < 12; ++i) {
    RegionRequest r = f.request(7 * i, 2 * i, 30, 25, px[static_cast<size_t>(i)], true, false);
    r.threads = 1;  // read on this thread: the shared tiles are decoded once for the call
    requests.push_back(r);
  }
  const std::vector<Status> statuses = f.reader.read_batch(requests);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(statuses[static_cast<size_t>(i)].ok()) << statuses[static_cast<size_t>(i)].message();
    expect_values(px[static_cast<size_t>(i)], 7 * i, 2 * i, 30, 25);
  }
}

TEST(NativeRead, ViewsThatAreNeitherRgbNorTheLevelsSamplesAreRefused) {
  Reader f;
  std::vector<uint8_t> px;
  RegionRequest r = f.request(0, 0, 10, 10, px, true, false);
  r.out.sample_bytes = 1;  // 8-bit grey: not the level's 16-bit samples
  r.out.stride = 10;
  const Status s = f.reader.read(r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1 of 16 bits"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tilewise::region
