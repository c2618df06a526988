// Large device regions (DeviceRegionReader::read of at least TILEWISE_GPU_SPLIT_TILES tiles): read whole by
// the GPU's decode lanes or by the CPU's cores, whichever reads such regions faster by measured rates (which
// side wins depends on the GPU and the core count: bench/RESULTS.md, "Large regions routed by measured
// rates"); the device's scheduler (scheduler.h) decides from each side's large reads, timed here.
// The CPU side reads in one host read into page-locked staging, each tile row's upload queued by the thread
// that wrote its last tile while later rows decode. TILEWISE_GPU_SPLIT_CPU_SHARE instead cuts every large
// region at a tile row and reads both parts at once, the rows below the cut on the CPU (slower than either
// side alone where the lanes' host work and the decoding cores share the host). No tile is decoded twice:
// the parts touch disjoint tile rows.
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "gpu/region_reader.h"
#include "region/host_region_reader.h"
#include "region/region_plan.h"
#include "util/settings.h"

namespace tilewise::gpu {

std::optional<DeviceRegionReader::LargeRoute> DeviceRegionReader::large_route(const region::RegionRequest& req,
                                                                             const region::RegionPlan& plan,
                                                                             DeviceContext& context) const {
  const int64_t min_tiles = internal::settings().gpu_split_tiles;
  if (min_tiles <= 0 || static_cast<int64_t>(plan.tiles.size()) < min_tiles || req.level->placement) {
    return std::nullopt;
  }
  if (!context.can_decode(req.level->desc).ok() || plan.inside.empty()) return std::nullopt;
  const int64_t th = req.level->desc.height;
  const int64_t first = plan.inside.y0 / th, last = (plan.inside.y1 - 1) / th;  // tile rows, inclusive
  const int64_t rows = last - first + 1;
  if (rows < 2) return std::nullopt;
  const Scheduler::Route route = context.scheduler().route_large_region(rows);
  if (route.side == Scheduler::Side::kLanes) return LargeRoute{};
  const int64_t cut_row = route.cut_row.value_or(0);
  return LargeRoute{cut_row == 0 ? req.y : (first + cut_row) * th};
}

Status DeviceRegionReader::read_large(const region::RegionRequest& req, const region::RegionPlan& plan,
                                      const LargeRoute& route, DeviceContext& context) const {
  if (route.cut) return read_split(req, *route.cut, context);
  Scheduler& scheduler = context.scheduler();
  const double start = scheduler.now();
  Status s = read_planned(req, plan, context);
  if (s.ok()) {
    scheduler.record_large_read(Scheduler::Side::kLanes, static_cast<double>(req.width * req.height),
                                scheduler.now() - start);
  }
  return s;
}

Status DeviceRegionReader::read_split(const region::RegionRequest& req, int64_t cut, DeviceContext& context) const {
  // The two halves, each a region of its own (its own plan, background and tiles); a cut at the region's
  // top leaves nothing to the lanes.
  region::RegionRequest top = req, bottom = req;
  top.height = cut - req.y;
  top.out = req.out.sub(0, 0, req.out.width, static_cast<int32_t>(top.height));
  bottom.y = cut;
  bottom.height = req.y + req.height - cut;
  bottom.out = req.out.sub(0, top.height, req.out.width, static_cast<int32_t>(bottom.height));

  Status gpu_status;
  std::thread lanes;
  if (top.height > 0) lanes = std::thread([&] { gpu_status = read_on_device(top, context); });

  // The CPU side: one host read (the pool and this thread) into staging. Each tile row is uploaded on this
  // side's stream by the thread that wrote the row's last tile, so that only the last row's upload is left
  // when the decode ends. (Bands of 8 tile rows, each read and then uploaded while the next decoded, left a
  // whole band's upload after the last band and joined the pool once per band.)
  Scheduler& scheduler = context.scheduler();
  const double start = scheduler.now();
  Status cpu_status = [&]() -> Status {
    DeviceOps& ops = context.ops();
    TW_ASSIGN_OR_RETURN(StreamLease stream, StreamLease::acquire(ops));
    TW_ASSIGN_OR_RETURN(const region::RegionPlan plan, region::plan_region(*bottom.level, bottom.level_label, bottom.x,
                                                                           bottom.y, bottom.width, bottom.height));
    const int64_t row_bytes = bottom.width * 3;
    const size_t bytes = static_cast<size_t>(row_bytes * bottom.height);
    TW_ASSIGN_OR_RETURN(void* staging, ops.allocate_host(bytes));
    auto* pixels = static_cast<uint8_t*>(staging);
    auto upload = [&](int64_t y0, int64_t y1) {  // output rows [y0, y1) of the bottom part
      if (y1 <= y0) return Status();
      return ops.copy_2d(bottom.out.row(y0), static_cast<size_t>(bottom.out.stride), pixels + y0 * row_bytes,
                         static_cast<size_t>(row_bytes), static_cast<int32_t>(row_bytes),
                         static_cast<int32_t>(y1 - y0), /*src_on_host=*/true, stream.get());
    };
    // Per tile row (keyed by the level row its tiles' part starts at): tiles not yet written, and its end.
    struct Row {
      size_t left = 0;
      int64_t end = 0;
    };
    std::map<int64_t, Row> rows;
    for (const region::PlannedTile& t : plan.tiles) {
      Row& r = rows[t.need.y0];
      ++r.left;
      r.end = t.need.y1;
    }
    std::mutex mutex;
    Status uploads;
    const std::function<void(const region::PlannedTile&)> done = [&](const region::PlannedTile& t) {
      std::unique_lock<std::mutex> lock(mutex);
      Row& r = rows.at(t.need.y0);
      if (--r.left > 0) return;
      lock.unlock();
      Status s = upload(plan.out_y(t.need.y0), plan.out_y(r.end));
      lock.lock();
      if (uploads.ok()) uploads = std::move(s);
    };
    region::RegionRequest part = bottom;
    part.out = ImageView{pixels, row_bytes, static_cast<int32_t>(bottom.width), static_cast<int32_t>(bottom.height), 3,
                         Device{}};
    part.on_tile_done = &done;
    Status s = region::HostRegionReader(model_, slide_uid_).read(part);
    // The rows no tile covers (background above or below the level) go after the read.
    if (s.ok() && !rows.empty()) s = upload(0, plan.out_y(rows.begin()->first));
    if (s.ok() && !rows.empty()) s = upload(plan.out_y(rows.rbegin()->second.end), bottom.height);
    if (s.ok() && rows.empty()) s = upload(0, bottom.height);
    if (s.ok()) s = uploads;
    const Status synced = ops.synchronize(stream.get());  // staging is released only after its uploads
    ops.release_host(staging);
    return s.ok() ? synced : s;
  }();
  const double cpu_took = scheduler.now() - start;
  if (lanes.joinable()) lanes.join();
  // The rates are of each side alone: a region shared at a fixed cut measures neither.
  if (top.height == 0 && cpu_status.ok()) {
    scheduler.record_large_read(Scheduler::Side::kCpu, static_cast<double>(bottom.width * bottom.height), cpu_took);
  }
  return gpu_status.ok() ? cpu_status : gpu_status;
}

}  // namespace tilewise::gpu
