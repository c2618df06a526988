#include "region/region_reader.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "cache/tile_cache.h"
#include "region/tile_fetcher.h"
#include "util/checked_math.h"
#include "util/thread_pool.h"

namespace tilewise::region {

void fill_rect(const ImageView& view, int64_t x, int64_t y, int64_t w, int64_t h, const std::array<uint8_t, 3>& c) {
  if (w <= 0 || h <= 0) return;
  uint8_t* first = view.pixel(x, y);
  if (c[0] == c[1] && c[1] == c[2]) {
    for (int64_t r = 0; r < h; ++r) std::memset(view.pixel(x, y + r), c[0], static_cast<size_t>(w) * 3);
    return;
  }
  for (int64_t i = 0; i < w; ++i) std::memcpy(first + i * 3, c.data(), 3);
  for (int64_t r = 1; r < h; ++r) std::memcpy(view.pixel(x, y + r), first, static_cast<size_t>(w) * 3);
}

namespace {

struct Rect {
  int64_t x0, y0, x1, y1;  // half-open
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};

Rect intersect(const Rect& a, const Rect& b) {
  return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

void copy_rect(const uint8_t* src, int64_t src_stride, const ImageView& dst, int64_t dx, int64_t dy, int64_t w,
               int64_t h) {
  for (int64_t r = 0; r < h; ++r) {
    std::memcpy(dst.pixel(dx, dy + r), src + r * src_stride, static_cast<size_t>(w) * 3);
  }
}

}  // namespace

Status RegionReader::read(const RegionRequest& req) const {
  if (!req.out.device.is_cpu()) return read_device(req);
  const formats::LevelModel& level = *req.level;
  if (req.width < 0 || req.height < 0) return invalid_argument("region size must not be negative");
  if (req.width == 0 || req.height == 0) return Status();
  if (req.out.channels != 3 || !req.out.device.is_cpu() || req.out.width < req.width ||
      req.out.height < req.height || req.out.stride < req.width * 3) {
    return invalid_argument("output buffer is smaller than the region or not a 3-channel CPU buffer");
  }
  const Rect region{req.x, req.y, req.x + req.width, req.y + req.height};
  const Rect inside = intersect(region, Rect{0, 0, level.info.width, level.info.height});
  // Background outside the level: bands above and below, then left and right of the inside part.
  if (inside.empty()) {
    fill_rect(req.out, 0, 0, req.width, req.height, req.fill);
    return Status();
  }
  fill_rect(req.out, 0, 0, req.width, inside.y0 - region.y0, req.fill);
  fill_rect(req.out, 0, inside.y1 - region.y0, req.width, region.y1 - inside.y1, req.fill);
  fill_rect(req.out, 0, inside.y0 - region.y0, inside.x0 - region.x0, inside.y1 - inside.y0, req.fill);
  fill_rect(req.out, inside.x1 - region.x0, inside.y0 - region.y0, region.x1 - inside.x1, inside.y1 - inside.y0,
            req.fill);

  const int64_t tw = level.desc.width, th = level.desc.height;
  const int64_t col0 = inside.x0 / tw, col1 = (inside.x1 - 1) / tw;
  const int64_t row0 = inside.y0 / th, row1 = (inside.y1 - 1) / th;
  const int64_t cols = col1 - col0 + 1;
  const int64_t count = cols * (row1 - row0 + 1);

  cache::TileCache& cache = cache::TileCache::global();
  const bool caching = req.use_cache && cache.enabled();
  TileFetcher fetcher(model_);
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  Status first_error;

  auto process = [&](int64_t i) {
    if (failed.load(std::memory_order_relaxed)) return;
    TileRef tile{&level, req.level_label, col0 + i % cols, row0 + i / cols};
    const Rect bounds{tile.x0(), tile.y0(), tile.x0() + tile.valid_cols(), tile.y0() + tile.valid_rows()};
    const Rect need = intersect(bounds, inside);
    Status s;
    if (fetcher.is_empty(tile)) {
      fill_rect(req.out, need.x0 - region.x0, need.y0 - region.y0, need.x1 - need.x0, need.y1 - need.y0, req.fill);
      return;
    }
    const bool full_width = tile.valid_cols() == tw;  // no padding columns to the right of the image
    const bool in_place = full_width && need.x0 == bounds.x0 && need.x1 == bounds.x1 && need.y0 == bounds.y0 &&
                          need.y1 == bounds.y1;
    const ImageView window = req.out.sub(need.x0 - region.x0, need.y0 - region.y0,
                                         static_cast<int32_t>(need.x1 - need.x0), static_cast<int32_t>(need.y1 - need.y0));
    if (in_place) {
      s = fetcher.decode(tile, req.out.sub(bounds.x0 - region.x0, bounds.y0 - region.y0, static_cast<int32_t>(tw),
                                           tile.valid_rows()));
    } else {
      // A tile cut by the region's edge: from the cache; or decoded whole and cached when it was asked for
      // recently (see cache/tile_cache.h, "Admission"); or else only the window the region needs, straight
      // into the output.
      const cache::TileKey key{slide_uid_, req.cache_level, tile.index()};
      cache::TileCache::Lookup found = caching ? cache.lookup(key) : cache::TileCache::Lookup{};
      std::shared_ptr<const cache::CachedTile> pixels = std::move(found.tile);
      if (!pixels && found.seen_recently) {
        auto decoded = std::make_shared<cache::CachedTile>();
        decoded->width = static_cast<int32_t>(tw);
        decoded->height = tile.valid_rows();
        decoded->pixels.resize(static_cast<size_t>(tw) * decoded->height * 3);
        s = fetcher.decode(tile, ImageView{decoded->pixels.data(), tw * 3, decoded->width, decoded->height, 3, {}});
        if (s.ok()) {
          cache.put(key, decoded);
          pixels = std::move(decoded);
        }
      }
      if (pixels) {
        const int64_t stride = int64_t{pixels->width} * 3;
        copy_rect(pixels->pixels.data() + (need.y0 - bounds.y0) * stride + (need.x0 - bounds.x0) * 3, stride, req.out,
                  need.x0 - region.x0, need.y0 - region.y0, need.x1 - need.x0, need.y1 - need.y0);
      } else if (s.ok()) {
        s = fetcher.decode_window(tile, window, static_cast<int32_t>(need.x0 - bounds.x0),
                                  static_cast<int32_t>(need.y0 - bounds.y0));
      }
    }
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!failed.exchange(true)) first_error = s;
    }
  };

  if (count == 1) {
    process(0);
  } else {
    internal::global_pool().parallel_for(count, process);
  }
  return first_error;
}

}  // namespace tilewise::region
