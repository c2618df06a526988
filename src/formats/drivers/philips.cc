// Philips TIFF (the Philips IntelliSite export).
//
// Recognised by Software "Philips..." and an XML ImageDescription whose root is
// <DataObject ObjectType="DPUfsImport">. Tiled directories are levels (each after the first must be
// reduced-resolution, and no larger than the one before). Level sizes in the TIFF are padded to whole
// tiles, so, as OpenSlide does, each level's downsample is taken from the per-level DICOM_PIXEL_SPACING
// of the WSI image's PIIM_PIXEL_DATA_REPRESENTATION_SEQUENCE (rounded to an integer) and its size is level
// 0's divided by it. Tiles with byte count 0 are absent (slides with several regions of interest are
// sparse) and read as background. Label and macro images are stripped directories described "Label..."/
// "Macro...", or base64 JPEG inside the XML. XML attributes become philips.* properties.
#include <pugixml.hpp>

#include <cmath>

#include "codecs/decoder_pool.h"
#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

bool parse_xml(const tiff::Ifd& ifd0, pugi::xml_document& doc, std::string* error) {
  if (!ifd0.image_description) {
    *error = "no ImageDescription";
    return false;
  }
  pugi::xml_parse_result r = doc.load_buffer(ifd0.image_description->data(), ifd0.image_description->size());
  if (!r) {
    *error = std::string("malformed XML: ") + r.description() + " at byte " + std::to_string(r.offset);
    return false;
  }
  return true;
}

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  const tiff::Ifd& ifd0 = tiff.ifds()[0];
  if (!ifd0.software || ifd0.software->rfind("Philips", 0) != 0) return unsupported("not a Philips slide");
  pugi::xml_document doc;
  std::string error;
  if (!parse_xml(ifd0, doc, &error)) return unsupported("Philips Software tag but " + error);
  pugi::xml_node root = doc.document_element();
  if (std::string(root.name()) != "DataObject") return unsupported("root tag is not DataObject");
  if (std::string(root.attribute("ObjectType").value()) != "DPUfsImport") {
    return unsupported("root ObjectType is not \"DPUfsImport\"");
  }
  return Status();
}

std::string attribute_text(const pugi::xml_node& object, const char* name) {
  for (pugi::xml_node a : object.children("Attribute")) {
    if (std::string(a.attribute("Name").value()) == name) return a.child_value();
  }
  return "";
}

pugi::xml_node attribute_node(const pugi::xml_node& object, const char* name) {
  for (pugi::xml_node a : object.children("Attribute")) {
    if (std::string(a.attribute("Name").value()) == name) return a;
  }
  return {};
}

// Scanned images of a type ("WSI", "LABELIMAGE", "MACROIMAGE") in document order.
std::vector<pugi::xml_node> scanned_images(const pugi::xml_node& root, const char* type) {
  std::vector<pugi::xml_node> out;
  pugi::xml_node images = attribute_node(root, "PIM_DP_SCANNED_IMAGES");
  for (pugi::xml_node obj : images.child("Array").children("DataObject")) {
    if (attribute_text(obj, "PIM_DP_IMAGE_TYPE") == type) out.push_back(obj);
  }
  return out;
}

// Flattens <Attribute Name="X">value</Attribute> leaves into prefix.X, recursing into the first WSI image
// and into every PixelDataRepresentation (prefix.PIIM_PIXEL_DATA_REPRESENTATION_SEQUENCE[i].X).
void add_attributes(const pugi::xml_node& object, const std::string& prefix, PropertyMap& props) {
  for (pugi::xml_node a : object.children("Attribute")) {
    const std::string name = a.attribute("Name").value();
    if (name.empty()) continue;
    if (name == "PIM_DP_SCANNED_IMAGES") {
      for (pugi::xml_node obj : a.child("Array").children("DataObject")) {
        if (attribute_text(obj, "PIM_DP_IMAGE_TYPE") == "WSI") {
          add_attributes(obj, prefix, props);
          break;
        }
      }
    } else if (name == "PIIM_PIXEL_DATA_REPRESENTATION_SEQUENCE") {
      int i = 0;
      for (pugi::xml_node obj : a.child("Array").children("DataObject")) {
        add_attributes(obj, prefix + "." + name + "[" + std::to_string(i++) + "]", props);
      }
    } else if (!a.find_child([](const pugi::xml_node& n) { return n.type() == pugi::node_element; })) {
      std::string value;
      for (pugi::xml_node t : a.children()) value += t.value();
      props[prefix + "." + name] = value;
    }
  }
}

// "\"0.000227\" \"0.000227\"" (row spacing, then column spacing, in mm) -> (x, y) in mm.
std::optional<std::pair<double, double>> parse_pixel_spacing(const std::string& s) {
  std::vector<std::string> parts = split(s, ' ');
  if (parts.size() != 2) return std::nullopt;
  for (auto& p : parts) {
    for (char& c : p) if (c == '"') c = ' ';
    p = strip(p);
  }
  auto w = parse_double(parts[1]), h = parse_double(parts[0]);
  if (!w || !h) return std::nullopt;
  return std::make_pair(*w, *h);
}

// "...-levels=40,..." -> 40, accepting only plausible objective powers.
std::optional<int64_t> parse_objective_power(const std::string& derivation) {
  for (const std::string& item : split(derivation, '-')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (key == "sourceFilename") break;  // quoted value that may contain dashes
    if (key == "levels" && eq != std::string::npos) {
      auto first = parse_int64(split(item.substr(eq + 1), ',')[0]);
      if (first && *first > 0 && *first <= 200) return first;
      break;
    }
  }
  return std::nullopt;
}

