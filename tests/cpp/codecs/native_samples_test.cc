// The CPU decoder's native output (decoder.h): a view of the tile's own samples - 8, 16 and 32-bit, 1-4 per
// pixel, either byte order, predictor undone, B, G, R as R, G, B - whole and windowed, for every lossless
// codec, equal to the samples that were encoded; and the views it refuses.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codecs/cpu/cpu_decoder.h"
#include "support/encoders.h"

namespace tilewise::codecs {
namespace {

struct Layout {
  const char* name;
  int spp, bits;
  SampleFormat format;
  ColorSpace color;
  bool big_endian;
  int predictor;
};

const Layout kLayouts[] = {
    {"grey16", 1, 16, SampleFormat::kUnsigned, ColorSpace::kMinIsBlack, false, 1},
    {"grey16_big_endian", 1, 16, SampleFormat::kUnsigned, ColorSpace::kMinIsBlack, true, 1},
    {"grey16_predictor", 1, 16, SampleFormat::kUnsigned, ColorSpace::kMinIsBlack, false, 2},
    {"rgb16_big_endian_predictor", 3, 16, SampleFormat::kUnsigned, ColorSpace::kRgb, true, 2},
    {"bgr16", 3, 16, SampleFormat::kUnsigned, ColorSpace::kBgr, false, 1},
    {"float32", 1, 32, SampleFormat::kFloat, ColorSpace::kMinIsBlack, false, 1},
    {"float32_big_endian", 1, 32, SampleFormat::kFloat, ColorSpace::kMinIsBlack, true, 1},
    {"grey8_predictor", 1, 8, SampleFormat::kUnsigned, ColorSpace::kMinIsBlack, false, 2},
    {"grey_alpha8", 2, 8, SampleFormat::kUnsigned, ColorSpace::kMinIsBlack, false, 1},
};

constexpr int kWidth = 40, kHeight = 24;

// Host-order sample values of a tile (R, G, B order for 3 samples), and how they are stored.
struct Tile {
  std::vector<uint8_t> values;  // what a native read must give
  std::vector<uint8_t> stored;  // file order, differenced, B, G, R where the layout says so
};

Tile make_tile(const Layout& l, uint32_t seed) {
  const int bytes = l.bits / 8;
  const size_t samples = static_cast<size_t>(kWidth) * kHeight * l.spp;
  std::mt19937 rng(seed);
  Tile t;
  t.values.resize(samples * bytes);
  for (size_t i = 0; i < samples; ++i) {
    if (l.format == SampleFormat::kFloat) {
      const float v = static_cast<float>(rng() % 100000) / 7.0f - 3000.0f;
      std::memcpy(&t.values[i * 4], &v, 4);
    } else {
      const uint32_t v = (static_cast<uint32_t>(i) * 37 + rng() % 50) & ((1u << l.bits) - 1u);
      std::memcpy(&t.values[i * bytes], &v, static_cast<size_t>(bytes));  // little-endian host
    }
  }
  // Stored: B, G, R; then differenced (on the stored sample values); then the file's byte order.
  std::vector<uint8_t> s = t.values;
  const size_t pixel = static_cast<size_t>(l.spp) * bytes;
  if (l.color == ColorSpace::kBgr) {
    for (size_t p = 0; p < s.size(); p += pixel) {
      std::memcpy(&s[p], &t.values[p + 2 * bytes], static_cast<size_t>(bytes));
      std::memcpy(&s[p + 2 * bytes], &t.values[p], static_cast<size_t>(bytes));
    }
  }
  if (l.predictor == 2) {
    const std::vector<uint8_t> undiff = s;
    const size_t row_samples = static_cast<size_t>(kWidth) * l.spp;
    for (int y = 0; y < kHeight; ++y) {
      for (size_t i = l.spp; i < row_samples; ++i) {
        const size_t at = (y * row_samples + i) * bytes, left = (y * row_samples + i - l.spp) * bytes;
        uint32_t v = 0, w = 0;
        std::memcpy(&v, &undiff[at], static_cast<size_t>(bytes));
        std::memcpy(&w, &undiff[left], static_cast<size_t>(bytes));
        const uint32_t d = (v - w) & ((1u << l.bits) - 1u);
        std::memcpy(&s[at], &d, static_cast<size_t>(bytes));
      }
    }
  }
  if (l.big_endian) {
    for (size_t i = 0; i < samples; ++i) std::reverse(s.begin() + i * bytes, s.begin() + (i + 1) * bytes);
  }
  t.stored = std::move(s);
  return t;
}

std::vector<uint8_t> compress(Compression c, const std::vector<uint8_t>& in) {
  switch (c) {
    case Compression::kDeflate: return testing::zlib_compress(in);
    case Compression::kLzw: return testing::lzw_compress(in);
    case Compression::kZstd: {
      std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
      out.resize(ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3));
      return out;
    }
    default: return in;
  }
}

TileDesc desc_of(const Layout& l, Compression c) {
  TileDesc d;
  d.compression = c;
  d.width = kWidth;
  d.height = kHeight;
  d.samples_per_pixel = l.spp;
  d.bits_per_sample = l.bits;
  d.sample_format = l.format;
  d.color = l.color;
  d.big_endian = l.big_endian;
  d.predictor = l.predictor;
  return d;
}

ImageView native_view(std::vector<uint8_t>& px, const Layout& l, int w, int h) {
  const int bytes = l.bits / 8;
  px.assign(static_cast<size_t>(w) * h * l.spp * bytes, 0xAB);
  return ImageView{px.data(), int64_t{w} * l.spp * bytes, w, h, l.spp, {}, bytes};
}

class NativeSamples : public ::testing::TestWithParam<std::tuple<Compression, Layout>> {};

TEST_P(NativeSamples, WholeAndWindowedEqualTheEncodedValues) {
  const auto [compression, l] = GetParam();
  const Tile tile = make_tile(l, 11);
  const std::vector<uint8_t> encoded = compress(compression, tile.stored);
  const TileDesc desc = desc_of(l, compression);
  CpuDecoder decoder;
  std::vector<uint8_t> px;
  Status s = decoder.decode(encoded, desc, native_view(px, l, kWidth, kHeight));
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(px, tile.values);
  // A window at (x, y): rows of the tile's values from there.
  const int x = 7, y = 5, w = 20, h = 11;
  const size_t pixel = static_cast<size_t>(l.spp) * (l.bits / 8);
  s = decoder.decode_window(encoded, desc, native_view(px, l, w, h), x, y);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int r = 0; r < h; ++r) {
    ASSERT_EQ(0, std::memcmp(px.data() + r * w * pixel, tile.values.data() + ((y + r) * kWidth + x) * pixel, w * pixel))
        << "window row " << r;
  }
}

