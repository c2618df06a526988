// The MCU index of one-MCU-row streams (codecs/jpeg/mcu_index.h): checkpoints found by the hand-written
// Huffman scanner, and streams resumed at them, decoded by libjpeg-turbo, must equal a decode from the
// stream's start pixel for pixel from the second resumed MCU on, at every scale, for every sampling layout,
// with standard and optimised Huffman tables. The oracle is the full decode of the original stream.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/jpeg/mcu_index.h"
#include "support/encoders.h"

namespace tilewise::codecs {
namespace {

// Texture with strong contrast (DC predictors of large magnitude, long AC runs) and flat stretches.
std::vector<uint8_t> row_image(int w, int h, uint32_t seed) {
  std::vector<uint8_t> v(static_cast<size_t>(w) * h * 3);
  std::mt19937 rng(seed);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int band = (x / 97) % 4;
        int value = band == 0 ? 255 * ((x / 13 + c) % 2) : band == 1 ? 30 + c * 40 : (x * (c + 3) + y * 7) % 256;
        if (band >= 2) value = (value + static_cast<int>(rng() % 64)) % 256;
        v[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(value);
      }
    }
  }
  return v;
}

TileDesc ycbcr_desc(int w, int h, int denom) {
  TileDesc d;
  d.compression = Compression::kJpeg;
  d.color = ColorSpace::kYCbCr;
  d.width = w / denom;
  d.height = std::max(1, h / denom);
  d.scale_denom = denom;
  return d;
}

std::vector<uint8_t> decode_all(CpuDecoder& decoder, std::span<const uint8_t> jpeg, const TileDesc& d) {
  std::vector<uint8_t> px(static_cast<size_t>(d.width) * d.height * 3);
  const Status s = decoder.decode(jpeg, d, ImageView{px.data(), int64_t{d.width} * 3, d.width, d.height, 3, {}});
  EXPECT_TRUE(s.ok()) << s.message();
  return px;
}

struct Case {
  int h_samp, v_samp;
  bool optimize;
};

class McuIndexLayouts : public ::testing::TestWithParam<Case> {};

TEST_P(McuIndexLayouts, ResumedStreamsEqualTheDecodeFromTheStart) {
  const Case k = GetParam();
  const int w = 2048, h = 8 * k.v_samp;
  const std::vector<uint8_t> jpeg = testing::jpeg_encode_ycbcr(row_image(w, h, 3), w, h, k.h_samp, k.v_samp, 85, k.optimize);
  auto layout = parse_entropy_layout(jpeg);
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  const EntropyLayout& L = **layout;
  ASSERT_EQ(L.mcu_width, 8 * k.h_samp);
  ASSERT_EQ(L.blocks.size(), static_cast<size_t>(k.h_samp * k.v_samp + 2));
  const std::span<const uint8_t> entropy = std::span<const uint8_t>(jpeg).subspan(L.header_end);
  const int64_t mcus = w / L.mcu_width;
  McuIndex index;
  ASSERT_TRUE(extend_mcu_index(L, entropy, mcus, SIZE_MAX, index).ok());
  ASSERT_EQ(index.points.size(), static_cast<size_t>(mcus / kMcuIndexSpacing + 1));
  // Extended in steps, the index is the same.
  McuIndex steps;
  for (size_t want : {size_t{2}, size_t{5}, size_t{6}, SIZE_MAX}) {
    ASSERT_TRUE(extend_mcu_index(L, entropy, mcus, want, steps).ok());
  }
  ASSERT_EQ(steps.points.size(), index.points.size());
  for (size_t i = 0; i < index.points.size(); ++i) {
    EXPECT_EQ(steps.points[i].bit, index.points[i].bit) << i;
    EXPECT_EQ(steps.points[i].dc, index.points[i].dc) << i;
  }

  CpuDecoder decoder;
  std::mt19937 rng(11);
  int resumed = 0, refused = 0;
  for (int denom : {1, 2, 4, 8}) {
    const TileDesc whole = ycbcr_desc(w, h, denom);
    const std::vector<uint8_t> full = decode_all(decoder, jpeg, whole);
    const int mcu_px = L.mcu_width / denom;  // one MCU in output pixels
    for (size_t from = 1; from + 1 < index.points.size(); from += 1 + rng() % 3) {
      // To a later checkpoint, or to the data's end.
      const size_t to = from + 1 + rng() % 4;
      const McuCheckpoint* end = to < index.points.size() ? &index.points[to] : nullptr;
      const int64_t first = static_cast<int64_t>(from) * kMcuIndexSpacing;
      const int64_t last = end ? static_cast<int64_t>(to) * kMcuIndexSpacing : mcus;
      std::vector<uint8_t> stream;
      const Status s = resume_stream(L, jpeg, entropy, index.points[from], end, static_cast<int32_t>(last - first), stream);
      if (k.optimize && s.code() == StatusCode::kUnsupported) {
        ++refused;
        continue;
      }
      ASSERT_TRUE(s.ok()) << s.message();
      ++resumed;
      const TileDesc rd = ycbcr_desc(static_cast<int>((1 + last - first) * L.mcu_width), h, denom);
      const std::vector<uint8_t> got = decode_all(decoder, stream, rd);
      // Exact from the second real MCU on, up to the last MCU but one (or the image's end).
      const int64_t x0 = (first + 1) * mcu_px, x1 = last == mcus ? last * mcu_px : (last - 1) * mcu_px;
      for (int y = 0; y < whole.height; ++y) {
        const uint8_t* want = full.data() + (static_cast<size_t>(y) * whole.width + x0) * 3;
        const uint8_t* have = got.data() + (static_cast<size_t>(y) * rd.width + 2 * mcu_px) * 3;
        ASSERT_EQ(0, std::memcmp(want, have, static_cast<size_t>(x1 - x0) * 3))
            << "1/" << denom << " from checkpoint " << from << " to " << to << " row " << y;
      }
    }
  }
  EXPECT_GT(resumed, 20);
  if (!k.optimize) {
    EXPECT_EQ(refused, 0);  // the standard tables code every DC category
  }
}

