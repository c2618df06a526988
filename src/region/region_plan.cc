#include "region/region_plan.h"

namespace tilewise::region {

Result<RegionPlan> plan_region(const formats::LevelModel& level, std::string_view level_label, int64_t x, int64_t y,
                               int64_t width, int64_t height) {
  if (width < 0 || height < 0) return invalid_argument("region size must not be negative");
  RegionPlan plan;
  plan.region = Rect{x, y, x + width, y + height};
  if (plan.region.empty()) return plan;
  plan.inside = intersect(plan.region, Rect{0, 0, level.info.width, level.info.height});
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
