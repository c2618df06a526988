// DeviceRead and DeviceTile: the state of one device read while it runs (region_reader.cc and the
// steps it calls: tile_hold.h, compose.h). Private to the GPU layer.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/device_context.h"
#include "region/region_plan.h"
#include "region/region_request.h"
#include "region/tile_fetcher.h"

namespace tilewise::gpu {

// One planned tile on its way to the output.
struct DeviceTile {
  region::PlannedTile planned;
  bool in_place = false;                  // decoded straight into the output
  size_t scratch_slot = 0;                // else: into this scratch tile ...
  DeviceTileCache::Entry* cached = nullptr;  // ... or into (or from) this device tile cache entry
  uint8_t* cached_pixels = nullptr;
  bool cache_hit = false;                 // the entry was ready: nothing to decode
  std::vector<uint8_t> bytes;             // the complete stream, while it is decoded (GPU, or an assisting caller)
  int64_t window_pixels() const { return planned.need.area(); }
};

struct DeviceRead {
  DeviceContext& context;
  const region::RegionRequest& request;
  const region::RegionPlan& plan;
  const region::TileFetcher& fetcher;
  Stream stream;  // the read's own stream (fills, crops, uploads)
  size_t request_index = 0;  // in a batch read: the request's index
  size_t pitch() const { return static_cast<size_t>(request.out.stride); }
  // Bytes per output pixel: 3 for the RGB rendering, else the level's samples (channels and planes).
  size_t pixel_bytes() const { return request.out.pixel_bytes(); }
  // The output pixel at level-frame (x, y).
  uint8_t* at(int64_t x, int64_t y) const { return request.out.pixel(plan.out_x(x), plan.out_y(y)); }
  size_t tile_bytes() const {
    return static_cast<size_t>(request.level->desc.width) * static_cast<size_t>(request.level->desc.height) *
           pixel_bytes();
  }
};

// Ok when request.out can hold the region: large enough, 8-bit RGB (the rendering) or the level's own samples
// (desc.samples_per_pixel channels of desc.bits_per_sample bits).
Status check_output(const region::RegionRequest& request);

}  // namespace tilewise::gpu
