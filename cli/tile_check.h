// `tilewise info --check`: every tile of every level (of every plane, for images with channels, focal
// planes or time points) and every associated image decoded once, each failure kept with where it
// happened, so a slide whose tiles cannot be read is found before a job meets it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilewise/tilewise.h"

namespace tilewise::cli {

struct TileFailure {
  std::string where;  // "level 2 tile (3,4)" or "associated image label"
  Status status;
};

struct TileCheck {
  int64_t tiles = 0;   // tiles (and associated images) decoded
  int64_t absent = 0;  // tiles the file does not store (they read as background)
  std::vector<TileFailure> failures;  // in level, row, column order
};

// Decodes every stored tile on `threads` threads (the tile cache bypassed), with a progress bar on stderr
// when it is a terminal and the slide has many tiles.
TileCheck check_tiles(const Slide& slide, int threads);

}  // namespace tilewise::cli
