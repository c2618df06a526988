// Built when CUDA or the nvImageCodec 0.8 header is not available: no decoder or encoder can be made.
#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "codecs/nvimgcodec/nvimgcodec_encoder.h"

namespace tilewise::codecs::nvimgcodec {

namespace {
Status not_built() {
  return unsupported("this build of tilewise has no GPU support (built without the CUDA toolkit or the "
                     "nvidia-nvimgcodec-cu13 0.8 header)");
}
}  // namespace

Status library_status() { return not_built(); }
void set_library_directory(const std::string&) {}
Result<std::unique_ptr<Decoder>> create_decoder(int) { return not_built(); }
void at_shutdown(void (*)()) {}
Result<std::unique_ptr<Encoder>> create_encoder(int, const EncodeSettings&) { return not_built(); }

}  // namespace tilewise::codecs::nvimgcodec
