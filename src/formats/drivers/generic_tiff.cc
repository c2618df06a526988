// Generic pyramidal TIFF: the fallback driver, last in the table.
//
// Levels are IFD 0, every later main-chain IFD flagged reduced-resolution (NewSubfileType bit 0), and the
// SubIFDs of IFD 0 (SubIFD pyramids as written by tifffile and bfconvert); tiled or strip-based. They are
// ordered by width, largest first, as OpenSlide orders them. Unlike OpenSlide, strip-based images are
// accepted (decoded a strip at a time).
#include <algorithm>
#include <string>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  if (tiff.ifds().empty()) return unsupported("no image directory");
  return Status();
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "generic-tiff";
  const auto& ifds = tiff->ifds();
  std::vector<const tiff::Ifd*> candidates{&ifds[0]};
  for (const tiff::Ifd& sub : ifds[0].sub_ifds) candidates.push_back(&sub);
  for (size_t i = 1; i < ifds.size(); ++i) {
    if (ifds[i].is_reduced_resolution()) candidates.push_back(&ifds[i]);
  }
  for (const tiff::Ifd* ifd : candidates) {
    TW_ASSIGN_OR_RETURN(LevelModel level, build_level(*tiff, *ifd));
    model.levels.push_back(std::move(level));
  }
  std::stable_sort(model.levels.begin(), model.levels.end(),
                   [](const LevelModel& a, const LevelModel& b) { return a.info.width > b.info.width; });
  compute_downsamples(model.levels);

  // A description that looks like XML (Philips, OME) but did not satisfy those drivers is read as generic
  // TIFF; say why its metadata is ignored.
  const std::string& description = ifds[0].image_description.value_or("");
  if (description.find("<OME") != std::string::npos || (ifds[0].software && ifds[0].software->rfind("Philips", 0) == 0)) {
    model.warnings.push_back("vendor metadata in the ImageDescription could not be parsed; read as a generic TIFF");
  }
  model.icc_profile = ifds[0].icc_profile;
  PropertyMap props;
  add_tiff_properties(ifds[0], props);
  if (ifds[0].image_description) props["openslide.comment"] = *ifds[0].image_description;
  add_mpp_from_resolution(ifds[0], props);
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kGenericTiffDriver = {"generic-tiff", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
