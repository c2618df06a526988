// libFuzzer target: the MIRAX driver, a format of several files. The input is a slide's files joined:
// u32 LE length of Slidedat.ini, u32 LE length of Index.dat, those two, then Data0000.dat (its FILE_1 is
// the same bytes). They are written into a folder of this process's own beside slide.mrxs, which is then
// opened and read through the public API as fuzz_open_read does.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "read_everything.h"
#include "tilewise/tilewise.h"

namespace {

const std::string& folder() {
  static const std::string dir = [] {
    char name[] = "/tmp/fuzz-mirax-XXXXXX";
    const char* made = mkdtemp(name);
    if (!made) std::abort();
    const std::string d = made;
    std::ofstream(d + "/slide.mrxs").put('\n');
    if (mkdir((d + "/slide").c_str(), 0700) != 0) std::abort();
    return d;
  }();
  return dir;
}

void write(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  const size_t ini = le32(data), index = le32(data + 4);
  if (ini > size - 8 || index > size - 8 - ini) return 0;
  const std::string& d = folder();
  const uint8_t* at = data + 8;
  write(d + "/slide/Slidedat.ini", at, ini);
  write(d + "/slide/Index.dat", at + ini, index);
  write(d + "/slide/Data0000.dat", at + ini + index, size - 8 - ini - index);
  write(d + "/slide/Data0001.dat", at + ini + index, size - 8 - ini - index);
  auto slide = tilewise::Slide::open(d + "/slide.mrxs");
  if (!slide.ok()) return 0;
  tilewise_fuzz::read_everything(*slide);
  return 0;
}
