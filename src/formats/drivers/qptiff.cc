// Akoya (PerkinElmer) QPTIFF: Vectra, Polaris and PhenoCycler/CODEX slides.
//
// A (Big)TIFF whose Software starts "PerkinElmer-QPI" and whose every directory carries a
// <PerkinElmer-QPI-ImageDescription> XML. Directories in file order: the full-resolution image, one
// directory per channel (fluorescence: one grey 8- or 16-bit sample each, named and coloured by <Name> and
// <Color>, "r,g,b"; brightfield: one RGB directory); the thumbnail; each reduced resolution as as many
// directories as the full one; the overview (macro) and the label. <ImageType> names each (FullResolution,
// Thumbnail, ReducedResolution, Overview, Label); without it, a directory of the full image's size and type
// is a channel, as tifffile groups them. Each channel is a plane whose pyramid is its own directory at every
// resolution.
#include <pugixml.hpp>

#include <array>
#include <cstdio>
#include <optional>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

constexpr char kRoot[] = "PerkinElmer-QPI-ImageDescription";

bool looks_like_qptiff(const tiff::Ifd& ifd) {
  return (ifd.software && ifd.software->rfind("PerkinElmer-QPI", 0) == 0) ||
         (ifd.image_description && ifd.image_description->find(kRoot) != std::string::npos);
}

Status detect(const Probe& probe) {
  if (!looks_like_qptiff(probe.tiff->ifds()[0])) return unsupported("no PerkinElmer-QPI description");
  return Status();
}

// One directory and what its XML says.
struct Page {
  const tiff::Ifd* ifd = nullptr;
  std::string type;  // ImageType; empty when the XML has none
  pugi::xml_document xml;
  pugi::xml_node root;
  std::string text(const char* name) const { return root ? root.child_value(name) : ""; }
};

std::optional<std::array<uint8_t, 3>> parse_color(const std::string& s) {
  int r = -1, g = -1, b = -1;
  if (std::sscanf(s.c_str(), "%d,%d,%d", &r, &g, &b) != 3 || r < 0 || r > 255 || g < 0 || g > 255 || b < 0 ||
      b > 255) {
    return std::nullopt;
  }
  return std::array<uint8_t, 3>{static_cast<uint8_t>(r), static_cast<uint8_t>(g), static_cast<uint8_t>(b)};
}

