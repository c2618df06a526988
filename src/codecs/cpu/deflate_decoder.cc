#include <libdeflate.h>

#include <algorithm>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

DeflateDecoder::DeflateDecoder() : d_(libdeflate_alloc_decompressor()) {}
DeflateDecoder::~DeflateDecoder() { libdeflate_free_decompressor(d_); }

Result<size_t> DeflateDecoder::decode(std::span<const uint8_t> in, std::span<uint8_t> out) {
  if (d_ == nullptr) return out_of_memory("deflate: cannot allocate a decompressor");
  size_t produced = 0;
  libdeflate_result r =
      libdeflate_zlib_decompress(d_, in.data(), in.size(), out.data(), out.size(), &produced);
  if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
    // More data than the chunk holds: cut at the chunk's end, as libtiff does. libdeflate decodes only whole
    // streams, so decode into a larger scratch buffer (deflate expands at most 1032:1) and keep the start.
    const size_t bound = std::min(in.size() * 1032 + 1024, size_t{1} << 30);
    size_t size = std::max(out.size() * 2, size_t{1} << 16);
    for (; r == LIBDEFLATE_INSUFFICIENT_SPACE && size <= bound * 2; size *= 4) {
      overflow_.resize(std::min(size, bound));
      r = libdeflate_zlib_decompress(d_, in.data(), in.size(), overflow_.data(), overflow_.size(), &produced);
    }
    if (r == LIBDEFLATE_SUCCESS) {
      std::copy_n(overflow_.begin(), out.size(), out.begin());
      overflow_ = {};  // rare: give the memory back
      return out.size();
    }
  }
  switch (r) {
    case LIBDEFLATE_SUCCESS: return produced;
    case LIBDEFLATE_INSUFFICIENT_SPACE: return corrupt("deflate: data decompresses to more than 1032 times its size");
    case LIBDEFLATE_BAD_DATA: return corrupt("deflate: invalid compressed data");
    default: return corrupt("deflate: decompression failed");
  }
}

}  // namespace tilewise::codecs
