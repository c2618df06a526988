// Built when CUDA or the nvImageCodec header is not available: device_status() says so, and every device
// operation fails with the same reason (the rest of the GPU layer - planning, lanes, the device tile cache -
// is plain C++ and built, and tested, everywhere).
#include "gpu/cuda_ops.h"

namespace tilewise::gpu {

namespace {
Status not_built() {
  return unsupported("this build of tilewise has no GPU support (built without the CUDA toolkit or the "
                     "nvidia-nvimgcodec-cu13 0.8 header)");
}

class NoDevice final : public DeviceOps {
 public:
  int device() const override { return 0; }
  Result<void*> allocate(size_t) override { return not_built(); }
  void release(void*) override {}
  Result<Stream> acquire_stream() override { return not_built(); }
  void return_stream(Stream) override {}
  Status fill(uint8_t*, size_t, int32_t, int32_t, const uint8_t[3], Stream) override { return not_built(); }
  Status clear(uint8_t*, size_t, size_t, int32_t, Stream) override { return not_built(); }
  Status copy_2d(uint8_t*, size_t, const uint8_t*, size_t, int32_t, int32_t, bool, Stream) override {
    return not_built();
  }
  Status synchronize(Stream) override { return not_built(); }
};
}  // namespace

Status device_status(int) { return not_built(); }

int current_device() { return 0; }

DeviceOps& cuda_ops(int) {
  static NoDevice none;
  return none;
}

}  // namespace tilewise::gpu
