// Byte-stream decompressors for lossless TIFF codecs. Each writes at most out.size() bytes and returns the
// number written; a stream that would produce more than out.size() bytes, or is damaged, is Corrupt.
// One instance per worker (contexts are reused and not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tilewise/status.h"

struct libdeflate_decompressor;
struct ZSTD_DCtx_s;

namespace tilewise::codecs {

// zlib-wrapped deflate (TIFF compression 8 and 32946) through libdeflate.
class DeflateDecoder {
 public:
  DeflateDecoder();
  ~DeflateDecoder();
  DeflateDecoder(const DeflateDecoder&) = delete;
  DeflateDecoder& operator=(const DeflateDecoder&) = delete;
  Result<size_t> decode(std::span<const uint8_t> in, std::span<uint8_t> out);

 private:
  libdeflate_decompressor* d_;
};

// Zstandard frames (TIFF compression 50000).
class ZstdDecoder {
 public:
  ZstdDecoder();
  ~ZstdDecoder();
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;
  Result<size_t> decode(std::span<const uint8_t> in, std::span<uint8_t> out);

 private:
  ZSTD_DCtx_s* ctx_;
};

// TIFF LZW (compression 5), MSB-first codes of 9-12 bits with the "early change" of TIFF 6.0.
Result<size_t> lzw_decode(std::span<const uint8_t> in, std::span<uint8_t> out);

}  // namespace tilewise::codecs
