#pragma once

#include <string>

#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::cli {

// Writes an RGB view as an 8-bit PNG (libpng).
Status write_png(const std::string& path, const ImageView& image);

}  // namespace tilewise::cli
