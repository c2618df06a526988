#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "gpu/scheduler.h"
#include "loader/scheduling.h"
#include "support/tiff_builder.h"
#include "tiff/tags.h"
#include "tilewise/batch_loader.h"

namespace tilewise {
namespace {

using testing::TiffBuilder;

Slide make_slide(bool damage_tile_1 = false) {
  TiffBuilder b;
  auto tags = b.rgb_tiled_image(300, 200, 64, 64);
  if (damage_tile_1) {
    for (auto& t : tags) {
      if (t.tag == tiff::kTileOffsets) {
        std::vector<uint32_t> offs(20, 16);
        offs[1] = 1u << 30;
        t = b.longs(tiff::kTileOffsets, offs);
      }
    }
  }
  b.add_ifd(tags);
  auto slide = Slide::open_memory(b.finish(), "loader.tif");
  EXPECT_TRUE(slide.ok()) << slide.status().message();
  return std::move(slide).value();
}

std::vector<std::pair<int64_t, int64_t>> random_locations(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int i = 0; i < n; ++i) out.emplace_back(static_cast<int64_t>(rng() % 360) - 30, static_cast<int64_t>(rng() % 260) - 30);
  return out;
}

std::vector<uint8_t> single_read(const Slide& slide, std::pair<int64_t, int64_t> loc, int64_t w, int64_t h) {
  std::vector<uint8_t> out(static_cast<size_t>(w * h * 3));
  EXPECT_TRUE(slide.read_region(loc.first, loc.second, 0, w, h,
                                ImageView{out.data(), w * 3, static_cast<int32_t>(w), static_cast<int32_t>(h), 3, {}})
                  .ok());
  return out;
}

struct Combo {
  int batch_size, workers, prefetch;
  bool shuffle, drop_last;
  int hybrid_helpers = -1;  // >= 0: scheduled as a hybrid device loader is, with this many CPU helpers
  int gpu_run = -1;         // hybrid: Scheduling::gpu_run (0: a learnt share; -1: by codec, here runs of 8)
};

class LoaderCombos : public ::testing::TestWithParam<Combo> {};

TEST_P(LoaderCombos, BatchesEqualSingleReadsInOrder) {
  const Combo c = GetParam();
  Slide slide = make_slide();
  const auto locations = random_locations(37, 5);
  BatchOptions opt;
  opt.width = 40;
  opt.height = 30;
  opt.batch_size = c.batch_size;
  opt.num_workers = c.workers;
  opt.prefetch = c.prefetch;
  opt.shuffle = c.shuffle;
  opt.seed = 42;
  opt.drop_last = c.drop_last;
  const loader::Scheduling scheduling{c.hybrid_helpers >= 0, c.hybrid_helpers, c.gpu_run};
  auto loader = scheduling.create(slide, locations, opt);
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  const int64_t expected_batches = c.drop_last ? 37 / c.batch_size : (37 + c.batch_size - 1) / c.batch_size;
  EXPECT_EQ((*loader)->batch_count(), expected_batches);
  std::set<int64_t> seen;
  int64_t batches = 0;
  std::vector<std::shared_ptr<BatchBuffer>> kept;  // every delivered batch stays valid while held
  std::vector<Batch> all;
  while (auto batch = (*loader)->next()) {
    EXPECT_EQ(batch->index, batches++);
    ASSERT_TRUE(batch->ok());
    all.push_back(*batch);
  }
  EXPECT_EQ(batches, expected_batches);
  for (const Batch& batch : all) {
    for (int64_t i = 0; i < batch.count; ++i) {
      const int64_t at = batch.locations_index[static_cast<size_t>(i)];
      seen.insert(at);
      const auto want = single_read(slide, locations[static_cast<size_t>(at)], 40, 30);
      ASSERT_EQ(0, std::memcmp(batch.pixels->data() + static_cast<size_t>(i) * want.size(), want.data(), want.size()))
          << "batch " << batch.index << " item " << i;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), c.drop_last ? expected_batches * c.batch_size : 37);
  if (!c.shuffle && !all.empty()) {
    EXPECT_EQ(all.front().locations_index.front(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Options, LoaderCombos,
                         ::testing::Values(Combo{1, 1, 1, false, false}, Combo{8, 4, 2, false, false},
                                           Combo{8, 4, 2, true, false}, Combo{8, 16, 3, true, true},
                                           Combo{64, 2, 1, false, true}, Combo{16, 2, 1, false, true}, Combo{5, 0, 4, true, false},
                                           // Hybrid scheduling: no helper, one, several, more than a batch has items.
                                           Combo{8, 4, 2, false, false, 0}, Combo{8, 4, 2, true, false, 1},
                                           Combo{16, 8, 3, true, true, 5}, Combo{3, 16, 4, false, false, 12},
                                           Combo{64, 4, 1, false, false, 3},
                                           // The GPU's part as one learnt share, and in runs of 1 and 3.
                                           Combo{8, 4, 2, true, false, 1, 0}, Combo{16, 8, 3, true, true, 5, 0},
                                           Combo{64, 4, 1, false, false, 3, 0}, Combo{16, 8, 3, true, true, 5, 1},
                                           Combo{64, 4, 1, false, false, 3, 3}));

TEST(BatchLoader, ShuffleIsReproducibleForASeed) {
  Slide slide = make_slide();
  const auto locations = random_locations(50, 1);
  auto order = [&](uint64_t seed) {
    BatchOptions opt;
    opt.width = opt.height = 8;
    opt.batch_size = 7;
    opt.shuffle = true;
    opt.seed = seed;
    auto loader = BatchLoader::create(slide, locations, opt);
    std::vector<int64_t> out;
    while (auto b = (*loader)->next()) out.insert(out.end(), b->locations_index.begin(), b->locations_index.end());
    return out;
  };
  EXPECT_EQ(order(3), order(3));
  EXPECT_NE(order(3), order(4));
}

TEST(BatchLoader, FailedItemsAreReportedPerItem) {
  Slide slide = make_slide(/*damage_tile_1=*/true);
  std::vector<std::pair<int64_t, int64_t>> locations = {{0, 0}, {70, 10}, {0, 70}};  // item 1 hits tile (1,0)
  BatchOptions opt;
  opt.width = opt.height = 20;
  opt.batch_size = 3;
  auto loader = BatchLoader::create(slide, locations, opt);
  auto batch = (*loader)->next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(batch->statuses[0].ok());
  EXPECT_EQ(batch->statuses[1].code(), StatusCode::kCorrupt);
  EXPECT_TRUE(batch->statuses[2].ok());
  Status first = batch->first_error(locations);
  EXPECT_NE(first.message().find("item 1 (location 1: 70, 10)"), std::string::npos) << first.message();
  EXPECT_NE(first.message().find("loader.tif: level 0 tile (1,0)"), std::string::npos) << first.message();
  EXPECT_EQ(batch->pixels->data()[20 * 20 * 3], 255);  // the failed item is fill, not stale memory
}

TEST(BatchLoader, EarlyDestructionCancelsWithoutWaitingOrLeaking) {
  Slide slide = make_slide();
  const auto locations = random_locations(400, 9);
  for (int round = 0; round < 20; ++round) {
    BatchOptions opt;
    opt.width = opt.height = 64;
    opt.batch_size = 16;
    opt.num_workers = 8;
    opt.prefetch = 3;
    auto loader = BatchLoader::create(slide, locations, opt);
    auto first = (*loader)->next();
    ASSERT_TRUE(first.has_value());
    loader->reset();  // consumer stops early; `first` must stay valid
    const auto want = single_read(slide, locations[0], 64, 64);
    EXPECT_EQ(0, std::memcmp(first->pixels->data(), want.data(), want.size()));
  }
}

// A host loader of size x size regions.
BatchOptions options(int64_t size, int batch_size, int workers, int prefetch) {
  BatchOptions opt;
  opt.width = opt.height = size;
  opt.batch_size = batch_size;
  opt.num_workers = workers;
  opt.prefetch = prefetch;
  return opt;
}
// Scheduled as a hybrid device loader, with `helpers` CPU helpers and the GPU's runs `gpu_run`.
loader::Scheduling hybrid(int helpers, int gpu_run) { return loader::Scheduling{true, helpers, gpu_run}; }

// Hybrid scheduling (the device loader's, on the host): a damaged tile fails exactly the items that need
// it, whichever side read them, with fill in their slots; every other item equals a single read; the
// helpers read part of the batches.
TEST(BatchLoader, HybridSchedulingFailsOnlyTheDamagedItems) {
  Slide slide = make_slide(/*damage_tile_1=*/true);
  auto locations = random_locations(300, 4);
  // Tile (1,0) of the 64 x 64 grid is damaged: an item fails when its 20 x 20 window meets it.
  auto meets_damage = [](std::pair<int64_t, int64_t> l) {
    return l.first < 128 && l.first + 20 > 64 && l.second < 64 && l.second + 20 > 0;
  };
  locations[7] = {70, 10};
  // Host loaders scheduled as device loaders are counted by the host's scheduler (device -1).
  const gpu::Scheduler::LoaderCounts before = gpu::device_scheduler(-1).loader_counts();
  for (int round = 0; round < 3; ++round) {
    // The learnt share once, runs of 8 (this slide is not JPEG) twice.
    auto loader = hybrid(4, round == 1 ? 0 : -1).create(slide, locations, options(20, 32, 6, 2));
    ASSERT_TRUE(loader.ok());
    int failures = 0;
    while (auto batch = (*loader)->next()) {
      for (int64_t i = 0; i < batch->count; ++i) {
        const auto loc = locations[static_cast<size_t>(batch->locations_index[static_cast<size_t>(i)])];
        const Status& st = batch->statuses[static_cast<size_t>(i)];
        const uint8_t* got = batch->pixels->data() + static_cast<size_t>(i) * 20 * 20 * 3;
        if (meets_damage(loc)) {
          ++failures;
          EXPECT_EQ(st.code(), StatusCode::kCorrupt) << loc.first << "," << loc.second;
          EXPECT_NE(st.message().find("tile (1,0)"), std::string::npos) << st.message();
          EXPECT_EQ(got[0], 255);  // fill, not stale memory
          continue;
        }
        ASSERT_TRUE(st.ok()) << st.message();
        const auto want = single_read(slide, loc, 20, 20);
        ASSERT_EQ(0, std::memcmp(got, want.data(), want.size())) << "batch " << batch->index << " item " << i;
      }
    }
    EXPECT_GE(failures, 1);
  }
  gpu::Scheduler::LoaderCounts after = gpu::device_scheduler(-1).loader_counts();
  EXPECT_EQ((after.gpu_regions + after.cpu_regions) - (before.gpu_regions + before.cpu_regions), 3u * 300u);
  EXPECT_GT(after.gpu_reads, before.gpu_reads);
  // Which side reads a batch is a race: on a loaded machine the GPU side (here the host stand-in) can take
  // every batch of three rounds. The helpers must take part within a few more.
  for (int extra = 0; extra < 20 && after.cpu_regions == before.cpu_regions; ++extra) {
    auto loader = hybrid(4, -1).create(slide, locations, options(20, 32, 6, 2));
    ASSERT_TRUE(loader.ok());
    while ((*loader)->next()) {
    }
    after = gpu::device_scheduler(-1).loader_counts();
  }
  EXPECT_GT(after.cpu_regions, before.cpu_regions) << "the helpers read no region in 23 rounds";
}

TEST(BatchLoader, HybridSchedulingCancelsWithoutWaitingOrLeaking) {
  Slide slide = make_slide();
  const auto locations = random_locations(600, 9);
  for (int round = 0; round < 30; ++round) {
    auto loader = hybrid(5, round % 3 == 0 ? 0 : -1).create(slide, locations, options(64, 24, 8, 3));
    auto first = (*loader)->next();
    ASSERT_TRUE(first.has_value());
    if (round % 2) (*loader)->next();
    loader->reset();  // batches in flight are abandoned mid-read; `first` stays valid
    for (int64_t i = 0; i < first->count; i += 7) {
      const auto want = single_read(slide, locations[static_cast<size_t>(first->locations_index[static_cast<size_t>(i)])], 64, 64);
      EXPECT_EQ(0, std::memcmp(first->pixels->data() + static_cast<size_t>(i) * want.size(), want.data(), want.size()));
    }
  }
}

TEST(BatchLoader, InvalidOptionsAreRefused) {
  Slide slide = make_slide();
  BatchOptions opt;
  opt.width = opt.height = 8;
  opt.level = 3;
  EXPECT_EQ(BatchLoader::create(slide, {{0, 0}}, opt).status().code(), StatusCode::kInvalidArgument);
  opt.level = 0;
  opt.batch_size = 0;
  EXPECT_EQ(BatchLoader::create(slide, {{0, 0}}, opt).status().code(), StatusCode::kInvalidArgument);
  opt.batch_size = 1;
  opt.width = 0;
  EXPECT_EQ(BatchLoader::create(slide, {{0, 0}}, opt).status().code(), StatusCode::kInvalidArgument);
  opt.width = 8;
  auto empty = BatchLoader::create(slide, {}, opt);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->batch_count(), 0);
  EXPECT_FALSE((*empty)->next().has_value());
}

}  // namespace
}  // namespace tilewise
