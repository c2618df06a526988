// SlideImpl: the state behind a public Slide. Immutable after construction; shared by copies of the Slide.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "formats/slide_model.h"
#include "region/region_reader.h"
#include "tilewise/slide.h"

namespace tilewise::internal {

class SlideImpl {
 public:
  SlideImpl(formats::SlideModel model, std::string path);
  ~SlideImpl();

  formats::SlideModel model;
  std::string path;
  uint64_t uid;  // distinguishes this open slide in the process-wide tile cache
  std::vector<LevelInfo> levels;
  std::vector<AssociatedImageInfo> associated;
  region::RegionReader reader;
};

}  // namespace tilewise::internal