INSTANTIATE_TEST_SUITE_P(Sampling, McuIndexLayouts,
                         ::testing::Values(Case{2, 1, false}, Case{2, 2, false}, Case{1, 1, false}, Case{1, 2, false},
                                           Case{2, 1, true}, Case{1, 1, true}));

// Tiles of many MCU rows (resume_rows): one checkpoint per MCU row; a stream resumed at row c, decoded by
// libjpeg-turbo, equals the tile's decode from row c * mcu_height + 1 on, whole and as windows.
class McuRowLayouts : public ::testing::TestWithParam<Case> {};

TEST_P(McuRowLayouts, ResumedRowsEqualTheDecodeFromTheStart) {
  const Case k = GetParam();
  for (int size : {256, 240}) {
    const std::vector<uint8_t> jpeg =
        testing::jpeg_encode_ycbcr(row_image(size, size, 5), size, size, k.h_samp, k.v_samp, 85, k.optimize);
    auto layout = parse_entropy_layout(jpeg);
    ASSERT_TRUE(layout.ok()) << layout.status().message();
    const EntropyLayout& L = **layout;
    const std::span<const uint8_t> entropy = std::span<const uint8_t>(jpeg).subspan(L.header_end);
    const int32_t row_mcus = (size + L.mcu_width - 1) / L.mcu_width;
    const int32_t rows = (size + L.mcu_height - 1) / L.mcu_height;
    McuIndex index;
    ASSERT_TRUE(extend_mcu_index(L, entropy, int64_t{row_mcus} * rows, SIZE_MAX, index, row_mcus).ok());
    ASSERT_EQ(index.points.size(), static_cast<size_t>(rows) + 1);  // each row's start and the last row's end
    CpuDecoder decoder;
    const TileDesc whole = ycbcr_desc(size, size, 1);
    const std::vector<uint8_t> full = decode_all(decoder, jpeg, whole);
    int resumed = 0;
    for (int32_t c = 1; c < rows; ++c) {
      std::vector<uint8_t> stream;
      const int32_t height = size - c * L.mcu_height;
      const Status s = resume_rows(L, jpeg, entropy, index.points[static_cast<size_t>(c)], size, height, stream);
      if (k.optimize && s.code() == StatusCode::kUnsupported) continue;  // tables without a predictor's code
      ASSERT_TRUE(s.ok()) << s.message();
      ++resumed;
      const TileDesc rd = ycbcr_desc(size, L.mcu_height + height, 1);
      const std::vector<uint8_t> got = decode_all(decoder, stream, rd);
      const size_t row_bytes = static_cast<size_t>(size) * 3;
      for (int32_t y = c * L.mcu_height + 1; y < size; ++y) {
        const size_t at = static_cast<size_t>(y - c * L.mcu_height + L.mcu_height);
        ASSERT_EQ(0, std::memcmp(full.data() + static_cast<size_t>(y) * row_bytes, got.data() + at * row_bytes, row_bytes))
            << size << " px, resumed at MCU row " << c << ", row " << y;
      }
      // A window below the first resumed pixel row, as the region reader cuts it.
      const int32_t wy = c * L.mcu_height + 1 + c % 7, wx = 3 * c % 50, ww = size - wx - 5, wh = size - wy;
      std::vector<uint8_t> a(static_cast<size_t>(ww) * wh * 3), b(a.size());
      const ImageView va{a.data(), int64_t{ww} * 3, ww, wh, 3, {}}, vb{b.data(), int64_t{ww} * 3, ww, wh, 3, {}};
      ASSERT_TRUE(decoder.decode_window(jpeg, whole, va, wx, wy).ok());
      ASSERT_TRUE(decoder.decode_window(stream, rd, vb, wx, wy - (c - 1) * L.mcu_height).ok());
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size())) << size << " px, window at " << wx << "," << wy;
    }
    // Optimised tables may lack a row's predictor code, but not every row's: the case checks something.
    EXPECT_GT(resumed, k.optimize ? 0 : rows - 2) << size << " px";
  }
}

