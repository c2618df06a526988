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

struct RegionRequest {
  const formats::LevelModel* level = nullptr;
  std::string level_label;  // for messages: "level 2", "associated image label"
  int32_t cache_level = 0;  // level id in tile cache keys
  int64_t x = 0, y = 0;     // in the level's pixel frame; may be negative or beyond the level
  int64_t width = 0, height = 0;
  ImageView out;
  std::array<uint8_t, 3> fill{255, 255, 255};
  bool use_cache = true;
  int threads = 0;  // ReadOptions::threads
  // Host reads only: called when a planned tile's pixels (or its background) are in `out`, on the thread
  // that wrote them (the split device region uploads each tile row as soon as it is complete).
  const std::function<void(const PlannedTile&)>* on_tile_done = nullptr;
};

}  // namespace tilewise::region
