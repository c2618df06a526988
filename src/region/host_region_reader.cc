#include "region/host_region_reader.h"

#include <algorithm>

#include <atomic>
#include <cstring>
#include <mutex>

#include "cache/tile_cache.h"
#include "region/region_plan.h"
#include "region/tile_fetcher.h"
#include "util/thread_pool.h"

namespace tilewise::region {

void fill_rect(const ImageView& view, int64_t x, int64_t y, int64_t w, int64_t h, const std::array<uint8_t, 3>& c) {
  if (w <= 0 || h <= 0) return;
  if (!view.is_rgb8()) {  // samples as stored: no signal
    for (int64_t r = 0; r < h; ++r) std::memset(view.pixel(x, y + r), 0, static_cast<size_t>(w) * view.pixel_bytes());
    return;
  }
  uint8_t* first = view.pixel(x, y);
  if (c[0] == c[1] && c[1] == c[2]) {
    for (int64_t r = 0; r < h; ++r) std::memset(view.pixel(x, y + r), c[0], static_cast<size_t>(w) * 3);
    return;
  }
  for (int64_t i = 0; i < w; ++i) std::memcpy(first + i * 3, c.data(), 3);
  for (int64_t r = 1; r < h; ++r) std::memcpy(view.pixel(x, y + r), first, static_cast<size_t>(w) * 3);
}

namespace {

void copy_rect(const uint8_t* src, int64_t src_stride, const ImageView& dst, int64_t dx, int64_t dy, int64_t w,
               int64_t h) {
  for (int64_t r = 0; r < h; ++r) {
    std::memcpy(dst.pixel(dx, dy + r), src + r * src_stride, static_cast<size_t>(w) * dst.pixel_bytes());
  }
}

}  // namespace

// A remote source (HTTP, S3) fetches the bytes of the region's tiles together, coalesced and in parallel,
// before they are decoded one by one; cut tiles the tile cache holds are left out.
void HostRegionReader::prefetch_tiles(const RegionPlan& plan, bool caching, int32_t cache_level) const {
  if (plan.tiles.empty() || plan.tiles.front().tile.level->unit_part(plan.tiles.front().tile.index()).source->is_local_file())
    return;
  std::vector<int64_t> units;
  for (const PlannedTile& t : plan.tiles) {
    const int64_t i = t.tile.index();
    if (t.empty || (caching && !t.whole && cache::TileCache::global().contains({slide_uid_, cache_level, i}))) continue;
    units.push_back(i);
  }
  prefetch_units(*plan.tiles.front().tile.level, units);
}

// Calls of fewer regions read them one by one (each prefetching its own tiles): many workers in flight
// already hide the round trips, and grouping their small calls only makes bursts (bench/RESULTS.md,
// "Grouped remote batches").
constexpr size_t kMinGroupedRegions = 16;

std::vector<Status> HostRegionReader::read_batch(std::span<const RegionRequest> requests) const {
  std::vector<Status> statuses(requests.size());
  std::vector<Result<RegionPlan>> plans;  // of requests [at, end), each planned once
  auto plan_of = [&](size_t i) {
    const RegionRequest& r = requests[i];
    return plan_region(*r.level, r.level_label, r.x, r.y, r.width, r.height);
  };
  for (size_t at = 0; at < requests.size();) {
    const formats::LevelModel& level = *requests[at].level;
    const io::Source& source = *level.unit_part(0).source;
    const uint64_t budget = source.cache_bytes() / 8;
    // Frames of a DICOMweb server are grouped in calls of any size: each request costs the server a look
    // into its file, far more than a range read from a file server (bench/RESULTS.md, "2 cores: DICOMweb").
    const bool grouped = budget > 0 && !source.is_local_file() &&
                         (requests.size() >= kMinGroupedRegions || level.stream == formats::UnitStream::kFrame);
    plans.clear();
    size_t end = at;
    // This level's run; for a remote source only while its tiles' bytes fit an eighth of the cache (at
    // least one region), so that the groups of several loader workers fit it together.
    std::vector<int64_t> units;
    uint64_t bytes = 0;
    for (; end < requests.size() && requests[end].level == &level; ++end) {
      Result<RegionPlan> plan = plan_of(end);
      if (grouped && plan.ok()) {
        uint64_t more = 0;
        const size_t before = units.size();
        for (const PlannedTile& t : plan->tiles) {
          if (t.empty) continue;
          units.push_back(t.tile.index());
          more += level.unit_length(t.tile.index());
        }
        if (end > at && bytes + more > budget) {
          units.resize(before);
          break;
        }
        bytes += more;
      }
      plans.push_back(std::move(plan));
    }
    if (grouped) prefetch_units(level, units);
    // Regions read on this thread alone share the tiles several of them cut (batch_tiles.h).
    const bool on_this_thread = std::all_of(requests.begin() + static_cast<std::ptrdiff_t>(at),
                                            requests.begin() + static_cast<std::ptrdiff_t>(end),
                                            [](const RegionRequest& r) { return r.threads == 1; });
    BatchTiles shared;
    if (on_this_thread && end - at > 1) {
      cache::TileCache& cache = cache::TileCache::global();
      for (size_t i = at; i < end; ++i) {
        const Result<RegionPlan>& plan = plans[i - at];
        if (!plan.ok()) continue;
        const RegionRequest& r = requests[i];
        const bool caching = r.use_cache && cache.enabled();
        const uint64_t tile_bytes = static_cast<uint64_t>(r.level->desc.width) *
                                    static_cast<uint64_t>(r.level->desc.height) * r.out.pixel_bytes();
        for (const PlannedTile& t : plan->tiles) {
          if (t.empty || t.whole || (caching && cache.contains({slide_uid_, tile_cache_level(r), t.tile.index()}))) continue;
          shared.add_use(t.tile.index(), tile_bytes);  // a cached tile is served by the cache, as in read()
        }
      }
    }
    if (on_this_thread && end - at > 1) {
      read_tile_major(requests, at, plans, shared, statuses);
    } else {
      for (size_t i = at; i < end; ++i) {
        const Result<RegionPlan>& plan = plans[i - at];
        statuses[i] = plan.ok() ? read_planned(requests[i], *plan, &shared) : plan.status();
      }
    }
    at = end;
  }
  return statuses;
}

Status HostRegionReader::read(const RegionRequest& req) const {
  TW_ASSIGN_OR_RETURN(const RegionPlan plan,
                      plan_region(*req.level, req.level_label, req.x, req.y, req.width, req.height));
  return read_planned(req, plan, nullptr);
}

// The checks and the background of one region (before any of its tiles is read).
Status HostRegionReader::prepare(const RegionRequest& req, const RegionPlan& plan) const {
  const codecs::TileDesc& desc = req.level->desc;
  const bool native = req.out.channels == desc.samples_per_pixel && req.out.sample_bytes * 8 == desc.bits_per_sample;
  if (!req.out.device.is_cpu() || req.out.width < req.width || req.out.height < req.height ||
      req.out.stride < req.width * static_cast<int64_t>(req.out.pixel_bytes()) || (!req.out.is_rgb8() && !native)) {
    return invalid_argument("output buffer is smaller than the region, not in host memory, or neither 8-bit RGB nor "
                            "the level's own samples (" + std::to_string(desc.samples_per_pixel) + " of " +
                            std::to_string(desc.bits_per_sample) + " bits)");
  }
  for (const Rect& band : plan.background) {
    fill_rect(req.out, plan.out_x(band.x0), plan.out_y(band.y0), band.width(), band.height(), req.fill);
  }
  cache::TileCache& cache = cache::TileCache::global();
  prefetch_tiles(plan, req.use_cache && cache.enabled(), tile_cache_level(req));
  return Status();
}

// One planned tile of a region into its output.
Status HostRegionReader::read_tile(const RegionRequest& req, const RegionPlan& plan, const PlannedTile& t,
                                   const TileFetcher& fetcher, BatchTiles* shared) const {
  if (t.empty) {
    fill_rect(req.out, plan.out_x(t.need.x0), plan.out_y(t.need.y0), t.need.width(), t.need.height(), req.fill);
    if (req.on_tile_done) (*req.on_tile_done)(t);
    return Status();
  }
  cache::TileCache& cache = cache::TileCache::global();
  const bool caching = req.use_cache && cache.enabled();
  const int64_t tw = req.level->desc.width;
  const auto pixel = static_cast<int64_t>(req.out.pixel_bytes());
  // Where a window costs about as much as the whole tile, a cut tile is admitted on first use: JPEG 2000
  // (OpenJPEG's fixed cost per codestream) and JPEG restart intervals that windows cannot enter in the
  // middle (NDPI, VMS with the MCU index off or not applicable: the whole interval is entropy-decoded for
  // any window; measured 31 against 27 us for a whole 1024 x 8 unit and a 256-wide window of it, while
  // whole-level tiling decoded each unit twice without this). With the index, a window costs about its
  // own width, and the unit is cached on a second request (the cache's usual admission), as in tiling.
  // A positioned level's unit may show in several parts of one region (where other tiles overlap it): it
  // is decoded once for them too.
  const bool admit_on_first_use =
      req.level->desc.compression == codecs::Compression::kJpeg2000 || req.level->placement != nullptr ||
      (req.level->stream == formats::UnitStream::kRestartInterval && !windows_use_checkpoints(*req.level, t.tile.index()));
  const ImageView window = req.out.sub(plan.out_x(t.need.x0), plan.out_y(t.need.y0),
                                       static_cast<int32_t>(t.need.width()), static_cast<int32_t>(t.need.height()));
  Status s;
  if (t.whole) {
    s = fetcher.decode(t.tile, window);
  } else if (shared != nullptr && shared->shared(t.tile.index())) {
    Result<const uint8_t*> pixels = shared->use(t.tile.index(), static_cast<int32_t>(tw), t.tile.valid_rows(), req.out,
                                                [&](const ImageView& v) { return fetcher.decode(t.tile, v); });
    if (pixels.ok()) {
      const int64_t stride = tw * pixel;
      copy_rect(*pixels + (t.need.y0 - t.bounds.y0) * stride + (t.need.x0 - t.bounds.x0) * pixel, stride, req.out,
                plan.out_x(t.need.x0), plan.out_y(t.need.y0), t.need.width(), t.need.height());
    } else {
      s = pixels.status();
    }
    shared->done(t.tile.index());
  } else {
    // A tile cut by the region's edge: from the cache; or decoded whole and cached when it was asked for
    // recently (see cache/tile_cache.h, "Admission") or when a window costs about as much as the whole
    // tile (admit_on_first_use above); or else only the window the region needs, straight into the output.
    const cache::TileKey key{slide_uid_, tile_cache_level(req), t.tile.index()};
    cache::TileCache::Lookup found = caching ? cache.acquire(key, admit_on_first_use) : cache::TileCache::Lookup{};
    std::shared_ptr<const cache::CachedTile> pixels = std::move(found.tile);
    if (found.reserved) {  // admitted: this thread decodes the whole tile (concurrent readers of it wait)
      auto decoded = std::make_shared<cache::CachedTile>();
      decoded->width = static_cast<int32_t>(tw);
      decoded->height = t.tile.valid_rows();
      decoded->pixels.resize(static_cast<size_t>(tw) * decoded->height * static_cast<size_t>(pixel));
      s = fetcher.decode(t.tile, ImageView{decoded->pixels.data(), tw * pixel, decoded->width, decoded->height,
                                           req.out.channels, {}, req.out.sample_bytes});
      if (s.ok()) {
        cache.put(key, decoded);
        pixels = std::move(decoded);
      } else {
        cache.abandon(key);
      }
    }
    if (pixels) {
      const int64_t stride = int64_t{pixels->width} * pixel;
      copy_rect(pixels->pixels.data() + (t.need.y0 - t.bounds.y0) * stride + (t.need.x0 - t.bounds.x0) * pixel, stride,
                req.out, plan.out_x(t.need.x0), plan.out_y(t.need.y0), t.need.width(), t.need.height());
    } else if (s.ok()) {
      s = fetcher.decode_window(t.tile, window, static_cast<int32_t>(t.need.x0 - t.bounds.x0),
                                static_cast<int32_t>(t.need.y0 - t.bounds.y0));
    }
  }
  if (s.ok() && req.on_tile_done) (*req.on_tile_done)(t);
  return s;
}

Status HostRegionReader::read_planned(const RegionRequest& req, const RegionPlan& plan, BatchTiles* shared) const {
  if (plan.region.empty()) return Status();
  TW_RETURN_IF_ERROR(prepare(req, plan));
  const TileFetcher fetcher(model_);
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  Status first_error;
  auto process = [&](int64_t i) {
    if (failed.load(std::memory_order_relaxed)) return;
    Status s = read_tile(req, plan, plan.tiles[static_cast<size_t>(i)], fetcher, shared);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!failed.exchange(true)) first_error = std::move(s);
    }
  };
  const int64_t count = static_cast<int64_t>(plan.tiles.size());
  if (count == 1 || req.threads == 1) {
    for (int64_t i = 0; i < count; ++i) process(i);
  } else {
    internal::global_pool().parallel_for(count, process, req.threads > 1 ? req.threads - 1 : 1 << 30);
  }
  return first_error;
}

