// The writer's parts without a reader of its own output: halving against a direct computation, the
// temporary file's life (renamed only when complete, removed otherwise) and an OME-Zarr shard's bytes. The
// written files are checked by tifffile, OpenSlide, zarr and ome-zarr-py in tests/python/test_convert*.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "write/downsample.h"
#include "write/ome_zarr_writer.h"
#include "write/tiff_writer.h"

namespace tilewise::write {
namespace {

namespace fs = std::filesystem;

TEST(HalveRgb, EachPixelIsTheRoundedMeanOfItsBoxWithOddEdgesRepeated) {
  std::mt19937 rng(7);
  for (const auto& [w, h] : {std::pair{8, 6}, {9, 7}, {1, 1}, {33, 5}}) {
    const int64_t stride = w * 3 + 5;  // rows with padding after them
    std::vector<uint8_t> src(static_cast<size_t>(stride * h));
    for (auto& v : src) v = static_cast<uint8_t>(rng());
    const int64_t ow = (w + 1) / 2, oh = (h + 1) / 2, ostride = ow * 3 + 3;
    std::vector<uint8_t> dst(static_cast<size_t>(ostride * oh), 0xEE);
    halve_rgb(src.data(), stride, w, h, dst.data(), ostride);
    auto at = [&](int64_t x, int64_t y, int c) { return int{src[static_cast<size_t>(std::min<int64_t>(y, h - 1) * stride + std::min<int64_t>(x, w - 1) * 3 + c)]}; };
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        for (int c = 0; c < 3; ++c) {
          const int want = (at(2 * x, 2 * y, c) + at(2 * x + 1, 2 * y, c) + at(2 * x, 2 * y + 1, c) + at(2 * x + 1, 2 * y + 1, c) + 2) / 4;
          ASSERT_EQ(dst[static_cast<size_t>(y * ostride + x * 3 + c)], want) << w << "x" << h << " at " << x << "," << y;
        }
      }
      for (int64_t i = ow * 3; i < ostride; ++i) ASSERT_EQ(dst[static_cast<size_t>(y * ostride + i)], 0xEE);
    }
  }
}

// Any sample type and count: 2 uint16 samples and float32 against the same box means computed directly.
TEST(Halve, SixteenBitAndFloatSamplesAreTheirBoxMeans) {
  std::mt19937 rng(9);
  constexpr int64_t w = 7, h = 5;
  std::vector<uint16_t> u16(static_cast<size_t>(w * h * 2));
  for (auto& v : u16) v = static_cast<uint16_t>(rng());
  std::vector<uint16_t> u16_out(static_cast<size_t>(4 * 3 * 2));
  halve(reinterpret_cast<const uint8_t*>(u16.data()), w * 4, w, h, 2, SampleType::kUint16,
        reinterpret_cast<uint8_t*>(u16_out.data()), 4 * 4);
  std::vector<float> f32(static_cast<size_t>(w * h));
  for (auto& v : f32) v = static_cast<float>(static_cast<int32_t>(rng() % 20001) - 10000) / 7.0f;
  std::vector<float> f32_out(static_cast<size_t>(4 * 3));
  halve(reinterpret_cast<const uint8_t*>(f32.data()), w * 4, w, h, 1, SampleType::kFloat32,
        reinterpret_cast<uint8_t*>(f32_out.data()), 4 * 4);
  for (int64_t y = 0; y < 3; ++y) {
    for (int64_t x = 0; x < 4; ++x) {
      const int64_t x0 = 2 * x, x1 = std::min<int64_t>(2 * x + 1, w - 1), y0 = 2 * y, y1 = std::min<int64_t>(2 * y + 1, h - 1);
      for (int c = 0; c < 2; ++c) {
        auto at = [&](int64_t xx, int64_t yy) { return int64_t{u16[static_cast<size_t>((yy * w + xx) * 2 + c)]}; };
        ASSERT_EQ(u16_out[static_cast<size_t>((y * 4 + x) * 2 + c)], (at(x0, y0) + at(x1, y0) + at(x0, y1) + at(x1, y1) + 2) / 4);
      }
      auto at = [&](int64_t xx, int64_t yy) { return double{f32[static_cast<size_t>(yy * w + xx)]}; };
      ASSERT_EQ(f32_out[static_cast<size_t>(y * 4 + x)], static_cast<float>((at(x0, y0) + at(x1, y0) + at(x0, y1) + at(x1, y1)) * 0.25));
    }
  }
}

