#include <gtest/gtest.h>

#include "support/tiff_builder.h"
#include "tiff/tags.h"
#include "tiff/tiff_file.h"

namespace tilewise::tiff {
namespace {

using testing::TagSpec;
using testing::TiffBuilder;

Result<std::shared_ptr<const TiffFile>> parse_bytes(std::vector<uint8_t> bytes) {
  return TiffFile::parse(io::memory_source(std::move(bytes), "test.tif"));
}

class TiffKinds : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(TiffKinds, ParsesTiledImageTagsInEveryLayout) {
  const auto [big, le] = GetParam();
  TiffBuilder b(big, le);
  auto tags = b.rgb_tiled_image(100, 70, 32, 16);
  tags.push_back(b.ascii(kImageDescription, "hello|MPP = 0.25"));
  tags.push_back(b.ascii(kSoftware, "tilewise-test"));
  tags.push_back(b.rational(kXResolution, 40000, 1));
  tags.push_back(b.shorts(kResolutionUnit, {3}));
  tags.push_back(b.bytes(kJpegTables, std::vector<uint8_t>(40, 0xAB)));
  b.add_ifd(tags);
  b.add_ifd(b.rgb_tiled_image(50, 35, 32, 16, 1));
  auto parsed = parse_bytes(b.finish());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const TiffFile& f = **parsed;
  EXPECT_EQ(f.big_tiff(), big);
  EXPECT_EQ(f.little_endian(), le);
  ASSERT_EQ(f.ifds().size(), 2u);
  const Ifd& i0 = f.ifds()[0];
  EXPECT_EQ(i0.width, 100u);
  EXPECT_EQ(i0.height, 70u);
  EXPECT_TRUE(i0.tiled);
  EXPECT_EQ(i0.chunk_width, 32u);
  EXPECT_EQ(i0.chunk_height, 16u);
  EXPECT_EQ(i0.chunk_count(), 4u * 5u);
  EXPECT_EQ(i0.samples_per_pixel, 3u);
  EXPECT_EQ(i0.bits_per_sample, (std::vector<uint32_t>{8, 8, 8}));
  EXPECT_EQ(*i0.image_description, "hello|MPP = 0.25");
  EXPECT_EQ(*i0.software, "tilewise-test");
  EXPECT_FLOAT_EQ(*i0.x_resolution, 40000.0f);
  EXPECT_EQ(*i0.resolution_unit, 3u);
  EXPECT_EQ(i0.jpeg_tables.size(), 40u);
  EXPECT_FALSE(i0.is_reduced_resolution());
  EXPECT_TRUE(f.ifds()[1].is_reduced_resolution());
  EXPECT_EQ(f.ifds()[1].index, 1);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, TiffKinds,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

TEST(TiffFile, StripImageDefaultsRowsPerStripToHeight) {
  TiffBuilder b;
  const uint64_t data = b.append(std::vector<uint8_t>(10 * 7 * 3, 9));
  b.add_ifd({b.longs(kImageWidth, {10}), b.longs(kImageLength, {7}), b.shorts(kSamplesPerPixel, {3}),
             b.shorts(kBitsPerSample, {8, 8, 8}), b.longs(kStripOffsets, {static_cast<uint32_t>(data)}),
             b.longs(kStripByteCounts, {210})});
  auto parsed = parse_bytes(b.finish());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const Ifd& i = (*parsed)->ifds()[0];
  EXPECT_FALSE(i.tiled);
  EXPECT_EQ(i.chunk_width, 10u);
  EXPECT_EQ(i.chunk_height, 7u);
  EXPECT_EQ(i.chunk_count(), 1u);
}

TEST(TiffFile, AnEmptyBitsPerSampleKeepsTheDefault) {
  // A fuzz input: BitsPerSample with a count of 0 left an empty list that the level builder indexed.
  TiffBuilder b;
  const uint64_t data = b.append(std::vector<uint8_t>(10 * 7, 9));
  b.add_ifd({b.longs(kImageWidth, {10}), b.longs(kImageLength, {7}), b.shorts(kBitsPerSample, {}),
             b.longs(kStripOffsets, {static_cast<uint32_t>(data)}), b.longs(kStripByteCounts, {70})});
  auto parsed = parse_bytes(b.finish());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ((*parsed)->ifds()[0].bits_per_sample, (std::vector<uint32_t>{1}));
}

TEST(TiffFile, ParsesSubIfds) {
  TiffBuilder b;
  int main = b.add_ifd(b.rgb_tiled_image(64, 64, 16, 16));
  int s1 = b.add_ifd(b.rgb_tiled_image(32, 32, 16, 16, 1));
  int s2 = b.add_ifd(b.rgb_tiled_image(16, 16, 16, 16, 1));
  b.add_ifd(b.rgb_tiled_image(8, 8, 16, 16, 1));
  b.set_sub_ifds(main, {s1, s2});
  auto parsed = parse_bytes(b.finish());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ((*parsed)->ifds().size(), 2u);
  const Ifd& i0 = (*parsed)->ifds()[0];
  ASSERT_EQ(i0.sub_ifds.size(), 2u);
  EXPECT_EQ(i0.sub_ifds[0].width, 32u);
  EXPECT_EQ(i0.sub_ifds[1].width, 16u);
  EXPECT_EQ(i0.sub_ifds[1].parent, 0);
  EXPECT_EQ(i0.sub_ifds[1].sub_index, 1);
  EXPECT_EQ((*parsed)->ifds()[1].width, 8u);
}

TEST(TiffFile, RefusesIfdLoops) {
  TiffBuilder b;
  b.add_ifd(b.rgb_tiled_image(16, 16, 16, 16));
  b.add_ifd(b.rgb_tiled_image(16, 16, 16, 16, 1));
  b.set_next(1, 0);
  auto parsed = parse_bytes(b.finish());
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(parsed.status().message().find("IFD loop"), std::string::npos);
  EXPECT_NE(parsed.status().message().find("test.tif"), std::string::npos);
}

TEST(TiffFile, RefusesPixelTagDataOutsideTheFileAndLeavesOutDamagedMetadata) {
  {
    TiffBuilder b;
    auto tags = b.rgb_tiled_image(64, 64, 16, 16);
    for (auto& t : tags) {
      if (t.tag == kTileByteCounts) t = TagSpec{kTileByteCounts, kLong, 16, {}, true, 1u << 30};
    }
    b.add_ifd(tags);
    auto parsed = parse_bytes(b.finish());
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(parsed.status().message().find("outside the file"), std::string::npos);
  }
  // A description or an ICC profile is not needed to read the pixels: the directory opens without it and
  // says what it left out.
  TiffBuilder b;
  auto tags = b.rgb_tiled_image(64, 64, 16, 16);
  tags.push_back(TagSpec{kImageDescription, kAscii, 100, {}, true, 1u << 30});
  tags.push_back(TagSpec{kIccProfile, kUndefined, 3144, {}, true, 1u << 29});
  b.add_ifd(tags);
  auto parsed = parse_bytes(b.finish());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const Ifd& ifd = (*parsed)->ifds()[0];
  EXPECT_FALSE(ifd.image_description.has_value());
  EXPECT_TRUE(ifd.icc_profile.empty());
  ASSERT_EQ(ifd.skipped_tags.size(), 2u);
  EXPECT_EQ(ifd.skipped_tags[0].rfind("tag 270", 0), 0u) << ifd.skipped_tags[0];
  EXPECT_NE(ifd.skipped_tags[1].find("outside the file"), std::string::npos) << ifd.skipped_tags[1];
}

TEST(TiffFile, RefusesCountsWhoseSizeOverflows) {
  TiffBuilder b(true, true);
  auto tags = b.rgb_tiled_image(64, 64, 16, 16);
  TagSpec bad{kTileOffsets, kLong8, UINT64_MAX / 4, {}, true, 16};
  for (auto& t : tags) if (t.tag == kTileOffsets) t = bad;
  b.add_ifd(tags);
  auto parsed = parse_bytes(b.finish());
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kCorrupt);
}

TEST(TiffFile, RefusesShortTileTablesAndEmptyImages) {
  TiffBuilder b;
  auto tags = b.rgb_tiled_image(64, 64, 16, 16);
  for (auto& t : tags) if (t.tag == kTileByteCounts) t = b.longs(kTileByteCounts, {1, 2, 3});
  b.add_ifd(tags);
  auto parsed = parse_bytes(b.finish());
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("byte counts table has 3 entries, the image needs 16"), std::string::npos)
      << parsed.status().message();