INSTANTIATE_TEST_SUITE_P(Sampling, McuRowLayouts,
                         ::testing::Values(Case{2, 2, false}, Case{2, 1, false}, Case{1, 1, false}, Case{1, 2, false},
                                           Case{2, 2, true}, Case{1, 1, true}));

TEST(McuIndex, TablesWithoutTheCodeOfAPredictorRefuseToResume) {
  // A flat image with optimised tables: its DC table holds only the categories it uses.
  const int w = 512, h = 8;
  const std::vector<uint8_t> flat(static_cast<size_t>(w) * h * 3, 128);
  const std::vector<uint8_t> jpeg = testing::jpeg_encode_ycbcr(flat, w, h, 1, 1, 85, true);
  auto layout = parse_entropy_layout(jpeg);
  ASSERT_TRUE(layout.ok());
  const EntropyLayout& L = **layout;
  ASSERT_EQ(L.dc[L.blocks[0].dc_table].length[10], 0);
  const auto entropy = std::span<const uint8_t>(jpeg).subspan(L.header_end);
  McuIndex index;
  ASSERT_TRUE(extend_mcu_index(L, entropy, w / 8, 3, index).ok());
  ASSERT_EQ(index.points.size(), 3u);
  McuCheckpoint from = index.points[1];
  std::vector<uint8_t> out;
  EXPECT_TRUE(resume_stream(L, jpeg, entropy, from, nullptr, 8, out).ok());
  from.dc[0] = 1000;  // category 10
  EXPECT_EQ(resume_stream(L, jpeg, entropy, from, nullptr, 8, out).code(), StatusCode::kUnsupported);
}

TEST(McuIndex, StreamsItCannotWalkAreRefused) {
  const int w = 256, h = 8;
  std::vector<uint8_t> jpeg = testing::jpeg_encode_ycbcr(row_image(w, h, 1), w, h, 2, 1, 85, false);
  ASSERT_TRUE(parse_entropy_layout(jpeg).ok());
  std::vector<uint8_t> progressive = jpeg;
  for (size_t i = 0; i + 1 < progressive.size(); ++i) {
    if (progressive[i] == 0xFF && progressive[i + 1] == 0xC0) {
      progressive[i + 1] = 0xC2;
      break;
    }
  }
  EXPECT_EQ(parse_entropy_layout(progressive).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(parse_entropy_layout(std::span<const uint8_t>(jpeg).first(100)).status().code(), StatusCode::kUnsupported);
}

TEST(McuIndex, AHuffmanTableWithMoreCodesThanItsLengthsHoldIsRefused) {
  // Five codes of 2 bits (at most three fit, the all-ones code excluded): refused before any is laid out
  // (the fuzzer's first find: they were written past the lookup table).
  std::vector<uint8_t> header = {0xFF, 0xD8, 0xFF, 0xC4, 0x00, 2 + 17 + 5, 0x00, 0, 5};
  header.resize(header.size() + 14, 0);
  for (uint8_t sym = 0; sym < 5; ++sym) header.push_back(sym);
  EXPECT_EQ(parse_entropy_layout(header).status().code(), StatusCode::kUnsupported);
}

TEST(McuIndex, DamagedDataIsAnErrorNotACrash) {
  const int w = 2048, h = 8;
  const std::vector<uint8_t> jpeg = testing::jpeg_encode_ycbcr(row_image(w, h, 7), w, h, 2, 1, 85, false);
  auto layout = parse_entropy_layout(jpeg);
  ASSERT_TRUE(layout.ok());
  const EntropyLayout& L = **layout;
  const int64_t mcus = w / L.mcu_width;
  const auto entropy = std::span<const uint8_t>(jpeg).subspan(L.header_end);
  // Cut short: the scan stops with Corrupt where the data ends, keeping the checkpoints before it.
  McuIndex cut;
  const Status s = extend_mcu_index(L, entropy.first(entropy.size() / 2), mcus, SIZE_MAX, cut);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_GT(cut.points.size(), 2u);
  EXPECT_LT(cut.points.size(), static_cast<size_t>(mcus / kMcuIndexSpacing));
  // Random damage: any status, never a read outside the data (ASan) nor a hang.
  std::mt19937 rng(99);
  for (int round = 0; round < 300; ++round) {
    std::vector<uint8_t> bad(entropy.begin(), entropy.end());
    for (int i = 0; i < 4; ++i) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    bad.resize(rng() % bad.size() + 1);
    McuIndex index;
    (void)extend_mcu_index(L, bad, mcus, SIZE_MAX, index);
    for (size_t i = 1; i + 1 < index.points.size(); ++i) {
      EXPECT_LT(index.points[i].bit, index.points[i + 1].bit);
      std::vector<uint8_t> out;
      (void)resume_stream(L, jpeg, bad, index.points[i], &index.points[i + 1], kMcuIndexSpacing, out);
    }
  }
}

}  // namespace
}  // namespace tilewise::codecs
