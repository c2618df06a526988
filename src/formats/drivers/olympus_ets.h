// An Olympus/Evident cellSens .ets file: one stack's tiles and pyramid.
//
// The SIS header (64 bytes: "SIS", its size 64, the number of coordinates per tile, where the ETS header
// and the tile table lie and how many tiles it lists), the ETS header ("ETS", sample type - 2 uint8, 4 uint16,
// 9 float32 among others -, samples per pixel, colour space, codec - 0 raw, 2 JPEG, 3 JPEG 2000, 5 lossless
// JPEG, 8 PNG, 9 BMP -, quality, tile size, 17 pixel hints, 40 bytes of background colour, sample order,
// whether the last coordinate is the pyramid level), then the table: per tile 4 reserved bytes, its
// coordinates (x and y in tiles, the stack's other dimensions, the level), its offset (64-bit), length and 4
// reserved bytes. Every tile is a whole tile of the header's size, also at the image's right and bottom edges.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "io/source.h"
#include "tilewise/status.h"

namespace tilewise::formats::olympus {

struct Ets {
  int32_t sample_type = 0;  // the header's code (2 uint8, 4 uint16, 9 float32, ...)
  int32_t samples = 0;
  int32_t color_space = 0;
  int32_t codec = 0;
  int32_t tile_width = 0, tile_height = 0;
  bool pyramid = false;  // the last coordinate is the level
  std::array<uint8_t, 40> background{};
  int32_t coords = 0;  // coordinates per tile
  // The table: tile i's coordinates are coord[i * coords .. (i + 1) * coords).
  std::vector<int32_t> coord;
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> lengths;
  size_t tiles() const { return offsets.size(); }
};

// The headers and tile table of `source`; Corrupt (naming what is wrong) when they are not an ETS file's or
// a tile lies past its end.
Result<Ets> read_ets(const io::Source& source);

}  // namespace tilewise::formats::olympus
