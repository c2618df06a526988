// libFuzzer target: format detection, open and first reads through the public API, as a user would:
// properties, a region of every level (bounded), and every associated image.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tilewise/tilewise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto slide = tilewise::Slide::open_memory(std::vector<uint8_t>(data, data + size), "fuzz.tif");
  if (!slide.ok()) return 0;
  tilewise::set_cache_capacity(1 << 20);
  std::vector<uint8_t> pixels(128 * 128 * 3);
  tilewise::ImageView view{pixels.data(), 128 * 3, 128, 128, 3, {}};
  for (int level = 0; level < slide->level_count(); ++level) {
    (void)slide->read_level_region(level, 0, 0, 128, 128, view);
    (void)slide->read_level_region(level, -17, 33, 128, 128, view);
  }
  for (const auto& a : slide->associated_images()) {
    if (a.width * a.height <= (int64_t{4} << 20)) (void)slide->read_associated_image(a.name);
  }
  volatile size_t n = slide->properties().size();
  (void)n;
  return 0;
}
