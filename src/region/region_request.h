// RegionRequest: one region of one level to read into a caller's view (host or device). Made by the API
// layer, executed by the host reader (host_region_reader.h) or the device reader (gpu/region_reader.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "formats/slide_model.h"
#include "tilewise/image_view.h"

namespace tilewise::region {

struct PlannedTile;

// Added to a request's cache_level in tile cache keys when it reads the level's own samples (not the RGB
// rendering), so that the two never share an entry.
constexpr int32_t kNativeCacheLevels = 1 << 20;

struct RegionRequest {
  const formats::LevelModel* level = nullptr;
  std::string level_label;  // for messages: "level 2", "associated image label"
  int32_t cache_level = 0;  // level id in tile cache keys
  int64_t x = 0, y = 0;     // in the level's pixel frame; may be negative or beyond the level
  int64_t width = 0, height = 0;
  // 8-bit RGB (the rendering), or the level's own samples (desc.samples_per_pixel channels of
  // desc.bits_per_sample bits; host reads only): codecs/decoder.h.
  ImageView out;
  std::array<uint8_t, 3> fill{255, 255, 255};  // the RGB rendering's background; samples read as 0 there
  bool use_cache = true;
  int threads = 0;  // ReadOptions::threads
  // Host reads only: called when a planned tile's pixels (or its background) are in `out`, on the thread
  // that wrote them (the split device region uploads each tile row as soon as it is complete).
  const std::function<void(const PlannedTile&)>* on_tile_done = nullptr;
};

// The level id of a request's tiles in tile cache keys (host and device): reads of the level's own samples
// keep their tiles apart from the RGB rendering's.
inline int32_t tile_cache_level(const RegionRequest& r) {
  return r.out.is_rgb8() ? r.cache_level : r.cache_level + kNativeCacheLevels;
}

}  // namespace tilewise::region
