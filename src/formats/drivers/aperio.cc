// Aperio SVS.
//
// Aperio's "Digital Slides and Third-party data interchange" (p. 14): "The first image in an SVS file is
// always the baseline image (full resolution). This image is always tiled ... The second image is always a
// thumbnail ... always stripped. Following the thumbnail there may be one or more intermediate 'pyramid'
// images ... tiled ... Optionally at the end of an SVS file there may be a slide label image ... and/or a
// macro camera image ... always stripped."
// So: tiled directories are levels; directory 1 (stripped) is the thumbnail; other stripped directories
// are named by the first word of their ImageDescription's second line ("label 387x463"). Level-0's
// ImageDescription is "Aperio Image Library vX\r\n<summary>|Key = Value|Key = Value...", giving the
// aperio.* properties. JPEG 2000 tiles use compression 33003 (YCbCr components) or 33005 (RGB).
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

constexpr char kAperioPrefix[] = "Aperio";

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  const tiff::Ifd& ifd0 = tiff.ifds()[0];
  if (!ifd0.tiled) return unsupported("TIFF is not tiled");
  if (!ifd0.image_description || ifd0.image_description->rfind(kAperioPrefix, 0) != 0) {
    return unsupported("not an Aperio slide");
  }
  return Status();
}

// The associated image name of a stripped directory: "thumbnail" for directory 1, else the first word of
// the description's second line.
std::string associated_name(const tiff::Ifd& ifd) {
  if (ifd.index == 1) return "thumbnail";
  if (!ifd.image_description) return "";
  const std::string& d = *ifd.image_description;
  const size_t eol = d.find_first_of("\r\n");
  if (eol == std::string::npos) return "";
  size_t start = d.find_first_not_of("\r\n", eol);
  if (start == std::string::npos) return "";
  const size_t end = d.find_first_of(" \r\n", start);
  return d.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The "Key = Value" fields of an Aperio description (those after the first '|'), stripped, in order; a
// field without '=' has an empty value.
std::vector<std::pair<std::string, std::string>> description_fields(const std::string& description) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::string> fields = split(description, '|');
  for (size_t i = 1; i < fields.size(); ++i) {
    const size_t eq = fields[i].find('=');
    std::string key = strip(fields[i].substr(0, eq));
    if (!key.empty()) out.emplace_back(std::move(key), eq == std::string::npos ? "" : strip(fields[i].substr(eq + 1)));
  }
  return out;
}

// The value of field `key` (the last one, as the properties keep it); nullopt when absent.
std::optional<std::string> description_field(const std::optional<std::string>& description, std::string_view key) {
  std::optional<std::string> value;
  if (!description) return value;
  for (auto& [k, v] : description_fields(*description)) {
    if (k == key) value = std::move(v);
  }
  return value;
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "aperio";
  std::vector<const tiff::Ifd*> level_ifds;
  for (const tiff::Ifd& ifd : tiff->ifds()) {
    if (ifd.tiled) {
      level_ifds.push_back(&ifd);
      continue;
    }
    std::string name = associated_name(ifd);
    if (name.empty()) {
      model.warnings.push_back(describe_ifd(ifd) + ": stripped image without a name, ignored");
      continue;
    }
    add_associated_image(model, name, ifd);
  }
  TW_ASSIGN_OR_RETURN(model.levels, build_levels(*tiff, level_ifds));

  const tiff::Ifd& ifd0 = tiff->ifds()[0];
  model.icc_profile = ifd0.icc_profile;
  // The thumbnail is in the slide's colour space when its description names the same "ICC Profile" as the
  // slide's: it then carries the slide's profile (as OpenSlide gives it; label and macro carry none).
  const auto profile_name = description_field(ifd0.image_description, "ICC Profile");
  for (AssociatedModel& a : model.associated) {
    if (a.name == "thumbnail" && a.image.ifd && profile_name &&
        description_field(a.image.ifd->image_description, "ICC Profile") == profile_name) {
      a.icc_profile = ifd0.icc_profile;
    }
  }
  PropertyMap props;
  add_tiff_properties(ifd0, props);
  const std::string& description = *ifd0.image_description;
  props["openslide.comment"] = description;
  for (const auto& [key, value] : description_fields(description)) props["aperio." + key] = value;
  if (auto mag = props.find("aperio.AppMag"); mag != props.end()) {
    if (auto v = parse_int64(mag->second)) props["openslide.objective-power"] = std::to_string(*v);
  }
  if (auto mpp = props.find("aperio.MPP"); mpp != props.end()) {
    if (auto v = parse_double(mpp->second)) {
      props["openslide.mpp-x"] = format_double(*v);
      props["openslide.mpp-y"] = format_double(*v);
    }
  }
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kAperioDriver = {"aperio", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
