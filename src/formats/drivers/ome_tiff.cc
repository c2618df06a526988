// OME-TIFF (Open Microscopy Environment): OME-XML in the first ImageDescription.
//
// The first <Image> is the slide: its <Pixels> give the axes (channels, focal planes, time points), the
// sample type, the physical pixel size (-> mpp) and the channels (drivers/ome_xml.h); its TiffData and
// DimensionOrder say which directory holds each plane, and each such directory's SubIFDs are that plane's
// pyramid (OME-TIFF 6 pyramids). One interleaved 8-bit RGB channel is a brightfield slide; everything else
// reads as its own samples, a plane per stored channel. Other images named label, macro or thumbnail become
// associated images; the rest, with the first, are the file's scenes (OpenOptions::scene picks one). Planes stored in other files of a multi-file set are refused with Unsupported.
#include <pugixml.hpp>

#include "formats/drivers/ome_xml.h"
#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

using ome::child;
using ome::children;
using ome::is;

bool is_associated(const std::string& image_name) {
  return image_name == "label" || image_name == "macro" || image_name == "thumbnail";
}

bool looks_like_ome(const tiff::Ifd& ifd0) {
  return ifd0.image_description && ifd0.image_description->find("<OME") != std::string::npos;
}

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  const tiff::Ifd& ifd0 = tiff.ifds()[0];
  if (!looks_like_ome(ifd0)) return unsupported("no OME-XML");
  pugi::xml_document doc;
  if (!doc.load_buffer(ifd0.image_description->data(), ifd0.image_description->size())) {
    return unsupported("OME-XML is malformed");
  }
  if (!is(doc.document_element(), "OME")) return unsupported("root element is not OME");
  return Status();
}

const tiff::Ifd* ifd_at(const tiff::TiffFile& tiff, const pugi::xml_node& pixels) {
  int64_t index = 0;
  if (pugi::xml_node td = child(pixels, "TiffData")) {
    if (auto v = parse_int64(td.attribute("IFD").value()); v) index = *v;
  }
  if (index < 0 || index >= static_cast<int64_t>(tiff.ifds().size())) return nullptr;
  return &tiff.ifds()[static_cast<size_t>(index)];
}

// The file name a TiffData's UUID gives, without folders.
std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The pyramid of the plane in directory `index`: the directory, then its SubIFDs.
Result<std::vector<LevelModel>> plane_levels(const tiff::TiffFile& tiff, int64_t index, bool rgb) {
  if (index >= static_cast<int64_t>(tiff.ifds().size())) {
    return corrupt("OME-XML TiffData points to IFD " + std::to_string(index) + ", past the file's " +
                   std::to_string(tiff.ifds().size()) + " directories");
  }
  const tiff::Ifd& base = tiff.ifds()[static_cast<size_t>(index)];
  std::vector<LevelModel> levels;
  for (size_t i = 0; i <= base.sub_ifds.size(); ++i) {
    const tiff::Ifd& ifd = i == 0 ? base : base.sub_ifds[i - 1];
    TW_ASSIGN_OR_RETURN(LevelModel level, rgb ? build_level(tiff, ifd) : build_sample_level(tiff, ifd));
    levels.push_back(std::move(level));
  }
  compute_downsamples(levels);
  return levels;
}

