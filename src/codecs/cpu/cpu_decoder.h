// CpuDecoder: the CPU backend of the decoder contract (codecs/decoder.h): any supported compression (JPEG
// through libjpeg-turbo, JPEG 2000 through OpenJPEG, deflate, LZW, zstd, JPEG XR, raw) into an RGB view in host
// memory, or into a view of the tile's own samples (8/16/32-bit, 1-4 per pixel).
//
// Thread behaviour: one CpuDecoder per worker; it owns the libjpeg, libdeflate and zstd contexts and scratch
// buffers that it reuses from call to call, and is not safe to share between threads. Use DecoderPool to
// lease one. The output view is caller-owned memory of desc.width x desc.height pixels.
#pragma once

#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "codecs/decoder.h"
#include "codecs/tile_desc.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

class JpegDecoder;
class Jpeg2000Decoder;
class DeflateDecoder;
class ZstdDecoder;

class CpuDecoder final : public Decoder {
 public:
  CpuDecoder();
  ~CpuDecoder() override;
  CpuDecoder(const CpuDecoder&) = delete;
  CpuDecoder& operator=(const CpuDecoder&) = delete;

  // Samples per pixel a lossless chunk may hold (channels interleaved in one plane).
  static constexpr int32_t kMaxSamples = 64;
  // Ok when this backend can decode chunks described by `desc` into their own samples; Unsupported with
  // the reason otherwise.
  static Status supports(const TileDesc& desc);
  // supports(), and the chunks have an 8-bit RGB rendering (at most 4 samples, several only as colour,
  // unsigned samples of at most 16 bits): what brightfield reads decode to.
  static Status renders_rgb(const TileDesc& desc);

  // The decoder contract. decode_batch() runs decode() for whole chunks and decode_window() for windows.
  const char* backend() const override { return "cpu"; }
  DeviceType output() const override { return DeviceType::kCpu; }
  Status can_decode(const TileDesc& desc) const override { return supports(desc); }
  void decode_batch(std::span<const DecodeRequest> requests, std::span<Status> statuses) override;

  // Decodes `data` into `out` (desc.width x up to desc.height pixels: 8-bit RGB, or the tile's samples as
  // decoder.h describes). Errors are Corrupt (bad data) or Unsupported, with a message prefixed by the codec
  // name.
  Status decode(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out);

  // The size (width, height) of a standalone JPEG stream.
  Result<std::pair<int32_t, int32_t>> jpeg_dimensions(std::span<const uint8_t> data);

  // Decodes only the window of out's size at (x, y) of the chunk. JPEG reconstructs just the pixels the
  // window needs (exactly equal to a full decode's); other codecs decode the chunk and copy the window.
  Status decode_window(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out, int32_t x,
                       int32_t y);

  // One sample of each pixel as stored (an alpha channel), for the chunk's first `rows` rows, into `out`
  // (desc.width bytes per row, `out_stride` apart): 8-bit samples of the lossless codecs (none, deflate,
  // LZW, zstd) only; Unsupported otherwise.
  Status decode_sample(std::span<const uint8_t> data, const TileDesc& desc, int32_t sample, uint8_t* out,
                       int64_t out_stride, int32_t rows);

 private:
  // The chunk's first `rows` rows of samples as stored, interleaved, the predictor undone for 8-bit
  // samples: `data` itself, or scratch_.
  Result<const uint8_t*> lossless_samples(std::span<const uint8_t> data, const TileDesc& desc, int32_t rows);
  Status decode_lossless(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out);
  // The window of out's size at (x, y) of the chunk, as its samples are stored (host byte order, predictor
  // undone, B, G, R as R, G, B).
  Status decode_native(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out, int32_t x,
                       int32_t y);
  // A unit of desc.planes planes: each plane decoded (the window at x, y when `window`) and interleaved.
  Status decode_planes(std::span<const uint8_t> data, const TileDesc& desc, const ImageView& out, int32_t x, int32_t y,
                       bool window);
  uint8_t* copy_to_scratch(const uint8_t* data, size_t bytes);

  std::unique_ptr<JpegDecoder> jpeg_;
  std::unique_ptr<Jpeg2000Decoder> jpeg2000_;
  std::unique_ptr<DeflateDecoder> deflate_;
  std::unique_ptr<ZstdDecoder> zstd_;
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> window_rgb_;  // a whole decoded chunk when only a window of it is wanted
  std::vector<uint8_t> plane_grey_;  // one plane of a unit of planes, decoded
  std::vector<uint8_t> planes_;      // byte planes being joined (TileDesc::split_bytes)
};

}  // namespace tilewise::codecs
