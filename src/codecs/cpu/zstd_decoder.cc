#include <zstd.h>
#include <zstd_errors.h>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

ZstdDecoder::ZstdDecoder() : ctx_(ZSTD_createDCtx()) {}
ZstdDecoder::~ZstdDecoder() { ZSTD_freeDCtx(ctx_); }

Result<size_t> ZstdDecoder::decode(std::span<const uint8_t> in, std::span<uint8_t> out) {
  if (ctx_ == nullptr) return out_of_memory("zstd: cannot allocate a context");
  // Streaming, so that a stream longer than the chunk stops when the chunk is full (libtiff's behaviour).
  ZSTD_DCtx_reset(ctx_, ZSTD_reset_session_only);
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  ZSTD_outBuffer output{out.data(), out.size(), 0};
  while (input.pos < input.size && output.pos < output.size) {
    const size_t r = ZSTD_decompressStream(ctx_, &output, &input);
    if (ZSTD_isError(r)) return corrupt(std::string("zstd: ") + ZSTD_getErrorName(r));
    if (r == 0 && input.pos == input.size) break;  // the last frame is complete
  }
  return output.pos;
}

}  // namespace tilewise::codecs
