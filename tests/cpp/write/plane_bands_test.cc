// Level 0 into a pyramid band after band (write/plane_bands.h), on host band ops: reading the next band on a
// reading thread (the order the GPU path takes) writes exactly the tiles that reading and writing in turn
// writes, every level of an image of odd size; a failed read or a failed progress report stops the plane
// with its error and leaves no read in flight. Under the thread sanitizer this is the race check of the
// overlapped order, which otherwise runs only on a GPU.
#include "write/plane_bands.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <utility>
#include <vector>

namespace tilewise::write {
namespace {

constexpr int64_t kWidth = 301, kHeight = 233;
constexpr int32_t kTile = 32;

// Every tile each level received, by (level, index).
class RecordingSink final : public TileSink {
 public:
  int add_level(LevelSpec) override { return levels_++; }
  Status write_tile(int level, int64_t index, std::span<const uint8_t> bytes) override {
    if (!tiles.emplace(std::make_pair(level, index), std::vector<uint8_t>(bytes.begin(), bytes.end())).second) {
      return internal_error("tile written twice");
    }
    return Status();
  }
  std::map<std::pair<int, int64_t>, std::vector<uint8_t>> tiles;

 private:
  int levels_ = 0;
};

std::vector<LevelSpec> levels() {
  std::vector<LevelSpec> out;
  for (int64_t w = kWidth, h = kHeight;; w = (w + 1) / 2, h = (h + 1) / 2) {
    LevelSpec level;
    level.width = w;
    level.height = h;
    level.tile = kTile;
    out.push_back(level);
    if (w <= kTile && h <= kTile) break;
  }
  return out;
}

// Pixel (x, y) of the source: distinct per position and sample.
uint8_t sample(int64_t x, int64_t y, int c) { return static_cast<uint8_t>(x * 7 + y * 13 + c * 101 + (x * y) % 5); }

struct Reads {
  std::atomic<int> in_flight{0};
  std::atomic<int> calls{0};
  std::atomic<bool> off_caller{false};  // some read ran on a thread other than the caller's
  std::thread::id caller = std::this_thread::get_id();
  int64_t fail_at = -1;  // the band at this row fails
};

BandReader reader(Reads& reads) {
  return [&reads](int64_t y, int32_t rows, const ImageView& out) {
    ++reads.in_flight;
    ++reads.calls;
    if (std::this_thread::get_id() != reads.caller) reads.off_caller = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a read that takes time, as a decode does
    Status s;
    if (y == reads.fail_at) {
      s = corrupt("band at row " + std::to_string(y) + " is damaged");
    } else {
      for (int32_t r = 0; r < rows; ++r) {
        uint8_t* row = out.row(r);
        for (int64_t x = 0; x < out.width; ++x) {
          for (int c = 0; c < 3; ++c) row[x * 3 + c] = sample(x, y + r, c);
        }
      }
    }
    --reads.in_flight;
    return s;
  };
}

struct Outcome {
  Status status;
  RecordingSink sink;
  int64_t written_rows = 0;
};

// Writes the source through host band ops (uncompressed tiles), level 0 two tile rows per band.
void run(Outcome& result, Reads& reads, bool overlapped, int64_t fail_written_at = -1) {
  const TileCoding coding{TileCodec::kNone};
  std::unique_ptr<BandOps> ops = host_band_ops(3, SampleType::kUint8, coding, Downsample::kMean);
  auto pyramid = PyramidWriter::create(result.sink, levels(), false, 3, SampleType::kUint8, 2, *ops);
  ASSERT_TRUE(pyramid.ok()) << pyramid.status().message();
  const BandWritten written = [&](int32_t rows) {
    result.written_rows += rows;
    if (fail_written_at >= 0 && result.written_rows >= fail_written_at) return invalid_argument("stopped by the caller");
    return Status();
  };
  result.status = overlapped ? write_level0_overlapped(**pyramid, *ops, kHeight, reader(reads), written)
                             : write_level0(**pyramid, kHeight, reader(reads), written);
}

TEST(PlaneBands, ReadingTheNextBandMeanwhileWritesTheSameTilesAsReadingInTurn) {
  Reads in_turn_reads, overlapped_reads;
  Outcome in_turn, overlapped;
  run(in_turn, in_turn_reads, false);
  run(overlapped, overlapped_reads, true);
  ASSERT_TRUE(in_turn.status.ok()) << in_turn.status.message();
  ASSERT_TRUE(overlapped.status.ok()) << overlapped.status.message();
  EXPECT_EQ(in_turn.written_rows, kHeight);
  EXPECT_EQ(overlapped.written_rows, kHeight);
  size_t expected_tiles = 0;
  for (const LevelSpec& level : levels()) expected_tiles += static_cast<size_t>(level.tiles_across() * level.tiles_down());
  EXPECT_EQ(in_turn.sink.tiles.size(), expected_tiles);
  EXPECT_TRUE(in_turn.sink.tiles == overlapped.sink.tiles) << "the overlapped order wrote other tiles";
  // Level 0's first tile holds the source's pixels (uncompressed, row after row).
  const std::vector<uint8_t>& first = in_turn.sink.tiles.at({0, 0});
  ASSERT_EQ(first.size(), static_cast<size_t>(kTile * kTile * 3));
  EXPECT_EQ(first[(5 * kTile + 7) * 3 + 2], sample(7, 5, 2));
  EXPECT_EQ(overlapped_reads.calls.load(), in_turn_reads.calls.load());
  EXPECT_TRUE(overlapped_reads.off_caller.load()) << "the overlapped order read on the calling thread";
  EXPECT_FALSE(in_turn_reads.off_caller.load());
}

TEST(PlaneBands, AFailedReadStopsThePlaneWithItsErrorAndNoReadInFlight) {
  for (const bool overlapped : {false, true}) {
    Reads reads;
    reads.fail_at = 2 * kTile * 2;  // the third band
    Outcome result;
    run(result, reads, overlapped);
    EXPECT_EQ(result.status.code(), StatusCode::kCorrupt) << result.status.message();
    EXPECT_NE(result.status.message().find("band at row 128"), std::string::npos) << result.status.message();
    EXPECT_EQ(result.written_rows, 2 * 2 * kTile) << "bands after the failed one were written";
    EXPECT_EQ(reads.in_flight.load(), 0);
  }
}

TEST(PlaneBands, AFailedProgressReportStopsThePlaneWithNoReadInFlight) {
  for (const bool overlapped : {false, true}) {
    Reads reads;
    Outcome result;
    run(result, reads, overlapped, /*fail_written_at=*/1);
    EXPECT_EQ(result.status.code(), StatusCode::kInvalidArgument) << result.status.message();
    EXPECT_EQ(result.written_rows, 2 * kTile);
    EXPECT_EQ(reads.in_flight.load(), 0);
    EXPECT_LE(reads.calls.load(), 2) << "reads went on after the plane stopped";
  }
}

}  // namespace
}  // namespace tilewise::write
