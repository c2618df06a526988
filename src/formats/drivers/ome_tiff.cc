// OME-TIFF (Open Microscopy Environment): OME-XML in the first ImageDescription.
//
// The first <Image> is the slide: its <Pixels> give the size, type, physical pixel size (-> mpp) and
// channels; its first <TiffData IFD="n"> (default 0) is level 0 and that directory's SubIFDs are the
// pyramid (OME-TIFF 6 pyramids). Other images named label, macro or thumbnail become associated images.
// Supported: 8- and 16-bit (16-bit read as its high byte), one interleaved RGB channel (brightfield) or one
// grey channel. Several channels stored as separate planes (fluorescence) or Z/T stacks are refused with
// Unsupported naming what is missing: tilewise returns RGB regions and has no channel/plane selection.
#include <pugixml.hpp>

#include <cstring>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

// Element names may carry a namespace prefix ("ome:Pixels"); compare local names.
bool is(const pugi::xml_node& n, const char* local) {
  const char* name = n.name();
  const char* colon = std::strrchr(name, ':');
  return std::strcmp(colon ? colon + 1 : name, local) == 0;
}

pugi::xml_node child(const pugi::xml_node& n, const char* local) {
  for (pugi::xml_node c : n.children()) {
    if (c.type() == pugi::node_element && is(c, local)) return c;
  }
  return {};
}

std::vector<pugi::xml_node> children(const pugi::xml_node& n, const char* local) {
  std::vector<pugi::xml_node> out;
  for (pugi::xml_node c : n.children()) {
    if (c.type() == pugi::node_element && is(c, local)) out.push_back(c);
  }
  return out;
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

// Microns per unit of an OME length unit symbol; 0 when unknown.
double microns_per(const std::string& unit) {
  if (unit.empty() || unit == "\xC2\xB5m" || unit == "um" || unit == "\xCE\xBCm") return 1.0;
  if (unit == "nm") return 1e-3;
  if (unit == "mm") return 1e3;
  if (unit == "cm") return 1e4;
  if (unit == "m") return 1e6;
  return 0.0;
}

const tiff::Ifd* ifd_at(const tiff::TiffFile& tiff, const pugi::xml_node& pixels) {
  int64_t index = 0;
  if (pugi::xml_node td = child(pixels, "TiffData")) {
    if (auto v = parse_int64(td.attribute("IFD").value()); v) index = *v;
  }
  if (index < 0 || index >= static_cast<int64_t>(tiff.ifds().size())) return nullptr;
  return &tiff.ifds()[static_cast<size_t>(index)];
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
  const pugi::xml_node pixels = child(images[0], "Pixels");
  if (!pixels) return corrupt("OME-XML Image has no Pixels");

  const int64_t size_c = parse_int64(pixels.attribute("SizeC").value()).value_or(1);
  const int64_t size_z = parse_int64(pixels.attribute("SizeZ").value()).value_or(1);
  const int64_t size_t_ = parse_int64(pixels.attribute("SizeT").value()).value_or(1);
  const std::string type = pixels.attribute("Type").value();
  if (size_z != 1 || size_t_ != 1) {
    return unsupported("OME-TIFF with SizeZ=" + std::to_string(size_z) + " SizeT=" + std::to_string(size_t_) +
                       ": Z and T planes are not supported (tilewise reads one 2-D plane, and has no plane argument)");
  }
  const auto channels = children(pixels, "Channel");
  int64_t samples_per_channel = 1;
  if (!channels.empty()) samples_per_channel = parse_int64(channels[0].attribute("SamplesPerPixel").value()).value_or(1);
  const bool rgb = size_c == 3 && samples_per_channel == 3;
  if (!rgb && size_c != 1) {
    return unsupported("OME-TIFF with " + std::to_string(size_c) + " channels of " + std::to_string(samples_per_channel) +
                       " sample(s): multi-channel images are not supported (tilewise reads one interleaved RGB "
                       "channel or one grey channel, and has no channel argument)");
  }
  if (type != "uint8" && type != "uint16") {
    return unsupported("OME-TIFF pixel type '" + type + "' is not supported (uint8 and uint16 are)");
  }

  const tiff::Ifd* base = ifd_at(*tiff, pixels);
  if (base == nullptr) return corrupt("OME-XML TiffData points to a missing IFD");
  std::vector<const tiff::Ifd*> level_ifds{base};
  for (const tiff::Ifd& sub : base->sub_ifds) level_ifds.push_back(&sub);
  TW_ASSIGN_OR_RETURN(model.levels, build_levels(*tiff, level_ifds));

  for (size_t i = 1; i < images.size(); ++i) {
    const std::string name = images[i].attribute("Name").value();
    if (name != "label" && name != "macro" && name != "thumbnail") continue;
    const tiff::Ifd* ifd = ifd_at(*tiff, child(images[i], "Pixels"));
    if (ifd != nullptr) add_associated_image(model, name, *ifd);
  }

  model.icc_profile = ifd0.icc_profile;
  PropertyMap props;
  add_tiff_properties(ifd0, props);
  props["ome.Image.Name"] = images[0].attribute("Name").value();
  for (pugi::xml_attribute a : pixels.attributes()) props[std::string("ome.Pixels.") + a.name()] = a.value();
  for (size_t i = 0; i < channels.size(); ++i) {
    for (pugi::xml_attribute a : channels[i].attributes()) {
      props["ome.Channel[" + std::to_string(i) + "]." + a.name()] = a.value();
    }
  }
  for (const char* axis : {"X", "Y"}) {
    auto size = parse_double(pixels.attribute((std::string("PhysicalSize") + axis).c_str()).value());
    const double scale = microns_per(pixels.attribute((std::string("PhysicalSize") + axis + "Unit").c_str()).value());
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
