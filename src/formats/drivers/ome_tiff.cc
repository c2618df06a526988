// OME-TIFF (Open Microscopy Environment): OME-XML in the first ImageDescription.
//
// The first <Image> is the slide: its <Pixels> give the axes (channels, focal planes, time points), the
// sample type, the physical pixel size (-> mpp) and the channels (drivers/ome_xml.h); its TiffData and
// DimensionOrder say which directory holds each plane, and each such directory's SubIFDs are that plane's
// pyramid (OME-TIFF 6 pyramids). One interleaved 8-bit RGB channel is a brightfield slide; everything else
// reads as its own samples, a plane per stored channel. Other images named label, macro or thumbnail become
// associated images; the rest, with the first, are the file's scenes (OpenOptions::scene picks one).
//
// Flat pyramids (the layout before SubIFDs, as Bio-Formats 5's pyramid writer and Faas left them): images
// that follow an image without SubIFDs, with its channels, planes and sample type, each smaller than the one
// before by one factor (2, 3 or 4, rounded either way) on both axes, are that image's levels, not scenes;
// tifffile reads them as series of their own.
//
// Multi-file sets: a TiffData's UUID FileName names the file of the set holding its planes, opened from the
// opened file's folder (a name with a folder in it is refused: a set lives in one folder). A member whose
// XML is BinaryOnly reads the set's metadata from the MetadataFile it names (a companion .ome XML file or
// another member, in the same folder).
#include <pugixml.hpp>

#include <map>

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

// The pyramid of the plane in directory `index`: the directory, then its SubIFDs (downsamples not computed).
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
  return levels;
}

// The path of `file` beside the opened file: its folder (or URL prefix) and the name, which must not hold a
// folder of its own.
Result<std::string> beside(const io::Source& opened, const std::string& file) {
  if (file.empty() || file == "." || file == ".." || file.find_first_of("/\\") != std::string::npos) {
    return corrupt("the multi-file OME-TIFF set names \"" + file + "\", not a file name in the set's folder");
  }
  const std::string& name = opened.name();
  if (!opened.is_local_file() && name.find("://") == std::string::npos) {
    return unsupported("\"" + file + "\" of a multi-file OME-TIFF set: a set read from memory or a file object "
                       "has no folder to find it in (open it by path)");
  }
  const size_t slash = name.find_last_of('/');
  return slash == std::string::npos ? file : name.substr(0, slash + 1) + file;
}

// The OME-XML of a set's metadata file beside the opened member: a companion XML file, or the first
// description of another member's TIFF.
Result<std::string> companion_xml(const tiff::TiffFile& opened, const std::string& file) {
  TW_ASSIGN_OR_RETURN(const std::string path, beside(opened.source(), file));
  auto source = io::open_file(path);
  if (!source.ok()) return source.status().with_context("the set's metadata file \"" + file + "\"");
  if (tiff::TiffFile::has_tiff_header(**source)) {
    TW_ASSIGN_OR_RETURN(auto member, tiff::TiffFile::parse(*source));
    const auto& description = member->ifds()[0].image_description;
    if (!description) return corrupt("the set's metadata file \"" + file + "\" has no ImageDescription");
    return *description;
  }
  constexpr uint64_t kMaxXml = 64ull << 20;
  if ((*source)->size() > kMaxXml) return corrupt("the set's metadata file \"" + file + "\" is over 64 MiB");
  std::string xml(static_cast<size_t>((*source)->size()), '\0');
  TW_RETURN_IF_ERROR((*source)->pread({reinterpret_cast<uint8_t*>(xml.data()), xml.size()}, 0));
  return xml;
}

// The files of a multi-file set: the opened one, and the others its planes name, opened on first use.
class SetFiles {
 public:
  explicit SetFiles(std::shared_ptr<const tiff::TiffFile> opened) : opened_(std::move(opened)) {}

  Result<std::shared_ptr<const tiff::TiffFile>> get(const std::string& file) {
    if (file.empty() || file == base_name(opened_->source().name())) return opened_;
    auto found = others_.find(file);
    if (found != others_.end()) return found->second;
    TW_ASSIGN_OR_RETURN(const std::string path, beside(opened_->source(), file));
    auto source = io::open_file(path);
    if (!source.ok()) return source.status().with_context("file \"" + file + "\" of the multi-file OME-TIFF set");
    auto parsed = tiff::TiffFile::parse(*source);
    if (!parsed.ok()) return parsed.status().with_context(path);
    return others_[file] = std::move(parsed).value();
  }
  std::vector<std::shared_ptr<const tiff::TiffFile>> others() const {
    std::vector<std::shared_ptr<const tiff::TiffFile>> out;
    for (const auto& [name, file] : others_) out.push_back(file);
    return out;
  }

 private:
  std::shared_ptr<const tiff::TiffFile> opened_;
  std::map<std::string, std::shared_ptr<const tiff::TiffFile>> others_;
};

