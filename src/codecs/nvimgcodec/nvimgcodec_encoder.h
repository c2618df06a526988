// The nvImageCodec encoders: tiles of 8-bit RGB in device memory into JPEG (nvJPEG's CUDA encoder) or
// JPEG 2000 (nvJPEG2000) code streams in host memory - the writers' GPU path (write/device_band_ops.h).
//
// The streams are what the CPU encoders write for the same options (codecs/jpeg/jpeg_encoder.h,
// codecs/cpu/jpeg2000_encoder.h): JPEG baseline YCbCr 4:2:0 or 4:4:4 at `quality`, a complete stream per
// tile; JPEG 2000 a J2K code stream with the colour transform, reversible 5/3 (lossless) or irreversible 9/7
// aimed at a PSNR of 20 + quality / 4 dB, as the CPU encoder aims.
//
// Thread behaviour: an encoder is used by one thread at a time; encoders of one process share the
// nvImageCodec instance.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::codecs::nvimgcodec {

struct EncodeSettings {
  enum class Codec { kJpeg, kJpeg2000, kJpeg2000Lossless };
  Codec codec = Codec::kJpeg;
  int quality = 90;      // JPEG quality; lossy JPEG 2000's PSNR target (20 + quality / 4 dB)
  bool subsample = true; // JPEG chroma 4:2:0; false: 4:4:4
};

// A tile of 8-bit interleaved RGB in device memory, rows `stride` bytes apart.
struct DeviceTile {
  const uint8_t* data = nullptr;
  int64_t stride = 0;
  int32_t width = 0, height = 0;
};

class Encoder {
 public:
  virtual ~Encoder() = default;
  // Encodes every tile into out[i] (host memory, resized to the stream) and sets statuses[i]; returns when
  // every stream is written. The tiles are read after the work queued on `cuda_stream` (a cudaStream_t)
  // so far.
  virtual void encode_batch(std::span<const DeviceTile> tiles, void* cuda_stream, std::span<std::vector<uint8_t>> out,
                            std::span<Status> statuses) = 0;
};

// An encoder on CUDA device `device`. Unsupported with the reason when nvImageCodec (or its encoder of
// the codec) cannot be loaded, or in a build without the GPU path.
Result<std::unique_ptr<Encoder>> create_encoder(int device, const EncodeSettings& settings);

}  // namespace tilewise::codecs::nvimgcodec
