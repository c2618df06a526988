#include <gtest/gtest.h>
#include <charls/charls.h>
#include <libdeflate.h>
#include <zstd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/cpu/lossless_decoders.h"
#include "codecs/cpu/pixel_convert.h"
#include "support/encoders.h"

namespace tilewise::codecs {
namespace {

using testing::lzw_compress;
using testing::zlib_compress;

std::vector<uint8_t> sample_pixels(int w, int h, int spp, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(static_cast<size_t>(w) * h * spp);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i / spp) % 97 + (rng() % 4));
  return v;
}

TileDesc rgb_desc(Compression c, int w, int h, int spp = 3) {
  TileDesc d;
  d.compression = c;
  d.width = w;
  d.height = h;
  d.samples_per_pixel = spp;
  d.color = spp >= 3 ? ColorSpace::kRgb : ColorSpace::kMinIsBlack;
  return d;
}

void expect_rgb_equals_samples(const std::vector<uint8_t>& rgb, const std::vector<uint8_t>& samples, int spp) {
  const size_t pixels = rgb.size() / 3;
  for (size_t p = 0; p < pixels; ++p) {
    for (int c = 0; c < 3; ++c) {
      const uint8_t expected = spp >= 3 ? samples[p * spp + c] : samples[p * spp];
      ASSERT_EQ(rgb[p * 3 + c], expected) << "pixel " << p << " channel " << c;
    }
  }
}

class LosslessRoundTrip : public ::testing::TestWithParam<std::tuple<Compression, int>> {};

TEST_P(LosslessRoundTrip, DecodesExactlyIntoRgb) {
  const auto [compression, spp] = GetParam();
  const int w = 48, h = 20;
  const auto samples = sample_pixels(w, h, spp, 7);
  std::vector<uint8_t> encoded;
  switch (compression) {
    case Compression::kNone: encoded = samples; break;
    case Compression::kDeflate: encoded = zlib_compress(samples); break;
    case Compression::kLzw: encoded = lzw_compress(samples); break;
    case Compression::kZstd: {
      encoded.resize(ZSTD_compressBound(samples.size()));
      encoded.resize(ZSTD_compress(encoded.data(), encoded.size(), samples.data(), samples.size(), 3));
      break;
    }
    default: FAIL();
  }
  CpuDecoder decoder;
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  Status s = decoder.decode(encoded, rgb_desc(compression, w, h, spp), ImageView{rgb.data(), w * 3, w, h, 3, {}});
  ASSERT_TRUE(s.ok()) << s.message();
  expect_rgb_equals_samples(rgb, samples, spp);
}

TEST(LosslessSample, OneSampleOfEachPixelAloneAndRefusalsWhereThatIsNotPossible) {
  const int w = 40, h = 12, spp = 4;
  const auto samples = sample_pixels(w, h, spp, 11);
  CpuDecoder decoder;
  for (const auto& [compression, encoded] : {std::pair{Compression::kNone, samples},
                                             std::pair{Compression::kDeflate, zlib_compress(samples)},
                                             std::pair{Compression::kLzw, lzw_compress(samples)}}) {
    std::vector<uint8_t> alpha(static_cast<size_t>(w + 3) * h, 0xAB);  // rows 3 bytes apart past the width
    TileDesc d = rgb_desc(compression, w, h, spp);
    d.predictor = 1;
    ASSERT_TRUE(decoder.decode_sample(encoded, d, 3, alpha.data(), w + 3, h - 2).ok());
    for (int y = 0; y < h - 2; ++y) {
      for (int x = 0; x < w; ++x) ASSERT_EQ(alpha[y * (w + 3) + x], samples[(y * w + x) * spp + 3]) << x << "," << y;
      EXPECT_EQ(alpha[y * (w + 3) + w], 0xAB);  // nothing written past the width
    }
    EXPECT_EQ(alpha[(h - 2) * (w + 3)], 0xAB);  // nor past the rows asked for
  }
  uint8_t one = 0;
  TileDesc jpeg = rgb_desc(Compression::kJpeg, w, h, 3);
  EXPECT_EQ(decoder.decode_sample(samples, jpeg, 0, &one, 1, 1).code(), StatusCode::kUnsupported);
  TileDesc deep = rgb_desc(Compression::kNone, w, h, spp);
  deep.bits_per_sample = 16;
  EXPECT_EQ(decoder.decode_sample(samples, deep, 3, &one, 1, 1).code(), StatusCode::kUnsupported);
  EXPECT_EQ(decoder.decode_sample(samples, rgb_desc(Compression::kNone, w, h, spp), 4, &one, 1, 1).code(),
            StatusCode::kUnsupported);
}

