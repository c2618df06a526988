// TileDesc: what a decoder needs to know about one encoded chunk of pixels. Codecs know nothing about
// TIFF or vendors; the formats layer translates tags (and vendor quirks) into this description.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tilewise::codecs {

// kPng and kBmp: whole image files as units, always 8-bit RGB. kJpegXr: a JPEG XR stream (decoded in a
// helper process, lossless_decoders.h), its samples then as the lossless codecs'.
enum class Compression { kNone, kJpeg, kDeflate, kLzw, kZstd, kJpeg2000, kJpegLs, kPng, kBmp, kJpegXr };

// How the stored samples map to colour.
enum class ColorSpace {
  kMinIsBlack,  // grey, 0 = black
  kMinIsWhite,  // grey, 0 = white
  kRgb,         // RGB samples (for JPEG: the components are R, G, B, not YCbCr)
  kBgr,         // B, G, R samples (lossless codecs)
  kYCbCr,       // for JPEG: YCbCr components, converted to RGB by the decoder
};

// How a sample's bits are read (TIFF SampleFormat).
enum class SampleFormat { kUnsigned, kSigned, kFloat };

struct TileDesc {
  Compression compression = Compression::kNone;
  // Nominal size of the encoded chunk: the tile size, or (image width, rows per strip) for strips. The
  // decoder's output view has this width and at most this height (the last strip may be shorter).
  int32_t width = 0;
  int32_t height = 0;
  int32_t samples_per_pixel = 3;
  int32_t bits_per_sample = 8;
  SampleFormat sample_format = SampleFormat::kUnsigned;
  // 16-bit samples holding fewer significant bits (Hamamatsu NGR: 12): narrowed by this many, not 16.
  int32_t significant_bits = 0;
  ColorSpace color = ColorSpace::kRgb;
  int32_t predictor = 1;                 // 1 none, 2 horizontal differencing
  bool big_endian = false;               // byte order of 16-bit samples (lossless codecs)
  // 16-bit samples stored as two byte planes, every sample's low byte first, then every high byte (a byte
  // shuffle, undone after decompression; lossless codecs).
  bool split_bytes = false;
  // planes > 1: the unit is `planes` streams of this codec, one sample each (red, green, blue), each behind
  // its byte count (32-bit little-endian); they are decoded one by one and interleaved.
  int32_t planes = 1;
  std::span<const uint8_t> jpeg_tables;  // abbreviated-JPEG tables (TIFF tag 347), may be empty
  // JPEG only: the chunk is decoded at 1/scale_denom of its stored size (libjpeg's DCT scaling: 1, 2, 4 or
  // 8), as OpenSlide derives extra levels from Hamamatsu JPEGs; width and height are the scaled size.
  int32_t scale_denom = 1;
};

const char* compression_name(Compression c);

}  // namespace tilewise::codecs
