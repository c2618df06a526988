// TileHold: where the tiles of one device read (one region, or a batch of regions) that are not decoded in
// place go to and are composed from - the device tile cache (a ready entry is a hit: nothing to decode; a
// missing key is reserved for this read to fill and publish) or else scratch tiles of this read, from the
// device pool.
//
// Lifetime: the hold lives for the read. Its destructor synchronises the read's stream (the crops that read
// these pixels), then drops reservations the read did not publish (an early error), unpins every entry and
// frees the scratch.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "gpu/device_read.h"

namespace tilewise::gpu {

class TileHold {
 public:
  // `cache` may be nullptr (the read does not use the cache, or it is disabled): scratch only. `stream` is
  // the stream the crops from these tiles are queued on; tiles are `tile_bytes` each.
  TileHold(DeviceOps& ops, Stream stream, size_t tile_bytes, DeviceTileCache* cache)
      : ops_(ops), stream_(stream), tile_bytes_(tile_bytes), cache_(cache) {}
  ~TileHold();
  TileHold(const TileHold&) = delete;
  TileHold& operator=(const TileHold&) = delete;

  // Gives every tile of `tiles` that is not decoded in place a cache entry (hit or reservation) or a scratch
  // slot, and allocates the scratch.
  Status reserve(std::vector<DeviceTile>& tiles, uint64_t slide_uid, int32_t cache_level);
  // The pixels of a tile that is not decoded in place: tile width x tile height, tile width x 3 bytes apart.
  uint8_t* pixels(const DeviceTile& tile) const;
  // For a reserved entry: ok makes it ready for other reads; else it is dropped. No-op for other tiles.
  void publish(const DeviceTile& tile, bool ok);

 private:
  DeviceOps& ops_;
  Stream stream_;
  size_t tile_bytes_;
  DeviceTileCache* cache_;
  std::vector<std::pair<DeviceTileCache::Entry*, bool>> held_;  // entry, still to publish
  void* scratch_ = nullptr;
};

}  // namespace tilewise::gpu
