#include "formats/drivers/zeiss_metadata.h"

#include <pugixml.hpp>

#include <array>
#include <cmath>
#include <optional>
#include <string_view>

namespace tilewise::formats::zeiss {
namespace {

// OpenSlide's XML flattening (see the header comment).
class XmlProperties {
 public:
  explicit XmlProperties(PropertyMap& props) : props_(props) {}
  void add(const pugi::xml_node& node) { add(node, {"zeiss"}); }

 private:
  static bool blank(const char* s) {
    for (; *s; ++s) {
      if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
    }
    return true;
  }
  static std::optional<std::string> element_name(const std::vector<std::string>& path, const pugi::xml_node& node) {
    const std::string name = node.name();
    const std::string& parent = path.back();
    if (parent == name + "s" || (parent == "Items" && name == "Distance")) {
      if (pugi::xml_attribute id = node.attribute("Id")) return std::string(id.value());
      if (pugi::xml_attribute id = node.attribute("Name")) return std::string(id.value());
      return std::nullopt;  // a list member without a name: left out
    }
    return name;
  }
  std::string joined(const std::vector<std::string>& path) const {
    std::string s;
    for (const std::string& p : path) s += (s.empty() ? "" : ".") + p;
    return s;
  }
  void add(const pugi::xml_node& node, std::vector<std::string> path) {
    auto name = element_name(path, node);
    if (!name) return;
    path.push_back(*name);
    for (pugi::xml_attribute a : node.attributes()) {
      if (!blank(a.value())) {
        path.push_back(a.name());
        props_[joined(path)] = a.value();
        path.pop_back();
      }
    }
    std::map<std::string, int> seen;
    for (pugi::xml_node c : node.children()) {
      if (c.type() != pugi::node_element) continue;
      if (auto n = element_name(path, c)) ++seen[*n];
    }
    for (pugi::xml_node c : node.children()) {
      if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
        if (!blank(c.value())) props_[joined(path)] = c.value();
        continue;
      }
      if (c.type() != pugi::node_element) continue;
      auto n = element_name(path, c);
      if (!n || seen[*n] > 1) continue;
      add(c, path);
    }
  }
  PropertyMap& props_;
};

// A colour "#AARRGGBB" or "#RRGGBB".
std::optional<std::array<uint8_t, 3>> parse_colour(std::string_view text) {
  if (text.empty() || text[0] != '#' || (text.size() != 9 && text.size() != 7)) return std::nullopt;
  const std::string_view rgb = text.substr(text.size() - 6);
  std::array<uint8_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    unsigned v = 0;
    for (char ch : rgb.substr(2 * i, 2)) {
      const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return out;
}

// The channels Information.Image.Dimensions.Channels lists, in order: name, colour (its own, else the
// DisplaySetting channel of the same Id), wavelengths in nm, exposure (ns) in seconds.
std::vector<ChannelInfo> read_channels(const pugi::xml_node& metadata) {
  std::map<std::string, std::string> display;
  for (pugi::xml_node c : metadata.child("DisplaySetting").child("Channels").children("Channel")) {
    display[c.attribute("Id").value()] = c.child_value("Color");
  }
  std::vector<ChannelInfo> out;
  const pugi::xml_node list = metadata.child("Information").child("Image").child("Dimensions").child("Channels");
  for (pugi::xml_node c : list.children("Channel")) {
    ChannelInfo info;
    info.name = c.attribute("Name").value();
    std::string colour = c.child_value("Color");
    if (colour.empty()) colour = display[c.attribute("Id").value()];
    info.color = parse_colour(colour);
    auto number = [&](const char* name) -> std::optional<double> {
      auto v = parse_double(c.child_value(name));
      return v && std::isfinite(*v) && *v > 0 ? v : std::nullopt;
    };
    info.excitation_nm = number("ExcitationWavelength");
    info.emission_nm = number("EmissionWavelength");
    if (auto ns = number("ExposureTime")) info.exposure_s = *ns * 1e-9;
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace

Result<Metadata> parse_metadata(std::string xml_text) {
  Metadata m;
  m.xml = std::move(xml_text);
  PropertyMap& props = m.props;
  const std::string& xml = m.xml;
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) return corrupt("Couldn't parse metadata XML");
  XmlProperties flatten(props);
  const pugi::xml_node metadata = doc.child("ImageDocument").child("Metadata");
  for (const char* part : {"AttachmentInfos", "DisplaySetting", "Information", "Scaling"}) {
    if (pugi::xml_node n = metadata.child(part)) flatten.add(n);
  }
  m.channels = read_channels(metadata);
  for (pugi::xml_node scene : metadata.child("Information").child("Image").child("Dimensions").child("S").child("Scenes").children("Scene")) {
    auto index = parse_int64(scene.attribute("Index").value());
    if (index && *index >= 0 && *index < 100000) m.scene_names[*index] = scene.attribute("Name").value();
  }
  auto prop = [&](const std::string& k) -> const std::string* {
    auto it = props.find(k);
    return it == props.end() ? nullptr : &it->second;
  };
  const std::string *sx = prop("zeiss.Information.Image.SizeX"), *sy = prop("zeiss.Information.Image.SizeY");
  if (!sx || !sy) return corrupt("Couldn't read image dimensions");
  const auto width = parse_int64(*sx), height = parse_int64(*sy);
  if (!width || !height || *width <= 0 || *height <= 0) return corrupt("Couldn't parse image dimensions");
  m.width = *width;
  m.height = *height;
  if (const std::string* ss = prop("zeiss.Information.Image.SizeS")) {
    auto n = parse_int64(*ss);
    if (!n || *n <= 0 || *n > 100000) return corrupt("Couldn't parse image scene dimension");
    m.scenes = *n;
  }
  for (const char* axis : {"X", "Y"}) {
    if (const std::string* m = prop(std::string("zeiss.Scaling.Items.") + axis + ".Value")) {
      if (auto d = parse_double(*m))
        props[std::string("openslide.mpp-") + (axis[0] == 'X' ? "x" : "y")] = format_double(*d * 1e6);
    }
  }
  if (const std::string* id = prop("zeiss.Information.Image.ObjectiveSettings.ObjectiveRef.Id")) {
    if (const std::string* mag = prop("zeiss.Information.Instrument.Objectives." + *id + ".NominalMagnification")) {
      if (auto d = parse_double(*mag)) props["openslide.objective-power"] = format_double(*d);
    }
  }

  return m;
}

}  // namespace tilewise::formats::zeiss
