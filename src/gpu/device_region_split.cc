// Large device regions shared between the GPU's decode lanes and the CPU's cores (DeviceRegionReader::
// read_split). On the lent H200 one 4096^2 JPEG region decodes at ~1,800 MPix/s through the lanes and
// ~2,300 MPix/s through the host reader on 16 cores: either alone leaves the other idle. A region of at least
// TILEWISE_GPU_SPLIT_TILES tiles is cut at a tile row: the rows above go to the lanes (the reader's own
// path), the rows below to the host reader, in one read into page-locked staging, each tile row's upload
// queued by the thread that wrote its last tile while later rows decode. Where to cut follows both sides'
// measured rates (pixels per second while running together, averaged over reads), so that both finish
// together; when the lanes would get under half a row, the CPU reads it all (TILEWISE_GPU_SPLIT_CPU_SHARE
// fixes the CPU's share instead). No tile is decoded twice: the sides touch disjoint tile rows.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "gpu/device_region_reader.h"
#include "region/host_region_reader.h"
#include "region/region_plan.h"
#include "util/settings.h"

namespace tilewise::gpu {

namespace {

using Clock = std::chrono::steady_clock;

// Pixels per second of each side of split reads, process-wide; 0 until the first split read measures it
// (the first split is even).
std::atomic<double> g_gpu_rate{0}, g_cpu_rate{0};

void record(std::atomic<double>& rate, double pixels, Clock::duration took) {
  const double seconds = std::chrono::duration<double>(took).count();
  if (pixels <= 0 || seconds <= 0) return;
  const double now = pixels / seconds, before = rate.load(std::memory_order_relaxed);
  rate.store(before == 0 ? now : 0.75 * before + 0.25 * now, std::memory_order_relaxed);
}

}  // namespace

std::optional<int64_t> DeviceRegionReader::split_row(const region::RegionRequest& req, const region::RegionPlan& plan,
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
  if (const auto fixed = internal::settings().gpu_split_cpu_share) {
    const int64_t cpu_rows = std::llround(static_cast<double>(rows) * *fixed);
    if (cpu_rows <= 0) return std::nullopt;  // all to the lanes
    return cpu_rows >= rows ? req.y : (last + 1 - cpu_rows) * th;
  }
  const double gpu = g_gpu_rate.load(std::memory_order_relaxed), cpu = g_cpu_rate.load(std::memory_order_relaxed);
  const double cpu_share = gpu > 0 && cpu > 0 ? cpu / (cpu + gpu) : 0.5;
  // At least one row each way until the rates say the lanes would get less than half a row: then the CPU
  // reads it all (measured on the H200: the lanes' rate on a few rows beside 16 busy cores is a fifth of
  // the cores', so whole large regions go to the CPU there).
  const int64_t cpu_rows = std::clamp<int64_t>(std::llround(static_cast<double>(rows) * cpu_share), 1, rows);
  return cpu_rows == rows ? req.y : (last + 1 - cpu_rows) * th;
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
  Clock::duration gpu_took{};
  std::thread lanes;
  if (top.height > 0) {
    lanes = std::thread([&] {
      const auto start = Clock::now();
      gpu_status = read_on_device(top, context);
      gpu_took = Clock::now() - start;
    });
  }

  // The CPU side: one host read (the pool and this thread) into staging. Each tile row is uploaded on this
  // side's stream by the thread that wrote the row's last tile, so that only the last row's upload is left
  // when the decode ends. (Bands of 8 tile rows, each read and then uploaded while the next decoded, left a
  // 25 MB upload after the last band and joined the pool once per band: 0.85x of the host read on the H200.)
  const auto start = Clock::now();
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
  const Clock::duration cpu_took = Clock::now() - start;
  if (lanes.joinable()) lanes.join();
  if (gpu_status.ok() && cpu_status.ok()) {
    if (top.height > 0) record(g_gpu_rate, static_cast<double>(top.width * top.height), gpu_took);
    record(g_cpu_rate, static_cast<double>(bottom.width * bottom.height), cpu_took);
  }
  return gpu_status.ok() ? cpu_status : gpu_status;
}

}  // namespace tilewise::gpu
