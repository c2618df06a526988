// The checks of the decoder conformance suite (decoder_conformance.h), on tiles made by the reference
// encoders: JPEG (YCbCr 4:2:0 with tables apart, grey, RGB components), lossless JPEG 2000, deflate, LZW and
// raw. Each backend must refuse what it cannot decode with a reason, decode what it accepts to the
// reference pixels (exactly, or within its lossy bound for JPEG), keep one item's failure to that item, and,
// where it decodes windows, give the crop of the whole tile.
#include "codecs/decoder_conformance.h"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "support/encoders.h"

namespace tilewise::codecs::testing {
namespace {

using tilewise::testing::j2k_encode;
using tilewise::testing::jpeg_encode;
using tilewise::testing::jpeg_reference_decode;
using tilewise::testing::lzw_compress;
using tilewise::testing::zlib_compress;

constexpr int kW = 64, kH = 48;

#define SKIP_IF_UNAVAILABLE()                                                                   \
  do {                                                                                          \
    const Status why = GetParam().available();                                                  \
    if (!why.ok()) GTEST_SKIP() << GetParam().name << " cannot run here: " << why.message();  \
  } while (0)

struct Sample {
  std::string name;
  TileDesc desc;
  std::vector<uint8_t> tables;    // JPEGTables, when stored apart
  std::vector<uint8_t> stored;    // the chunk as a TIFF stores it
  std::vector<uint8_t> complete;  // a self-contained stream (tables spliced in)
  std::vector<uint8_t> expected;  // RGB, kW x kH
  bool lossy = false;
  const std::vector<uint8_t>& bytes_for(const Decoder& d) const { return d.needs_complete_streams() ? complete : stored; }
};

std::vector<uint8_t> texture(int channels, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(static_cast<size_t>(kW) * kH * channels);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      for (int c = 0; c < channels; ++c)
        v[(static_cast<size_t>(y) * kW + x) * channels + c] = static_cast<uint8_t>(x * 3 + y * (c + 2) + rng() % 9);
  return v;
}

TileDesc desc_of(Compression c, ColorSpace color, int spp) {
  TileDesc d;
  d.compression = c;
  d.width = kW;
  d.height = kH;
  d.samples_per_pixel = spp;
  d.color = color;
  return d;
}

const std::vector<Sample>& samples() {
  static const std::vector<Sample> all = [] {
    std::vector<Sample> v;
    auto jpeg = [&](const char* name, int channels, bool rgb_components, int sub, bool abbreviated) {
      Sample s{name, desc_of(Compression::kJpeg, channels == 1 ? ColorSpace::kMinIsBlack
                                                               : (rgb_components ? ColorSpace::kRgb : ColorSpace::kYCbCr),
                             channels)};
      const auto pixels = texture(channels, 7);
      auto full = jpeg_encode(pixels, kW, kH, channels, rgb_components, sub, sub, false);
      auto split = jpeg_encode(pixels, kW, kH, channels, rgb_components, sub, sub, abbreviated);
      s.tables = split.tables;
      s.stored = split.image;
      s.complete = full.image;
      s.expected = jpeg_reference_decode(full.image, rgb_components);
      s.lossy = true;
      v.push_back(std::move(s));
    };
    jpeg("jpeg-ycbcr-420-tables", 3, false, 2, true);
    jpeg("jpeg-grey", 1, false, 1, false);
    jpeg("jpeg-rgb-components", 3, true, 1, true);
    {
      Sample s{"jpeg2000-rgb", desc_of(Compression::kJpeg2000, ColorSpace::kRgb, 3)};
      const auto pixels = texture(3, 11);
      std::vector<std::vector<uint8_t>> planes(3);
      for (size_t i = 0; i < pixels.size(); ++i) planes[i % 3].push_back(pixels[i]);
      s.stored = s.complete = j2k_encode(planes, kW, kH, 1);
      s.expected = pixels;
      v.push_back(std::move(s));
    }
    auto lossless = [&](const char* name, Compression c, std::vector<uint8_t> (*encode)(const std::vector<uint8_t>&)) {
      Sample s{name, desc_of(c, ColorSpace::kRgb, 3)};
      s.expected = texture(3, 13);
      s.stored = s.complete = encode ? encode(s.expected) : s.expected;
      v.push_back(std::move(s));
    };
    lossless("deflate", Compression::kDeflate, &zlib_compress);
    lossless("lzw", Compression::kLzw, &lzw_compress);
    lossless("raw", Compression::kNone, nullptr);
    return v;
  }();
  return all;
}

// A view of the backend's memory, freed at scope exit.
struct Output {
  const DecoderBackend& backend;
  size_t bytes;
  uint8_t* p;
  Output(const DecoderBackend& b, size_t n) : backend(b), bytes(n), p(b.allocate(n)) {}
  ~Output() { backend.release(p); }
  ImageView view(int32_t w, int32_t h) const { return ImageView{p, int64_t{w} * 3, w, h, 3, backend.device}; }
  std::vector<uint8_t> host() const {
    std::vector<uint8_t> h(bytes);
    backend.download(h.data(), p, bytes);
    return h;
  }
};

int max_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 256;
  int m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(int{a[i]} - int{b[i]}));
  return m;
}