INSTANTIATE_TEST_SUITE_P(Codecs, LosslessRoundTrip,
                         ::testing::Combine(::testing::Values(Compression::kNone, Compression::kDeflate,
                                                              Compression::kLzw, Compression::kZstd),
                                            ::testing::Values(1, 3, 4)));

TEST(Lzw, LongRepetitiveStreamsCrossEveryCodeWidth) {
  std::vector<uint8_t> data(200000);
  std::mt19937 rng(3);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i % 300 < 150) ? i % 7 : rng() % 256);
  auto encoded = lzw_compress(data);
  std::vector<uint8_t> out(data.size());
  auto n = lzw_decode(encoded, out);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, data.size());
  EXPECT_EQ(out, data);
}

TEST(Lzw, LongStringsAndEveryCutGiveTheStreamsFirstBytes) {
  // Runs of one byte make strings far longer than 16 bytes and codes defined by themselves (KwKwK); a ramp
  // and noise between make short ones.
  std::vector<uint8_t> data;
  std::mt19937 rng(9);
  for (int part = 0; part < 40; ++part) {
    data.insert(data.end(), static_cast<size_t>(50 + part * 37), static_cast<uint8_t>(part * 5));
    for (int i = 0; i < 60; ++i) data.push_back(static_cast<uint8_t>(part % 2 ? i : rng() % 256));
  }
  auto encoded = lzw_compress(data);
  std::vector<uint8_t> out(data.size());
  auto n = lzw_decode(encoded, out);
  ASSERT_TRUE(n.ok()) << n.status().message();
  ASSERT_EQ(*n, data.size());
  EXPECT_EQ(out, data);
  std::vector<size_t> sizes;
  for (size_t size = 0; size <= 80; ++size) sizes.push_back(size);
  for (size_t size = 1000; size < data.size(); size += 997) sizes.push_back(size);
  for (size_t size : sizes) {
    std::vector<uint8_t> small(size + 32, 0xAB);
    auto got = lzw_decode(encoded, std::span<uint8_t>(small.data(), size));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, size);
    EXPECT_TRUE(std::equal(small.begin(), small.begin() + static_cast<long>(size), data.begin())) << size;
    EXPECT_TRUE(std::all_of(small.begin() + static_cast<long>(size), small.end(), [](uint8_t b) { return b == 0xAB; }))
        << "written past the end at " << size;
  }
}

TEST(Lzw, CutsOverlongStreamsAtTheChunksEndAndRefusesInvalidCodes) {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 % 13);
  auto encoded = lzw_compress(data);
  for (size_t size : {size_t{10}, size_t{997}}) {  // as libtiff: the first bytes, no write past the end
    std::vector<uint8_t> small(size + 8, 0xAB);
    auto got = lzw_decode(encoded, std::span<uint8_t>(small.data(), size));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, size);
    EXPECT_TRUE(std::equal(small.begin(), small.begin() + static_cast<long>(size), data.begin()));
    EXPECT_EQ(small[size], 0xAB);
  }
  std::vector<uint8_t> garbage = {0x80, 0x3F, 0xFF, 0xFF, 0xFF};  // clear, 255, then code 511: beyond the table
  std::vector<uint8_t> out(100);
  EXPECT_EQ(lzw_decode(garbage, out).status().code(), StatusCode::kCorrupt);
}

