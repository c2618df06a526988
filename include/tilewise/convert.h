// Writing slides: tilewise::convert writes a slide it reads as a tiled pyramidal TIFF, an OME-TIFF or a
// DICOM WSI series.
//
// Both are BigTIFFs. Level 0 is the slide's level 0 (an RGB slide's RGB rendering, the background where it
// stores nothing; every channel, focal plane and time point of other slides at its own sample type); each
// next level halves the one before with a 2 x 2 box (write/downsample.h) until a level fits one tile.
// - *.tif, *.tiff (RGB slides): the pyramid's levels as the main chain of directories, largest first (the
//   reduced ones marked NewSubfileType 1): OpenSlide reads it as generic-tiff, tifffile as one series with
//   its levels, libvips and QuPath as a pyramid.
// - *.ome.tif, *.ome.tiff: one directory per plane in XYCZT order, each plane's reduced levels its SubIFDs,
//   the OME-XML (channels with names, colours, wavelengths, exposure; physical pixel size) in the first
//   directory's description: tifffile, bioio-ome-tiff, QuPath and Bio-Formats read it as one image with
//   its pyramid; OpenSlide reads its first plane's level 0 as generic-tiff.
// - format "dicom" (RGB slides with mpp): a folder holding a DICOM WSI series, one VL Whole Slide
//   Microscopy Image instance per level (write/dicom_wsi_writer.h), which pydicom, wsidicom, OpenSlide and
//   PACS read; JPEG baseline or uncompressed frames.
// Microns per pixel become the resolution tags, an RGB slide's ICC profile is carried over.
//
// Streaming: each plane's level 0 is read in bands of tile rows, each band's tiles encoded on the worker
// pool and written while the next levels form from it, so memory stays a few bands of each level (about
// 2 x width x tile x pixel bytes) whatever the slide's size. The file is written under a temporary name beside the output and renamed when complete;
// on any error it is removed and nothing is left at the output path. Errors reading the slide name its
// file, level and tile (and plane).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tilewise/slide.h"
#include "tilewise/status.h"

namespace tilewise {

struct ConvertOptions {
  // "" (from the output's name: *.ome.tif[f] OME-TIFF, other *.tif[f] generic TIFF), "tiff", "ome-tiff",
  // "dicom" (a folder of DICOM WSI instances)
  std::string format;
  int32_t tile_size = 256;      // a multiple of 16, 16 to 4096
  // "auto" (JPEG for RGB slides, deflate for channels), "jpeg" (YCbCr; 8-bit RGB only), "deflate"
  // (lossless; not DICOM), "none"
  std::string codec = "auto";
  int quality = 90;             // JPEG quality, 1-100
  bool subsample = true;        // JPEG chroma 4:2:0; false: 4:4:4
  int max_levels = 0;           // at most this many levels; 0: down to the level that fits one tile
  // JPEG output of an RGB slide whose level 0 is JPEG tiles of the output's size, coded as the output's
  // (baseline YCbCr, the same chroma subsampling): level 0's tiles are copied as the file stores them
  // (Slide::read_stored_tile), not decoded and encoded again - their pixels stay the source's exactly; the
  // levels below are still made from the decoded level 0. Tiles that do not qualify are encoded.
  bool copy_tiles = false;
  // Called on the converting thread after each band of level 0 with the rows written and the level's
  // height; a status that is not ok stops the conversion with that status.
  std::function<Status(int64_t rows_done, int64_t rows_total)> progress;
};

// Writes `slide` to `output` (see above). InvalidArgument for options out of range, an output name of a
// format this does not write, a slide of channels to a generic TIFF, JPEG for channels, a DICOM series of a
// slide without mpp or into a folder that is not empty; Unsupported for a DICOM series of channels.
Status convert(const Slide& slide, const std::string& output, const ConvertOptions& options = {});

}  // namespace tilewise