// The model's levels and planes from the planes OME-XML names: a brightfield slide of one plane keeps its
// levels only; every other image has a PlaneModel per stored plane. `flat`: the images that are the image's
// lower levels, largest first (their planes in the image's order).
Status add_planes(SetFiles& files, const ome::Pixels& pixels, const std::vector<ome::Pixels>& flat, SlideModel& model) {
  model.axes = pixels.axes;
  const bool one_rgb_plane = pixels.axes.rgb && pixels.planes.size() == 1;
  for (size_t k = 0; k < pixels.planes.size(); ++k) {
    std::vector<LevelModel> levels;
    for (size_t image = 0; image <= flat.size(); ++image) {
      const ome::StoredPlane& p = image == 0 ? pixels.planes[k] : flat[image - 1].planes[k];
      const std::string where = "plane (channel " + std::to_string(p.channel) + ", z " + std::to_string(p.z) + ", t " +
                                std::to_string(p.t) + ")" + (image == 0 ? "" : " of level image " + std::to_string(image));
      auto file = files.get(p.file);
      if (!file.ok()) return file.status().with_context(where);
      auto more = plane_levels(**file, p.ifd, pixels.axes.rgb);
      if (!more.ok()) return more.status().with_context(where + (p.file.empty() ? "" : " in \"" + p.file + "\""));
      for (LevelModel& level : *more) levels.push_back(std::move(level));
    }
    compute_downsamples(levels);
    const ome::StoredPlane& p = pixels.planes[k];
    if (model.levels.empty()) model.levels = levels;
    if (one_rgb_plane) break;
    model.planes.push_back({p.channel, p.samples, p.z, p.t, std::move(levels)});
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

int64_t size_attribute(const pugi::xml_node& pixels, const char* name) {
  return parse_int64(pixels.attribute(name).value()).value_or(0);
}

// Whether `smaller` is `larger` reduced by `factor` (rounded either way) on both axes, with the same channels,
// planes, time points, sample type and plane order.
bool reduces(const pugi::xml_node& larger, const pugi::xml_node& smaller, int64_t factor) {
  for (const char* same : {"SizeC", "SizeZ", "SizeT", "Type", "DimensionOrder"}) {
    if (std::string(larger.attribute(same).value()) != smaller.attribute(same).value()) return false;
  }
  for (const char* axis : {"SizeX", "SizeY"}) {
    const int64_t big = size_attribute(larger, axis), small = size_attribute(smaller, axis);
    if (big <= 0 || small <= 0 || (small != big / factor && small != (big + factor - 1) / factor)) return false;
  }
  return true;
}

// The images of a flat pyramid whose top is images[first] (see the file comment): the next images while each
// reduces the one before by the factor of the first step. None when the top's first directory has SubIFDs.
std::vector<pugi::xml_node> flat_levels(const tiff::TiffFile& tiff, const std::vector<pugi::xml_node>& images,
                                        size_t first) {
  std::vector<pugi::xml_node> out;
  const pugi::xml_node top = child(images[first], "Pixels");
  const tiff::Ifd* ifd = ifd_at(tiff, top);
  if (!top || (ifd != nullptr && !ifd->sub_ifds.empty())) return out;
  int64_t factor = 0;
  pugi::xml_node previous = top;
  for (size_t i = first + 1; i < images.size(); ++i) {
    const pugi::xml_node next = child(images[i], "Pixels");
    if (!next || is_associated(images[i].attribute("Name").value())) break;
    if (factor == 0) {
      for (int64_t f : {2, 3, 4}) {
        if (reduces(previous, next, f)) factor = f;
      }
      if (factor == 0) break;
    } else if (!reduces(previous, next, factor)) {
      break;
    }
    out.push_back(images[i]);
    previous = next;
  }
  return out;
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "ome-tiff";
  const tiff::Ifd& ifd0 = tiff->ifds()[0];
  pugi::xml_document doc;
  doc.load_buffer(ifd0.image_description->data(), ifd0.image_description->size());
  pugi::xml_node ome = doc.document_element();
  auto images = children(ome, "Image");
  if (const pugi::xml_node binary_only = child(ome, "BinaryOnly"); images.empty() && binary_only) {
    // A member of a multi-file set: the set's OME-XML lives in the file the element names.
    const std::string metadata = binary_only.attribute("MetadataFile").value();
    TW_ASSIGN_OR_RETURN(const std::string xml, companion_xml(*tiff, metadata));
    if (!doc.load_buffer(xml.data(), xml.size()) || !is(doc.document_element(), "OME")) {
      return corrupt("the set's metadata file \"" + metadata + "\" holds no OME-XML");
    }
    ome = doc.document_element();
    images = children(ome, "Image");
  }
  if (images.empty()) return corrupt("OME-XML has no Image");
  // The images: the first, and every other not named as an associated image nor a level of a flat pyramid,
  // each a scene with its flat levels.
  std::vector<pugi::xml_node> series;
  std::vector<std::vector<pugi::xml_node>> series_levels;
  for (size_t i = 0; i < images.size(); ++i) {
    if (i > 0 && is_associated(images[i].attribute("Name").value())) continue;
    series.push_back(images[i]);
    series_levels.push_back(flat_levels(*tiff, images, i));
    i += series_levels.back().size();
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
  std::vector<ome::Pixels> flat;
  for (const pugi::xml_node& level : series_levels[chosen]) {
    TW_ASSIGN_OR_RETURN(ome::Pixels more, ome::read_pixels(child(level, "Pixels")));
    if (more.planes.size() != planes.planes.size()) {
      return corrupt("OME-XML level image \"" + std::string(level.attribute("Name").value()) + "\" stores " +
                     std::to_string(more.planes.size()) + " planes, the image it reduces " +
                     std::to_string(planes.planes.size()));
    }
    flat.push_back(std::move(more));
  }
  const auto channels = children(pixels, "Channel");
  SetFiles files(tiff);
  TW_RETURN_IF_ERROR(add_planes(files, planes, flat, model));
  model.companion_tiffs = files.others();

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