TEST(DeflateAndZstd, CutOverlongStreamsAtTheChunksEnd) {
  std::vector<uint8_t> data(50000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 % 251);
  std::vector<uint8_t> zstd(ZSTD_compressBound(data.size()));
  zstd.resize(ZSTD_compress(zstd.data(), zstd.size(), data.data(), data.size(), 3));
  DeflateDecoder deflate;
  ZstdDecoder zstd_decoder;
  for (size_t size : {size_t{100}, size_t{49999}, size_t{50000}}) {
    std::vector<uint8_t> out(size + 4, 0xCD);
    auto a = deflate.decode(zlib_compress(data), std::span<uint8_t>(out.data(), size));
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(*a, size);
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + static_cast<long>(size), data.begin()));
    EXPECT_EQ(out[size], 0xCD);
    std::fill(out.begin(), out.end(), 0xCD);
    auto b = zstd_decoder.decode(zstd, std::span<uint8_t>(out.data(), size));
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(*b, size);
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + static_cast<long>(size), data.begin()));
    EXPECT_EQ(out[size], 0xCD);
  }
  // A truncated stream still fails (fewer bytes than the chunk: the caller refuses it), garbage too.
  std::vector<uint8_t> out(data.size());
  auto truncated = zstd_decoder.decode(std::span<const uint8_t>(zstd.data(), zstd.size() / 2), out);
  EXPECT_TRUE(!truncated.ok() || *truncated < data.size());
  std::vector<uint8_t> garbage(64, 0x5A);
  EXPECT_FALSE(zstd_decoder.decode(garbage, out).ok());
  EXPECT_FALSE(deflate.decode(garbage, out).ok());
}

TEST(HorizontalPredictor, UndoesDifferencingPerSample) {
  std::vector<uint8_t> row = {10, 20, 30, 1, 2, 3, 255, 0, 1};  // 3 RGB pixels, differenced
  undo_horizontal_predictor(row.data(), 9, 1, 3);
  EXPECT_EQ(row, (std::vector<uint8_t>{10, 20, 30, 11, 22, 33, 10, 22, 34}));
}

TEST(CpuDecoder, DeflateWithPredictorAndShortLastStrip) {
  const int w = 16, rows_per_strip = 8, last_rows = 3;
  auto samples = sample_pixels(w, last_rows, 3, 11);
  auto differenced = samples;
  for (int y = 0; y < last_rows; ++y)
    for (int i = w * 3 - 1; i >= 3; --i)
      differenced[y * w * 3 + i] = static_cast<uint8_t>(differenced[y * w * 3 + i] - differenced[y * w * 3 + i - 3]);
  auto encoded = zlib_compress(differenced);
  TileDesc d = rgb_desc(Compression::kDeflate, w, rows_per_strip);
  d.predictor = 2;
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * last_rows * 3);
  CpuDecoder decoder;
  Status s = decoder.decode(encoded, d, ImageView{rgb.data(), w * 3, w, last_rows, 3, {}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(rgb, samples);
}

TEST(CpuDecoder, ReportsCorruptAndTruncatedData) {
  CpuDecoder decoder;
  std::vector<uint8_t> rgb(16 * 16 * 3);
  ImageView out{rgb.data(), 48, 16, 16, 3, {}};
  std::vector<uint8_t> junk(50, 0x5A);
  Status s = decoder.decode(junk, rgb_desc(Compression::kDeflate, 16, 16), out);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.message().rfind("deflate:", 0), 0u) << s.message();
  EXPECT_EQ(decoder.decode(junk, rgb_desc(Compression::kZstd, 16, 16), out).code(), StatusCode::kCorrupt);
  auto full = zlib_compress(std::vector<uint8_t>(16 * 8 * 3, 1));  // half the rows
  s = decoder.decode(full, rgb_desc(Compression::kDeflate, 16, 16), out);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("needed"), std::string::npos);
  EXPECT_EQ(decoder.decode(junk, rgb_desc(Compression::kNone, 16, 16), out).code(), StatusCode::kCorrupt);
}

