// Composing a device output from tiles: crops of tiles decoded on the device, and uploads of windows decoded
// on the CPU (the assist of busy lanes and the fallback for tiles no GPU decoder takes).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "gpu/device_read.h"
#include "gpu/tile_hold.h"

namespace tilewise::gpu {

// The copy of the part of `tile` the region needs from `tile_pixels` (device memory, a whole tile, tile
// width x 3 bytes apart) into the output (queued with DeviceOps::copy_batch, all crops of a read at once).
DeviceCopy crop_of(const DeviceRead& read, const DeviceTile& tile, const uint8_t* tile_pixels);

// Decodes the whole of `tile` (its rows inside the level) on the CPU into `host` and uploads it to `dst`
// (device memory, tile width x 3 bytes apart) on `stream`; returns when the upload is done. `bytes`: the
// tile's bytes when already read (a lane job's), else empty (read here).
Status upload_cpu_tile(const DeviceRead& read, const DeviceTile& tile, uint8_t* dst, std::vector<uint8_t>& host,
                       Stream stream, std::span<const uint8_t> bytes = {});

// The lane job of `tile`: its complete stream (read into tile.bytes) and its destination - the read's output
// for a tile decoded in place, else the hold's cache entry or scratch tile. cpu_pixels: what an assisting
// CPU decode would produce for it (its window, or the whole tile).
Status make_lane_job(const DeviceRead& read, const TileHold& hold, DeviceTile& tile, int64_t cpu_pixels, LaneJob& job);

// A list of at least twice this many jobs is one large region's (decode_on_lanes' `spread`).
constexpr size_t kSpreadTiles = 64;

// A CPU decode + upload of job i on behalf of busy lanes: `host` is the assisting thread's reusable buffer,
// `stream` its stream.
using CpuAssist = std::function<Status(size_t i, std::vector<uint8_t>& host, Stream stream)>;

// Hands `jobs` (tiles like `desc`) to the lanes, the calling thread assisting with `assist`. Where the CPU
// pool outpaces the lanes on these tiles (JPEG 2000 on a many-core host, by the measured speeds), a long
// list is submitted in parts from the process-wide pool, so that every core assists (each part is its own
// caller with its own stream). Else one caller: for JPEG, cores busy decoding starve the lanes' submission
// threads. `spread`: a list of at least twice
// kSpreadTiles jobs is dealt to the lanes in one round of large calls (TileLanes::decode's
// per_call): one large region, where calls sized for a loader's many small reads keep the engines waiting.
void decode_on_lanes(DeviceContext& context, TileLanes& lanes, const codecs::TileDesc& desc, std::span<LaneJob> jobs,
                     const CpuAssist& assist, bool spread = false);

// Decodes the window of `tile` the region needs on the CPU into `host` (reused between calls) and uploads it
// into the output on `stream`; returns when the upload is done. `bytes` as for upload_cpu_tile: a tile the
// caller assists the lanes with is not read twice (a second request to a remote source).
Status upload_cpu_window(const DeviceRead& read, const DeviceTile& tile, std::vector<uint8_t>& host, Stream stream,
                         std::span<const uint8_t> bytes = {});

// upload_cpu_window for every tile: on this thread for a few; in parts on the process-wide pool for many,
// each part with its own host buffer and stream. Returns the first error.
Status upload_cpu_tiles(const DeviceRead& read, const std::vector<DeviceTile>& tiles);

}  // namespace tilewise::gpu
