// Large device regions (DeviceRegionReader::read of at least kLargeRegionTiles tiles): read whole by the
// GPU's decode lanes or by the CPU's cores, whichever reads such regions faster by measured rates (which
// side wins depends on the GPU and the core count: bench/RESULTS.md, "Large regions routed by measured
// rates"); the device's scheduler (scheduler.h) decides from each side's large reads, timed here.
// The CPU side reads in one host read into staging (staging.h), each tile row's upload queued by the thread
// that wrote its last tile while later rows decode.
#include <functional>
#include <map>
#include <mutex>

#include "gpu/region_reader.h"
#include "gpu/staging.h"
#include "region/host_region_reader.h"
#include "region/region_plan.h"

namespace tilewise::gpu {

std::optional<Scheduler::Side> DeviceRegionReader::large_route(const region::RegionRequest& req,
                                                              const region::RegionPlan& plan,
                                                              DeviceContext& context) const {
  if (static_cast<int64_t>(plan.tiles.size()) < kLargeRegionTiles || plan.inside.empty()) return std::nullopt;
  if (!context.can_decode_into(req.level->desc, req.out).ok()) return std::nullopt;
  return context.scheduler().route_large_region();
}

Status DeviceRegionReader::read_large(const region::RegionRequest& req, const region::RegionPlan& plan,
                                      Scheduler::Side side, DeviceContext& context) const {
  Scheduler& scheduler = context.scheduler();
  const double start = scheduler.now();
  Status s = side == Scheduler::Side::kLanes
                 ? read_planned({&req, 1}, {&plan, 1}, context, /*large=*/true, std::vector<Status>(1)).front()
                 : read_on_cpu(req, plan, context);
  if (s.ok()) scheduler.record_large_read(side, static_cast<double>(req.width * req.height), scheduler.now() - start);
  return s;
}

Status DeviceRegionReader::read_on_cpu(const region::RegionRequest& req, const region::RegionPlan& plan,
                                       DeviceContext& context) const {
  // One host read (the pool and this thread) into staging. Each tile row is uploaded on this read's stream
  // by the thread that wrote the row's last tile, so that only the last row's upload is left when the
  // decode ends. (Bands of 8 tile rows, each read and then uploaded while the next decoded, left a whole
  // band's upload after the last band and joined the pool once per band.)
  DeviceOps& ops = context.ops();
  TW_ASSIGN_OR_RETURN(StreamLease stream, StreamLease::acquire(ops));
  const size_t row_bytes = static_cast<size_t>(req.width) * req.out.pixel_bytes();
  TW_ASSIGN_OR_RETURN(Staging staging, Staging::allocate(&ops, row_bytes * static_cast<size_t>(req.height)));
  auto upload = [&](int64_t y0, int64_t y1) {  // output rows [y0, y1)
    return staging.upload_rows(req.out.row(y0), static_cast<size_t>(req.out.stride), static_cast<size_t>(y0) * row_bytes,
                               row_bytes, y1 - y0, stream.get());
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
  region::RegionRequest part = req;
  part.out = ImageView{staging.data(), static_cast<int64_t>(row_bytes), static_cast<int32_t>(req.width),
                       static_cast<int32_t>(req.height), req.out.channels, Device{}, req.out.sample_bytes};
  part.on_tile_done = &done;
  Status s = region::HostRegionReader(model_, slide_uid_).read(part);
  // The rows no tile covers (background above or below the level) go after the read.
  if (s.ok() && !rows.empty()) s = upload(0, plan.out_y(rows.begin()->first));
  if (s.ok() && !rows.empty()) s = upload(plan.out_y(rows.rbegin()->second.end), req.height);
  if (s.ok() && rows.empty()) s = upload(0, req.height);
  if (s.ok()) s = uploads;
  const Status synced = ops.synchronize(stream.get());  // the staging goes only after its uploads
  return s.ok() ? synced : s;
}

}  // namespace tilewise::gpu
