// Rect: a half-open pixel rectangle [x0, x1) x [y0, y1) in 64-bit coordinates (any region up to a whole
// level is addressed safely).
#pragma once

#include <algorithm>
#include <cstdint>

namespace tilewise::region {

struct Rect {
  int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
  int64_t width() const { return x1 - x0; }
  int64_t height() const { return y1 - y0; }
  int64_t area() const { return empty() ? 0 : width() * height(); }
  bool operator==(const Rect&) const = default;
};

inline Rect intersect(const Rect& a, const Rect& b) {
  return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

}  // namespace tilewise::region
