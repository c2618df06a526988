#include <gtest/gtest.h>

#include "formats/format_registry.h"
#include "support/tiff_builder.h"
#include "tiff/tags.h"

namespace tilewise::formats {
namespace {

using testing::TiffBuilder;

std::string prop(const SlideModel& m, const std::string& key) {
  for (const auto& [k, v] : m.properties)
    if (k == key) return v;
  return "<missing>";
}

TEST(GenericTiff, LevelsFromReducedIfdsAndSubIfdsOrderedBySize) {
  TiffBuilder b;
  auto l0 = b.rgb_tiled_image(300, 250, 64, 64);
  l0.push_back(b.rational(tiff::kXResolution, 40000, 1));
  l0.push_back(b.rational(tiff::kYResolution, 40000, 1));
  l0.push_back(b.shorts(tiff::kResolutionUnit, {3}));
  l0.push_back(b.ascii(tiff::kImageDescription, "generated"));
  int main = b.add_ifd(l0);
  int sub = b.add_ifd(b.rgb_tiled_image(150, 125, 64, 64, 1));
  b.add_ifd(b.rgb_tiled_image(37, 31, 64, 64, 1));  // reduced, main chain
  b.add_ifd(b.rgb_tiled_image(64, 64, 64, 64, 0));  // not reduced: an associated image, not a level
  b.add_ifd(b.rgb_tiled_image(75, 62, 64, 64, 1));
  b.set_sub_ifds(main, {sub});
  auto model = open_model(io::memory_source(b.finish(), "gen.tif"));
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_EQ(model->levels.size(), 4u);
  EXPECT_EQ(model->vendor, "generic-tiff");
  const int64_t widths[] = {300, 150, 75, 37};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(model->levels[i].info.width, widths[i]);
  EXPECT_DOUBLE_EQ(model->levels[2].info.downsample, (300.0 / 75 + 250.0 / 62) / 2);
  EXPECT_EQ(prop(*model, "openslide.level[2].downsample"), "4.0161290322580641");
  EXPECT_EQ(prop(*model, "openslide.level-count"), "4");
  EXPECT_EQ(prop(*model, "openslide.mpp-x"), "0.25");
  EXPECT_EQ(prop(*model, "openslide.comment"), "generated");
  EXPECT_EQ(prop(*model, "tiff.ResolutionUnit"), "centimeter");
  ASSERT_TRUE(model->mpp.has_value());
  EXPECT_DOUBLE_EQ(model->mpp->first, 0.25);
}

TEST(GenericTiff, UnsupportedCompressionNamesTheDirectory) {
  TiffBuilder b;
  auto tags = b.rgb_tiled_image(64, 64, 64, 64);
  for (auto& t : tags) if (t.tag == tiff::kCompression) t = b.shorts(tiff::kCompression, {52479});
  b.add_ifd(tags);
  auto model = open_model(io::memory_source(b.finish(), "odd.tif"));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(model.status().message().find("odd.tif"), std::string::npos);
  EXPECT_NE(model.status().message().find("IFD 0"), std::string::npos);
  EXPECT_NE(model.status().message().find("52479"), std::string::npos);
}

TEST(GenericTiff, HugeDecodeUnitsAreRefused) {
  TiffBuilder b;
  auto tags = b.rgb_tiled_image(64, 64, 64, 64);
  for (auto& t : tags) {
    if (t.tag == tiff::kImageWidth) t = b.longs(tiff::kImageWidth, {200000});
    if (t.tag == tiff::kImageLength) t = b.longs(tiff::kImageLength, {200000});
    if (t.tag == tiff::kTileWidth) t = b.longs(tiff::kTileWidth, {100000});
    if (t.tag == tiff::kTileLength) t = b.longs(tiff::kTileLength, {100000});
    if (t.tag == tiff::kTileOffsets) t = b.longs(tiff::kTileOffsets, {8, 8, 8, 8});
    if (t.tag == tiff::kTileByteCounts) t = b.longs(tiff::kTileByteCounts, {1, 1, 1, 1});
  }
  b.add_ifd(tags);
  auto model = open_model(io::memory_source(b.finish(), "huge.tif"));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(model.status().message().find("limit"), std::string::npos);
}

TEST(FormatRegistry, NonTiffAndEmptyInputsAreUnsupported) {
  auto empty = open_model(io::memory_source({}, "empty.tif"));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kUnsupported);
  auto png = open_model(io::memory_source({0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0}, "x.png"));
  ASSERT_FALSE(png.ok());
  EXPECT_EQ(png.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(png.status().message().find("x.png"), std::string::npos);
  EXPECT_EQ(detect_vendor(io::memory_source({1, 2, 3}, "junk")), "");
  ASSERT_EQ(format_table().back().name, std::string("generic-tiff"));
}

}  // namespace
}  // namespace tilewise::formats
