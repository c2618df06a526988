// The region plan on its own: background bands, the tiles a region touches, what each contributes and
// whether it can be decoded in place - pure arithmetic, checked without decoding anything.
#include "region/region_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace tilewise::region {
namespace {

// A 200 x 150 level of 64 x 32 tiles (edge tiles on both axes); tile 5 is stored empty.
struct Level {
  formats::LevelModel model;
  Level() {
    model.info.width = 200;
    model.info.height = 150;
    model.desc.width = 64;
    model.desc.height = 32;
    model.tiles_across = 4;
    model.tiles_down = 5;
    formats::UnitTable units{std::vector<uint64_t>(20, 8), std::vector<uint64_t>(20, 100), {}};
    units.lengths[5] = 0;
    model.units = std::make_shared<const formats::UnitTable>(std::move(units));
  }
};

Result<RegionPlan> plan(const Level& l, int64_t x, int64_t y, int64_t w, int64_t h) {
  return plan_region(l.model, "level 0", x, y, w, h);
}

TEST(RegionPlan, ARegionInsideTheLevelHasNoBackgroundAndItsTilesInRowMajorOrder) {
  Level l;
  auto p = plan(l, 10, 20, 100, 40);  // columns 0-1, rows 0-1
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->background.empty());
  ASSERT_EQ(p->tiles.size(), 4u);
  EXPECT_EQ(p->tiles[0].tile.col, 0);
  EXPECT_EQ(p->tiles[1].tile.col, 1);
  EXPECT_EQ(p->tiles[2].tile.row, 1);
  EXPECT_EQ(p->tiles[0].need, (Rect{10, 20, 64, 32}));
  EXPECT_EQ(p->tiles[3].need, (Rect{64, 32, 110, 60}));
  for (const PlannedTile& t : p->tiles) EXPECT_FALSE(t.whole);
  EXPECT_EQ(p->out_x(64), 54);
  EXPECT_EQ(p->out_y(32), 12);
}

TEST(RegionPlan, WholeTilesAreMarkedAndEdgeTilesKnowTheirPadding) {
  Level l;
  auto p = plan(l, 0, 0, 200, 150);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->tiles.size(), 20u);
  const PlannedTile& inner = p->tiles[0];
  EXPECT_TRUE(inner.whole);
  EXPECT_FALSE(inner.padded_rows);
  const PlannedTile& right = p->tiles[3];  // 8 valid columns of 64: padding columns, never in place
  EXPECT_EQ(right.bounds, (Rect{192, 0, 200, 32}));
  EXPECT_FALSE(right.whole);
  const PlannedTile& bottom = p->tiles[16];  // 22 valid rows of 32, full width: in place on the CPU only
  EXPECT_EQ(bottom.bounds, (Rect{0, 128, 64, 150}));
  EXPECT_TRUE(bottom.whole);
  EXPECT_TRUE(bottom.padded_rows);
  EXPECT_TRUE(p->tiles[5].empty);
  EXPECT_FALSE(p->tiles[4].empty);
}

TEST(RegionPlan, PartsOutsideTheLevelBecomeAtMostFourBands) {
  Level l;
  auto p = plan(l, -10, -5, 230, 170);  // sticks out on every side
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->inside, (Rect{0, 0, 200, 150}));
  ASSERT_EQ(p->background.size(), 4u);
  EXPECT_EQ(p->background[0], (Rect{-10, -5, 220, 0}));    // above
  EXPECT_EQ(p->background[1], (Rect{-10, 150, 220, 165}));  // below
  EXPECT_EQ(p->background[2], (Rect{-10, 0, 0, 150}));     // left
  EXPECT_EQ(p->background[3], (Rect{200, 0, 220, 150}));   // right
  auto outside = plan(l, 500, 500, 10, 10);
  ASSERT_TRUE(outside.ok());
  EXPECT_TRUE(outside->tiles.empty());
  ASSERT_EQ(outside->background.size(), 1u);
  EXPECT_EQ(outside->background[0], (Rect{500, 500, 510, 510}));
}

TEST(RegionPlan, EveryPixelOfAnyRegionIsCoveredExactlyOnce) {
  Level l;
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t x = static_cast<int64_t>(rng() % 300) - 50, y = static_cast<int64_t>(rng() % 220) - 40;
    const int64_t w = 1 + rng() % 120, h = 1 + rng() % 90;
    auto p = plan(l, x, y, w, h);
    ASSERT_TRUE(p.ok());
    std::vector<int> covered(static_cast<size_t>(w * h), 0);
    auto mark = [&](const Rect& r) {
      for (int64_t yy = r.y0; yy < r.y1; ++yy)
        for (int64_t xx = r.x0; xx < r.x1; ++xx) ++covered[static_cast<size_t>(p->out_y(yy) * w + p->out_x(xx))];
    };
    for (const Rect& b : p->background) mark(b);
    for (const PlannedTile& t : p->tiles) {
      EXPECT_EQ(intersect(t.need, t.bounds), t.need);
      mark(t.need);
    }
    for (int c : covered) ASSERT_EQ(c, 1) << "region " << x << "," << y << " " << w << "x" << h;
  }
}

