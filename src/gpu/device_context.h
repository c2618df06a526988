// DeviceContext: what the device reader needs of one GPU - its device operations (device_ops.h), its decode
// lanes (tile_lanes.h) and what their decoders take, and its device tile cache (device_tile_cache.h).
//
// device_context(device) gives the process-wide production context of a CUDA device: CUDA operations,
// settings().gpu_lanes lanes of nvImageCodec decoders (started at the first read that needs them), a tile
// cache of settings().gpu_tile_cache_bytes. It is ForkSafe (a forked child makes its own; the CUDA runtime
// itself cannot be used again in a child that inherited it, which device_status reports). At process exit
// the lanes stop before the nvImageCodec instance goes. Tests make their own contexts over host memory and
// fake decoders.
#pragma once

#include "codecs/tile_desc.h"
#include "gpu/device_ops.h"
#include "gpu/device_tile_cache.h"
#include "gpu/host_cost.h"
#include "gpu/scheduler.h"
#include "gpu/tile_lanes.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::gpu {

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  virtual DeviceOps& ops() = 0;
  // Ok when the lanes' decoders take tiles of this description, else the reason (those tiles are decoded on
  // the CPU and uploaded).
  virtual Status can_decode(const codecs::TileDesc& desc) const = 0;
  // The same for reads of the tiles' own samples (views that are not 8-bit RGB: channels and planes at their
  // sample type). None by default.
  virtual Status can_decode_samples(const codecs::TileDesc& desc) const {
    (void)desc;
    return unsupported("gpu: no GPU decoder for tiles read as samples");
  }
  // can_decode or can_decode_samples, by what `out` takes.
  Status can_decode_into(const codecs::TileDesc& desc, const ImageView& out) const {
    return out.is_rgb8() ? can_decode(desc) : can_decode_samples(desc);
  }
  // The lanes, started on first use.
  virtual Result<TileLanes*> lanes() = 0;
  // The device tile cache for tiles cut by a region (nullptr: none).
  virtual DeviceTileCache* tile_cache() = 0;
  // Where this device's "CPU or GPU?" decisions are made (its lanes measure and decide through it too).
  virtual Scheduler& scheduler() = 0;
  // Whether tiles the region needs whole are decoded straight into the output (else into scratch and copied:
  // tests compare the two).
  virtual bool in_place() const { return true; }
  // The host CPU time this device's reads spend, by stage (its lanes add theirs: LaneOptions::host_cost).
  HostCost& host_cost() { return host_cost_; }

 private:
  HostCost host_cost_;
};

// The production context of CUDA device `device`, once device_status(device) is ok.
Result<DeviceContext*> device_context(int device);

// Statistics of the production context of `device`, without starting anything (zeros when none exists).
LaneStats lane_stats(int device);
DeviceTileCache::Stats tile_cache_stats(int device);
HostCostSnapshot host_cost_stats(int device);

}  // namespace tilewise::gpu
