// GPU decoding: nvImageCodec (hardware and CUDA JPEG decoders, nvJPEG2000) into device memory.
//
// Synchronisation model of src/codecs/gpu/ (see also tile_lanes.h, which schedules these decoders):
// - There is no global decode lock. A GpuDecoder owns one nvImageCodec decoder, one CUDA stream and one
//   pinned staging buffer, and is used by one thread at a time: each of the per-device decode lanes
//   (tile_lanes.h) owns one, as nvImageCodec requires (a decoder must not be shared between threads).
// - The nvImageCodec instance is shared (it is thread-safe) and created once per process, again in a forked
//   child (never reusing the parent's CUDA state: every process-wide object here is ForkSafe).
// - decode_batch() returns when the device work is complete (its stream is synchronised), so the outputs can
//   be used from any stream afterwards, and the staging buffer and code-stream handles can be reused.
// - At process exit the lanes, their decoders and the instance are destroyed before CUDA shuts down (an
//   atexit handler registered at creation, which runs before the CUDA runtime's static destructors).
// - Device memory (device_memory.h) is pooled per device; streams for composing outputs are pooled too.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "codecs/tile_desc.h"
#include "tilewise/status.h"

namespace tilewise::codecs::gpu {

// Ok when device `index` can be used (built with CUDA, a GPU is present, nvImageCodec 0.8 loads).
Status device_status(int index);

// One tile to decode into device memory: the complete stream (for JPEG: JPEGTables already spliced in) and
// a device destination of width x height RGB pixels, `pitch` bytes apart.
struct DeviceTileRequest {
  std::span<const uint8_t> stream;
  Compression compression = Compression::kJpeg;
  int32_t width = 0;
  int32_t height = 0;
  ColorSpace color = ColorSpace::kYCbCr;
  uint8_t* out = nullptr;
  size_t pitch = 0;
};

class GpuDecoder {
 public:
  virtual ~GpuDecoder() = default;
  // Whether the GPU decoders take tiles of this description (others go to the CPU decoders).
  static bool can_decode(const TileDesc& desc);
  // Creates a decoder (its own nvImageCodec decoder, CUDA stream and pinned staging) on `device`.
  static Result<std::unique_ptr<GpuDecoder>> create(int device);
  // Stages the streams into pinned memory and decodes every request; statuses[i] says whether request i was
  // written. Returns after the device work (colour conversion included) is complete.
  virtual void decode_batch(std::span<const DeviceTileRequest> requests, std::span<Status> statuses) = 0;
  virtual int device() const = 0;
};

// Registers `fn` to run at process exit before the nvImageCodec instance is destroyed (lanes stop there).
void at_gpu_shutdown(void (*fn)());

}  // namespace tilewise::codecs::gpu
