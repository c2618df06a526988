// JPEG 2000: codestreams made with OpenJPEG's encoder; windows must equal the whole decode, and YCbCr
// components must convert with OpenSlide's formula.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/cpu/jpeg2000_encoder.h"
#include "support/encoders.h"

namespace tilewise::codecs {
namespace {

using testing::j2k_encode;

uint8_t clamp8(double v) { return static_cast<uint8_t>(std::min(255.0, std::max(0.0, v))); }

// The writers' encoder (codecs/cpu/jpeg2000_encoder.h) through this decoder: lossless gives every sample
// back (RGB through the reversible transform, 16-bit grey), lossy stays close on smooth content; tiles of a
// few pixels (fewer resolution levels) too.
TEST(Jpeg2000Encoder, LosslessRoundTripsAndLossyStaysClose) {
  std::mt19937 rng(3);
  for (const auto [w, h] : {std::pair{67, 45}, std::pair{5, 3}}) {
    std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        for (int c = 0; c < 3; ++c) rgb[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>((x * 3 + y * 2 + c * 40 + rng() % 7) % 256);
      }
    }
    std::vector<uint16_t> grey(static_cast<size_t>(w) * h);
    for (auto& v : grey) v = static_cast<uint16_t>(rng() % 65536);
    const ImageView rgb_view{rgb.data(), w * 3, w, h, 3, {}};
    ImageView grey_view{reinterpret_cast<uint8_t*>(grey.data()), w * 2, w, h, 1, {}};
    grey_view.sample_bytes = 2;
    CpuDecoder decoder;
    TileDesc desc;
    desc.compression = Compression::kJpeg2000;
    desc.width = w;
    desc.height = h;
    std::vector<uint8_t> stream;
    for (const bool lossless : {true, false}) {
      ASSERT_TRUE(encode_jpeg2000(rgb_view, lossless, 90, stream).ok());
      std::vector<uint8_t> back(rgb.size());
      desc.color = ColorSpace::kRgb;
      const Status s = decoder.decode(stream, desc, ImageView{back.data(), w * 3, w, h, 3, {}});
      ASSERT_TRUE(s.ok()) << s.message();
      int worst = 0;
      for (size_t i = 0; i < rgb.size(); ++i) worst = std::max(worst, std::abs(int{back[i]} - int{rgb[i]}));
      EXPECT_LE(worst, lossless ? 0 : 24) << w << "x" << h;
    }
    ASSERT_TRUE(encode_jpeg2000(grey_view, true, 90, stream).ok());
    std::vector<uint16_t> back(grey.size());
    desc.color = ColorSpace::kMinIsBlack;
    desc.samples_per_pixel = 1;
    desc.bits_per_sample = 16;
    ImageView out{reinterpret_cast<uint8_t*>(back.data()), w * 2, w, h, 1, {}};
    out.sample_bytes = 2;
    const Status s = decoder.decode(stream, desc, out);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(back, grey) << w << "x" << h;
  }
  std::vector<uint8_t> four(16 * 4, 0), stream;
  EXPECT_EQ(encode_jpeg2000(ImageView{four.data(), 16, 4, 4, 4, {}}, true, 90, stream).code(), StatusCode::kInvalidArgument);
}

class J2kWindows : public ::testing::TestWithParam<int> {};

TEST_P(J2kWindows, WindowsEqualTheWholeDecodeAndYCbCrConvertsLikeOpenSlide) {
  const int sub = GetParam();
  const int w = 96, h = 80;
  std::mt19937 rng(1);
  std::vector<std::vector<uint8_t>> planes(3);
  for (int c = 0; c < 3; ++c) {
    const int s = c == 0 ? 1 : sub;
    planes[c].resize(static_cast<size_t>((w + s - 1) / s) * ((h + s - 1) / s));
    for (auto& v : planes[c]) v = static_cast<uint8_t>(rng() % 256);
  }
  const auto stream = j2k_encode(planes, w, h, sub);
  TileDesc desc;
  desc.compression = Compression::kJpeg2000;
  desc.width = w;
  desc.height = h;
  desc.color = ColorSpace::kYCbCr;
  CpuDecoder decoder;
  std::vector<uint8_t> whole(static_cast<size_t>(w) * h * 3);
  Status s = decoder.decode(stream, desc, ImageView{whole.data(), w * 3, w, h, 3, {}});
  ASSERT_TRUE(s.ok()) << s.message();
  // Lossless codestream: every pixel follows OpenSlide's YCbCr formula on the (replicated) samples.
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int yv = planes[0][y * w + x];
      const int cw = (w + sub - 1) / sub;
      const int cb = planes[1][(y / sub) * cw + x / sub] - 128, cr = planes[2][(y / sub) * cw + x / sub] - 128;
      const int g = yv + ((static_cast<int>(std::lround(65536 * (0.5 - 0.34414 * cb))) +
                           static_cast<int>(std::lround(65536 * -0.71414 * cr))) >> 16);
      const uint8_t* p = &whole[(static_cast<size_t>(y) * w + x) * 3];
      ASSERT_EQ(p[0], clamp8(yv + std::lround(1.402 * cr))) << x << "," << y;
      ASSERT_EQ(p[1], clamp8(g)) << x << "," << y;
      ASSERT_EQ(p[2], clamp8(yv + std::lround(1.772 * cb))) << x << "," << y;
    }
  }
  for (int i = 0; i < 60; ++i) {
    const int x = static_cast<int>(rng() % w), y = static_cast<int>(rng() % h);
    const int ww = 1 + static_cast<int>(rng() % (w - x)), hh = 1 + static_cast<int>(rng() % (h - y));
    std::vector<uint8_t> win(static_cast<size_t>(ww) * hh * 3);
    s = decoder.decode_window(stream, desc, ImageView{win.data(), ww * 3, ww, hh, 3, {}}, x, y);
    ASSERT_TRUE(s.ok()) << s.message();
    for (int r = 0; r < hh; ++r) {
      ASSERT_EQ(0, std::memcmp(&win[static_cast<size_t>(r) * ww * 3], &whole[(static_cast<size_t>(y + r) * w + x) * 3],
                               static_cast<size_t>(ww) * 3))
          << "window " << x << "," << y << " " << ww << "x" << hh;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ChromaSubsampling, J2kWindows, ::testing::Values(1, 2));

// A flat 32 x 32 codestream and the description of a 32 x 32 JPEG 2000 tile.
std::vector<uint8_t> flat_codestream() {
  std::vector<std::vector<uint8_t>> planes(3, std::vector<uint8_t>(32 * 32, 100));
  return j2k_encode(planes, 32, 32, 1);
}

TileDesc tile32() {
  TileDesc desc;
  desc.compression = Compression::kJpeg2000;
  desc.width = 32;
  desc.height = 32;
  return desc;
}

TEST(J2k, DamagedCodestreamsAreErrors) {
  const auto stream = flat_codestream();
  TileDesc desc = tile32();
  std::vector<uint8_t> out(32 * 32 * 3);
  CpuDecoder decoder;
  for (size_t cut : {size_t{0}, size_t{10}, stream.size() / 3}) {
    std::vector<uint8_t> broken(stream.begin(), stream.begin() + static_cast<long>(cut));
    Status s = decoder.decode(broken, desc, ImageView{out.data(), 96, 32, 32, 3, {}});
    EXPECT_FALSE(s.ok()) << "cut " << cut;
  }
  desc.width = 64;  // a codestream smaller than the tile
  std::vector<uint8_t> wide(64 * 32 * 3);
  EXPECT_EQ(decoder.decode(stream, desc, ImageView{wide.data(), 192, 64, 32, 3, {}}).code(), StatusCode::kCorrupt);
}

TEST(J2k, HeadersClaimingHugeGeometryAreRefusedBeforeOpenJpegAllocates) {
  const auto stream = flat_codestream();
  const TileDesc desc = tile32();
  std::vector<uint8_t> out(32 * 32 * 3);
  CpuDecoder decoder;
  auto patch32 = [](std::vector<uint8_t>& s, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) s[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  };
  auto huge_image = stream;
  patch32(huge_image, 8, 1u << 30);  // Xsiz
  Status s = decoder.decode(huge_image, desc, ImageView{out.data(), 96, 32, 32, 3, {}});
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("larger than the 32x32 tile"), std::string::npos) << s.message();
  auto tiny_tiles = stream;
  patch32(tiny_tiles, 24, 0);  // XTsiz = 0
  EXPECT_EQ(decoder.decode(tiny_tiles, desc, ImageView{out.data(), 96, 32, 32, 3, {}}).code(), StatusCode::kCorrupt);
  std::vector<uint8_t> not_j2k(64, 0x42);
  EXPECT_EQ(decoder.decode(not_j2k, desc, ImageView{out.data(), 96, 32, 32, 3, {}}).code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace tilewise::codecs
