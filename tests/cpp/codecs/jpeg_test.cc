// JPEG decoding: full and abbreviated (JPEGTables) streams, YCbCr and RGB components, subsampling, grey.
// Streams are produced with libjpeg's compressor; the oracle is libjpeg's own full decode.
#include <gtest/gtest.h>

#include <csetjmp>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <random>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/jpeg/jpeg_encoder.h"
#include "support/encoders.h"

namespace tilewise::codecs {
namespace {

using testing::Encoded;
using testing::jpeg_encode;
using testing::jpeg_reference_decode;

std::vector<uint8_t> test_image(int w, int h, int channels) {
  std::vector<uint8_t> v(static_cast<size_t>(w) * h * channels);
  std::mt19937 rng(5);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        v[(static_cast<size_t>(y) * w + x) * channels + c] =
            static_cast<uint8_t>(x * (c + 1) * 3 + y * 2 + (rng() % 8));
  return v;
}

struct Case {
  bool rgb_components;
  int h_samp, v_samp;
  int channels;
};

TileDesc jpeg_desc(const Case& k, int w, int h, std::span<const uint8_t> tables = {}) {
  TileDesc desc;
  desc.compression = Compression::kJpeg;
  desc.width = w;
  desc.height = h;
  desc.samples_per_pixel = k.channels;
  desc.color = k.channels == 1 ? ColorSpace::kMinIsBlack : (k.rgb_components ? ColorSpace::kRgb : ColorSpace::kYCbCr);
  desc.jpeg_tables = tables;
  return desc;
}

class JpegCases : public ::testing::TestWithParam<Case> {};

TEST_P(JpegCases, AbbreviatedStreamsWithTablesMatchTheFullDecode) {
  const Case k = GetParam();
  const int w = 64, h = 48;
  auto pixels = test_image(w, h, k.channels);
  Encoded full = jpeg_encode(pixels, w, h, k.channels, k.rgb_components, k.h_samp, k.v_samp, false);
  Encoded abbr = jpeg_encode(pixels, w, h, k.channels, k.rgb_components, k.h_samp, k.v_samp, true);
  ASSERT_FALSE(abbr.tables.empty());
  auto expected = jpeg_reference_decode(full.image, k.rgb_components);

  TileDesc desc = jpeg_desc(k, w, h);
  CpuDecoder decoder;
  std::vector<uint8_t> got(static_cast<size_t>(w) * h * 3);
  ImageView view{got.data(), w * 3, w, h, 3, {}};
  ASSERT_TRUE(decoder.decode(full.image, desc, view).ok());
  EXPECT_EQ(got, expected);
  std::fill(got.begin(), got.end(), 0);
  desc.jpeg_tables = abbr.tables;
  Status s = decoder.decode(abbr.image, desc, view);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got, expected);
}

INSTANTIATE_TEST_SUITE_P(Layouts, JpegCases,
                         ::testing::Values(Case{false, 2, 2, 3}, Case{false, 2, 1, 3}, Case{false, 1, 1, 3},
                                           Case{true, 1, 1, 3}, Case{false, 1, 1, 1}));

TEST(Jpeg, DecodesIntoAStridedSubViewAndStopsAtTheViewHeight) {
  const int w = 32, h = 32;
  auto pixels = test_image(w, h, 3);
  Encoded full = jpeg_encode(pixels, w, h, 3, false, 2, 2, false);
  auto expected = jpeg_reference_decode(full.image, false);
  TileDesc desc;
  desc.compression = Compression::kJpeg;
  desc.width = w;
  desc.height = h;
  desc.color = ColorSpace::kYCbCr;
  // A 100-pixel-wide canvas; decode 20 rows of the tile at x = 10.
  std::vector<uint8_t> canvas(100 * 40 * 3, 7);
  ImageView canvas_view{canvas.data(), 300, 100, 40, 3, {}};
  CpuDecoder decoder;
  ASSERT_TRUE(decoder.decode(full.image, desc, canvas_view.sub(10, 5, w, 20)).ok());
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 100; ++x) {
      const bool inside = x >= 10 && x < 42 && y >= 5 && y < 25;
      for (int c = 0; c < 3; ++c) {
        const uint8_t want = inside ? expected[((y - 5) * w + (x - 10)) * 3 + c] : 7;
        ASSERT_EQ(canvas[(y * 100 + x) * 3 + c], want) << x << "," << y;
      }
    }
  }
}

