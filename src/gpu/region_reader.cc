#include "gpu/region_reader.h"

#include <algorithm>
#include <iterator>

#include "cache/tile_cache.h"
#include "gpu/compose.h"
#include "gpu/device_read.h"
#include "gpu/tile_hold.h"

namespace tilewise::gpu {

namespace {

// Remote sources fetch the tiles' bytes together (region/tile_fetcher.h).
void prefetch(const DeviceRead& read, const std::vector<DeviceTile>& tiles) {
  std::vector<int64_t> units;
  units.reserve(tiles.size());
  for (const DeviceTile& t : tiles) units.push_back(t.planned.tile.index());
  region::prefetch_units(*read.request.level, units);
}

// The tiles for the GPU decoders: cache hits are cropped, the rest decoded by the lanes (or by this thread
// assisting) and cut tiles cropped; tiles a GPU decoder failed on move to `fallback` (decoded on the CPU).
Status decode_on_gpu(const DeviceRead& read, uint64_t slide_uid, std::vector<DeviceTile> tiles,
                     std::vector<DeviceTile>& fallback) {
  // Lanes take jobs from the front: whole tiles first, then cut tiles by decreasing window, so that this
  // thread, assisting from the back, takes the windows the CPU decodes most cheaply.
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const DeviceTile& a, const DeviceTile& b) { return a.window_pixels() > b.window_pixels(); });
  const bool caching = read.request.use_cache && cache::TileCache::global().enabled();
  TileHold hold(read.context.ops(), read.stream, read.tile_bytes(), caching ? read.context.tile_cache() : nullptr);
  TW_RETURN_IF_ERROR(hold.reserve(tiles, slide_uid, read.request.cache_level));
  // Hits need no decode: they leave the job list (the order of the rest is kept).
  const auto first_hit =
      std::stable_partition(tiles.begin(), tiles.end(), [](const DeviceTile& t) { return !t.cache_hit; });
  std::vector<DeviceTile> hits(std::make_move_iterator(first_hit), std::make_move_iterator(tiles.end()));
  tiles.erase(first_hit, tiles.end());
  prefetch(read, tiles);
  std::vector<DeviceCopy> crops;
  if (!tiles.empty()) {
    std::vector<LaneJob> jobs(tiles.size());
    TW_RETURN_IF_ERROR(make_lane_jobs(read, hold, tiles, jobs));
    TW_ASSIGN_OR_RETURN(TileLanes * lanes, read.context.lanes());
    decode_on_lanes(read.context, *lanes, read.request.level->desc, jobs,
                    [&](size_t i, std::vector<uint8_t>& host, Stream stream) {
                      return upload_cpu_window(read, tiles[i], host, stream, tiles[i].bytes);
                    },
                    /*spread=*/true);
    for (size_t i = 0; i < tiles.size(); ++i) {
      DeviceTile& t = tiles[i];
      // A reserved cache entry is complete only when the GPU decoded the whole tile into it.
      hold.publish(t, jobs[i].on_gpu && jobs[i].status.ok());
      if (!jobs[i].on_gpu) {
        if (!jobs[i].status.ok()) return jobs[i].status;  // the CPU decoder's error, with the tile's context
        continue;
      }
      if (!jobs[i].status.ok()) {  // the GPU backend refused or failed: the CPU backend takes the tile
        t.bytes.clear();
        fallback.push_back(std::move(t));
        continue;
      }
      if (!t.in_place) crops.push_back(crop_of(read, t, hold.pixels(t)));
    }
  }
  for (const DeviceTile& t : hits) crops.push_back(crop_of(read, t, hold.pixels(t)));
  return read.context.ops().copy_batch(crops, read.stream);
}

}  // namespace

Status DeviceRegionReader::read(const region::RegionRequest& req, DeviceContext* given) const {
  TW_ASSIGN_OR_RETURN(const region::RegionPlan plan,
                      region::plan_region(*req.level, req.level_label, req.x, req.y, req.width, req.height));
  if (plan.region.empty()) return Status();
  if (req.out.channels != 3 || req.out.width < req.width || req.out.height < req.height ||
      req.out.stride < req.width * 3) {
    return invalid_argument("output buffer is smaller than the region or not a 3-channel buffer");
  }
  DeviceContext* context = given;
  if (!context) {
    TW_ASSIGN_OR_RETURN(context, device_context(req.out.device.index));
  }
  if (const auto route = large_route(req, plan, *context)) return read_large(req, plan, *route, *context);
  return read_planned(req, plan, *context);
}

Status DeviceRegionReader::read_on_device(const region::RegionRequest& req, DeviceContext& context) const {
  TW_ASSIGN_OR_RETURN(const region::RegionPlan plan,
                      region::plan_region(*req.level, req.level_label, req.x, req.y, req.width, req.height));
  if (plan.region.empty()) return Status();
  return read_planned(req, plan, context);
}

Status DeviceRegionReader::read_planned(const region::RegionRequest& req, const region::RegionPlan& plan,
                                        DeviceContext& given) const {
  DeviceContext* context = &given;
  DeviceOps& ops = context->ops();
  TW_ASSIGN_OR_RETURN(StreamLease stream, StreamLease::acquire(ops));
  const region::TileFetcher fetcher(model_);
  const DeviceRead read{*context, req, plan, fetcher, stream.get()};
  auto fill = [&](const region::Rect& r) {
    return ops.fill(read.at(r.x0, r.y0), read.pitch(), static_cast<int32_t>(r.width()), static_cast<int32_t>(r.height()),
                    req.fill.data(), read.stream);
  };
  for (const region::Rect& band : plan.background) TW_RETURN_IF_ERROR(fill(band));

  // The fallback chain, per tile: the GPU backend when it takes the level's tiles, else the CPU backend.
  const codecs::TileDesc& desc = req.level->desc;
  // A positioned level's unit may show in several parts of one region; the GPU path would decode it once
  // per part into one reserved cache entry, so those parts are decoded on the CPU and uploaded (the device
  // batch read, which deduplicates units, decodes them on the GPU).
  const bool gpu_codec = context->can_decode(desc).ok() && !req.level->placement;
  std::vector<DeviceTile> gpu_tiles, cpu_tiles;
  for (const region::PlannedTile& t : plan.tiles) {
    if (t.empty) {
      TW_RETURN_IF_ERROR(fill(t.need));
      continue;
    }
    DeviceTile tile{t};
    // The GPU decoders write every row of the nominal tile: in place only when none is padding.
    tile.in_place = context->in_place() && t.whole && !t.padded_rows;
    (gpu_codec ? gpu_tiles : cpu_tiles).push_back(std::move(tile));
  }
  if (!gpu_tiles.empty()) TW_RETURN_IF_ERROR(decode_on_gpu(read, slide_uid_, std::move(gpu_tiles), cpu_tiles));
  if (!gpu_codec) prefetch(read, cpu_tiles);
  TW_RETURN_IF_ERROR(upload_cpu_tiles(read, cpu_tiles));
  return ops.synchronize(read.stream);
}

}  // namespace tilewise::gpu
