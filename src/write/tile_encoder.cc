#include "write/tile_encoder.h"

#include <libdeflate.h>

#include <cstring>
#include <memory>

#include "codecs/jpeg/jpeg_encoder.h"

namespace tilewise::write {

Result<TileCodec> tile_codec(const std::string& name) {
  if (name == "jpeg") return TileCodec::kJpeg;
  if (name == "deflate") return TileCodec::kDeflate;
  if (name == "none") return TileCodec::kNone;
  return invalid_argument("codec \"" + name + "\" is not one the TIFF writer writes (jpeg, deflate, none)");
}

const char* codec_name(TileCodec codec) {
  switch (codec) {
    case TileCodec::kJpeg: return "jpeg";
    case TileCodec::kDeflate: return "deflate";
    case TileCodec::kNone: return "none";
  }
  return "?";
}

uint16_t tiff_compression(TileCodec codec) {
  return codec == TileCodec::kJpeg ? 7 : codec == TileCodec::kDeflate ? 8 : 1;
}

uint16_t tiff_photometric(TileCodec codec) { return codec == TileCodec::kJpeg ? 6 : 2; }

namespace {

struct CompressorDeleter {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

// The tile's rows packed (the codecs take one contiguous buffer).
void pack(const ImageView& tile, std::vector<uint8_t>& packed) {
  packed.resize(tile.row_bytes() * static_cast<size_t>(tile.height));
  for (int32_t r = 0; r < tile.height; ++r) std::memcpy(packed.data() + r * tile.row_bytes(), tile.row(r), tile.row_bytes());
}

}  // namespace

Status encode_tile(const TileCoding& coding, const ImageView& tile, std::vector<uint8_t>& out) {
  if (!tile.device.is_cpu() || tile.width <= 0 || tile.height <= 0) return internal_error("encode_tile: not a host tile");
  if (coding.codec == TileCodec::kJpeg && !tile.is_rgb8()) {
    return invalid_argument("jpeg: tiles of " + std::to_string(tile.channels) + " samples of " +
                            std::to_string(8 * tile.sample_bytes) + " bits are not 8-bit RGB (write them lossless: deflate)");
  }
  switch (coding.codec) {
    case TileCodec::kJpeg: {
      TW_ASSIGN_OR_RETURN(out, codecs::encode_jpeg_rgb(tile.data, tile.width, tile.height, coding.quality, coding.subsample,
                                                       tile.stride));
      return Status();
    }
    case TileCodec::kNone:
      pack(tile, out);
      return Status();
    case TileCodec::kDeflate: {
      thread_local std::unique_ptr<libdeflate_compressor, CompressorDeleter> compressor(libdeflate_alloc_compressor(6));
      thread_local std::vector<uint8_t> packed;
      if (!compressor) return internal_error("deflate: cannot allocate a compressor");
      pack(tile, packed);
      out.resize(libdeflate_zlib_compress_bound(compressor.get(), packed.size()));
      const size_t n = libdeflate_zlib_compress(compressor.get(), packed.data(), packed.size(), out.data(), out.size());
      if (n == 0) return internal_error("deflate: compression failed");
      out.resize(n);
      return Status();
    }
  }
  return internal_error("encode_tile: unknown codec");
}

}  // namespace tilewise::write
