// GPU decoding: nvImageCodec (hardware and CUDA JPEG decoders) into device memory.
//
// Synchronisation model: there is no global decode lock. Each GpuDecoder owns one nvImageCodec decoder and
// one CUDA stream and is used by one thread at a time (leased from GpuDecoderPool, as CPU decoders are), so
// several threads decode concurrently, each on its own stream, as nvImageCodec requires (a decoder must not
// be shared). The nvImageCodec instance is shared (it is thread-safe) and created once per process (again in
// a forked child, never reusing the parent's CUDA state). decode_batch() returns when the device work is
// complete (its stream is synchronised), so the outputs can be used from any stream afterwards. At process
// exit the decoders and the instance are destroyed before CUDA shuts down (an atexit handler registered at
// creation, which runs before static destructors of the CUDA runtime).
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

// One tile to decode into device memory: the complete JPEG stream (JPEGTables already spliced in) and a
// device destination of width x height RGB pixels, `pitch` bytes apart.
struct DeviceTileRequest {
  std::span<const uint8_t> stream;
  int32_t width = 0;
  int32_t height = 0;
  ColorSpace color = ColorSpace::kYCbCr;
  uint8_t* out = nullptr;
  size_t pitch = 0;
};

class GpuDecoder {
 public:
  virtual ~GpuDecoder() = default;
  // Whether the GPU decoder takes tiles of this description (others go to the CPU decoders).
  static bool can_decode(const TileDesc& desc);
  // Decodes every request; statuses[i] says whether request i was written. Returns after the device work.
  virtual void decode_batch(std::span<const DeviceTileRequest> requests, std::span<Status> statuses) = 0;
  virtual void* stream() = 0;  // the cudaStream_t the decoder works on
  virtual int device() const = 0;
};

// A process-wide free list of GpuDecoders per device (re-created in a forked child).
class GpuDecoderPool {
 public:
  // A decoder on loan; it returns to the pool when the lease ends.
  class Lease {
   public:
    explicit Lease(std::unique_ptr<GpuDecoder> d) : decoder_(std::move(d)) {}
    Lease(Lease&&) = default;
    ~Lease();
    GpuDecoder* operator->() { return decoder_.get(); }

   private:
    std::unique_ptr<GpuDecoder> decoder_;
  };
  static Result<Lease> acquire(int device);
};

// Device memory for outputs and scratch (cudaMalloc / cudaFree on `device`).
Result<void*> device_malloc(size_t bytes, int device);
void device_free(void* p, int device);

// Device-side helpers on `stream`: fill a rectangle with a colour; copy a rectangle between device buffers;
// upload a host rectangle.
Status device_fill(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3], void* stream);
Status device_copy_2d(uint8_t* dst, size_t dst_pitch, const uint8_t* src, size_t src_pitch, int32_t width_bytes,
                      int32_t height, bool src_on_host, void* stream);
Status device_synchronize(void* stream);

}  // namespace tilewise::codecs::gpu
