#include "write/tile_encoder.h"

#include <charls/charls.h>
#include <libdeflate.h>
#include <zstd.h>

#include <cstring>
#include <memory>

#include "codecs/cpu/jpeg2000_encoder.h"
#include "codecs/cpu/lzw_encoder.h"
#include "codecs/jpeg/jpeg_encoder.h"

namespace tilewise::write {

Result<TileCodec> tile_codec(const std::string& name) {
  if (name == "jpeg") return TileCodec::kJpeg;
  if (name == "deflate") return TileCodec::kDeflate;
  if (name == "zstd") return TileCodec::kZstd;
  if (name == "lzw") return TileCodec::kLzw;
  if (name == "jpegls") return TileCodec::kJpegLs;
  if (name == "jpeg2000") return TileCodec::kJpeg2000;
  if (name == "jpeg2000-lossless") return TileCodec::kJpeg2000Lossless;
  if (name == "none") return TileCodec::kNone;
  return invalid_argument("codec \"" + name +
                          "\" is not one the writers write (jpeg, deflate, zstd, lzw, jpegls, jpeg2000, jpeg2000-lossless, none)");
}

const char* codec_name(TileCodec codec) {
  switch (codec) {
    case TileCodec::kJpeg: return "jpeg";
    case TileCodec::kDeflate: return "deflate";
    case TileCodec::kZstd: return "zstd";
    case TileCodec::kLzw: return "lzw";
    case TileCodec::kJpegLs: return "jpegls";
    case TileCodec::kJpeg2000: return "jpeg2000";
    case TileCodec::kJpeg2000Lossless: return "jpeg2000-lossless";
    case TileCodec::kNone: return "none";
  }
  return "?";
}

uint16_t tiff_compression(TileCodec codec) {
  switch (codec) {
    case TileCodec::kJpeg: return 7;
    case TileCodec::kDeflate: return 8;
    case TileCodec::kZstd: return 50000;
    case TileCodec::kLzw: return 5;
    case TileCodec::kJpegLs: return 0;
    case TileCodec::kJpeg2000:
    case TileCodec::kJpeg2000Lossless: return 33005;
    case TileCodec::kNone: return 1;
  }
  return 1;
}

bool is_jpeg2000(TileCodec codec) { return codec == TileCodec::kJpeg2000 || codec == TileCodec::kJpeg2000Lossless; }

uint16_t tiff_photometric(TileCodec codec) { return codec == TileCodec::kJpeg ? 6 : 2; }

namespace {

struct CompressorDeleter {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

struct ZstdContextDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// The tile's rows packed (the codecs take one contiguous buffer), its samples interleaved or, `planar`,
// one plane after another.
void pack(const ImageView& tile, bool planar, std::vector<uint8_t>& packed) {
  const size_t row = tile.row_bytes();
  packed.resize(row * static_cast<size_t>(tile.height));
  if (!planar || tile.channels == 1) {
    for (int32_t r = 0; r < tile.height; ++r) std::memcpy(packed.data() + r * row, tile.row(r), row);
    return;
  }
  const size_t sample = static_cast<size_t>(tile.sample_bytes), pixel = sample * static_cast<size_t>(tile.channels);
  const size_t plane = static_cast<size_t>(tile.width) * static_cast<size_t>(tile.height) * sample;
  for (int32_t c = 0; c < tile.channels; ++c) {
    uint8_t* out = packed.data() + static_cast<size_t>(c) * plane;
    for (int32_t r = 0; r < tile.height; ++r) {
      const uint8_t* in = tile.row(r) + static_cast<size_t>(c) * sample;
      for (int32_t x = 0; x < tile.width; ++x, in += pixel, out += sample) std::memcpy(out, in, sample);
    }
  }
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
      pack(tile, coding.zarr_chunk, out);
      return Status();
    case TileCodec::kDeflate: {
      thread_local std::unique_ptr<libdeflate_compressor, CompressorDeleter> compressor(libdeflate_alloc_compressor(6));
      thread_local std::vector<uint8_t> packed;
      if (!compressor) return internal_error("deflate: cannot allocate a compressor");
      pack(tile, coding.zarr_chunk, packed);
      const bool gzip = coding.zarr_chunk;
      out.resize(gzip ? libdeflate_gzip_compress_bound(compressor.get(), packed.size())
                      : libdeflate_zlib_compress_bound(compressor.get(), packed.size()));
      const size_t n = gzip ? libdeflate_gzip_compress(compressor.get(), packed.data(), packed.size(), out.data(), out.size())
                            : libdeflate_zlib_compress(compressor.get(), packed.data(), packed.size(), out.data(), out.size());
      if (n == 0) return internal_error("deflate: compression failed");
      out.resize(n);
      return Status();
    }
    case TileCodec::kLzw: {
      thread_local std::vector<uint8_t> packed;
      pack(tile, coding.zarr_chunk, packed);
      out = codecs::lzw_encode(packed);
      return Status();
    }
    case TileCodec::kJpeg2000:
    case TileCodec::kJpeg2000Lossless:
      return codecs::encode_jpeg2000(tile, coding.codec == TileCodec::kJpeg2000Lossless, coding.quality, out);
    case TileCodec::kJpegLs: {
      if (tile.sample_bytes > 2) return invalid_argument("jpegls: samples of 8 or 16 bits");
      thread_local std::vector<uint8_t> packed;
      pack(tile, false, packed);
      charls_jpegls_encoder* e = charls_jpegls_encoder_create();
      if (e == nullptr) return internal_error("jpegls: cannot create an encoder");
      const charls_frame_info info{static_cast<uint32_t>(tile.width), static_cast<uint32_t>(tile.height),
                                   8 * tile.sample_bytes, tile.channels};
      size_t size = 0;
      charls_jpegls_errc rc = charls_jpegls_encoder_set_frame_info(e, &info);
      if (rc == charls::jpegls_errc::success && tile.channels > 1) {
        rc = charls_jpegls_encoder_set_interleave_mode(e, charls::interleave_mode::sample);
      }
      if (rc == charls::jpegls_errc::success) rc = charls_jpegls_encoder_get_estimated_destination_size(e, &size);
      if (rc == charls::jpegls_errc::success) {
        // Noise-like samples can code larger than CharLS's estimate (their raw size and a little): room for
        // half as much again
        out.resize(size + size / 2);
        rc = charls_jpegls_encoder_set_destination_buffer(e, out.data(), out.size());
      }
      if (rc == charls::jpegls_errc::success) rc = charls_jpegls_encoder_encode_from_buffer(e, packed.data(), packed.size(), 0);
      if (rc == charls::jpegls_errc::success) rc = charls_jpegls_encoder_get_bytes_written(e, &size);
      charls_jpegls_encoder_destroy(e);
      if (rc != charls::jpegls_errc::success) return internal_error(std::string("jpegls: ") + charls_get_error_message(rc));
      out.resize(size);
      return Status();
    }
    case TileCodec::kZstd: {
      thread_local std::unique_ptr<ZSTD_CCtx, ZstdContextDeleter> context(ZSTD_createCCtx());
      thread_local std::vector<uint8_t> packed;
      if (!context) return internal_error("zstd: cannot allocate a compression context");
      pack(tile, coding.zarr_chunk, packed);
      out.resize(ZSTD_compressBound(packed.size()));
      const size_t n = ZSTD_compressCCtx(context.get(), out.data(), out.size(), packed.data(), packed.size(), kZstdLevel);
      if (ZSTD_isError(n)) return internal_error(std::string("zstd: ") + ZSTD_getErrorName(n));
      out.resize(n);
      return Status();
    }
  }
  return internal_error("encode_tile: unknown codec");
}

}  // namespace tilewise::write
