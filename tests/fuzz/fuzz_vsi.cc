// libFuzzer target: the Olympus cellSens VSI driver, a format of several files. The input is a slide's files
// joined: u32 LE length of the .vsi, the .vsi, then the one stack's .ets. They are written into a folder of
// this process's own (slide.vsi beside _slide_/stack1/frame_t.ets), which is then opened and read through the
// public API as fuzz_open_read does.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "read_everything.h"
#include "tilewise/tilewise.h"

namespace {

const std::string& folder() {
  static const std::string dir = [] {
    char name[] = "/tmp/fuzz-vsi-XXXXXX";
    const char* made = mkdtemp(name);
    if (!made) std::abort();
    const std::string d = made;
    if (mkdir((d + "/_slide_").c_str(), 0700) != 0 || mkdir((d + "/_slide_/stack1").c_str(), 0700) != 0) std::abort();
    return d;
  }();
  return dir;
}

void write(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const size_t vsi = uint32_t{data[0]} | uint32_t{data[1]} << 8 | uint32_t{data[2]} << 16 | uint32_t{data[3]} << 24;
  if (vsi > size - 4) return 0;
  const std::string& d = folder();
  write(d + "/slide.vsi", data + 4, vsi);
  write(d + "/_slide_/stack1/frame_t.ets", data + 4 + vsi, size - 4 - vsi);
  auto slide = tilewise::Slide::open(d + "/slide.vsi");
  if (!slide.ok()) return 0;
  tilewise_fuzz::read_everything(*slide);
  return 0;
}
