// RegionReader: the read planner. A region request becomes the list of tiles it touches; each tile comes
// from the decoded-tile cache or is read and decoded, then copied into the caller's buffer; parts of the
// region outside the level are filled with the background colour.
//
// Tiles that lie entirely inside the output are decoded in place (zero copy) and not cached: a large
// region read is rarely repeated and would flush the cache. Tiles cut by the region's edge are decoded
// into a tile buffer, cached (when enabled) and cropped, since neighbouring patches usually need them.
// Tiles are processed in parallel on the process-wide pool; the calling thread takes part. All
// arithmetic is 64-bit, so any region up to a whole level is addressed safely.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "formats/slide_model.h"
#include "tilewise/image_view.h"
#include "tilewise/slide.h"
#include "tilewise/status.h"

namespace tilewise::region {

struct RegionRequest {
  const formats::LevelModel* level = nullptr;
  std::string level_label;  // for messages
  int32_t cache_level = 0;  // level id in cache keys
  int64_t x = 0, y = 0;     // in the level's pixel frame; may be negative or beyond the level
  int64_t width = 0, height = 0;
  ImageView out;
  std::array<uint8_t, 3> fill{255, 255, 255};
  bool use_cache = true;
};

class RegionReader {
 public:
  RegionReader(const formats::SlideModel& model, uint64_t slide_uid) : model_(model), slide_uid_(slide_uid) {}
  // Reads into request.out, on the CPU or (when out.device is CUDA) on the GPU (device_region_reader.cc).
  Status read(const RegionRequest& request) const;

 private:
  Status read_device(const RegionRequest& request) const;
  const formats::SlideModel& model_;
  uint64_t slide_uid_;
};

// Fills [x, x+w) x [y, y+h) of view with a colour.
void fill_rect(const ImageView& view, int64_t x, int64_t y, int64_t w, int64_t h, const std::array<uint8_t, 3>& c);

}  // namespace tilewise::region
