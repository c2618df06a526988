// Byte-stream decompressors for lossless TIFF codecs. Each writes at most out.size() bytes and returns the
// number written; a stream that would produce more than out.size() bytes, or is damaged, is Corrupt.
// One instance per worker (contexts are reused and not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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
  // Decodes into out; a stream longer than out is cut at its end (libtiff's behaviour). Returns the bytes
  // written.
  Result<size_t> decode(std::span<const uint8_t> in, std::span<uint8_t> out);

 private:
  libdeflate_decompressor* d_;
  std::vector<uint8_t> overflow_;  // a whole over-long stream, while it is cut
};

// Zstandard frames (TIFF compression 50000).
class ZstdDecoder {
 public:
  ZstdDecoder();
  ~ZstdDecoder();
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;
  // Decodes into out; a stream longer than out is cut at its end (libtiff's behaviour). Returns the bytes
  // written.
  Result<size_t> decode(std::span<const uint8_t> in, std::span<uint8_t> out);

 private:
  ZSTD_DCtx_s* ctx_;
};

// TIFF LZW (compression 5), MSB-first codes of 9-12 bits with the "early change" of TIFF 6.0. A stream
// longer than out is cut at its end (libtiff's behaviour). Returns the bytes written.
Result<size_t> lzw_decode(std::span<const uint8_t> in, std::span<uint8_t> out);

// JPEG-LS through CharLS (DICOM transfer syntaxes .80/.81): the stream must be width x (at most) height
// pixels of `samples` components of `bits` (8, or 16 for streams of 9 to 16 bits: grey only); the output is
// sample-interleaved (16-bit samples in host order). Returns the bytes written.
// Whether a JPEG-LS stream ends with its EOI marker (DICOM's one pad byte after it allowed). One that does
// not (a damaged or cut frame) is decoded with an EOI appended: CharLS 2.4 otherwise spends seconds at the
// end of the scan (5-6 s on a damaged 64 x 64 frame the fuzzer found, 0 ms with the EOI).
bool jpegls_ends_with_eoi(std::span<const uint8_t> in);
Result<size_t> jpegls_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height,
                             int32_t samples, int32_t bits = 8);

// PNG (libpng) and 24-bit uncompressed BMP files of exactly width x height, as 8-bit RGB. Returns the bytes
// written (width * height * 3).
Result<size_t> png_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height);
Result<size_t> bmp_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height);

// JPEG XR (jxrlib): a width x height stream of `bytes_per_pixel` (3: 24-bit, 6: 48-bit) samples, copied in
// the stream's order. Returns the bytes written.
Result<size_t> jpegxr_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height,
                             int32_t bytes_per_pixel);

}  // namespace tilewise::codecs