fs::path scratch_dir() {
  fs::path dir = fs::temp_directory_path() / ("tw_writer_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

LevelSpec small_level() {
  LevelSpec level;
  level.width = 40;
  level.height = 20;
  level.tile = 16;  // 3 x 2 tiles
  return level;
}

TEST(TiledTiffWriter, RenamesOnlyWhenCompleteAndRemovesItsFileOtherwise) {
  const fs::path dir = scratch_dir();
  const std::string out = (dir / "out.tif").string();
  const std::vector<uint8_t> tile(16 * 16 * 3, 9);
  {
    auto w = TiledTiffWriter::create(out);
    ASSERT_TRUE(w.ok()) << w.status().message();
    const int level = w->add_level(small_level());
    for (int64_t i = 0; i < 5; ++i) ASSERT_TRUE(w->write_tile(level, i, tile).ok());
    EXPECT_EQ(w->write_tile(level, 4, tile).code(), StatusCode::kInternal);  // twice
    EXPECT_EQ(w->write_tile(level, 6, tile).code(), StatusCode::kInternal);  // outside the grid
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // the partial file
    const Status s = w->finish();  // tile 5 missing
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("tile 5 of level 0 was never written"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(fs::is_empty(dir));  // nothing at the output, no partial file
  {
    auto w = TiledTiffWriter::create(out);
    ASSERT_TRUE(w.ok());
    const int level = w->add_level(small_level());
    for (int64_t i = 5; i >= 0; --i) ASSERT_TRUE(w->write_tile(level, i, tile).ok());  // any order
    ASSERT_TRUE(w->finish().ok());
  }
  EXPECT_TRUE(fs::exists(out));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_GT(fs::file_size(out), 6 * tile.size());
  fs::remove_all(dir);
}

// A SubIFD must hang from an earlier directory of the main chain: anything else fails finish().
TEST(TiledTiffWriter, ASubIfdOfASubIfdIsRefused) {
  const fs::path dir = scratch_dir();
  auto w = TiledTiffWriter::create((dir / "sub.tif").string());
  ASSERT_TRUE(w.ok());
  const std::vector<uint8_t> tile(16 * 16 * 3, 1);
  LevelSpec top = small_level();
  const int main = w->add_level(top);
  LevelSpec sub = small_level();
  sub.parent = main;
  const int first = w->add_level(sub);
  sub.parent = first;
  const int second = w->add_level(sub);
  for (int level : {main, first, second}) {
    for (int64_t i = 0; i < 6; ++i) ASSERT_TRUE(w->write_tile(level, i, tile).ok());
  }
  const Status s = w->finish();
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("not an earlier directory of the main chain"), std::string::npos) << s.message();
  fs::remove_all(dir);
}

std::vector<uint8_t> file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

OmeZarrImage two_channel_image() {
  OmeZarrImage image;
  image.name = "test";
  image.c = 2;
  image.coding = TileCoding{TileCodec::kNone, 90, true, true};
  return image;
}

// A level of 3 x 2 tiles is one shard of 3 x 3 chunks: the tiles in the order they came, then the index of
// (offset, length) pairs, little-endian, the third row's absent (all ones); each channel its own shard.
TEST(OmeZarrWriter, AShardIsItsChunksThenTheirIndexAndAbsentChunksAreAllOnes) {
  const fs::path dir = scratch_dir();
  const fs::path out = dir / "out.zarr";
  {
    auto w = OmeZarrWriter::create(out.string(), two_channel_image());
    ASSERT_TRUE(w.ok()) << w.status().message();
    for (int32_t c = 0; c < 2; ++c) {
      w->begin_plane(c, 0, 0);
      LevelSpec spec = small_level();
      spec.samples = 1;
      const int level = w->add_level(spec);
      for (int64_t i = 0; i < 6; ++i) {
        const std::vector<uint8_t> tile(static_cast<size_t>(10 + i), static_cast<uint8_t>(16 * c + i));
        ASSERT_TRUE(w->write_tile(level, i, tile).ok());
      }
    }
    ASSERT_TRUE(w->finish().ok());
  }
  for (int32_t c = 0; c < 2; ++c) {
    const std::vector<uint8_t> shard = file_bytes(out / "0" / "c" / "0" / std::to_string(c) / "0" / "0" / "0");
    ASSERT_EQ(shard.size(), (10 + 11 + 12 + 13 + 14 + 15) + 9 * 16u);
    auto entry = [&](size_t k, size_t half) {
      uint64_t v;
      std::memcpy(&v, shard.data() + (shard.size() - 9 * 16) + 16 * k + 8 * half, 8);
      return v;
    };
    uint64_t offset = 0;
    for (size_t i = 0; i < 6; ++i) {
      const size_t inner = (i / 3) * 3 + i % 3;
      EXPECT_EQ(entry(inner, 0), offset);
      EXPECT_EQ(entry(inner, 1), 10 + i);
      EXPECT_EQ(shard[offset], 16 * c + i);
      offset += 10 + i;
    }
    for (size_t k = 6; k < 9; ++k) EXPECT_EQ(entry(k, 0) & entry(k, 1), ~uint64_t{0});
  }
  EXPECT_TRUE(fs::exists(out / "zarr.json") && fs::exists(out / "0" / "zarr.json"));
  fs::remove_all(dir);
}

TEST(OmeZarrWriter, TilesOutOfOrderOrAShortPlaneFailAndNothingIsLeft) {
  const fs::path dir = scratch_dir();
  {
    auto w = OmeZarrWriter::create((dir / "out.zarr").string(), two_channel_image());
    ASSERT_TRUE(w.ok());
    w->begin_plane(0, 0, 0);
    const int level = w->add_level(small_level());
    const std::vector<uint8_t> tile(8, 1);
    ASSERT_TRUE(w->write_tile(level, 0, tile).ok());
    EXPECT_EQ(w->write_tile(level, 2, tile).code(), StatusCode::kInternal);
    w->begin_plane(1, 0, 0);  // plane 0 is missing tiles 1-5
    w->add_level(small_level());
    const Status s = w->finish();
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("missing tiles"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tilewise::write
