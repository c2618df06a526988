// What Hamamatsu's formats share (NDPI and VMS): one large JPEG read by restart interval, and the levels
// OpenSlide derives from each stored level by decoding it at 1/2, 1/4 and 1/8 scale.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/jpeg/markers.h"
#include "formats/slide_model.h"
#include "io/source.h"
#include "tilewise/status.h"

namespace tilewise::formats {

// One JPEG as a grid of units: runs of restart-interval MCUs, one MCU row high, each readable on its own
// behind `unit_header` (the JPEG's header with its SOF sized to one unit); or, without restart markers,
// one unit that is the whole image.
struct RestartJpeg {
  codecs::JpegFrame frame;
  bool restart_units = false;
  std::vector<uint8_t> unit_header;
  int32_t unit_width = 0, unit_height = 0;
  int64_t units_across = 1, units_down = 1;
  std::vector<uint64_t> offsets, lengths;  // each unit's bytes in the source, row-major
};

// Indexes the JPEG in [offset, offset + length) of `source` whose image is width x height (0: the SOF's
// size). Unit starts come from `recorded` (relative to `offset`) when it has one per unit, else from a
// scan for restart markers. Errors name `where`.
Result<RestartJpeg> index_jpeg(const io::Source& source, uint64_t offset, uint64_t length, uint32_t width,
                               uint32_t height, const std::vector<uint64_t>* recorded, const ModelLimits& limits,
                               const std::string& where);

// The part a level of the JPEG's units reads: the source, the units' header and, for restart-interval units
// the MCU index can walk, its entropy layout.
UnitPart restart_part(std::shared_ptr<const io::Source> source, const RestartJpeg& jpeg);

// The codec description and tile geometry of a level of RestartJpeg units (info.width/height left to the caller).
LevelModel restart_jpeg_level(const RestartJpeg& jpeg);

// OpenSlide's level list for Hamamatsu's JPEG pyramids: each stored level, and the same level decoded at
// 1/2, 1/4 and 1/8 scale where its units divide evenly; of several with one width the later (a smaller
// stored level, or one scaled less) replaces the earlier; largest first.
std::vector<LevelModel> with_scaled_levels(const std::vector<LevelModel>& stored);

}  // namespace tilewise::formats