bool same_image(const tiff::Ifd& a, const tiff::Ifd& b) {
  return a.width == b.width && a.height == b.height && a.samples_per_pixel == b.samples_per_pixel &&
         a.bits_per_sample == b.bits_per_sample;
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "qptiff";
  std::vector<Page> pages(tiff->ifds().size());
  for (size_t i = 0; i < pages.size(); ++i) {
    Page& p = pages[i];
    p.ifd = &tiff->ifds()[i];
    const std::string& d = p.ifd->image_description.value_or("");
    if (p.xml.load_buffer(d.data(), d.size())) p.root = p.xml.child(kRoot);
    p.type = p.text("ImageType");
  }
  // The full-resolution channels: the leading run of FullResolution directories (or, without types, of
  // directories like the first).
  size_t channels = 0;
  while (channels < pages.size() &&
         (pages[0].type.empty() ? same_image(*pages[channels].ifd, *pages[0].ifd) && pages[channels].type.empty()
                                : pages[channels].type == pages[0].type)) {
    ++channels;
  }
  if (!pages[0].type.empty() && pages[0].type != "FullResolution") {
    return corrupt("the first directory is a " + pages[0].type + " image, not the FullResolution one");
  }
  const tiff::Ifd& first = *pages[0].ifd;
  const bool rgb = channels == 1 && first.samples_per_pixel == 3 && first.bits_per_sample[0] == 8;
  for (size_t c = 1; c < channels; ++c) {
    if (!same_image(*pages[c].ifd, first)) {
      return corrupt("channel " + std::to_string(c) + " (" + describe_ifd(*pages[c].ifd) +
                     ") differs from channel 0 in size or samples");
    }
  }
  if (!rgb && first.samples_per_pixel != 1) {
    return unsupported("QPTIFF channels of " + std::to_string(first.samples_per_pixel) + " samples are not supported");
  }

  // Every later group of `channels` directories of one size, each half the one before, is a resolution.
  std::vector<std::vector<const tiff::Ifd*>> resolutions(1);
  for (size_t c = 0; c < channels; ++c) resolutions[0].push_back(pages[c].ifd);
  for (size_t i = channels; i < pages.size();) {
    const Page& p = pages[i];
    const std::string& type = p.type;
    const bool reduced = type.empty() ? p.ifd->tiled && p.ifd->width < resolutions.back()[0]->width &&
                                            p.ifd->samples_per_pixel == first.samples_per_pixel
                                      : type == "ReducedResolution";
    if (!reduced) {
      const std::string name = type == "Thumbnail" ? "thumbnail" : type == "Overview" ? "macro" : type == "Label" ? "label" : "";
      if (!name.empty()) add_associated_image(model, name, *p.ifd);
      ++i;
      continue;
    }
    std::vector<const tiff::Ifd*> group;
    for (size_t c = 0; c < channels && i + c < pages.size(); ++c) {
      if (!same_image(*pages[i + c].ifd, *p.ifd) || pages[i + c].type != type) break;
      group.push_back(pages[i + c].ifd);
    }
    if (group.size() != channels) {
      model.warnings.push_back("a reduced resolution at " + describe_ifd(*p.ifd) + " holds " +
                               std::to_string(group.size()) + " of the " + std::to_string(channels) +
                               " channels: left out");
      i += group.size();
      continue;
    }
    resolutions.push_back(std::move(group));
    i += channels;
  }

  model.axes.rgb = rgb;
  model.axes.channels = rgb ? 3 : static_cast<int32_t>(channels);
  for (size_t c = 0; c < channels; ++c) {
    std::vector<LevelModel> levels;
    for (const auto& r : resolutions) {
      auto level = rgb ? build_level(*tiff, *r[c]) : build_sample_level(*tiff, *r[c]);
      if (!level.ok()) return level.status().with_context("channel " + std::to_string(c));
      levels.push_back(std::move(level).value());
    }
    compute_downsamples(levels);
    if (c == 0) model.levels = levels;
    if (rgb) break;
    ChannelInfo info;
    info.name = pages[c].text("Name");
    if (info.name.empty()) info.name = pages[c].text("Biomarker");
    info.color = parse_color(pages[c].text("Color"));
    model.axes.channel_info.push_back(std::move(info));
    model.planes.push_back({static_cast<int32_t>(c), 1, 0, 0, std::move(levels)});
  }
  if (!rgb) {
    auto type = sample_type_of(model.levels[0].desc);
    if (!type.ok()) return type.status().with_context("channel 0");
    model.axes.sample_type = *type;
  }

  model.icc_profile = first.icc_profile;
  PropertyMap props;
  add_tiff_properties(first, props);
  add_mpp_from_resolution(first, props);
  if (pages[0].root) {
    for (pugi::xml_node n : pages[0].root.children()) {
      if (n.type() == pugi::node_element && n.first_child().type() == pugi::node_pcdata) {
        props[std::string("qptiff.") + n.name()] = n.child_value();
      }
    }
  }
  if (!rgb) {
    for (size_t c = 0; c < channels; ++c) {
      for (const char* key : {"Name", "Color", "ExposureTime", "SignalUnits", "Biomarker", "Filter"}) {
        const std::string v = pages[c].text(key);
        if (!v.empty()) props["qptiff.Channel[" + std::to_string(c) + "]." + key] = v;
      }
    }
  }
  if (const std::string objective = pages[0].text("Objective"); !objective.empty()) {
    if (auto mag = parse_double(objective.substr(0, objective.find_first_not_of("0123456789.")))) {
      props["openslide.objective-power"] = format_double(*mag);
    }
  }
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kQptiffDriver = {"qptiff", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
