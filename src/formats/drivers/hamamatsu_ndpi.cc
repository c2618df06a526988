// Hamamatsu NDPI (OpenSlide's "hamamatsu" vendor, NDPI variant).
//
// An NDPI file is classic TIFF with 64-bit links (tiff/tiff_file.h reads it) in which every directory holds
// one JPEG strip: the pyramid levels (SourceLens > 0, largest first, focal plane 0), the macro image
// (SourceLens -1) and a map (-2, which OpenSlide 4.0.1 does not show). A level's JPEG has restart markers
// at regular intervals; a run of MCUs between two of them decodes on its own, so the level is a grid of
// such runs (one MCU row high, restart-interval MCUs wide): a random patch decodes only the runs it needs.
// As OpenSlide does, each level also gives levels at 1/2, 1/4 and 1/8 of its size, decoded with libjpeg's
// DCT scaling (with_scaled_levels).
// The runs' starts come from the McuStarts tag, or, when it is missing or does not match, from a scan of
// the strip for restart markers at open. A JPEG without restart markers is one unit, if it can be decoded
// whole within the decode limit.
//
// Properties as OpenSlide writes them: tiff.* and openslide.comment from the first directory, mpp from its
// resolution (centimetres only), objective power and hamamatsu.SourceLens from its SourceLens,
// hamamatsu.{X,Y}OffsetFromSlideCentre, hamamatsu.Reference, and hamamatsu.<key> for each key=value line
// of the property map tag; quickhash-1 over the smallest level.
//
// Focal planes (tag 65424: 0 the nominal focus, negative below, positive above) are the Z axis in that
// order, each with its own pyramid; RGB reads and the drop-ins show plane 0, as OpenSlide does
// (ImageAxes::default_z). A plane whose pyramid differs from plane 0's is left out with a warning.
#include <algorithm>
#include <cmath>
#include <map>

#include "formats/format_registry.h"
#include "formats/drivers/hamamatsu_jpeg.h"
#include "formats/level_builder.h"
#include "formats/tiff_properties.h"
#include "tiff/private_tags.h"
#include "tiff/tags.h"

namespace tilewise::formats {

namespace {

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  if (!tiff.ndpi() || !tiff::find_private_tag(tiff.ifds()[0], tiff::kNdpiFormatFlag)) {
    return unsupported("no NDPI format tag (65420)");
  }
  return Status();
}

Result<LevelModel> build_ndpi_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const ModelLimits& limits) {
  const std::string where = describe_ifd(ifd);
  if (ifd.tiled || ifd.chunk_offsets.size() != 1 || ifd.chunk_height != ifd.height) {
    return corrupt(where + ": expected one strip of " + std::to_string(ifd.height) + " rows");
  }
  const auto recorded = tiff::private_uints(ifd, tiff::kNdpiMcuStarts);
  TW_ASSIGN_OR_RETURN(RestartJpeg jpeg, index_jpeg(tiff.source(), ifd.chunk_offsets[0], ifd.chunk_byte_counts[0],
                                                   ifd.width, ifd.height, recorded ? &*recorded : nullptr, limits,
                                                   where));
  LevelModel level = restart_jpeg_level(jpeg);
  level.ifd = &ifd;
  level.info.width = ifd.width;
  level.info.height = ifd.height;
  level.tiles_across = jpeg.units_across;
  level.tiles_down = jpeg.units_down;
  level.units = std::make_shared<const UnitTable>(UnitTable{std::move(jpeg.offsets), std::move(jpeg.lengths), {}});
  level.parts = std::make_shared<const std::vector<UnitPart>>(std::vector{restart_part(tiff.source_ptr(), jpeg)});
  return level;
}

// The macro image: its JPEG decoded whole.
void add_macro(SlideModel& model, const tiff::TiffFile& tiff, const tiff::Ifd& ifd) {
  auto level = build_ndpi_level(tiff, ifd, ModelLimits{});
  if (!level.ok()) {
    model.warnings.push_back("associated image 'macro' cannot be read: " + level.status().message());
    return;
  }
  model.associated.push_back({"macro", std::move(level).value(), {}});
}