// encode_jpeg_rgb (the GPU decoders' warm-up tile): a stream libjpeg decodes to the pixels it was given, within
// what quality 90 loses, with the sampling asked for; bad sizes are refused.
// A unit of three planes: each a greyscale JPEG behind its 32-bit little-endian byte count, decoded one by
// one and interleaved as red, green and blue (whole and as a window); a plane cut short names its channel.
TEST(Jpeg, UnitsOfThreePlanesInterleaveTheirChannels) {
  const int w = 32, h = 24;
  std::vector<uint8_t> unit;
  std::vector<std::vector<uint8_t>> greys;
  for (int c = 0; c < 3; ++c) {
    std::vector<uint8_t> grey(static_cast<size_t>(w) * h);
    for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint8_t>((i * (c + 3) + 40 * c) & 0xFF);
    const testing::Encoded e = testing::jpeg_encode(grey, w, h, 1, false, 1, 1, false);
    greys.push_back(testing::jpeg_reference_decode(e.image, false));  // grey as RGB: every third sample
    const uint32_t n = static_cast<uint32_t>(e.image.size());
    for (int k = 0; k < 4; ++k) unit.push_back(static_cast<uint8_t>(n >> (8 * k)));
    unit.insert(unit.end(), e.image.begin(), e.image.end());
  }
  TileDesc d;
  d.compression = Compression::kJpeg;
  d.width = w;
  d.height = h;
  d.planes = 3;
  CpuDecoder decoder;
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  ASSERT_TRUE(decoder.decode(unit, d, ImageView{rgb.data(), w * 3, w, h, 3, {}}).ok());
  for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i) {
    for (int c = 0; c < 3; ++c) ASSERT_EQ(rgb[i * 3 + c], greys[c][i * 3]) << "pixel " << i << " channel " << c;
  }
  std::vector<uint8_t> window(8 * 8 * 3);
  ASSERT_TRUE(decoder.decode_window(unit, d, ImageView{window.data(), 8 * 3, 8, 8, 3, {}}, 16, 8).ok());
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 8 * 3; ++x) EXPECT_EQ(window[y * 24 + x], rgb[(8 + y) * w * 3 + 16 * 3 + x]);
  }
  unit.resize(unit.size() - 10);
  const Status cut = decoder.decode(unit, d, ImageView{rgb.data(), w * 3, w, h, 3, {}});
  EXPECT_EQ(cut.code(), StatusCode::kCorrupt);
  EXPECT_NE(cut.message().find("blue channel"), std::string::npos) << cut.message();
  d.planes = 2;
  EXPECT_EQ(CpuDecoder::supports(d).code(), StatusCode::kUnsupported);
}

TEST(JpegEncoder, EncodesWhatTheDecoderReadsBack) {
  const int w = 80, h = 48;  // not a multiple of the 4:2:0 MCU (16) in width
  std::vector<uint8_t> pixels(static_cast<size_t>(w) * h * 3);  // smooth, with a little noise
  std::mt19937 rng(3);
  for (size_t i = 0; i < pixels.size(); ++i) {
    const int x = static_cast<int>(i / 3 % w), y = static_cast<int>(i / 3 / w), c = static_cast<int>(i % 3);
    pixels[i] = static_cast<uint8_t>(x + y + c * 40 + static_cast<int>(rng() % 4));
  }
  for (bool subsample : {true, false}) {
    auto jpeg = encode_jpeg_rgb(pixels.data(), w, h, 90, subsample);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status().message();
    // The sampling factors of Y in the SOF0 frame header: 0x22 for 4:2:0, 0x11 for 4:4:4.
    const std::vector<uint8_t>& bytes = *jpeg;
    size_t sof = 0;
    for (size_t i = 0; i + 1 < bytes.size(); ++i) {
      if (bytes[i] == 0xFF && bytes[i + 1] == 0xC0) {
        sof = i;
        break;
      }
    }
    ASSERT_GT(sof, 0u);
    EXPECT_EQ(bytes[sof + 11], subsample ? 0x22 : 0x11);
    TileDesc desc;
    desc.compression = Compression::kJpeg;
    desc.width = w;
    desc.height = h;
    desc.color = ColorSpace::kYCbCr;
    std::vector<uint8_t> decoded(pixels.size());
    CpuDecoder decoder;
    ASSERT_TRUE(decoder.decode(bytes, desc, ImageView{decoded.data(), w * 3, w, h, 3, {}}).ok());
    double error = 0;
    for (size_t i = 0; i < pixels.size(); ++i) error += std::abs(int{decoded[i]} - int{pixels[i]});
    EXPECT_LT(error / static_cast<double>(pixels.size()), 3.0) << "subsample " << subsample;
  }
  EXPECT_FALSE(encode_jpeg_rgb(pixels.data(), 0, h, 90, true).ok());
  EXPECT_FALSE(encode_jpeg_rgb(pixels.data(), w, h, 0, true).ok());
  EXPECT_FALSE(encode_jpeg_rgb(nullptr, w, h, 90, true).ok());
}

TEST(Jpeg, CorruptAndTruncatedStreamsAreErrorsNotGuesses) {
  auto pixels = test_image(64, 64, 3);
  Encoded full = jpeg_encode(pixels, 64, 64, 3, false, 2, 2, false);
  TileDesc desc;
  desc.compression = Compression::kJpeg;
  desc.width = 64;
  desc.height = 64;
  desc.color = ColorSpace::kYCbCr;
  std::vector<uint8_t> out(64 * 64 * 3);
  ImageView view{out.data(), 192, 64, 64, 3, {}};
  CpuDecoder decoder;
  for (size_t cut : {size_t{2}, size_t{20}, full.image.size() / 2, full.image.size() - 10}) {
    std::vector<uint8_t> truncated(full.image.begin(), full.image.begin() + static_cast<long>(cut));
    Status s = decoder.decode(truncated, desc, view);
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << "cut at " << cut;
    EXPECT_EQ(s.message().rfind("jpeg:", 0), 0u) << s.message();
  }
  // The decoder stays usable after errors.
  ASSERT_TRUE(decoder.decode(full.image, desc, view).ok());
  // A JPEG smaller than the tile it claims to be.
  desc.width = 128;
  std::vector<uint8_t> wide(128 * 64 * 3);
  EXPECT_EQ(decoder.decode(full.image, desc, ImageView{wide.data(), 384, 128, 64, 3, {}}).code(), StatusCode::kCorrupt);
}

