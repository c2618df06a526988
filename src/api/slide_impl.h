// SlideImpl: the state behind a public Slide. Immutable after construction; shared by copies of the Slide.
#pragma once

#include <atomic>
#include <span>
#include <string>
#include <vector>

#include "formats/slide_model.h"
#include "gpu/region_reader.h"
#include "region/host_region_reader.h"
#include "region/region_request.h"
#include "tilewise/slide.h"

namespace tilewise::internal {

class SlideImpl {
 public:
  SlideImpl(formats::SlideModel model, std::string path);
  ~SlideImpl();

  formats::SlideModel model;
  std::string path;
  uint64_t uid;  // names this slide's image in tile caches (slide.cc, slide_identity)
  std::vector<LevelInfo> levels;
  std::vector<AssociatedImageInfo> associated;
  region::HostRegionReader host_reader;
  gpu::DeviceRegionReader device_reader;

  // InvalidArgument naming the file: `level` is not one of its levels.
  Status no_such_level(int level) const;
  // A request for region `r` of `level` (its own pixel frame) into `out`.
  region::RegionRequest request(int level, const LevelRegion& r, const ImageView& out,
                                const ReadOptions& options) const;
  // Caller mistakes (InvalidArgument) name the file.
  Status with_path(Status s) const;

  // Executes a region request with the executor for the output's memory: host or device.
  Status read(const region::RegionRequest& request) const;
  // Executes requests of one level into one memory: a batch on a device, one by one on the host.
  std::vector<Status> read_batch(std::span<const region::RegionRequest> requests) const;
};

}  // namespace tilewise::internal