// The model's levels and planes from the planes OME-XML names: a brightfield slide of one plane keeps its
// levels only; every other image has a PlaneModel per stored plane.
Status add_planes(const tiff::TiffFile& tiff, const ome::Pixels& pixels, SlideModel& model) {
  model.axes = pixels.axes;
  const std::string own = base_name(tiff.source().name());
  for (const ome::StoredPlane& p : pixels.planes) {
    if (!p.file.empty() && p.file != own) {
      return unsupported("plane (channel " + std::to_string(p.channel) + ", z " + std::to_string(p.z) + ", t " +
                         std::to_string(p.t) + ") is stored in \"" + p.file +
                         "\": multi-file OME-TIFF sets are not supported");
    }
  }
  const bool one_rgb_plane = pixels.axes.rgb && pixels.planes.size() == 1;
  for (const ome::StoredPlane& p : pixels.planes) {
    auto levels = plane_levels(tiff, p.ifd, pixels.axes.rgb);
    if (!levels.ok()) {
      return levels.status().with_context("plane (channel " + std::to_string(p.channel) + ", z " +
                                          std::to_string(p.z) + ", t " + std::to_string(p.t) + ")");
    }
    if (model.levels.empty()) model.levels = *levels;
    if (one_rgb_plane) break;
    model.planes.push_back({p.channel, p.samples, p.z, p.t, std::move(levels).value()});
  }
  if (!pixels.axes.rgb) {
    auto type = sample_type_of(model.levels[0].desc);
    if (!type.ok() || *type != pixels.axes.sample_type) {
      return corrupt(std::string("OME-XML says ") + sample_type_name(pixels.axes.sample_type) +
                     " samples, the TIFF directories hold " + std::to_string(model.levels[0].desc.bits_per_sample) +
                     "-bit ones");
    }
  }
  return Status();
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "ome-tiff";
  const tiff::Ifd& ifd0 = tiff->ifds()[0];
  pugi::xml_document doc;
  doc.load_buffer(ifd0.image_description->data(), ifd0.image_description->size());
  const pugi::xml_node ome = doc.document_element();
  const auto images = children(ome, "Image");
  if (const pugi::xml_node binary_only = child(ome, "BinaryOnly"); images.empty() && binary_only) {
    // A valid member of a multi-file set: its OME-XML lives in the companion file the element names.
    return unsupported(std::string("a BinaryOnly OME-TIFF: its metadata is in \"") +
                       binary_only.attribute("MetadataFile").value() +
                       "\" (a multi-file OME-TIFF set, which tilewise does not read)");
  }
  if (images.empty()) return corrupt("OME-XML has no Image");
  // The images: the first, and every other not named as an associated image, each a scene
  std::vector<pugi::xml_node> series{images[0]};
  for (size_t i = 1; i < images.size(); ++i) {
    if (!is_associated(images[i].attribute("Name").value())) series.push_back(images[i]);
  }
  const size_t chosen = probe.scene && static_cast<size_t>(*probe.scene) < series.size() ? static_cast<size_t>(*probe.scene) : 0;
  const pugi::xml_node image = series[chosen];
  const pugi::xml_node pixels = child(image, "Pixels");
  if (!pixels) return corrupt("OME-XML Image has no Pixels");
  for (size_t i = 0; series.size() > 1 && i < series.size(); ++i) {
    const pugi::xml_node p = child(series[i], "Pixels");
    const std::string name = series[i].attribute("Name").value();
    model.scenes.push_back({name.empty() ? "Image " + std::to_string(i) : name,
                            parse_int64(p.attribute("SizeX").value()).value_or(0),
                            parse_int64(p.attribute("SizeY").value()).value_or(0)});
  }

  TW_ASSIGN_OR_RETURN(ome::Pixels planes, ome::read_pixels(pixels));
  const auto channels = children(pixels, "Channel");
  TW_RETURN_IF_ERROR(add_planes(*tiff, planes, model));

  for (size_t i = 1; i < images.size(); ++i) {
    const std::string name = images[i].attribute("Name").value();
    if (!is_associated(name)) continue;
    const tiff::Ifd* ifd = ifd_at(*tiff, child(images[i], "Pixels"));
    if (ifd != nullptr) add_associated_image(model, name, *ifd);
  }

  model.icc_profile = ifd0.icc_profile;
  PropertyMap props;
  add_tiff_properties(ifd0, props);
  props["ome.Image.Name"] = image.attribute("Name").value();
  for (pugi::xml_attribute a : pixels.attributes()) props[std::string("ome.Pixels.") + a.name()] = a.value();
  for (size_t i = 0; i < channels.size(); ++i) {
    for (pugi::xml_attribute a : channels[i].attributes()) {
      props["ome.Channel[" + std::to_string(i) + "]." + a.name()] = a.value();
    }
  }
  for (const char* axis : {"X", "Y"}) {
    auto size = parse_double(pixels.attribute((std::string("PhysicalSize") + axis).c_str()).value());
    const double scale = ome::microns_per(pixels.attribute((std::string("PhysicalSize") + axis + "Unit").c_str()).value());
    if (size && *size > 0 && scale > 0) {
      props[std::string("openslide.mpp-") + (axis[0] == 'X' ? "x" : "y")] = format_double(*size * scale);
    }
  }
  for (pugi::xml_node instrument : children(ome, "Instrument")) {
    for (pugi::xml_node objective : children(instrument, "Objective")) {
      if (auto mag = parse_double(objective.attribute("NominalMagnification").value())) {
        props["openslide.objective-power"] = format_double(*mag);
        break;
      }
    }
  }
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kOmeTiffDriver = {"ome-tiff", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
