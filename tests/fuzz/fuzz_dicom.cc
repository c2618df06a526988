// libFuzzer target: the DICOM reader. Parses the input as a Part 10 file, locates its frames (through the
// offset tables or a fragment walk) and joins the fragments of each (the first 64).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dicom/data_set.h"

using namespace tilewise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto source = io::memory_source(std::vector<uint8_t>(data, data + size), "fuzz.dcm");
  auto file = dicom::parse(*source);
  if (!file.ok() || !file->pixel_data || !file->pixel_data->encapsulated) return 0;
  const int64_t frames = file->dataset.integer(dicom::tag(0x0028, 0x0008)).value_or(1);
  if (frames <= 0 || frames > 100000) return 0;
  auto ranges = dicom::locate_frames(*source, *file, static_cast<uint64_t>(frames));
  if (!ranges.ok()) return 0;
  for (size_t i = 0; i < ranges->size() && i < 64; ++i) {
    const dicom::FrameRange& r = (*ranges)[i];
    if (r.length > (1u << 20)) continue;
    std::vector<uint8_t> bytes(r.length);
    if (!source->pread(bytes, r.offset).ok()) continue;
    if (r.items) (void)dicom::join_items(bytes);
  }
  return 0;
}
