// What the whole-slide fuzz targets do with a slide that opened, as a user would: a bounded region of every
// level (aligned and unaligned; the unaligned one again with the tile cache off), the stored area, every
// channel of the first and last planes of images that are not RGB, every associated image that is not
// huge, the properties.
#pragma once

#include <cstdint>
#include <vector>

#include "tilewise/tilewise.h"

namespace tilewise_fuzz {

inline void read_everything(const tilewise::Slide& slide) {
  tilewise::set_cache_capacity(1 << 20);
  std::vector<uint8_t> pixels(128 * 128 * 3);
  tilewise::ImageView view{pixels.data(), 128 * 3, 128, 128, 3, {}};
  for (int level = 0; level < slide.level_count(); ++level) {
    (void)slide.read_level_region(level, 0, 0, 128, 128, view);
    (void)slide.read_level_region(level, -17, 33, 128, 128, view);
    (void)slide.stored_area(level, -40, -40, 300, 300);
  }
  const tilewise::ImageAxes& axes = slide.axes();
  if (!axes.rgb && axes.channels <= 64) {
    const int32_t bytes = tilewise::sample_bytes(axes.sample_type);
    std::vector<uint8_t> samples(static_cast<size_t>(64 * 64 * axes.channels * bytes));
    const tilewise::ImageView planes{samples.data(), 64 * axes.channels * bytes, 64, 64, axes.channels, {}, bytes};
    for (int level = 0; level < slide.level_count(); ++level) {
      (void)slide.read_planes(level, -9, 5, 64, 64, tilewise::PlaneSelection{{}, 0, 0}, planes);
      (void)slide.read_planes(level, 0, 0, 64, 64, tilewise::PlaneSelection{{}, axes.z - 1, axes.t - 1}, planes);
    }
  }
  // With the tile cache off every cut tile is decoded as a window (positioned levels' too, which the cache
  // otherwise admits whole on first use), so windows low in tiles resume from MCU rows.
  tilewise::set_cache_capacity(0);
  for (int level = 0; level < slide.level_count(); ++level) {
    (void)slide.read_level_region(level, -17, 33, 128, 128, view);
  }
  tilewise::set_cache_capacity(1 << 20);
  for (const auto& a : slide.associated_images()) {
    if (a.width * a.height <= (int64_t{4} << 20)) (void)slide.read_associated_image(a.name);
  }
  volatile size_t n = slide.properties().size();
  (void)n;
}

}  // namespace tilewise_fuzz