Result<std::pair<int32_t, int32_t>> jpeg_size(const std::vector<uint8_t>& jpeg) {
  auto decoder = codecs::DecoderPool::global().acquire();
  return decoder->jpeg_dimensions(jpeg);
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "philips";
  const tiff::Ifd& ifd0 = tiff->ifds()[0];
  pugi::xml_document doc;
  std::string error;
  if (!parse_xml(ifd0, doc, &error)) return corrupt(error);
  const pugi::xml_node root = doc.document_element();
  const auto wsi = scanned_images(root, "WSI");
  if (wsi.size() != 1) return corrupt("expected one WSI image in the XML, found " + std::to_string(wsi.size()));

  std::vector<const tiff::Ifd*> level_ifds;
  for (const tiff::Ifd& ifd : tiff->ifds()) {
    const std::string desc = ifd.image_description.value_or("");
    if (ifd.tiled) {
      if (!level_ifds.empty()) {
        if (!ifd.is_reduced_resolution()) return corrupt(describe_ifd(ifd) + " is not reduced-resolution");
        if (ifd.width > level_ifds.back()->width || ifd.height > level_ifds.back()->height) {
          return corrupt("unexpected dimensions for " + describe_ifd(ifd));
        }
      }
      level_ifds.push_back(&ifd);
    } else if (desc.rfind("Label", 0) == 0 || desc.rfind("Macro", 0) == 0) {
      add_associated_image(model, desc.rfind("Label", 0) == 0 ? "label" : "macro", ifd);
    }
  }
  if (level_ifds.empty()) return corrupt("no tiled directory");
  TW_ASSIGN_OR_RETURN(model.levels, build_levels(*tiff, level_ifds));

  // Level sizes and downsamples from the per-level pixel spacing.
  std::vector<std::pair<double, double>> spacings;
  pugi::xml_node sequence = attribute_node(wsi[0], "PIIM_PIXEL_DATA_REPRESENTATION_SEQUENCE");
  for (pugi::xml_node obj : sequence.child("Array").children("DataObject")) {
    if (std::string(obj.attribute("ObjectType").value()) != "PixelDataRepresentation") continue;
    pugi::xml_node spacing = attribute_node(obj, "DICOM_PIXEL_SPACING");
    if (!spacing) continue;
    auto parsed = parse_pixel_spacing(spacing.child_value());
    if (!parsed) return corrupt("level " + std::to_string(spacings.size()) + ": cannot parse pixel spacing");
    spacings.push_back(*parsed);
  }
  if (spacings.size() != model.levels.size()) {
    return corrupt("the XML gives " + std::to_string(spacings.size()) + " pixel spacings for " +
                   std::to_string(model.levels.size()) + " levels");
  }
  for (size_t i = 1; i < model.levels.size(); ++i) {
    LevelInfo& l = model.levels[i].info;
    const double ds = std::round((spacings[i].first / spacings[0].first + spacings[i].second / spacings[0].second) / 2);
    if (!(ds >= 1)) return corrupt("level " + std::to_string(i) + ": invalid pixel spacing");
    l.downsample = ds;
    l.width = static_cast<int64_t>(static_cast<double>(model.levels[0].info.width) / ds);
    l.height = static_cast<int64_t>(static_cast<double>(model.levels[0].info.height) / ds);
  }

  model.icc_profile = ifd0.icc_profile;
  PropertyMap props;
  add_tiff_properties(ifd0, props);
  props.erase("tiff.ImageDescription");  // the XML is exposed as philips.* properties instead
  add_attributes(root, "philips", props);
  if (auto s = props.find("philips.DICOM_PIXEL_SPACING"); s != props.end()) {
    if (auto mm = parse_pixel_spacing(s->second)) {
      props["openslide.mpp-x"] = format_double(1e3 * mm->first);
      props["openslide.mpp-y"] = format_double(1e3 * mm->second);
    }
  }
  if (auto b = props.find("philips.PIM_DP_UFS_BARCODE"); b != props.end()) {
    if (auto barcode = base64_decode(b->second)) props["openslide.barcode"] = std::string(barcode->begin(), barcode->end());
  }
  if (auto d = props.find("philips.DICOM_DERIVATION_DESCRIPTION"); d != props.end()) {
    if (auto power = parse_objective_power(d->second)) props["openslide.objective-power"] = std::to_string(*power);
  }

  // Label and macro from the XML, unless a directory already provided them. Failures only warn.
  for (const auto& [type, name] : {std::pair{"LABELIMAGE", "label"}, std::pair{"MACROIMAGE", "macro"}}) {
    bool have = false;
    for (const auto& a : model.associated) have = have || a.name == name;
    const auto images = scanned_images(root, type);
    if (have || images.empty()) continue;
    auto jpeg = base64_decode(attribute_text(images[0], "PIM_DP_IMAGE_DATA"));
    if (!jpeg || jpeg->empty()) {
      model.warnings.push_back(std::string("the ") + name + " image in the XML is not valid base64");
      continue;
    }
    auto size = jpeg_size(*jpeg);
    if (!size.ok()) {
      model.warnings.push_back(std::string("the ") + name + " image in the XML cannot be decoded: " + size.status().message());
      continue;
    }
    AssociatedModel a;
    a.name = name;
    a.image.info.width = size->first;
    a.image.info.height = size->second;
    a.image.info.compression = "jpeg";
    a.embedded_jpeg = std::move(*jpeg);
    model.associated.push_back(std::move(a));
  }
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kPhilipsDriver = {"philips", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
