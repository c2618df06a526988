#include <zstd.h>
#include <zstd_errors.h>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

ZstdDecoder::ZstdDecoder() : ctx_(ZSTD_createDCtx()) {}
ZstdDecoder::~ZstdDecoder() { ZSTD_freeDCtx(ctx_); }

Result<size_t> ZstdDecoder::decode(std::span<const uint8_t> in, std::span<uint8_t> out) {
  if (ctx_ == nullptr) return out_of_memory("zstd: cannot allocate a context");
  const size_t r = ZSTD_decompressDCtx(ctx_, out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(r)) {
    if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall) {
      return corrupt("zstd: data decompresses to more than the tile size");
    }
    return corrupt(std::string("zstd: ") + ZSTD_getErrorName(r));
  }
  return r;
}

}  // namespace tilewise::codecs
