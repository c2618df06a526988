// DeviceRegionReader: executes a region plan (region/region_plan.h) into a view in device memory.
//
// The plan is the host reader's: background outside the level, then the tiles the region touches. Here:
//  1. tiles stored empty and the background are filled on the device;
//  2. tiles the context's GPU decoders take (DeviceContext::can_decode, the decoder contract's reason) go to
//     the device's decode lanes (tile_lanes.h), which merge them with the tiles of every concurrent read. A
//     tile the region needs whole (and with no padding rows) is decoded in place into the caller's buffer;
//     a cut tile comes from the device tile cache, or is decoded into a reserved cache entry or scratch
//     (tile_hold.h) and cropped into the output afterwards (compose.h);
//  3. while the lanes are busy with earlier work, this thread decodes its own remaining tiles on the CPU
//     (only the window the region needs) and uploads them: the lanes take the largest tiles first and this
//     thread the smallest windows;
//  4. tiles no GPU decoder takes, and tiles a GPU decoder failed on, are decoded on the CPU and uploaded (the
//     fallback chain: GPU backend, then CPU backend, per tile).
// A region of at least TILEWISE_GPU_SPLIT_TILES tiles takes this path or the host reader on the CPU's cores
// (uploaded tile row by tile row), whichever reads large regions faster by measured rates (the device's
// scheduler.h; large_regions.cc); through the lanes, its tiles go in one round of large calls (compose.h).
// The call returns when the output is complete (the read's stream is synchronised), so any stream may use it.
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

class DeviceRegionReader {
 public:
  DeviceRegionReader(const formats::SlideModel& model, uint64_t slide_uid) : model_(model), slide_uid_(slide_uid) {}
  // Reads into request.out, a 3-channel view in device memory: through `context`, or when it is nullptr the
  // production context of request.out.device (device_context()).
  Status read(const region::RegionRequest& request, DeviceContext* context = nullptr) const;
  // Reads regions of one level into views on one device as one batch (batch_read.cc): the tiles
  // of all of them deduplicated, decoded in full lane batches, every region cut out by one batched copy.
  // One status per request; a failed region's pixels are unspecified.
  std::vector<Status> read_batch(std::span<const region::RegionRequest> requests,
                                 DeviceContext* context = nullptr) const;

 private:
  // The lanes' path for one planned region (steps 1-4 above).
  Status read_planned(const region::RegionRequest& request, const region::RegionPlan& plan,
                      DeviceContext& context) const;
  Status read_on_device(const region::RegionRequest& request, DeviceContext& context) const;
  // How a large region is read (large_regions.cc): by the lanes (no cut), or from a tile row on by the
  // CPU (cut: the level row; the region's top for all of it).
  struct LargeRoute {
    std::optional<int64_t> cut;
  };
  // The route of a large region; nothing for a region that is not large (or whose codec the lanes refuse).
  std::optional<LargeRoute> large_route(const region::RegionRequest& request, const region::RegionPlan& plan,
                                        DeviceContext& context) const;
  // Reads a large region by its route, measuring the side that read it alone.
  Status read_large(const region::RegionRequest& request, const region::RegionPlan& plan, const LargeRoute& route,
                    DeviceContext& context) const;
  // Rows above `cut` through the lanes and the rest on the CPU, at once.
  Status read_split(const region::RegionRequest& request, int64_t cut, DeviceContext& context) const;
  const formats::SlideModel& model_;
  uint64_t slide_uid_;
};

}  // namespace tilewise::gpu
