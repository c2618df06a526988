#include <algorithm>
#include <limits>

#include "formats/slide_model.h"

namespace tilewise::formats {

std::shared_ptr<const Placement> make_placement(std::vector<PlacedTile> tiles) {
  auto p = std::make_shared<Placement>();
  int64_t tw = 1, th = 1;
  p->x0 = p->y0 = std::numeric_limits<int64_t>::max();
  p->x1 = p->y1 = std::numeric_limits<int64_t>::min();
  std::erase_if(tiles, [](const PlacedTile& t) { return t.width <= 0 || t.height <= 0; });
  for (const PlacedTile& t : tiles) {
    tw = std::max<int64_t>(tw, t.width);
    th = std::max<int64_t>(th, t.height);
    p->x0 = std::min(p->x0, t.x), p->y0 = std::min(p->y0, t.y);
    p->x1 = std::max(p->x1, t.x + t.width), p->y1 = std::max(p->y1, t.y + t.height);
  }
  if (tiles.empty()) p->x0 = p->y0 = p->x1 = p->y1 = 0;
  // Bins of about a tile; larger where the tiles are scattered far apart (a damaged position table), so
  // that the bin table stays small.
  while ((p->x1 - p->x0) / tw * ((p->y1 - p->y0) / th) > (int64_t{1} << 22)) tw *= 2, th *= 2;
  p->bin_width = tw;
  p->bin_height = th;
  p->bins_across = std::max<int64_t>(1, (p->x1 - p->x0 + tw - 1) / tw);
  p->bins_down = std::max<int64_t>(1, (p->y1 - p->y0 + th - 1) / th);
  const auto span = [&](const PlacedTile& t, int64_t& c0, int64_t& c1, int64_t& r0, int64_t& r1) {
    c0 = (t.x - p->x0) / tw, c1 = (t.x + t.width - 1 - p->x0) / tw;
    r0 = (t.y - p->y0) / th, r1 = (t.y + t.height - 1 - p->y0) / th;
  };
  const size_t bins = static_cast<size_t>(p->bins_across * p->bins_down);
  std::vector<uint32_t> counts(bins + 1, 0);
  for (const PlacedTile& t : tiles) {
    int64_t c0, c1, r0, r1;
    span(t, c0, c1, r0, r1);
    for (int64_t r = r0; r <= r1; ++r) {
      for (int64_t c = c0; c <= c1; ++c) ++counts[static_cast<size_t>(r * p->bins_across + c) + 1];
    }
  }
  for (size_t b = 0; b < bins; ++b) counts[b + 1] += counts[b];
  p->bin_start = counts;
  p->bin_tiles.resize(counts[bins]);
  for (size_t i = 0; i < tiles.size(); ++i) {
    int64_t c0, c1, r0, r1;
    span(tiles[i], c0, c1, r0, r1);
    for (int64_t r = r0; r <= r1; ++r) {
      for (int64_t c = c0; c <= c1; ++c) {
        p->bin_tiles[counts[static_cast<size_t>(r * p->bins_across + c)]++] = static_cast<uint32_t>(i);
      }
    }
  }
  p->tiles = std::move(tiles);
  return p;
}

}  // namespace tilewise::formats