class JpegWindows : public ::testing::TestWithParam<Case> {};

// Whether an RGB window of ww x hh equals the full decode (`full_w` wide) at (x, y).
bool window_equals(const std::vector<uint8_t>& win, const std::vector<uint8_t>& full, int full_w, int x, int y, int ww,
                   int hh) {
  for (int r = 0; r < hh; ++r) {
    if (std::memcmp(win.data() + static_cast<size_t>(r) * ww * 3,
                    full.data() + (static_cast<size_t>(y + r) * full_w + x) * 3, static_cast<size_t>(ww) * 3) != 0) {
      return false;
    }
  }
  return true;
}

// Partial decoding (crop + skip) must give exactly the pixels of a full decode, for every sampling layout,
// at every alignment relative to the iMCU grid.
TEST_P(JpegWindows, PartialDecodeEqualsTheFullDecodeCropped) {
  const Case k = GetParam();
  const int w = 256, h = 256;
  auto pixels = test_image(w, h, k.channels);
  Encoded abbr = jpeg_encode(pixels, w, h, k.channels, k.rgb_components, k.h_samp, k.v_samp, true);
  const TileDesc desc = jpeg_desc(k, w, h, abbr.tables);
  CpuDecoder decoder;
  std::vector<uint8_t> full(static_cast<size_t>(w) * h * 3);
  ASSERT_TRUE(decoder.decode(abbr.image, desc, ImageView{full.data(), w * 3, w, h, 3, {}}).ok());
  std::mt19937 rng(17);
  for (int i = 0; i < 300; ++i) {
    const int x = static_cast<int>(rng() % w), y = static_cast<int>(rng() % h);
    const int ww = 1 + static_cast<int>(rng() % (w - x)), hh = 1 + static_cast<int>(rng() % (h - y));
    std::vector<uint8_t> win(static_cast<size_t>(ww) * hh * 3);
    Status s = decoder.decode_window(abbr.image, desc, ImageView{win.data(), ww * 3, ww, hh, 3, {}}, x, y);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(window_equals(win, full, w, x, y, ww, hh)) << "window (" << x << "," << y << ") " << ww << "x" << hh;
  }
}

// Streams one MCU row high (Hamamatsu's restart-interval units) are narrowed to the window's right edge
// before decoding (jpeg_decoder.cc): the window must still equal the full decode, at every scale, for
// windows that end anywhere, including inside the last MCUs.
TEST_P(JpegWindows, OneMcuRowStreamsNarrowedToTheWindowEqualTheFullDecode) {
  const Case k = GetParam();
  const int w = 1024, h = 8 * k.v_samp;
  auto pixels = test_image(w, h, k.channels);
  Encoded self = jpeg_encode(pixels, w, h, k.channels, k.rgb_components, k.h_samp, k.v_samp, false);
  CpuDecoder decoder;
  std::mt19937 rng(23);
  for (int denom : {1, 2, 4, 8}) {
    const int sw = w / denom, sh = std::max(1, h / denom);
    TileDesc desc = jpeg_desc(k, sw, sh);
    desc.scale_denom = denom;
    std::vector<uint8_t> full(static_cast<size_t>(sw) * sh * 3);
    ASSERT_TRUE(decoder.decode(self.image, desc, ImageView{full.data(), sw * 3, sw, sh, 3, {}}).ok());
    for (int i = 0; i < 120; ++i) {
      const int x = i < 4 ? std::vector<int>{0, 0, sw - 1, sw / 2}[i] : static_cast<int>(rng() % sw);
      const int ww = i == 1 ? sw : 1 + static_cast<int>(rng() % std::min(sw - x, 300));
      const int y = static_cast<int>(rng() % sh), hh = 1 + static_cast<int>(rng() % (sh - y));
      std::vector<uint8_t> win(static_cast<size_t>(ww) * hh * 3);
      Status s = decoder.decode_window(self.image, desc, ImageView{win.data(), ww * 3, ww, hh, 3, {}}, x, y);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(window_equals(win, full, sw, x, y, ww, hh))
          << "1/" << denom << " window (" << x << "," << y << ") " << ww << "x" << hh;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, JpegWindows,
                         ::testing::Values(Case{false, 2, 2, 3}, Case{false, 2, 1, 3}, Case{false, 1, 2, 3},
                                           Case{false, 1, 1, 3}, Case{true, 1, 1, 3}, Case{false, 1, 1, 1}));

}  // namespace
}  // namespace tilewise::codecs