void add_ndpi_properties(const tiff::Ifd& ifd0, PropertyMap& props) {
  if (auto lens = tiff::private_double(ifd0, tiff::kNdpiSourceLens)) {
    props["hamamatsu.SourceLens"] = format_double(*lens);
    props["openslide.objective-power"] = format_double(*lens);
  }
  if (auto x = tiff::private_sint(ifd0, tiff::kNdpiXOffset)) props["hamamatsu.XOffsetFromSlideCentre"] = std::to_string(*x);
  if (auto y = tiff::private_sint(ifd0, tiff::kNdpiYOffset)) props["hamamatsu.YOffsetFromSlideCentre"] = std::to_string(*y);
  if (auto ref = tiff::private_text(ifd0, tiff::kNdpiReference)) props["hamamatsu.Reference"] = *ref;
  if (auto map = tiff::private_text(ifd0, tiff::kNdpiPropertyMap)) {
    for (size_t at = 0; at <= map->size();) {
      size_t end = map->find("\r\n", at);
      if (end == std::string::npos) end = map->size();
      const std::string record = map->substr(at, end - at);
      const size_t eq = record.find('=');
      if (eq != std::string::npos && eq > 0 && eq + 1 < record.size()) {
        props["hamamatsu." + record.substr(0, eq)] = record.substr(eq + 1);
      }
      at = end + 2;
    }
  }
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "hamamatsu";
  std::map<int64_t, std::vector<LevelModel>> planes;  // by focal plane
  for (const tiff::Ifd& ifd : tiff->ifds()) {
    const auto lens = tiff::private_double(ifd, tiff::kNdpiSourceLens);
    if (!lens) return corrupt(describe_ifd(ifd) + ": no SourceLens (tag 65421)");
    if (*lens > 0) {
      const auto plane = tiff::private_sint(ifd, tiff::kNdpiFocalPlane);
      if (!plane) return corrupt(describe_ifd(ifd) + ": no focal plane (tag 65424)");
      std::vector<LevelModel>& levels = planes[*plane];
      if (!levels.empty() && ifd.width >= levels.back().info.width) {
        return corrupt(describe_ifd(ifd) + ": levels of focal plane " + std::to_string(*plane) +
                       " are not in decreasing size");
      }
      TW_ASSIGN_OR_RETURN(LevelModel level, build_ndpi_level(*tiff, ifd, ModelLimits{}));
      levels.push_back(std::move(level));
    } else if (*lens == -1) {
      add_macro(model, *tiff, ifd);
    }
  }
  if (planes.empty()) return corrupt("no pyramid level (no directory with SourceLens > 0)");
  auto nominal = planes.find(0);
  if (nominal == planes.end()) return corrupt("no pyramid level at focal plane 0");
  std::vector<std::pair<int64_t, int64_t>> sizes;  // plane 0's, which every plane's pyramid must have
  for (const LevelModel& l : nominal->second) sizes.emplace_back(l.info.width, l.info.height);
  for (auto it = planes.begin(); it != planes.end();) {
    const bool same = it->second.size() == sizes.size() &&
                      std::equal(it->second.begin(), it->second.end(), sizes.begin(),
                                 [](const LevelModel& a, const std::pair<int64_t, int64_t>& b) {
                                   return a.info.width == b.first && a.info.height == b.second;
                                 });
    if (same) {
      it->second = with_scaled_levels(it->second);
      compute_downsamples(it->second);
      ++it;
    } else {
      model.warnings.push_back("focal plane " + std::to_string(it->first) +
                               " is left out: its levels differ from focal plane 0's");
      it = planes.erase(it);
    }
  }
  model.levels = planes.at(0);
  if (planes.size() > 1) {  // RGB focal planes; plane 0 is the default one
    model.axes.z = static_cast<int32_t>(planes.size());
    int32_t z = 0;
    for (auto& [offset, levels] : planes) {
      if (offset == 0) model.axes.default_z = z;
      model.planes.push_back({0, 3, z++, 0, std::move(levels)});
    }
  }
  const tiff::Ifd& ifd0 = tiff->ifds()[0];
  PropertyMap props;
  add_tiff_properties(ifd0, props);
  if (ifd0.image_description) props["openslide.comment"] = *ifd0.image_description;
  add_mpp_from_resolution(ifd0, props);
  add_ndpi_properties(ifd0, props);
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kHamamatsuNdpiDriver = {"hamamatsu", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
