// The nvImageCodec encoders (codecs/nvimgcodec/nvimgcodec_encoder.h) on a GPU machine (scripts/gpu/test.sh),
// in a process of their own, in convert's order: an encoder is made before the first decoder, both on the
// process's one nvImageCodec instance. A tile of texture is encoded on the device, decoded back by the
// nvImageCodec decoder: JPEG within its quality's tolerance, lossless JPEG 2000 exact.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "codecs/nvimgcodec/nvimgcodec_encoder.h"

namespace tilewise::codecs::nvimgcodec {
namespace {

constexpr int32_t kSize = 256;

Status available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return unsupported("no CUDA device");
  if (const char* dir = std::getenv("TILEWISE_NVIMGCODEC_DIR")) set_library_directory(dir);
  return library_status();
}

#define SKIP_WITHOUT_GPU()                                                        \
  do {                                                                            \
    const Status why = available();                                               \
    if (!why.ok()) GTEST_SKIP() << "nvImageCodec cannot run here: " << why.message(); \
  } while (0)

// RGB texture with edges and noise, as a tissue tile has.
std::vector<uint8_t> texture() {
  std::vector<uint8_t> rgb(static_cast<size_t>(kSize) * kSize * 3);
  uint32_t noise = 7;
  for (int32_t y = 0; y < kSize; ++y) {
    for (int32_t x = 0; x < kSize; ++x) {
      for (int32_t c = 0; c < 3; ++c) {
        noise = noise * 1664525u + 1013904223u;
        const int32_t band = ((x / 32 + y / 32) % 2) * 60;
        rgb[(static_cast<size_t>(y) * kSize + x) * 3 + c] = static_cast<uint8_t>(band + x / 2 + c * 40 + (noise >> 28));
      }
    }
  }
  return rgb;
}

struct DeviceBuffer {
  uint8_t* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), bytes), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
};

// Encodes `rgb` on the device under `settings`, decodes the stream back with a decoder made afterwards,
// returns the decoded pixels.
std::vector<uint8_t> round_trip(const std::vector<uint8_t>& rgb, const EncodeSettings& settings, Compression compression,
                                ColorSpace color) {
  const size_t bytes = rgb.size();
  DeviceBuffer source(bytes), decoded(bytes);
  EXPECT_EQ(cudaMemcpy(source.p, rgb.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  auto encoder = create_encoder(0, settings);
  EXPECT_TRUE(encoder.ok()) << encoder.status().message();
  if (!encoder.ok()) return {};
  const DeviceTile tile{source.p, kSize * 3, kSize, kSize};
  std::vector<std::vector<uint8_t>> streams(1);
  std::vector<Status> statuses(1);
  (*encoder)->encode_batch(std::span<const DeviceTile>(&tile, 1), nullptr, streams, statuses);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].message();
  EXPECT_GT(streams[0].size(), 100u);

  auto decoder = create_decoder(0);
  EXPECT_TRUE(decoder.ok()) << decoder.status().message();
  if (!decoder.ok()) return {};
  TileDesc desc;
  desc.compression = compression;
  desc.width = desc.height = kSize;
  desc.samples_per_pixel = 3;
  desc.color = color;
  DecodeRequest request;
  request.data = streams[0];
  request.desc = &desc;
  request.out = ImageView{decoded.p, kSize * 3, kSize, kSize, 3, Device{DeviceType::kCuda, 0}, 1};
  const Status status = (*decoder)->decode_one(request);
  EXPECT_TRUE(status.ok()) << status.message();
  std::vector<uint8_t> back(bytes);
  EXPECT_EQ(cudaMemcpy(back.data(), decoded.p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return back;
}

// Runs first in this process: the first encoder, then the first decoder.
TEST(NvImageCodecEncoder, JpegBeforeAnyDecoderRoundTrips) {
  SKIP_WITHOUT_GPU();
  const auto rgb = texture();
  EncodeSettings settings;
  settings.codec = EncodeSettings::Codec::kJpeg;
  settings.quality = 90;
  const auto back = round_trip(rgb, settings, Compression::kJpeg, ColorSpace::kYCbCr);
  ASSERT_EQ(back.size(), rgb.size());
  double sum = 0;
  int worst = 0;
  for (size_t i = 0; i < rgb.size(); ++i) {
    const int d = std::abs(static_cast<int>(back[i]) - static_cast<int>(rgb[i]));
    sum += d;
    worst = std::max(worst, d);
  }
  // Quality 90 at 4:2:0 on this texture: a mean error of a few levels; the block edges at most a few tens.
  EXPECT_LT(sum / static_cast<double>(rgb.size()), 4.0);
  EXPECT_LT(worst, 64);
}

TEST(NvImageCodecEncoder, LosslessJpeg2000RoundTripsExactly) {
  SKIP_WITHOUT_GPU();
  const auto rgb = texture();
  EncodeSettings settings;
  settings.codec = EncodeSettings::Codec::kJpeg2000Lossless;
  const auto back = round_trip(rgb, settings, Compression::kJpeg2000, ColorSpace::kRgb);
  ASSERT_EQ(back.size(), rgb.size());
  EXPECT_EQ(back, rgb);
}

}  // namespace
}  // namespace tilewise::codecs::nvimgcodec
