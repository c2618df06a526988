#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tilewise::cli {

void draw_progress(int64_t done, int64_t total) {
  const int width = 40;
  const int filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
  std::fprintf(stderr, "\r  [%.*s%*s] %lld/%lld", filled, "########################################", width - filled, "",
               static_cast<long long>(done), static_cast<long long>(total));
  std::fflush(stderr);
}

Status read_level_region_with_progress(const Slide& slide, int level, int64_t x, int64_t y, int64_t width,
                                       int64_t height, const ImageView& out) {
  constexpr int64_t kLarge = int64_t{64} << 20;  // pixels
  if (level < 0 || level >= slide.level_count() || width * height < kLarge || !isatty(STDERR_FILENO)) {
    return slide.read_level_region(level, x, y, width, height, out);
  }
  // Bands of whole tile rows (aligned to the level's grid), so no tile is decoded twice.
  const int64_t tile_h = std::max<int32_t>(1, slide.level(level).tile_height);
  const int64_t band = std::max<int64_t>(tile_h, (height / 50 + tile_h - 1) / tile_h * tile_h);
  int64_t row = 0;
  while (row < height) {
    const int64_t grid_end = ((y + row) / tile_h + band / tile_h) * tile_h - y;  // next grid line, band rows on
    const int64_t rows = std::min(height, std::max(row + 1, grid_end)) - row;
    TW_RETURN_IF_ERROR(slide.read_level_region(level, x, y + row, width, rows,
                                               out.sub(0, row, out.width, static_cast<int32_t>(rows))));
    row += rows;
    draw_progress(row, height);
  }
  std::fprintf(stderr, "\n");
  return Status();
}

}  // namespace tilewise::cli
