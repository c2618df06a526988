// JPEG XR goes through the helper process (tilewise-jpegxr-worker). The stream here is one the fuzzer
// found: a 64x48 BGR24 stream of imagecodecs' encoder (tests/fuzz/make_seeds.py: gradients and noise) with
// one byte changed, on which jxrlib reads far out of bounds. Restoring that byte gives the good stream.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {
namespace {

constexpr int kWidth = 64, kHeight = 48;
constexpr size_t kChangedByte = 861;  // of the stream
constexpr uint8_t kOriginal = 194;

std::vector<uint8_t> crashing_stream() {
  std::ifstream in(std::string(TILEWISE_SOURCE_DIR) + "/tests/fuzz/regressions/jpegxr/jxrlib-significant-run-segv",
                   std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GT(file.size(), 5u + kChangedByte);
  if (file.size() <= 5) return {};
  return {file.begin() + 5, file.end()};  // after fuzz_jpegxr's five selector bytes
}

std::vector<uint8_t> good_stream() {
  std::vector<uint8_t> s = crashing_stream();
  if (s.size() > kChangedByte) s[kChangedByte] = kOriginal;
  return s;
}

// The seed's first two channels: a sawtooth of x + y and its upside-down copy (lossy: compared on average).
double mean_error(const std::vector<uint8_t>& bgr) {
  double sum = 0;
  int n = 0;
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      const int expected = (y + x) * 3 % 251;
      if (expected < 16 || expected > 235) continue;  // the wrap of the sawtooth rings in a lossy stream
      sum += std::abs(int{bgr[(static_cast<size_t>(y) * kWidth + x) * 3]} - expected);
      ++n;
    }
  }
  return sum / n;
}

TEST(JpegXr, DecodesInTheHelper) {
  std::vector<uint8_t> out(kWidth * kHeight * 3);
  Result<size_t> r = jpegxr_decode(good_stream(), out, kWidth, kHeight, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, out.size());
  EXPECT_LT(mean_error(out), 6.0);
}

TEST(JpegXr, AStreamThatCrashesJxrlibIsACorruptErrorAndTheNextDecodes) {
  std::vector<uint8_t> out(kWidth * kHeight * 3);
  Result<size_t> r = jpegxr_decode(crashing_stream(), out, kWidth, kHeight, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("jpeg-xr: the decoder process died on this stream"), std::string::npos)
      << r.status().message();
  r = jpegxr_decode(good_stream(), out, kWidth, kHeight, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LT(mean_error(out), 6.0);
}

TEST(JpegXr, TheHelpersChecksComeBackAsErrors) {
  std::vector<uint8_t> out(kWidth * kHeight * 6);
  Result<size_t> r = jpegxr_decode(good_stream(), out, kWidth, kHeight, 6);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bytes per pixel"), std::string::npos) << r.status().message();
  r = jpegxr_decode(good_stream(), out, kWidth, kHeight + 1, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the stream is 64x48, the subblock 64x49"), std::string::npos)
      << r.status().message();
  const std::vector<uint8_t> junk(100, 0x5a);
  r = jpegxr_decode(junk, out, kWidth, kHeight, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
}

TEST(JpegXr, ConcurrentDecodesWithCrashesAmongThem) {
  const std::vector<uint8_t> good = good_stream(), bad = crashing_stream();
  std::vector<uint8_t> reference(kWidth * kHeight * 3);
  ASSERT_TRUE(jpegxr_decode(good, reference, kWidth, kHeight, 3).ok());
  std::vector<std::thread> threads;
  std::vector<int> wrong(6, 0);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> out(reference.size());
      for (int i = 0; i < 12; ++i) {
        const bool poison = (i + t) % 5 == 0;
        Result<size_t> r = jpegxr_decode(poison ? bad : good, out, kWidth, kHeight, 3);
        if (poison ? r.ok() : (!r.ok() || out != reference)) ++wrong[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 6; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace tilewise::codecs
