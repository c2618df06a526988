// HostRegionReader: executes a region plan (region_plan.h) into a host view. Each tile comes from the
// decoded-tile cache or is read and decoded, then copied into the caller's buffer; the plan's background
// rectangles get the fill colour.
//
// Tiles the region needs whole are decoded in place (zero copy) and not cached: a large region read is
// rarely repeated and would flush the cache. Tiles cut by the region's edge are decoded into a tile buffer,
// cached (when enabled and admitted, cache/tile_cache.h) and cropped, or else only the window the region
// needs is decoded. Tiles are processed in parallel on the process-wide pool; the calling thread takes part.
#pragma once

#include <array>
#include <cstdint>

#include "formats/slide_model.h"
#include <span>
#include <vector>

#include "region/batch_tiles.h"
#include "region/region_plan.h"
#include "region/region_request.h"
#include "region/tile_fetcher.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::region {

class HostRegionReader {
 public:
  HostRegionReader(const formats::SlideModel& model, uint64_t slide_uid) : model_(model), slide_uid_(slide_uid) {}
  // Reads into request.out, a 3-channel host view at least the region's size.
  Status read(const RegionRequest& request) const;
  // Reads each request as read() does, one status each; from a remote source the tiles of many regions are
  // fetched together first (in groups whose bytes fit an eighth of the source's cache), so a batch of patches costs a
  // few parallel round trips rather than one per patch. Regions read on the calling thread alone
  // (threads == 1) decode a tile that several of them cut once for the call (batch_tiles.h), and are read
  // tile by tile rather than region by region (the pieces of all of them in the order of their tiles).
  std::vector<Status> read_batch(std::span<const RegionRequest> requests) const;

 private:
  Status read_planned(const RegionRequest& request, const RegionPlan& plan, BatchTiles* shared) const;
  Status prepare(const RegionRequest& request, const RegionPlan& plan) const;
  Status read_tile(const RegionRequest& request, const RegionPlan& plan, const PlannedTile& tile,
                   const TileFetcher& fetcher, BatchTiles* shared) const;
  void read_tile_major(std::span<const RegionRequest> requests, size_t at, const std::vector<Result<RegionPlan>>& plans,
                       BatchTiles& shared, std::vector<Status>& statuses) const;
  void prefetch_tiles(const RegionPlan& plan, bool caching, int32_t cache_level) const;
  const formats::SlideModel& model_;
  uint64_t slide_uid_;
};

// Fills [x, x+w) x [y, y+h) of a host view with a colour.
void fill_rect(const ImageView& view, int64_t x, int64_t y, int64_t w, int64_t h, const std::array<uint8_t, 3>& c);

}  // namespace tilewise::region