// Regions read on this thread alone, tile by tile rather than region by region: every piece of the call's
// regions in the order of its tile, so that a tile several regions cut is decoded and cut by all of them
// while it is in the core's cache, and its buffer serves the next tile at once. Region by region, the next
// patch of a tiling cut a 1,024 x 8 NDPI unit again only after the 31 other units of its column and ~1 MB
// of other pixels (bench/RESULTS.md, "Tile-major batch reads"). A region's first error is its status; its
// remaining pieces are skipped.
void HostRegionReader::read_tile_major(std::span<const RegionRequest> requests, size_t at,
                                       const std::vector<Result<RegionPlan>>& plans, BatchTiles& shared,
                                       std::vector<Status>& statuses) const {
  struct Piece {
    int64_t tile;
    uint32_t region;  // relative to `at`
    uint32_t index;   // into its plan's tiles
  };
  std::vector<Piece> pieces;
  for (size_t k = 0; k < plans.size(); ++k) {
    Status& status = statuses[at + k];
    if (!plans[k].ok()) {
      status = plans[k].status();
      continue;
    }
    const RegionPlan& plan = *plans[k];
    if (plan.region.empty()) continue;
    status = prepare(requests[at + k], plan);
    if (!status.ok()) continue;
    for (size_t i = 0; i < plan.tiles.size(); ++i) {
      pieces.push_back(Piece{plan.tiles[i].tile.index(), static_cast<uint32_t>(k), static_cast<uint32_t>(i)});
    }
  }
  std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.tile < b.tile; });
  const TileFetcher fetcher(model_);
  for (const Piece& p : pieces) {
    Status& status = statuses[at + p.region];
    const RegionPlan& plan = *plans[p.region];
    const PlannedTile& t = plan.tiles[p.index];
    if (!status.ok()) continue;
    status = read_tile(requests[at + p.region], plan, t, fetcher, &shared);
  }
}

}  // namespace tilewise::region
