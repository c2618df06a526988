// Large device regions (DeviceRegionReader::read of at least TILEWISE_GPU_SPLIT_TILES tiles): read whole by
// the GPU's decode lanes or by the CPU's cores, whichever reads such regions faster by measured rates (which
// side wins depends on the GPU and the core count: bench/RESULTS.md, "Large regions routed by measured
// rates"). Each side's rate (pixels per second of its large reads alone, the best of its recent ones, below;
// the first read of each side sets it up and is not counted) is measured on the first large reads - three to
// the lanes, then three to the CPU (TILEWISE_GPU_SPLIT_FIRST_READS each: a process's first reads through the
// lanes are its slowest) - and then every kRemeasureEvery-th large read goes to the slower side so that its
// rate stays current.
// The CPU side reads in one host read into page-locked staging, each tile row's upload queued by the thread
// that wrote its last tile while later rows decode. TILEWISE_GPU_SPLIT_CPU_SHARE instead cuts every large
// region at a tile row and reads both parts at once, the rows below the cut on the CPU (slower than either
// side alone where the lanes' host work and the decoding cores share the host). No tile is decoded twice:
// the parts touch disjoint tile rows.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <initializer_list>
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

constexpr uint64_t kRemeasureEvery = 16;
constexpr size_t kRecent = 8;

// A side's rate is the best of its last kRecent timed reads (pixels per second): the lanes' reads of one
// region vary up to 2x from read to read where the CPU's vary 10%, and an average let a few slow reads send
// every later region to the CPU, whose reads then never gave the lanes the use that makes them fast.
// Lock-free (a decision made during an update is merely a little stale).
struct Side {
  std::atomic<double> recent[kRecent] = {};  // 0: no read in that slot yet
  std::atomic<uint64_t> reads{0};
  double rate() const {
    double best = 0;
    for (const auto& r : recent) best = std::max(best, r.load(std::memory_order_relaxed));
    return best;
  }
};

// Process-wide: both sides' rates, and the fixed share of the setting (tests replace it).
struct Routing {
  Side lanes, cpu;
  std::atomic<uint64_t> large_reads{0};
  std::optional<double> cpu_share = internal::settings().gpu_split_cpu_share;
  // Large reads each side makes before the rates decide (the first is its set-up; default 3: with one timed
  // read of each, a read's 2x variance decided).
  uint64_t first_reads = static_cast<uint64_t>(internal::settings().gpu_split_first_reads);
};

Routing& routing() {
  static Routing r;
  return r;
}

void record(Side& side, double pixels, Clock::duration took) {
  const double seconds = std::chrono::duration<double>(took).count();
  if (pixels <= 0 || seconds <= 0) return;
  // The first read of a side sets it up (the lanes' decoders and their buffers, pinned staging).
  const uint64_t n = side.reads.fetch_add(1, std::memory_order_relaxed);
  if (n > 0) side.recent[n % kRecent].store(pixels / seconds, std::memory_order_relaxed);
}

}  // namespace

void DeviceRegionReader::reset_large_region_routing(std::optional<double> cpu_share, std::optional<int> first_reads) {
  Routing& r = routing();
  for (Side* side : {&r.lanes, &r.cpu}) {
    for (auto& recent : side->recent) recent = 0;
    side->reads = 0;
  }
  r.large_reads = 0;
  r.cpu_share = cpu_share;
  r.first_reads = static_cast<uint64_t>(first_reads.value_or(internal::settings().gpu_split_first_reads));
}

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
  Routing& r = routing();
  if (const auto fixed = r.cpu_share) {
    const int64_t cpu_rows = std::llround(static_cast<double>(rows) * *fixed);
    if (cpu_rows <= 0) return LargeRoute{};  // all to the lanes
    return LargeRoute{cpu_rows >= rows ? req.y : (last + 1 - cpu_rows) * th};
  }
  const uint64_t n = r.large_reads.fetch_add(1, std::memory_order_relaxed);
  bool to_lanes;
  if (r.lanes.reads.load(std::memory_order_relaxed) < r.first_reads) {
    to_lanes = true;
  } else if (r.cpu.reads.load(std::memory_order_relaxed) < r.first_reads) {
    to_lanes = false;
  } else {
    to_lanes = (r.lanes.rate() >= r.cpu.rate()) != (n % kRemeasureEvery == kRemeasureEvery - 1);
  }
  return to_lanes ? LargeRoute{} : LargeRoute{req.y};
}

Status DeviceRegionReader::read_large(const region::RegionRequest& req, const region::RegionPlan& plan,
                                      const LargeRoute& route, DeviceContext& context) const {
  if (route.cut) return read_split(req, *route.cut, context);
  const auto start = Clock::now();
  Status s = read_planned(req, plan, context);
  if (s.ok()) record(routing().lanes, static_cast<double>(req.width * req.height), Clock::now() - start);
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
  // The rates are of each side alone: a region shared at a fixed cut measures neither.
  if (top.height == 0 && cpu_status.ok()) record(routing().cpu, static_cast<double>(bottom.width * bottom.height), cpu_took);
  return gpu_status.ok() ? cpu_status : gpu_status;
}

}  // namespace tilewise::gpu
