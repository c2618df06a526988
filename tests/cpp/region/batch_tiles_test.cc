#include "region/batch_tiles.h"

#include <gtest/gtest.h>

namespace tilewise::region {
namespace {

const ImageView kRgb8{};  // the decoded tiles' layout: 8-bit RGB (the default view)

TEST(BatchTiles, ATileCutTwiceIsDecodedOnceAndItsBufferServesTheNext) {
  BatchTiles t;
  t.add_use(7, 12);
  t.add_use(7, 12);
  t.add_use(9, 12);  // cut once: not held
  EXPECT_TRUE(t.shared(7));
  EXPECT_FALSE(t.shared(9));
  EXPECT_FALSE(t.shared(3));
  int decodes = 0;
  auto decode = [&](const ImageView& v) {
    ++decodes;
    for (int32_t y = 0; y < v.height; ++y) {
      for (int32_t x = 0; x < v.width * 3; ++x) v.row(y)[x] = static_cast<uint8_t>(decodes * 10 + y);
    }
    return Status();
  };
  Result<const uint8_t*> a = t.use(7, 2, 2, kRgb8, decode);
  ASSERT_TRUE(a.ok());
  const uint8_t* first = *a;
  EXPECT_EQ(first[0], 10);
  EXPECT_EQ(first[6], 11);  // row 1
  t.done(7);
  Result<const uint8_t*> b = t.use(7, 2, 2, kRgb8, decode);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, first);
  EXPECT_EQ(decodes, 1);
  t.done(7);  // the last use: the buffer is kept for the next tile
  t.add_use(8, 12);
  t.add_use(8, 12);
  Result<const uint8_t*> c = t.use(8, 2, 2, kRgb8, decode);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, first);  // the same memory, decoded again
  EXPECT_EQ((*c)[0], 20);
  EXPECT_EQ(decodes, 2);
}

TEST(BatchTiles, AFailedDecodeIsEveryUsesError) {
  BatchTiles t;
  t.add_use(1, 3);
  t.add_use(1, 3);
  int decodes = 0;
  auto fail = [&](const ImageView&) {
    ++decodes;
    return corrupt("level 0 tile (1,0): damaged");
  };
  for (int i = 0; i < 2; ++i) {
    Result<const uint8_t*> r = t.use(1, 1, 1, kRgb8, fail);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), "level 0 tile (1,0): damaged");
    t.done(1);
  }
  EXPECT_EQ(decodes, 1);
}

TEST(BatchTiles, TilesBeyondTheByteBudgetAreNotHeld) {
  BatchTiles t;
  const uint64_t big = BatchTiles::kMaxBytes / 2 + 1;
  for (int64_t i : {1, 1, 2, 2, 2}) t.add_use(i, big);
  EXPECT_TRUE(t.shared(1));
  EXPECT_FALSE(t.shared(2));  // a second such tile would pass the budget: read as a single use
}

}  // namespace
}  // namespace tilewise::region