// A positioned level (MIRAX): 40 tiles of up to 50 x 40 pixels, parts of 8 units of 64 x 48, scattered over
// and past a 200 x 150 level so that they overlap and leave gaps.
struct Positioned {
  formats::LevelModel model;
  std::vector<formats::PlacedTile> tiles;
  explicit Positioned(uint32_t seed) {
    std::mt19937 rng(seed);
    model.info.width = 200;
    model.info.height = 150;
    model.desc.width = 64;
    model.desc.height = 48;
    model.tiles_across = 4;
    model.tiles_down = 2;
    model.units = std::make_shared<const formats::UnitTable>(
        formats::UnitTable{std::vector<uint64_t>(8, 8), std::vector<uint64_t>(8, 100), {}});
    for (int i = 0; i < 40; ++i) {
      formats::PlacedTile t;
      t.width = 10 + static_cast<int32_t>(rng() % 41);
      t.height = 8 + static_cast<int32_t>(rng() % 33);
      t.src_x = static_cast<int32_t>(rng() % (64 - t.width + 1));
      t.src_y = static_cast<int32_t>(rng() % (48 - t.height + 1));
      t.x = static_cast<int64_t>(rng() % 240) - 30;
      t.y = static_cast<int64_t>(rng() % 190) - 30;
      t.unit = static_cast<int64_t>(rng() % 8);
      tiles.push_back(t);
    }
    model.placement = formats::make_placement(tiles);
  }
  // The tile whose pixel shows at (x, y): the last in paint order covering it, or -1.
  int owner(int64_t x, int64_t y) const {
    int found = -1;
    for (size_t i = 0; i < tiles.size(); ++i) {
      const auto& t = tiles[i];
      if (x >= t.x && x < t.x + t.width && y >= t.y && y < t.y + t.height) found = static_cast<int>(i);
    }
    return found;
  }
};

TEST(RegionPlan, PositionedLevelsShowEachPixelOfTheLastTileCoveringItAndBackgroundElsewhere) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    Positioned l(seed);
    std::mt19937 rng(seed * 77);
    for (int trial = 0; trial < 60; ++trial) {
      const int64_t x = static_cast<int64_t>(rng() % 300) - 60, y = static_cast<int64_t>(rng() % 250) - 60;
      const int64_t w = 1 + rng() % 140, h = 1 + rng() % 110;
      auto p = plan_region(l.model, "level 0", x, y, w, h);
      ASSERT_TRUE(p.ok());
      // Each output pixel: covered once, by background exactly where no tile is, else by a planned part
      // of the owning tile's unit whose bounds put the unit's pixel (src + offset) there.
      std::vector<int> covered(static_cast<size_t>(w * h), 0);
      for (const Rect& b : p->background) {
        for (int64_t yy = b.y0; yy < b.y1; ++yy) {
          for (int64_t xx = b.x0; xx < b.x1; ++xx) {
            ++covered[static_cast<size_t>(p->out_y(yy) * w + p->out_x(xx))];
            ASSERT_EQ(l.owner(xx, yy), -1) << xx << "," << yy;
          }
        }
      }
      for (const PlannedTile& t : p->tiles) {
        for (int64_t yy = t.need.y0; yy < t.need.y1; ++yy) {
          for (int64_t xx = t.need.x0; xx < t.need.x1; ++xx) {
            ++covered[static_cast<size_t>(p->out_y(yy) * w + p->out_x(xx))];
            const int o = l.owner(xx, yy);
            ASSERT_GE(o, 0);
            const auto& own = l.tiles[static_cast<size_t>(o)];
            ASSERT_EQ(t.tile.index(), own.unit);
            ASSERT_EQ(t.bounds.x0, own.x - own.src_x);
            ASSERT_EQ(t.bounds.y0, own.y - own.src_y);
            ASSERT_EQ(t.whole, t.need == t.bounds);
          }
        }
      }
      for (int c : covered) ASSERT_EQ(c, 1) << "seed " << seed << " region " << x << "," << y << " " << w << "x" << h;
    }
  }
}

TEST(RegionPlan, ATileCoveringAWholeUnitIsDecodedInPlace) {
  formats::LevelModel m;
  m.info.width = 100;
  m.info.height = 100;
  m.desc.width = 32;
  m.desc.height = 32;
  m.tiles_across = 1;
  m.tiles_down = 1;
  m.units = std::make_shared<const formats::UnitTable>(formats::UnitTable{{8}, {100}, {}});
  m.placement = formats::make_placement({formats::PlacedTile{10, 20, 32, 32, 0, 0, 0}});
  auto p = plan_region(m, "level 0", 0, 0, 100, 100);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->tiles.size(), 1u);
  EXPECT_TRUE(p->tiles[0].whole);
  EXPECT_EQ(p->tiles[0].need, (Rect{10, 20, 42, 52}));
  int64_t background = 0;
  for (const Rect& b : p->background) background += b.area();
  EXPECT_EQ(background, 100 * 100 - 32 * 32);
}

TEST(RegionPlan, NegativeSizesAreRefusedAndEmptyRegionsPlanNothing) {
  Level l;
  EXPECT_EQ(plan(l, 0, 0, -1, 5).status().code(), StatusCode::kInvalidArgument);
  auto empty = plan(l, 0, 0, 0, 5);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->tiles.empty());
  EXPECT_TRUE(empty->background.empty());
}

}  // namespace
}  // namespace tilewise::region