std::string name_of(const ::testing::TestParamInfo<std::tuple<Compression, Layout>>& info) {
  return std::string(compression_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Lossless, NativeSamples,
                         ::testing::Combine(::testing::Values(Compression::kNone, Compression::kDeflate,
                                                              Compression::kLzw, Compression::kZstd),
                                            ::testing::ValuesIn(kLayouts)),
                         name_of);

TEST(NativeSamples, SixteenBitTilesStillHaveTheirRgbRendering) {
  const Layout l = kLayouts[0];
  const Tile tile = make_tile(l, 3);
  CpuDecoder decoder;
  std::vector<uint8_t> rgb(static_cast<size_t>(kWidth) * kHeight * 3);
  const Status s = decoder.decode(tile.stored, desc_of(l, Compression::kNone),
                                  ImageView{rgb.data(), kWidth * 3, kWidth, kHeight, 3, {}});
  ASSERT_TRUE(s.ok()) << s.message();
  for (size_t p = 0; p < rgb.size() / 3; ++p) {
    const uint8_t high = tile.values[2 * p + 1];
    ASSERT_EQ(rgb[3 * p], high) << p;
    ASSERT_EQ(rgb[3 * p + 2], high) << p;
  }
}

TEST(NativeSamples, ThirtyTwoBitTilesHaveNoRgbRenderingAndMismatchedViewsAreRefused) {
  CpuDecoder decoder;
  const Layout f = kLayouts[5];
  const Tile tile = make_tile(f, 5);
  std::vector<uint8_t> rgb(static_cast<size_t>(kWidth) * kHeight * 3);
  Status s = decoder.decode(tile.stored, desc_of(f, Compression::kNone),
                            ImageView{rgb.data(), kWidth * 3, kWidth, kHeight, 3, {}});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.message();
  EXPECT_NE(s.message().find("32-bit"), std::string::npos) << s.message();
  // A view of 2 channels or of 8-bit samples for a 16-bit grey tile fits neither rendering.
  const Layout g = kLayouts[0];
  const Tile grey = make_tile(g, 5);
  std::vector<uint8_t> px(static_cast<size_t>(kWidth) * kHeight * 4);
  s = decoder.decode(grey.stored, desc_of(g, Compression::kNone), ImageView{px.data(), kWidth * 4, kWidth, kHeight, 2, {}, 2});
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  s = decoder.decode(grey.stored, desc_of(g, Compression::kNone), ImageView{px.data(), kWidth, kWidth, kHeight, 1, {}, 1});
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  // Floating-point samples of 16 bits, and a predictor on 32-bit samples, are refused with the reason.
  TileDesc half = desc_of(g, Compression::kNone);
  half.sample_format = SampleFormat::kFloat;
  EXPECT_EQ(CpuDecoder::supports(half).code(), StatusCode::kUnsupported);
  TileDesc differenced = desc_of(f, Compression::kDeflate);
  differenced.predictor = 2;
  EXPECT_EQ(CpuDecoder::supports(differenced).code(), StatusCode::kUnsupported);
}

TEST(NativeSamples, GreyJpegTilesGiveTheirOneSample) {
  std::vector<uint8_t> grey(static_cast<size_t>(kWidth) * kHeight);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint8_t>(i * 7 % 251);
  const testing::Encoded jpeg = testing::jpeg_encode(grey, kWidth, kHeight, 1, false, 1, 1, false);
  const std::vector<uint8_t> want = testing::jpeg_reference_decode(jpeg.image, false);  // libjpeg's, as RGB
  TileDesc d;
  d.compression = Compression::kJpeg;
  d.width = kWidth;
  d.height = kHeight;
  d.samples_per_pixel = 1;
  d.color = ColorSpace::kMinIsBlack;
  CpuDecoder decoder;
  std::vector<uint8_t> px(grey.size());
  const Status s = decoder.decode(jpeg.image, d, ImageView{px.data(), kWidth, kWidth, kHeight, 1, {}, 1});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(want.size(), px.size() * 3);
  for (size_t i = 0; i < px.size(); ++i) ASSERT_EQ(px[i], want[3 * i]) << i;
}

}  // namespace
}  // namespace tilewise::codecs
