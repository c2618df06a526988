// DeviceOps: the device primitives the device reader composes outputs with - memory from the per-device
// pool, streams from the per-device pool, fills, 2-D copies and uploads, stream synchronisation. The CUDA
// implementation is cuda_ops(device) (cuda_ops.cc); tests pass one over host memory, so the device
// reader's planning, caching, crops and fallbacks are tested without a GPU.
//
// Thread behaviour: every method may be called from any thread. Work queued on a stream runs in order;
// synchronize() returns when the stream's work is done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "gpu/device_copy.h"
#include "tilewise/status.h"

namespace tilewise::gpu {

using Stream = void*;  // a cudaStream_t for the CUDA implementation


class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual int device() const = 0;
  virtual Result<void*> allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual Result<Stream> acquire_stream() = 0;  // a non-blocking stream on loan
  virtual void return_stream(Stream s) = 0;
  virtual Status fill(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3], Stream s) = 0;
  // Sets height rows of width_bytes to 0 (the background of samples read as stored).
  virtual Status clear(uint8_t* dst, size_t pitch, size_t width_bytes, int32_t height, Stream s) = 0;
  // Copies height rows of width_bytes; src is host memory when src_on_host (an upload), else device memory.
  virtual Status copy_2d(uint8_t* dst, size_t dst_pitch, const uint8_t* src, size_t src_pitch, int32_t width_bytes,
                         int32_t height, bool src_on_host, Stream s) = 0;
  // Queues every copy (device to device) on s. The default makes a copy_2d of each; the CUDA implementation
  // launches one kernel for hundreds (a batch's crops: one launch instead of one cudaMemcpy2DAsync each).
  virtual Status copy_batch(std::span<const DeviceCopy> copies, Stream s) {
    for (const DeviceCopy& c : copies) {
      TW_RETURN_IF_ERROR(copy_2d(c.dst, c.dst_pitch, c.src, c.src_pitch, c.width_bytes, c.height, false, s));
    }
    return Status();
  }
  // Copies sample `c.from_sample` of every pixel of c.src to sample `c.to_sample` of the pixel of c.dst at the
  // same place (device to device). The default makes a copy_2d per row (each pixel a "row" of one sample);
  // the CUDA implementation launches one kernel.
  virtual Status copy_samples(const SampleCopy& c, Stream s) {
    for (int32_t y = 0; y < c.height; ++y) {
      TW_RETURN_IF_ERROR(copy_2d(c.dst + static_cast<size_t>(y) * c.dst_pitch + c.to_sample * c.sample_bytes,
                                 c.to_pixel, c.src + static_cast<size_t>(y) * c.src_pitch + c.from_sample * c.sample_bytes,
                                 c.from_pixel, c.sample_bytes, c.width, false, s));
    }
    return Status();
  }
  virtual Status synchronize(Stream s) = 0;
  // Host memory for uploads that run while other work goes on: page-locked in the CUDA implementation (an
  // upload from pageable memory is staged and synchronous), ordinary memory by default.
  virtual Result<void*> allocate_host(size_t bytes) {
    void* p = std::malloc(bytes);
    if (!p) return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    return p;
  }
  virtual void release_host(void* p) { std::free(p); }
};

// A stream on loan from `ops`, returned when the lease ends.
class StreamLease {
 public:
  static Result<StreamLease> acquire(DeviceOps& ops) {
    TW_ASSIGN_OR_RETURN(Stream s, ops.acquire_stream());
    return StreamLease(&ops, s);
  }
  StreamLease(StreamLease&& other) noexcept : ops_(other.ops_), stream_(other.stream_) { other.stream_ = nullptr; }
  StreamLease(const StreamLease&) = delete;
  StreamLease& operator=(const StreamLease&) = delete;
  ~StreamLease() {
    if (stream_) ops_->return_stream(stream_);
  }
  Stream get() const { return stream_; }

 private:
  StreamLease(DeviceOps* ops, Stream s) : ops_(ops), stream_(s) {}
  DeviceOps* ops_;
  Stream stream_;
};

}  // namespace tilewise::gpu
