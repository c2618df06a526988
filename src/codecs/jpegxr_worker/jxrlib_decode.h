// The JPEG XR decode the helper process runs (jxrlib). Never linked into the library itself.
#pragma once

#include <cstdint>
#include <span>

#include "tilewise/status.h"

namespace tilewise::codecs::jpegxr_worker {

// The request's head: the subblock's geometry, which the stream must match.
struct Request {
  int32_t width;
  int32_t height;
  int32_t bytes_per_pixel;  // 3 (24-bit) or 6 (48-bit)
};

// A width x height stream of `bytes_per_pixel` samples into `out`, in the stream's order. Returns the
// bytes written.
Result<size_t> jxrlib_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height,
                             int32_t bytes_per_pixel);

}  // namespace tilewise::codecs::jpegxr_worker
