// The decoder conformance suite (codecs/decoder_conformance.cc) on the nvImageCodec backend: built only with
// the GPU path, run on a GPU machine (scripts/gpu/test.sh). Outputs live in device memory; JPEG pixels may
// differ from libjpeg-turbo's by nvJPEG's IDCT and upsampling (tests/gpu allows the same bound).
#include <cuda_runtime.h>

#include <cstdlib>

#include "codecs/decoder_conformance.h"
#include "codecs/nvimgcodec/nvimgcodec_decoder.h"

namespace tilewise::codecs::testing {
namespace {

DecoderBackend nvimgcodec_backend() {
  DecoderBackend b{"nvimgcodec",
                   [] {
                     auto d = nvimgcodec::create_decoder(0);
                     EXPECT_TRUE(d.ok()) << d.status().message();
                     return d.ok() ? std::move(*d) : nullptr;
                   },
                   16};
  b.allocate = [](size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    return static_cast<uint8_t*>(p);
  };
  b.release = [](uint8_t* p) { cudaFree(p); };
  b.download = [](uint8_t* host, const uint8_t* p, size_t n) {
    EXPECT_EQ(cudaMemcpy(host, p, n, cudaMemcpyDeviceToHost), cudaSuccess);
  };
  b.device = Device{DeviceType::kCuda, 0};
  b.available = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return unsupported("no CUDA device");
    if (const char* dir = std::getenv("TILEWISE_NVIMGCODEC_DIR")) nvimgcodec::set_library_directory(dir);
    return nvimgcodec::library_status();
  };
  return b;
}

INSTANTIATE_TEST_SUITE_P(Gpu, DecoderConformance, ::testing::Values(nvimgcodec_backend()),
                         [](const ::testing::TestParamInfo<DecoderBackend>& info) { return info.param.name; });

}  // namespace
}  // namespace tilewise::codecs::testing
