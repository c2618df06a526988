#include <libdeflate.h>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

DeflateDecoder::DeflateDecoder() : d_(libdeflate_alloc_decompressor()) {}
DeflateDecoder::~DeflateDecoder() { libdeflate_free_decompressor(d_); }

Result<size_t> DeflateDecoder::decode(std::span<const uint8_t> in, std::span<uint8_t> out) {
  if (d_ == nullptr) return out_of_memory("deflate: cannot allocate a decompressor");
  size_t produced = 0;
  const libdeflate_result r =
      libdeflate_zlib_decompress(d_, in.data(), in.size(), out.data(), out.size(), &produced);
  switch (r) {
    case LIBDEFLATE_SUCCESS: return produced;
    case LIBDEFLATE_INSUFFICIENT_SPACE: return corrupt("deflate: data decompresses to more than the tile size");
    case LIBDEFLATE_BAD_DATA: return corrupt("deflate: invalid compressed data");
    default: return corrupt("deflate: decompression failed");
  }
}

}  // namespace tilewise::codecs
