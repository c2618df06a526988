// Composing a device output from tiles: crops of tiles decoded on the device, and uploads of windows decoded
// on the CPU (the assist of busy lanes and the fallback for tiles no GPU decoder takes).
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/device_read.h"

namespace tilewise::gpu {

// Queues the copy of the part of `tile` the region needs from `tile_pixels` (device memory, a whole tile,
// tile width x 3 bytes apart) into the output, on the read's stream.
Status crop_into_output(const DeviceRead& read, const DeviceTile& tile, const uint8_t* tile_pixels);

// Decodes the window of `tile` the region needs on the CPU into `host` (reused between calls) and uploads it
// into the output on `stream`; returns when the upload is done.
Status upload_cpu_window(const DeviceRead& read, const DeviceTile& tile, std::vector<uint8_t>& host, Stream stream);

// upload_cpu_window for every tile: on this thread for a few; in parts on the process-wide pool for many,
// each part with its own host buffer and stream. Returns the first error.
Status upload_cpu_tiles(const DeviceRead& read, const std::vector<DeviceTile>& tiles);

}  // namespace tilewise::gpu
