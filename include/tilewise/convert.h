// Writing slides: tilewise::convert writes a slide it reads as a tiled pyramidal TIFF.
//
// The output, named *.tif or *.tiff, is a BigTIFF whose directories are the pyramid's levels, largest first
// (the reduced ones marked NewSubfileType 1): OpenSlide reads it as generic-tiff, tifffile as one series
// with its levels, libvips and QuPath as a pyramid. Level 0 is the slide's level 0 (its RGB rendering, the
// background where it stores nothing); each next level halves the one before with a 2 x 2 box
// (write/downsample.h) until a level fits one tile. Microns per pixel become the resolution tags, the ICC
// profile is carried over.
//
// Streaming: level 0 is read in bands of one tile row, each band's tiles encoded on the worker pool and
// written while the next levels form from it, so memory stays a few bands of each level (about 2 x width
// x tile x 3 bytes) whatever the slide's size. The file is written under a temporary name beside the
// output and renamed when complete; on any error it is removed and nothing is left at the output path.
// Errors reading the slide name its file, level and tile.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tilewise/slide.h"
#include "tilewise/status.h"

namespace tilewise {

struct ConvertOptions {
  int32_t tile_size = 256;      // a multiple of 16, 16 to 4096
  std::string codec = "jpeg";   // "jpeg" (YCbCr), "deflate" (lossless), "none"
  int quality = 90;             // JPEG quality, 1-100
  bool subsample = true;        // JPEG chroma 4:2:0; false: 4:4:4
  int max_levels = 0;           // at most this many levels; 0: down to the level that fits one tile
  // Called on the converting thread after each band of level 0 with the rows written and the level's
  // height; a status that is not ok stops the conversion with that status.
  std::function<Status(int64_t rows_done, int64_t rows_total)> progress;
};

// Writes `slide` to `output` (see above). InvalidArgument for options out of range or an output name of a
// format this does not write.
Status convert(const Slide& slide, const std::string& output, const ConvertOptions& options = {});

}  // namespace tilewise
