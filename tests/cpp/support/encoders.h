// Encoders that make test streams with the reference libraries (libjpeg, OpenJPEG, libdeflate) and one
// independent TIFF LZW encoder, shared by the codec tests and the decoder conformance suite.
#pragma once

#include <cstdint>
#include <vector>

namespace tilewise::testing {

struct Encoded {
  std::vector<uint8_t> tables;  // empty for a self-contained stream
  std::vector<uint8_t> image;
};

// Encodes interleaved pixels (channels 1 or 3) with libjpeg at quality 80. rgb_components: store R,G,B
// components (as Aperio does) instead of YCbCr; abbreviated: tables apart (TIFF JPEGTables) from the image.
Encoded jpeg_encode(const std::vector<uint8_t>& pixels, int w, int h, int channels, bool rgb_components, int h_samp,
                    int v_samp, bool abbreviated);
// A self-contained YCbCr JPEG of RGB pixels with libjpeg: the given sampling of Y (chroma 1x1), quality,
// and Huffman tables optimised for the image (optimize) or the standard ones.
std::vector<uint8_t> jpeg_encode_ycbcr(const std::vector<uint8_t>& rgb, int w, int h, int h_samp, int v_samp,
                                       int quality, bool optimize);
// The oracle: libjpeg's defaults on a self-contained stream, with the colour space forced as TIFF says.
std::vector<uint8_t> jpeg_reference_decode(const std::vector<uint8_t>& jpeg, bool rgb_components);
// A lossless 3-component J2K codestream of planes[c][y * w + x]; chroma planes may be subsampled by 2.
// Empty when OpenJPEG failed.
std::vector<uint8_t> j2k_encode(const std::vector<std::vector<uint8_t>>& planes, int w, int h, int chroma_sub);
std::vector<uint8_t> zlib_compress(const std::vector<uint8_t>& in);
// TIFF LZW (MSB-first, early change): the writers' encoder (codecs/cpu/lzw_encoder.h), which tifffile and
// libtiff decode in tests/python/test_convert_svs.py.
std::vector<uint8_t> lzw_compress(const std::vector<uint8_t>& in);

}  // namespace tilewise::testing
