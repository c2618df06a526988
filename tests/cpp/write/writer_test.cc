// The writer's parts without a reader of its own output: halving against a direct computation, and the
// temporary file's life (renamed only when complete, removed otherwise). The written files are checked
// by tifffile and OpenSlide in tests/python/test_convert.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <vector>

#include "write/downsample.h"
#include "write/tiff_writer.h"

namespace tilewise::write {
namespace {

namespace fs = std::filesystem;

TEST(HalveRgb, EachPixelIsTheRoundedMeanOfItsBoxWithOddEdgesRepeated) {
  std::mt19937 rng(7);
  for (const auto [w, h] : {std::pair{8, 6}, {9, 7}, {1, 1}, {33, 5}}) {
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

fs::path scratch_dir() {
  fs::path dir = fs::temp_directory_path() / ("tw_writer_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TiffLevel small_level() {
  TiffLevel level;
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

}  // namespace
}  // namespace tilewise::write
