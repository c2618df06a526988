// How many batches a loader starts ahead of its consumer (loader/batches_ahead.h).
#include "loader/batches_ahead.h"

#include <gtest/gtest.h>

namespace tilewise::loader {
namespace {

constexpr size_t kPatches64 = size_t{64} * 256 * 256 * 3;  // 64 256^2 RGB patches: 12 MiB

TEST(BatchesAhead, HostLoadersStartTheirPrefetch) {
  EXPECT_EQ(batches_ahead(2, false, kPatches64), 2);
  EXPECT_EQ(batches_ahead(3, false, 64 * kPatches64), 3);
}

TEST(BatchesAhead, DeviceLoadersStartUpTo128MiBOfSmallBatches) {
  EXPECT_EQ(batches_ahead(2, true, kPatches64), 8);  // 10 fit: at most 8
  EXPECT_EQ(batches_ahead(2, true, 4 * kPatches64), 2);  // 48 MiB batches: 2 fit
  EXPECT_EQ(batches_ahead(1, true, 64 * kPatches64), 1);  // larger than the budget: one
  EXPECT_EQ(batches_ahead(12, true, kPatches64), 12);  // never fewer than the prefetch
  EXPECT_EQ(batches_ahead(2, true, 0), 8);
}

}  // namespace
}  // namespace tilewise::loader
