// BandOps: where a pyramid's bands lie and what pads, halves and encodes their pixels - host memory and the
// worker pool (host_band_ops), or a CUDA device: kernels and nvImageCodec's encoders (device_band_ops), so
// that on the GPU a slide's pixels go from the decoder to the encoders without passing through the host.
// PyramidWriter (pyramid_writer.h) decides what happens when; the ops only do it.
//
// Thread behaviour: one PyramidWriter calls its ops from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tilewise/image_view.h"
#include "tilewise/status.h"
#include "tilewise/types.h"
#include "write/downsample.h"
#include "write/tile_encoder.h"

namespace tilewise::write {

class BandOps {
 public:
  virtual ~BandOps() = default;
  // Where the bands lie (an ImageView's device).
  virtual Device device() const = 0;
  // `bytes` of band memory, held until release() or the ops' end.
  virtual Result<uint8_t*> allocate(size_t bytes) = 0;
  // Pads a tile row at `top` (rows `stride` bytes apart, `padded` pixels wide, `tile` rows high) whose first
  // `rows` rows hold `width` pixels: each row's pixels past `width` repeat its last one, the rows past
  // `rows` repeat the last row (so JPEG blocks at the edge do not ring).
  virtual Status pad(uint8_t* top, int64_t stride, int64_t width, int64_t padded, int32_t rows, int32_t tile) = 0;
  // Encodes tiles `which` of a padded tile row (tile i: `tile` x `tile` pixels at top + i * tile pixels) into
  // tiles[i], setting statuses[i].
  virtual void encode(const uint8_t* top, int64_t stride, int32_t tile, std::span<const int64_t> which,
                      std::vector<std::vector<uint8_t>>& tiles, std::vector<Status>& statuses) = 0;
  // halve() (downsample.h) of `rows` rows of `width` pixels into the rows at `dst`.
  virtual Status halve(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst,
                       int64_t dst_stride) = 0;
  // Copies `rows` rows of `row_bytes` to host memory at `dst` (packed rows).
  virtual Status to_host(const uint8_t* src, int64_t stride, int64_t row_bytes, int32_t rows, uint8_t* dst) = 0;
  // Copies the rows of `src` into `dst` (views of the same size in the ops' memory); `src` may be reused
  // once this returns.
  virtual Status copy_rows(const ImageView& src, const ImageView& dst) = 0;
  // Frees every band allocate() gave (one PyramidWriter uses the ops at a time; its destructor calls this).
  virtual void release() = 0;
};

// Host memory; tiles encoded and rows halved on the worker pool, of `samples` samples of `type`.
std::unique_ptr<BandOps> host_band_ops(int32_t samples, SampleType type, const TileCoding& coding, Downsample filter);

// CUDA device `device`: 8-bit RGB bands, halved by a kernel, their tiles encoded by nvImageCodec (JPEG:
// nvJPEG's CUDA encoder; JPEG 2000, lossy or lossless: nvJPEG2000). InvalidArgument for another codec;
// Unsupported with the reason without a usable GPU, nvImageCodec or its encoder.
Result<std::unique_ptr<BandOps>> device_band_ops(int device, const TileCoding& coding, Downsample filter);

// Sets every byte of `view` to `value`, in host or CUDA device memory (a damaged tile's background).
Status fill_view(const ImageView& view, uint8_t value);
// fill_view() of a view in CUDA device memory (device_band_ops.cc; Unsupported without the GPU path).
Status fill_device_view(const ImageView& view, uint8_t value);

}  // namespace tilewise::write
