// Whole-image formats that vendors store tiles in (MIRAX: PNG and 24-bit BMP). PNG through libpng's
// simplified API; BMP by hand: a 24-bit uncompressed BMP is a 54-byte header and padded rows of BGR, and
// the library OpenSlide uses for it (gdk-pixbuf) would bring GLib and a loader registry for ~30 lines.
#include <png.h>

#include <cstring>

#include "codecs/cpu/lossless_decoders.h"

namespace tilewise::codecs {

namespace {
Status size_mismatch(const char* what, int64_t w, int64_t h, int32_t width, int32_t height) {
  return corrupt(std::string(what) + ": the image is " + std::to_string(w) + "x" + std::to_string(h) + ", the tile " +
                 std::to_string(width) + "x" + std::to_string(height));
}
}  // namespace

Result<size_t> png_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, in.data(), in.size())) {
    return corrupt(std::string("png: ") + image.message);
  }
  if (static_cast<int64_t>(image.width) != width || static_cast<int64_t>(image.height) != height) {
    png_image_free(&image);
    return size_mismatch("png", image.width, image.height, width, height);
  }
  image.format = PNG_FORMAT_RGB;
  const size_t bytes = PNG_IMAGE_SIZE(image);
  if (bytes > out.size()) {
    png_image_free(&image);
    return corrupt("png: the image holds more pixels than the tile");
  }
  if (!png_image_finish_read(&image, nullptr, out.data(), 0, nullptr)) {
    return corrupt(std::string("png: ") + image.message);
  }
  return bytes;
}

Result<size_t> bmp_decode(std::span<const uint8_t> in, std::span<uint8_t> out, int32_t width, int32_t height) {
  auto le = [&](size_t at, int bytes) {
    uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = v << 8 | in[at + static_cast<size_t>(i)];
    return v;
  };
  if (in.size() < 54 || in[0] != 'B' || in[1] != 'M') return corrupt("bmp: not a BMP file");
  const uint32_t data_at = le(10, 4), header = le(14, 4);
  const int32_t w = static_cast<int32_t>(le(18, 4)), h = static_cast<int32_t>(le(22, 4));
  const uint32_t bpp = le(28, 2), compression = header >= 40 ? le(30, 4) : 0;
  if (header < 40) return corrupt("bmp: unsupported header (" + std::to_string(header) + " bytes)");
  if (bpp != 24 || compression != 0) {
    return corrupt("bmp: only 24-bit uncompressed images are supported (" + std::to_string(bpp) +
                   " bits, compression " + std::to_string(compression) + ")");
  }
  const int64_t rows = h < 0 ? -int64_t{h} : h;
  if (w != width || rows != height) return size_mismatch("bmp", w, rows, width, height);
  const size_t stride = (static_cast<size_t>(w) * 3 + 3) & ~size_t{3};
  if (data_at > in.size() || (in.size() - data_at) / stride < static_cast<size_t>(rows)) {
    return corrupt("bmp: the file is shorter than its pixels");
  }
  const size_t bytes = static_cast<size_t>(w) * 3 * static_cast<size_t>(rows);
  if (bytes > out.size()) return corrupt("bmp: the image holds more pixels than the tile");
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = in.data() + data_at + stride * static_cast<size_t>(h < 0 ? r : rows - 1 - r);
    uint8_t* dst = out.data() + static_cast<size_t>(r) * static_cast<size_t>(w) * 3;
    for (int32_t x = 0; x < w; ++x) {
      dst[3 * x] = src[3 * x + 2];
      dst[3 * x + 1] = src[3 * x + 1];
      dst[3 * x + 2] = src[3 * x];
    }
  }
  return bytes;
}

}  // namespace tilewise::codecs
