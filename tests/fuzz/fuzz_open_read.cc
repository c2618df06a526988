// libFuzzer target: format detection, open and first reads through the public API, as a user would:
// read_everything.h.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "read_everything.h"
#include "tilewise/tilewise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto slide = tilewise::Slide::open_memory(std::vector<uint8_t>(data, data + size), "fuzz.tif");
  if (!slide.ok()) return 0;
  tilewise_fuzz::read_everything(*slide);
  return 0;
}
