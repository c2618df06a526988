// SlideModel: what a format driver makes of a parsed TIFF: levels (largest first), properties, associated
// images and the background colour. Immutable once built; the region layer reads it without locks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codecs/tile_desc.h"
#include "tiff/tiff_file.h"
#include "tilewise/types.h"

namespace tilewise::formats {

struct LevelModel {
  LevelInfo info;
  const tiff::Ifd* ifd = nullptr;  // owned by SlideModel::tiff
  codecs::TileDesc desc;           // chunk description shared by every tile of the level
  int64_t tiles_across = 0;
  int64_t tiles_down = 0;
  // A tile with byte count 0 is absent in every format (Philips sparse slides, Aperio encoder gaps, sparse
  // generic TIFFs) and reads as background.
};

struct AssociatedModel {
  std::string name;
  // Decoded whole through the same tile machinery; or, when embedded_jpeg is set (Philips keeps label and
  // macro as base64 JPEG inside its XML), image.info holds the size and embedded_jpeg the stream.
  LevelModel image;
  std::vector<uint8_t> embedded_jpeg;
};

struct SlideModel {
  std::shared_ptr<const tiff::TiffFile> tiff;
  std::string vendor;
  std::vector<LevelModel> levels;
  Properties properties;  // sorted by key
  std::vector<AssociatedModel> associated;
  std::array<uint8_t, 3> background{255, 255, 255};
  std::vector<uint8_t> icc_profile;
  std::optional<std::pair<double, double>> mpp;
  // Problems that did not stop the slide from opening (malformed metadata, ignored directories).
  std::vector<std::string> warnings;
};

// Limits applied while building levels (decode units that cannot be decoded safely are refused).
struct ModelLimits {
  uint64_t max_chunk_bytes = 512ull << 20;  // RGB bytes of one decoded tile or strip
};

}  // namespace tilewise::formats