TEST(CpuDecoder, RefusesWhatItCannotDecode) {
  TileDesc d = rgb_desc(Compression::kNone, 8, 8);
  d.bits_per_sample = 12;
  EXPECT_EQ(CpuDecoder::supports(d).code(), StatusCode::kUnsupported);
  d = rgb_desc(Compression::kJpeg, 8, 8);
  d.bits_per_sample = 16;
  EXPECT_EQ(CpuDecoder::supports(d).code(), StatusCode::kUnsupported);
  d = rgb_desc(Compression::kDeflate, 8, 8);
  d.predictor = 3;
  EXPECT_EQ(CpuDecoder::supports(d).code(), StatusCode::kUnsupported);
  d = rgb_desc(Compression::kNone, 8, 8);
  d.color = ColorSpace::kYCbCr;
  EXPECT_EQ(CpuDecoder::supports(d).code(), StatusCode::kUnsupported);
}

TEST(CpuDecoder, SixteenBitSamplesKeepTheirHighByteInEitherByteOrderWithPredictor) {
  const int w = 5, h = 2;
  std::vector<uint16_t> values = {0x1234, 0xFF00, 0x00FF, 0x8080, 0x0101, 0xABCD, 0x0000, 0xFFFF, 0x7F7F, 0x4242};
  for (bool big : {false, true}) {
    std::vector<uint8_t> raw;
    for (int y = 0; y < h; ++y) {
      uint16_t prev = 0;
      for (int x = 0; x < w; ++x) {
        const uint16_t v = values[y * w + x];
        const uint16_t diff = static_cast<uint16_t>(x == 0 ? v : v - prev);  // predictor 2
        prev = v;
        raw.push_back(static_cast<uint8_t>(big ? diff >> 8 : diff & 0xFF));
        raw.push_back(static_cast<uint8_t>(big ? diff & 0xFF : diff >> 8));
      }
    }
    TileDesc d = rgb_desc(Compression::kDeflate, w, h, 1);
    d.bits_per_sample = 16;
    d.predictor = 2;
    d.big_endian = big;
    std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
    CpuDecoder decoder;
    Status s = decoder.decode(zlib_compress(raw), d, ImageView{rgb.data(), w * 3, w, h, 3, {}});
    ASSERT_TRUE(s.ok()) << s.message();
    for (int i = 0; i < w * h; ++i) EXPECT_EQ(rgb[i * 3], values[i] >> 8) << "sample " << i << " big " << big;
  }
}

TEST(CpuDecoder, BgrSixteenBitSamplesInBytePlanesComeOutAsRgbHighBytes) {
  const int w = 3, h = 2;
  std::vector<uint16_t> bgr(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < bgr.size(); ++i) bgr[i] = static_cast<uint16_t>(0x0101 * (7 * i + 3) + (i << 4));
  std::vector<uint8_t> low, high, interleaved;
  for (const uint16_t v : bgr) {
    low.push_back(static_cast<uint8_t>(v & 0xFF));
    high.push_back(static_cast<uint8_t>(v >> 8));
    interleaved.push_back(static_cast<uint8_t>(v & 0xFF));
    interleaved.push_back(static_cast<uint8_t>(v >> 8));
  }
  std::vector<uint8_t> split = low;
  split.insert(split.end(), high.begin(), high.end());
  for (const bool planes : {false, true}) {
    const std::vector<uint8_t>& raw = planes ? split : interleaved;
    std::vector<uint8_t> encoded(ZSTD_compressBound(raw.size()));
    encoded.resize(ZSTD_compress(encoded.data(), encoded.size(), raw.data(), raw.size(), 3));
    TileDesc d = rgb_desc(Compression::kZstd, w, h, 3);
    d.bits_per_sample = 16;
    d.color = ColorSpace::kBgr;
    d.split_bytes = planes;
    std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
    CpuDecoder decoder;
    const Status s = decoder.decode(encoded, d, ImageView{rgb.data(), w * 3, w, h, 3, {}});
    ASSERT_TRUE(s.ok()) << s.message();
    for (int p = 0; p < w * h; ++p) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(rgb[p * 3 + c], bgr[p * 3 + (2 - c)] >> 8) << "pixel " << p << " planes " << planes;
    }
  }
}

