// How convert's GPU path shares a tile row between the GPU's encoders and the host's cores
// (write/encode_split.h): a fixed percentage, or auto - half at first, then the share at which both sides
// finish together at their measured per-tile times, at least one tile each.
#include "write/encode_split.h"

#include <gtest/gtest.h>

namespace tilewise::write {
namespace {

TEST(EncodeSplit, AFixedShareIsThePercentageOfEachRowRoundedDown) {
  EXPECT_EQ(EncodeSplit(0).host_tiles(160), 0);
  EXPECT_EQ(EncodeSplit(40).host_tiles(160), 64);
  EXPECT_EQ(EncodeSplit(40).host_tiles(3), 1);
  EXPECT_EQ(EncodeSplit(100).host_tiles(7), 7);
  EncodeSplit fixed(25);
  fixed.measured(100, 1.0, 100, 0.01);  // measurements do not move a fixed share
  EXPECT_EQ(fixed.host_tiles(100), 25);
  EXPECT_DOUBLE_EQ(fixed.host_share(), 0.25);
}

TEST(EncodeSplit, AutoStartsAtHalfAndKeepsOneTileOnEachSide) {
  EncodeSplit split(EncodeSplit::kAuto);
  EXPECT_DOUBLE_EQ(split.host_share(), 0.5);
  EXPECT_EQ(split.host_tiles(160), 80);
  EXPECT_EQ(split.host_tiles(1), 1);
  EXPECT_EQ(split.host_tiles(0), 0);
  split.measured(80, 8.0, 80, 0.008);  // the host 1,000 times faster
  EXPECT_EQ(split.host_tiles(160), 159);
  EXPECT_EQ(split.host_tiles(2), 1);
}

TEST(EncodeSplit, AutoEqualisesTheSidesFinishingTimes) {
  EncodeSplit split(EncodeSplit::kAuto);
  // The GPU side 1 ms a tile, the host side 3 ms: the host takes a quarter, both then finish together.
  split.measured(80, 0.080, 80, 0.240);
  EXPECT_DOUBLE_EQ(split.host_share(), 0.25);
  EXPECT_EQ(split.host_tiles(160), 40);
  // A new row moves each per-tile time by 30% of the difference: the host now 1 ms a tile.
  split.measured(120, 0.120, 40, 0.040);
  const double host_ms = 0.7 * 3 + 0.3 * 1;
  EXPECT_NEAR(split.host_share(), 1.0 / (1.0 + host_ms), 1e-12);
  // A side that had no tiles keeps its time.
  split.measured(0, 0, 40, 0.040 * host_ms);
  EXPECT_NEAR(split.host_share(), 1.0 / (1.0 + host_ms), 1e-12);
}

}  // namespace
}  // namespace tilewise::write
