// The decoder conformance suite (decoder_conformance.cc) over the backends that need no GPU: the CPU
// decoders, and a fake that takes only raw RGB tiles and whole chunks (as the GPU backend takes only whole
// chunks), so the suite's refusal and batch rules are exercised on a backend unlike the CPU's.
#include <cstring>

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/decoder_conformance.h"

namespace tilewise::codecs::testing {
namespace {

class FakeRawDecoder final : public Decoder {
 public:
  const char* backend() const override { return "fake-raw"; }
  DeviceType output() const override { return DeviceType::kCpu; }
  bool window_decode() const override { return false; }
  Status can_decode(const TileDesc& d) const override {
    if (d.compression != Compression::kNone) return unsupported(std::string("fake: no ") + compression_name(d.compression));
    if (d.samples_per_pixel != 3 || d.bits_per_sample != 8) return unsupported("fake: 8-bit RGB only");
    return Status();
  }
  void decode_batch(std::span<const DecodeRequest> requests, std::span<Status> statuses) override {
    for (size_t i = 0; i < requests.size(); ++i) {
      const DecodeRequest& r = requests[i];
      statuses[i] = can_decode(*r.desc);
      if (!statuses[i].ok()) continue;
      const size_t row = static_cast<size_t>(r.desc->width) * 3;
      if (r.data.size() < row * static_cast<size_t>(r.desc->height)) {
        statuses[i] = corrupt("fake: tile is shorter than its pixels");
        continue;
      }
      for (int32_t y = 0; y < r.desc->height; ++y) std::memcpy(r.out.row(y), r.data.data() + y * row, row);
    }
  }
};

INSTANTIATE_TEST_SUITE_P(
    Backends, DecoderConformance,
    ::testing::Values(DecoderBackend{"cpu", [] { return std::unique_ptr<Decoder>(std::make_unique<CpuDecoder>()); }, 0},
                      DecoderBackend{"fake", [] { return std::unique_ptr<Decoder>(std::make_unique<FakeRawDecoder>()); }, 0}),
    [](const ::testing::TestParamInfo<DecoderBackend>& info) { return info.param.name; });

}  // namespace
}  // namespace tilewise::codecs::testing