TEST(CpuDecoder, MinIsWhiteGreyIsInverted) {
  std::vector<uint8_t> grey = {0, 100, 255, 7};
  TileDesc d = rgb_desc(Compression::kNone, 2, 2, 1);
  d.color = ColorSpace::kMinIsWhite;
  std::vector<uint8_t> rgb(12);
  CpuDecoder decoder;
  ASSERT_TRUE(decoder.decode(grey, d, ImageView{rgb.data(), 6, 2, 2, 3, {}}).ok());
  EXPECT_EQ(rgb, (std::vector<uint8_t>{255, 255, 255, 155, 155, 155, 0, 0, 0, 248, 248, 248}));
}

}  // namespace
}  // namespace tilewise::codecs

namespace tilewise::codecs {
namespace {

std::vector<uint8_t> jpegls_encode(const std::vector<uint8_t>& pixels, int w, int h, int samples) {
  charls_jpegls_encoder* e = charls_jpegls_encoder_create();
  const charls_frame_info info{static_cast<uint32_t>(w), static_cast<uint32_t>(h), 8, samples};
  EXPECT_EQ(charls_jpegls_encoder_set_frame_info(e, &info), charls::jpegls_errc::success);
  EXPECT_EQ(charls_jpegls_encoder_set_interleave_mode(e, samples > 1 ? charls::interleave_mode::sample
                                                                        : charls::interleave_mode::none),
            charls::jpegls_errc::success);
  size_t size = 0;
  charls_jpegls_encoder_get_estimated_destination_size(e, &size);
  std::vector<uint8_t> out(size);
  charls_jpegls_encoder_set_destination_buffer(e, out.data(), out.size());
  EXPECT_EQ(charls_jpegls_encoder_encode_from_buffer(e, pixels.data(), pixels.size(), 0), charls::jpegls_errc::success);
  charls_jpegls_encoder_get_bytes_written(e, &size);
  charls_jpegls_encoder_destroy(e);
  out.resize(size);
  return out;
}

TEST(JpegLs, StreamsWithoutTheirEoiAreDecodedWithOneAppended) {
  const std::vector<uint8_t> pixels = sample_pixels(40, 24, 3, 9);
  const std::vector<uint8_t> stream = jpegls_encode(pixels, 40, 24, 3);
  ASSERT_GT(stream.size(), 4u);
  EXPECT_TRUE(jpegls_ends_with_eoi(stream));
  std::vector<uint8_t> padded = stream;  // DICOM pads a frame to an even length
  padded.push_back(0);
  EXPECT_TRUE(jpegls_ends_with_eoi(padded));
  const std::vector<uint8_t> cut(stream.begin(), stream.end() - 2);
  EXPECT_FALSE(jpegls_ends_with_eoi(cut));
  EXPECT_FALSE(jpegls_ends_with_eoi(std::vector<uint8_t>{0xFF}));
  const std::vector<const std::vector<uint8_t>*> streams{&stream, &padded, &cut};
  for (const std::vector<uint8_t>* s : streams) {  // the same pixels, EOI or not
    std::vector<uint8_t> out(pixels.size());
    Result<size_t> r = jpegls_decode(*s, out, 40, 24, 3);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(out, pixels);
  }
  // A damaged frame the fuzzer found (fuzz/regressions/open_read/charls-scan-without-eoi-slow.dcm): its
  // scan runs to the end of the fragment with no marker after it; CharLS took 5-6 s on it before the EOI
  // was appended, and reports it as damaged either way.
  std::ifstream in(std::string(TILEWISE_SOURCE_DIR) + "/tests/cpp/codecs/data/jpegls-scan-without-eoi.jls",
                   std::ios::binary);
  const std::vector<uint8_t> damaged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(damaged.size(), 8384u);
  EXPECT_FALSE(jpegls_ends_with_eoi(damaged));
  std::vector<uint8_t> out(64 * 64 * 3);
  Result<size_t> r = jpegls_decode(damaged, out, 64, 64, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(r.status().message().rfind("jpeg-ls: ", 0), 0u) << r.status().message();
}

}  // namespace
}  // namespace tilewise::codecs
