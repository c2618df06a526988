// check_planes and find_plane: the plane table a driver builds is checked against its axes and levels.
#include <gtest/gtest.h>

#include "formats/slide_model.h"

namespace tilewise::formats {
namespace {

LevelModel level(int64_t w, int64_t h, int32_t bits = 16, int32_t samples = 1) {
  codecs::TileDesc d;
  d.width = 64;
  d.height = 64;
  d.bits_per_sample = bits;
  d.samples_per_pixel = samples;
  return grid_level(w, h, d);
}

// Two channels at two focal planes, one plane each, two levels.
SlideModel two_by_two() {
  SlideModel m;
  m.axes.channels = 2;
  m.axes.z = 2;
  m.axes.rgb = false;
  m.axes.sample_type = SampleType::kUint16;
  m.levels = {level(200, 100), level(100, 50)};
  for (int32_t z = 0; z < 2; ++z) {
    for (int32_t c = 0; c < 2; ++c) m.planes.push_back({c, 1, z, 0, m.levels});
  }
  return m;
}

TEST(Planes, AWholeTableIsAcceptedAndFound) {
  const SlideModel m = two_by_two();
  EXPECT_TRUE(check_planes(m, "f.tif").ok());
  int32_t sample = -1;
  EXPECT_EQ(find_plane(m, 1, 1, 0, &sample), &m.planes[3]);
  EXPECT_EQ(sample, 0);
  EXPECT_EQ(find_plane(m, 0, 2, 0, &sample), nullptr);
}

TEST(Planes, ASampleOfAnInterleavedPlaneIsItsChannel) {
  SlideModel m;
  m.axes.channels = 3;
  m.axes.rgb = false;
  m.axes.sample_type = SampleType::kUint16;
  m.levels = {level(200, 100, 16, 3)};
  m.planes.push_back({0, 3, 0, 0, m.levels});
  EXPECT_TRUE(check_planes(m, "f.tif").ok());
  int32_t sample = -1;
  EXPECT_EQ(find_plane(m, 2, 0, 0, &sample), &m.planes[0]);
  EXPECT_EQ(sample, 2);
}

TEST(Planes, GapsOverlapsAndMismatchesAreCorruptNamingTheFileAndPlane) {
  SlideModel m = two_by_two();
  m.planes.pop_back();
  Status s = check_planes(m, "f.tif");
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.message(), "f.tif: no plane holds channel 1 at z 1, t 0");

  m = two_by_two();
  m.planes[3].channel = 0;
  s = check_planes(m, "f.tif");
  EXPECT_EQ(s.message(), "f.tif: plane 3 (channel 0, z 1, t 0): channel 0 is stored twice");

  m = two_by_two();
  m.planes[1].levels[1] = level(100, 51);
  s = check_planes(m, "f.tif");
  EXPECT_EQ(s.message(), "f.tif: plane 1 (channel 1, z 0, t 0) level 1 is 100x51, the image's 100x50");

  m = two_by_two();
  m.planes[2].levels[0] = level(200, 100, 8);
  s = check_planes(m, "f.tif");
  EXPECT_EQ(s.message(), "f.tif: plane 2 (channel 0, z 1, t 0) level 0 holds 1 samples of 8 bits, not 1 of the "
                         "image's uint16");

  m = two_by_two();
  m.planes[0].t = 1;
  s = check_planes(m, "f.tif");
  EXPECT_EQ(s.message(), "f.tif: plane 0 (channel 0, z 0, t 1) lies outside the image's 2 channels, 2 focal planes "
                         "and 1 time points");
}

}  // namespace
}  // namespace tilewise::formats
