// libFuzzer target: the TIFF/BigTIFF parser on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/source.h"
#include "tiff/tiff_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto source = tilewise::io::memory_source(std::vector<uint8_t>(data, data + size), "fuzz.tif");
  auto parsed = tilewise::tiff::TiffFile::parse(source);
  if (parsed.ok()) {
    for (const auto& ifd : (*parsed)->ifds()) {
      volatile uint64_t n = ifd.chunk_count() + ifd.sub_ifds.size();
      (void)n;
    }
  }
  return 0;
}
