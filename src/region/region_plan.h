// RegionPlan: what reading one region of one level involves, independent of where it is decoded.
//
// plan_region() turns a region (level pixel frame, possibly partly or wholly outside the level) into
//  - the background rectangles: the parts outside the level, as at most four bands (above, below, left,
//    right of the inside part), which the executor fills with the request's colour;
//  - the planned tiles: every tile the inside part touches, in row-major order, each with its bounds (the
//    tile's pixels inside the level), the part the region needs, and whether that part is the whole tile.
//    On a positioned level (formats::Placement) the tiles' parts that show (no later tile covers them),
//    possibly several per unit, each with the unit's bounds as placed; parts no tile covers are background.
// The planned tiles' `need`s never overlap, so executors may write them in parallel.
// Both executors (the host reader, region/host_region_reader.h, and the device reader,
// gpu/region_reader.h) run this one plan; only how a tile is decoded and composed differs. Pure
// arithmetic over the immutable level model: no I/O, no allocation beyond the tile list.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/slide_model.h"
#include "region/geometry.h"
#include "region/tile_fetcher.h"
#include "tilewise/status.h"

namespace tilewise::region {

struct PlannedTile {
  TileRef tile;
  // The tile's pixels inside the level (edge tiles are shorter or narrower); on a positioned level the
  // unit's whole decoded image where this placement draws it (its pixel (0, 0) at bounds.x0, bounds.y0).
  Rect bounds;
  Rect need;    // bounds ∩ the region: what the region takes from this tile
  // Stored with no bytes (sparse): reads as background.
  bool empty = false;
  // The region needs every pixel of the tile, and the tile has no padding columns: a decoder writing the
  // tile's rows straight into the output at `need` writes only pixels of the region (zero copy).
  bool whole = false;
  // The tile has no padding rows either (not the last row of an image whose height is not a multiple of
  // the tile height). Decoders that always write every row of the nominal tile (the GPU's) decode in place
  // only when whole && !padded_rows.
  bool padded_rows = false;
};

struct RegionPlan {
  Rect region;  // the request, level pixel frame
  Rect inside;  // region ∩ level (positioned levels: ∩ the tiles' extent); empty when wholly outside
  std::vector<Rect> background;  // non-empty rectangles to fill (outside the level, or no tile there), level frame
  std::vector<PlannedTile> tiles;
  // Output coordinates of a level-frame point (the output's origin is region.x0, region.y0).
  int64_t out_x(int64_t level_x) const { return level_x - region.x0; }
  int64_t out_y(int64_t level_y) const { return level_y - region.y0; }
};

// Plans the width x height region at (x, y) of `level`. InvalidArgument for a negative size; a zero-sized
// region gives an empty plan.
Result<RegionPlan> plan_region(const formats::LevelModel& level, std::string_view level_label, int64_t x, int64_t y,
                               int64_t width, int64_t height);

}  // namespace tilewise::region
