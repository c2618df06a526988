// DeviceRegionReader: executes region plans (region/region_plan.h) into views in device memory.
//
// One read path (batch_read.cc): a batch of regions of one level - a single region is a batch of one. The
// plan is the host reader's: background outside the level, then the tiles each region touches. Here:
//  1. tiles stored empty and the background are filled on the device;
//  2. the tiles of every region are deduplicated (a positioned level's unit that shows in several parts is
//     one tile too), and each distinct tile a GPU decoder takes (DeviceContext::can_decode, the decoder
//     contract's reason) is a device tile cache hit or goes to the device's decode lanes (tile_lanes.h),
//     which merge it with the tiles of every concurrent read: decoded in place into the caller's buffer when
//     one region needs it whole (and it has no padding rows), else into a reserved cache entry or scratch
//     (tile_hold.h) and cropped into the outputs afterwards, by one batched copy (compose.h);
//  3. while the lanes are busy with earlier work, the calling thread decodes its own remaining tiles on the
//     CPU (only the window a single region needs) and uploads them: the lanes take the largest tiles first
//     and the caller the smallest windows;
//  4. tiles no GPU decoder takes, and tiles a GPU decoder failed on, are decoded on the CPU and uploaded (the
//     fallback chain: GPU backend, then CPU backend, per tile).
// A region of at least kLargeRegionTiles tiles goes whole to the lanes (its tiles in one round of large
// calls) or to the host reader on the CPU's cores (uploaded tile row by tile row), whichever reads large
// regions faster by measured rates (the device's scheduler.h; large_regions.cc).
// A call returns when its outputs are complete (the read's stream is synchronised), so any stream may use
// them.
//
// Thread behaviour: const and stateless apart from the context's shared lanes, cache and pools; any number of
// threads may read at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "formats/slide_model.h"
#include "gpu/device_context.h"
#include "region/region_plan.h"
#include "region/region_request.h"
#include "tilewise/status.h"

namespace tilewise::gpu {

constexpr int64_t kLargeRegionTiles = 64;

class DeviceRegionReader {
 public:
  DeviceRegionReader(const formats::SlideModel& model, uint64_t slide_uid) : model_(model), slide_uid_(slide_uid) {}
  // Reads into request.out, a 3-channel view in device memory: through `context`, or when it is nullptr the
  // production context of request.out.device (device_context()).
  Status read(const region::RegionRequest& request, DeviceContext* context = nullptr) const;
  // Reads regions of one level into views on one device as one batch. One status per request; a failed
  // region's pixels are unspecified.
  std::vector<Status> read_batch(std::span<const region::RegionRequest> requests,
                                 DeviceContext* context = nullptr) const;

 private:
  // The one read path: requests[i] planned as plans[i], those whose `statuses` entry is ok (batch_read.cc).
  // `large`: one large region, its tiles dealt to the lanes in one round of large calls.
  std::vector<Status> read_planned(std::span<const region::RegionRequest> requests,
                                   std::span<const region::RegionPlan> plans, DeviceContext& context, bool large,
                                   std::vector<Status> statuses) const;
  // The side that reads a large region; nothing for a region that is not large (or whose codec the lanes
  // refuse) (large_regions.cc).
  std::optional<Scheduler::Side> large_route(const region::RegionRequest& request, const region::RegionPlan& plan,
                                             DeviceContext& context) const;
  // Reads a large region on `side`, measuring it.
  Status read_large(const region::RegionRequest& request, const region::RegionPlan& plan, Scheduler::Side side,
                    DeviceContext& context) const;
  // The CPU side of a large region: the host reader into staging, uploaded tile row by tile row.
  Status read_on_cpu(const region::RegionRequest& request, const region::RegionPlan& plan,
                     DeviceContext& context) const;
  const formats::SlideModel& model_;
  uint64_t slide_uid_;
};

}  // namespace tilewise::gpu
