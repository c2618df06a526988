// TileKey: names one decoded tile of one open slide, in the host tile cache (tile_cache.h) and in the GPU's
// device tile cache (gpu/device_tile_cache.h) alike.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tilewise::cache {

struct TileKey {
  uint64_t slide = 0;  // unique per opened slide instance
  int32_t level = 0;   // level index; associated images use negative ids
  int64_t index = 0;   // row-major tile index within the level
  bool operator==(const TileKey&) const = default;
};

struct TileKeyHash {
  size_t operator()(const TileKey& k) const {
    uint64_t h = k.slide * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(static_cast<uint32_t>(k.level)) << 48) ^
                 static_cast<uint64_t>(k.index) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

}  // namespace tilewise::cache