DecodeRequest request_for(const Sample& s, const std::vector<uint8_t>& bytes, const Output& out) {
  DecodeRequest r;
  r.data = bytes;
  r.desc = &s.desc;
  r.out = out.view(kW, kH);
  return r;
}

TEST_P(DecoderConformance, RefusalsCarryAReasonAndDecodingARefusedTileFailsCleanly) {
  SKIP_IF_UNAVAILABLE();
  auto decoder = GetParam().make();
  ASSERT_NE(decoder, nullptr);
  EXPECT_FALSE(std::string(decoder->backend()).empty());
  EXPECT_EQ(decoder->output(), GetParam().device.type) << "the backend writes to memory of another kind";
  for (const Sample& s : samples()) {
    Status why = decoder->can_decode(s.desc);
    if (why.ok()) continue;
    EXPECT_EQ(why.code(), StatusCode::kUnsupported) << s.name;
    EXPECT_FALSE(why.message().empty()) << s.name;
    Output out(GetParam(), s.expected.size());
    Status decoded = decoder->decode_one(request_for(s, s.bytes_for(*decoder), out));
    EXPECT_FALSE(decoded.ok()) << s.name << ": a refused tile must not decode";
  }
}

TEST_P(DecoderConformance, AcceptedTilesDecodeToTheReferencePixels) {
  SKIP_IF_UNAVAILABLE();
  auto decoder = GetParam().make();
  int accepted = 0;
  for (Sample s : samples()) {
    if (!decoder->can_decode(s.desc).ok()) continue;
    ++accepted;
    s.desc.jpeg_tables = s.tables;
    Output out(GetParam(), s.expected.size());
    Status st = decoder->decode_one(request_for(s, s.bytes_for(*decoder), out));
    ASSERT_TRUE(st.ok()) << GetParam().name << " " << s.name << ": " << st.message();
    EXPECT_LE(max_difference(out.host(), s.expected), s.lossy ? GetParam().lossy_tolerance : 0) << s.name;
  }
  EXPECT_GT(accepted, 0) << "a backend that accepts nothing conforms vacuously";
}

TEST_P(DecoderConformance, OneBadItemFailsAloneAndTheBatchKeepsItsOrder) {
  SKIP_IF_UNAVAILABLE();
  auto decoder = GetParam().make();
  std::vector<Sample> batch;
  for (Sample s : samples()) {
    if (!decoder->can_decode(s.desc).ok()) continue;
    s.desc.jpeg_tables = s.tables;
    Sample broken = s;
    broken.name += " (truncated)";
    broken.stored.resize(8);
    broken.complete.resize(8);
    batch.push_back(std::move(s));
    batch.push_back(std::move(broken));
  }
  ASSERT_FALSE(batch.empty());
  std::vector<std::unique_ptr<Output>> outs;
  std::vector<DecodeRequest> requests;
  for (const Sample& s : batch) {
    outs.push_back(std::make_unique<Output>(GetParam(), s.expected.size()));
    requests.push_back(request_for(s, s.bytes_for(*decoder), *outs.back()));
  }
  std::vector<Status> statuses(requests.size());
  decoder->decode_batch(requests, statuses);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (i % 2 == 1) {
      EXPECT_FALSE(statuses[i].ok()) << batch[i].name;
      continue;
    }
    ASSERT_TRUE(statuses[i].ok()) << batch[i].name << ": " << statuses[i].message();
    EXPECT_LE(max_difference(outs[i]->host(), batch[i].expected), batch[i].lossy ? GetParam().lossy_tolerance : 0)
        << batch[i].name;
  }
}

TEST_P(DecoderConformance, WindowsAreCropsOfTheWholeTile) {
  SKIP_IF_UNAVAILABLE();
  auto decoder = GetParam().make();
  if (!decoder->window_decode()) GTEST_SKIP() << GetParam().name << " decodes whole tiles only (window_decode false)";
  const int32_t x = 9, y = 17, w = 33, h = 20;  // crosses JPEG MCU boundaries
  for (Sample s : samples()) {
    if (!decoder->can_decode(s.desc).ok()) continue;
    s.desc.jpeg_tables = s.tables;
    Output whole(GetParam(), s.expected.size()), window(GetParam(), static_cast<size_t>(w) * h * 3);
    ASSERT_TRUE(decoder->decode_one(request_for(s, s.bytes_for(*decoder), whole)).ok()) << s.name;
    DecodeRequest r = request_for(s, s.bytes_for(*decoder), window);
    r.out = window.view(w, h);
    r.x = x;
    r.y = y;
    Status st = decoder->decode_one(r);
    ASSERT_TRUE(st.ok()) << s.name << ": " << st.message();
    const auto full = whole.host(), part = window.host();
    for (int32_t row = 0; row < h; ++row) {
      ASSERT_TRUE(std::equal(part.begin() + row * w * 3, part.begin() + (row + 1) * w * 3,
                             full.begin() + ((y + row) * kW + x) * 3))
          << s.name << " row " << row;
    }
  }
}

}  // namespace
}  // namespace tilewise::codecs::testing
