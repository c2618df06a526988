// Tile codecs of the writers: a tile of pixels into the bytes one TIFF tile holds.
//
// JPEG (8-bit RGB only): libjpeg-turbo, YCbCr 4:2:0 (or 4:4:4), a complete stream per tile (its own tables:
// no JPEGTables to share), TIFF Photometric YCbCr. Deflate: libdeflate at level 6 (zlib stream, TIFF
// compression 8; a gzip member in a Zarr chunk, Zarr's gzip codec), any samples. Zstandard: libzstd at
// level 3 (one frame, TIFF compression 50000, Zarr's zstd codec), any samples. LZW: TIFF compression 5
// (codecs/cpu/lzw_encoder.h), TIFF only. JPEG-LS: CharLS, lossless, 8- or 16-bit samples, DICOM only (no
// TIFF compression code). JPEG 2000 (lossy at `quality`, or lossless): OpenJPEG, a J2K codestream with its own
// colour transform (codecs/cpu/jpeg2000_encoder.h), TIFF compression 33005 (Aperio's JPEG 2000 RGB) and DICOM;
// one or three components of 8 or 16 bits. None: the pixels. Thread behaviour: encode() may be called from any number of threads at once (per-thread state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::write {

enum class TileCodec { kJpeg, kDeflate, kZstd, kLzw, kJpegLs, kJpeg2000, kJpeg2000Lossless, kNone };

// "jpeg", "deflate", "zstd", "lzw", "jpegls", "jpeg2000", "jpeg2000-lossless", "none"; InvalidArgument for any
// other name.
Result<TileCodec> tile_codec(const std::string& name);
const char* codec_name(TileCodec codec);
uint16_t tiff_compression(TileCodec codec);  // 0: none exists (JPEG-LS)
bool is_jpeg2000(TileCodec codec);
uint16_t tiff_photometric(TileCodec codec);

// How tiles are coded: `quality` (1-100) and chroma 4:2:0 (`subsample`) or 4:4:4 for JPEG; `zarr_chunk`:
// the tile is a Zarr chunk over (c, y, x) - its samples one plane after another, deflate framed as gzip.
struct TileCoding {
  TileCodec codec = TileCodec::kJpeg;
  int quality = 90;
  bool subsample = true;
  bool zarr_chunk = false;
};
constexpr int kZstdLevel = 3;

// Encodes the pixels of `tile` (host memory; samples in host byte order, which the TIFF writer declares
// little-endian) as one tile. InvalidArgument for JPEG of anything but 8-bit RGB.
Status encode_tile(const TileCoding& coding, const ImageView& tile, std::vector<uint8_t>& out);

}  // namespace tilewise::write
