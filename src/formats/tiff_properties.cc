#include "formats/tiff_properties.h"

#include "formats/level_builder.h"
#include "formats/quickhash.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tilewise::formats {

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void add_tiff_properties(const tiff::Ifd& ifd, PropertyMap& props) {
  auto put = [&](const char* key, const std::optional<std::string>& v) {
    if (v) props[key] = *v;
  };
  put("tiff.ImageDescription", ifd.image_description);
  put("tiff.Make", ifd.make);
  put("tiff.Model", ifd.model);
  put("tiff.Software", ifd.software);
  put("tiff.DateTime", ifd.date_time);
  put("tiff.Artist", ifd.artist);
  put("tiff.HostComputer", ifd.host_computer);
  put("tiff.Copyright", ifd.copyright);
  put("tiff.DocumentName", ifd.document_name);
  auto put_float = [&](const char* key, const std::optional<double>& v) {
    if (v) props[key] = format_double(*v);
  };
  put_float("tiff.XResolution", ifd.x_resolution);
  put_float("tiff.YResolution", ifd.y_resolution);
  put_float("tiff.XPosition", ifd.x_position);
  put_float("tiff.YPosition", ifd.y_position);
  // libtiff reports ResolutionUnit with its default (inch) when the tag is absent.
  const uint32_t unit = ifd.resolution_unit.value_or(2);
  props["tiff.ResolutionUnit"] = unit == 1 ? "none" : unit == 2 ? "inch" : unit == 3 ? "centimeter" : "unknown";
}

void drop_tile_size_properties(SlideModel& model) {
  std::erase_if(model.properties, [](const auto& kv) {
    return kv.first.rfind("openslide.level[", 0) == 0 &&
           (kv.first.ends_with("].tile-width") || kv.first.ends_with("].tile-height"));
  });
}

void add_mpp_from_resolution(const tiff::Ifd& ifd, PropertyMap& props) {
  if (ifd.resolution_unit.value_or(2) != 3) return;
  if (ifd.x_resolution && *ifd.x_resolution > 0) {
    props["openslide.mpp-x"] = format_double(10000.0 / *ifd.x_resolution);
  }
  if (ifd.y_resolution && *ifd.y_resolution > 0) {
    props["openslide.mpp-y"] = format_double(10000.0 / *ifd.y_resolution);
  }
}

namespace {
void add_quickhash(SlideModel& model, PropertyMap& props) {
  // Drivers of files that are not TIFF hash what OpenSlide hashes for them themselves.
  if (model.levels.empty() || !model.tiff || !model.levels.back().ifd) return;
  auto hash = quickhash1(*model.tiff, *model.levels.back().ifd, model.tiff->ifds()[0]);
  if (!hash.ok()) {
    // OpenSlide refuses to open such a file; tilewise opens it (the damaged tiles fail when read) without
    // the hash.
    model.warnings.push_back("no openslide.quickhash-1: " + hash.status().message());
    return;
  }
  if (*hash) props["openslide.quickhash-1"] = **hash;
}

// What a TIFF-based slide leaves unread or reads differently, said in its warnings rather than silently:
// damaged metadata tags left out, 16-bit samples narrowed, orientations not applied.
void add_tiff_warnings(SlideModel& model) {
  if (!model.tiff) return;
  auto skipped = [&model](const tiff::Ifd& ifd) {
    for (const std::string& t : ifd.skipped_tags) {
      model.warnings.push_back(describe_ifd(ifd) + ": left out (its pixels do not need it): " + t);
    }
  };
  for (const tiff::Ifd& ifd : model.tiff->ifds()) {
    skipped(ifd);
    for (const tiff::Ifd& sub : ifd.sub_ifds) skipped(sub);
  }
  for (const LevelModel& level : model.levels) {
    if (model.axes.rgb && level.ifd && level.desc.bits_per_sample == 16) {  // other images read their own samples
      model.warnings.push_back(describe_ifd(*level.ifd) + ": 16-bit samples are read as their high byte (8-bit RGB)");
      break;
    }
  }
  for (const LevelModel& level : model.levels) {
    if (level.ifd && level.ifd->orientation != 1) {
      model.warnings.push_back(describe_ifd(*level.ifd) + ": Orientation " + std::to_string(level.ifd->orientation) +
                               " is not applied: pixels are read in their stored order");
      break;
    }
  }
}

}  // namespace

void add_standard_properties(SlideModel& model, PropertyMap& props) {
  add_tiff_warnings(model);
  add_quickhash(model, props);
  props["openslide.vendor"] = model.vendor;
  props["openslide.level-count"] = std::to_string(model.levels.size());
  for (size_t i = 0; i < model.levels.size(); ++i) {
    const LevelInfo& l = model.levels[i].info;
    const std::string p = "openslide.level[" + std::to_string(i) + "].";
    props[p + "width"] = std::to_string(l.width);
    props[p + "height"] = std::to_string(l.height);
    props[p + "downsample"] = format_double(l.downsample);
    props[p + "tile-width"] = std::to_string(l.tile_width);
    props[p + "tile-height"] = std::to_string(l.tile_height);
  }
  if (!model.icc_profile.empty()) props["openslide.icc-size"] = std::to_string(model.icc_profile.size());
  auto x = props.find("openslide.mpp-x");
  auto y = props.find("openslide.mpp-y");
  if (x != props.end() && y != props.end()) {
    model.mpp = std::make_pair(std::strtod(x->second.c_str(), nullptr), std::strtod(y->second.c_str(), nullptr));
  }
  // Listed by name, as OpenSlide lists them (label, macro, thumbnail), whatever the file's order.
  std::stable_sort(model.associated.begin(), model.associated.end(),
                   [](const AssociatedModel& a, const AssociatedModel& b) { return a.name < b.name; });
  for (const auto& a : model.associated) {
    const std::string p = "openslide.associated." + a.name + ".";
    props[p + "width"] = std::to_string(a.image.info.width);
    props[p + "height"] = std::to_string(a.image.info.height);
    if (!a.icc_profile.empty()) props[p + "icc-size"] = std::to_string(a.icc_profile.size());
  }
  model.properties.assign(props.begin(), props.end());
}

}  // namespace tilewise::formats
