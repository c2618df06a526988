#include "png_writer.h"

#include <png.h>

#include <cstring>

namespace tilewise::cli {

Status write_png(const std::string& path, const ImageView& image) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.data, static_cast<png_int_32>(image.stride), nullptr)) {
    return io_error(path + ": cannot write PNG: " + png.message);
  }
  return Status();
}

}  // namespace tilewise::cli