  TiffBuilder e;
  auto empty = e.rgb_tiled_image(16, 16, 16, 16);
  for (auto& t : empty) if (t.tag == kImageWidth) t = e.longs(kImageWidth, {0});
  e.add_ifd(empty);
  auto parsed2 = parse_bytes(e.finish());
  ASSERT_FALSE(parsed2.ok());
  EXPECT_NE(parsed2.status().message().find("empty"), std::string::npos);
}

TEST(TiffFile, RejectsNonTiffAndTruncatedHeaders) {
  auto not_tiff = parse_bytes({'G', 'I', 'F', '8', '9', 'a', 0, 0, 0, 0});
  ASSERT_FALSE(not_tiff.ok());
  EXPECT_EQ(not_tiff.status().code(), StatusCode::kUnsupported);
  auto tiny = parse_bytes({'I', 'I', 42});
  ASSERT_FALSE(tiny.ok());
  auto no_ifd = parse_bytes({'I', 'I', 42, 0, 0, 0, 0, 0});
  ASSERT_FALSE(no_ifd.ok());
  EXPECT_EQ(no_ifd.status().code(), StatusCode::kCorrupt);
  auto past_end = parse_bytes({'I', 'I', 42, 0, 0xFF, 0xFF, 0, 0});
  ASSERT_FALSE(past_end.ok());
  EXPECT_EQ(past_end.status().code(), StatusCode::kCorrupt);
}

TEST(TiffFile, TruncationAtEveryOffsetNeverCrashes) {
  TiffBuilder b(false, false);
  auto tags = b.rgb_tiled_image(40, 40, 16, 16);
  tags.push_back(b.ascii(kImageDescription, std::string(300, 'x')));
  b.add_ifd(tags);
  b.add_ifd(b.rgb_tiled_image(20, 20, 16, 16, 1));
  const auto whole = b.finish();
  int failures = 0;
  for (size_t len = 0; len < whole.size(); ++len) {
    auto parsed = parse_bytes(std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<long>(len)));
    if (!parsed.ok()) ++failures;
  }
  // The IFDs sit at the end of the file, so every strict prefix loses part of them.
  EXPECT_EQ(failures, static_cast<int>(whole.size()));
}

}  // namespace
}  // namespace tilewise::tiff
