#include "region/region_plan.h"

#include <algorithm>

namespace tilewise::region {

namespace {

// a minus b, as at most four disjoint rectangles appended to out.
void subtract(const Rect& a, const Rect& b, std::vector<Rect>& out) {
  const Rect c = intersect(a, b);
  if (c.empty()) {
    out.push_back(a);
    return;
  }
  if (a.y0 < c.y0) out.push_back({a.x0, a.y0, a.x1, c.y0});
  if (c.y1 < a.y1) out.push_back({a.x0, c.y1, a.x1, a.y1});
  if (a.x0 < c.x0) out.push_back({a.x0, c.y0, c.x0, c.y1});
  if (c.x1 < a.x1) out.push_back({c.x1, c.y0, a.x1, c.y1});
}

// `rects` minus r, in place.
void subtract_all(std::vector<Rect>& rects, const Rect& r, std::vector<Rect>& scratch) {
  scratch.clear();
  for (const Rect& a : rects) subtract(a, r, scratch);
  rects.swap(scratch);
}

Rect placed_rect(const formats::PlacedTile& t) { return Rect{t.x, t.y, t.x + t.width, t.y + t.height}; }

// A positioned level: each tile the inside part touches contributes the parts of it that no later tile
// (in paint order) covers, so the planned tiles' `need`s stay disjoint and can be decoded in parallel as
// on a regular grid; what no tile covers is background.
void plan_positioned(const formats::LevelModel& level, std::string_view label, RegionPlan& plan) {
  const formats::Placement& p = *level.placement;
  const Rect& inside = plan.inside;
  const int64_t c0 = (inside.x0 - p.x0) / p.bin_width, c1 = (inside.x1 - 1 - p.x0) / p.bin_width;
  const int64_t r0 = (inside.y0 - p.y0) / p.bin_height, r1 = (inside.y1 - 1 - p.y0) / p.bin_height;
  std::vector<uint32_t> ids;
  for (int64_t r = r0; r <= r1; ++r) {
    for (int64_t c = c0; c <= c1; ++c) {
      const size_t b = static_cast<size_t>(r * p.bins_across + c);
      ids.insert(ids.end(), p.bin_tiles.begin() + p.bin_start[b], p.bin_tiles.begin() + p.bin_start[b + 1]);
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<Rect> gaps{inside}, parts, scratch;
  const auto& lengths = level.units->lengths;
  for (size_t k = 0; k < ids.size(); ++k) {
    const formats::PlacedTile& t = p.tiles[ids[k]];
    const Rect drawn = intersect(placed_rect(t), inside);
    if (drawn.empty()) continue;
    subtract_all(gaps, drawn, scratch);
    parts.assign(1, drawn);
    for (size_t j = k + 1; j < ids.size() && !parts.empty(); ++j) subtract_all(parts, placed_rect(p.tiles[ids[j]]), scratch);
    const int64_t ox = t.x - t.src_x, oy = t.y - t.src_y;
    const Rect unit{ox, oy, ox + level.desc.width, oy + level.desc.height};
    for (const Rect& part : parts) {
      PlannedTile pt{TileRef{&level, label, t.unit % level.tiles_across, t.unit / level.tiles_across}};
      pt.bounds = unit;
      pt.need = part;
      pt.empty = lengths[static_cast<size_t>(t.unit)] == 0;
      pt.whole = part == unit;
      plan.tiles.push_back(pt);
    }
  }
  for (const Rect& g : gaps) plan.background.push_back(g);
}

}  // namespace

Result<RegionPlan> plan_region(const formats::LevelModel& level, std::string_view level_label, int64_t x, int64_t y,
                               int64_t width, int64_t height) {
  if (width < 0 || height < 0) return invalid_argument("region size must not be negative");
  RegionPlan plan;
  plan.region = Rect{x, y, x + width, y + height};
  if (plan.region.empty()) return plan;
  // A positioned level draws its tiles wherever they lie (formats::Placement), also past its edges.
  const formats::Placement* placed = level.placement.get();
  plan.inside = intersect(plan.region, placed ? Rect{placed->x0, placed->y0, placed->x1, placed->y1}
                                              : Rect{0, 0, level.info.width, level.info.height});
  const Rect& region = plan.region;
  const Rect& inside = plan.inside;
  if (inside.empty()) {
    plan.background.push_back(region);
    return plan;
  }
  // Bands above and below the inside part span the region's width; left and right bands its height.
  for (const Rect& band : {Rect{region.x0, region.y0, region.x1, inside.y0}, Rect{region.x0, inside.y1, region.x1, region.y1},
                           Rect{region.x0, inside.y0, inside.x0, inside.y1}, Rect{inside.x1, inside.y0, region.x1, inside.y1}}) {
    if (!band.empty()) plan.background.push_back(band);
  }
  if (placed) {
    plan_positioned(level, level_label, plan);
    return plan;
  }
  const int64_t tw = level.desc.width, th = level.desc.height;
  const int64_t col0 = inside.x0 / tw, col1 = (inside.x1 - 1) / tw;
  const int64_t row0 = inside.y0 / th, row1 = (inside.y1 - 1) / th;
  const auto& byte_counts = level.units->lengths;
  plan.tiles.reserve(static_cast<size_t>((col1 - col0 + 1) * (row1 - row0 + 1)));
  for (int64_t row = row0; row <= row1; ++row) {
    for (int64_t col = col0; col <= col1; ++col) {
      PlannedTile t{TileRef{&level, level_label, col, row}};
      t.bounds = Rect{t.tile.x0(), t.tile.y0(), t.tile.x0() + t.tile.valid_cols(), t.tile.y0() + t.tile.valid_rows()};
      t.need = intersect(t.bounds, inside);
      t.empty = byte_counts[static_cast<size_t>(t.tile.index())] == 0;
      t.whole = t.need == t.bounds && t.tile.valid_cols() == tw;
      t.padded_rows = t.tile.valid_rows() != th;
      plan.tiles.push_back(t);
    }
  }
  return plan;
}

}  // namespace tilewise::region
