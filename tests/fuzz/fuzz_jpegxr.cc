// libFuzzer target: the JPEG XR decoder (jxrlib) behind Zeiss CZI subblocks. The first byte chooses 3 or 6
// bytes per pixel, the next four the subblock's width and height (little-endian 16-bit); the rest is the
// stream. The seeds carry their streams' true sizes, so mutations reach the entropy decoder.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codecs/cpu/lossless_decoders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  const int32_t bpp = (data[0] & 1) ? 6 : 3;
  const int32_t width = 1 + (data[1] | (data[2] << 8)) % 2048;
  const int32_t height = 1 + (data[3] | (data[4] << 8)) % 2048;
  std::vector<uint8_t> out(static_cast<size_t>(width) * height * bpp);
  (void)tilewise::codecs::jpegxr_decode({data + 5, size - 5}, out, width, height, bpp);
  return 0;
}
