#include "formats/drivers/ome_xml.h"

#include <cstring>
#include <optional>

#include "formats/property_parsing.h"

namespace tilewise::formats::ome {

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

double microns_per(const std::string& unit) {
  if (unit.empty() || unit == "\xC2\xB5m" || unit == "um" || unit == "\xCE\xBCm") return 1.0;
  if (unit == "nm") return 1e-3;
  if (unit == "mm") return 1e3;
  if (unit == "cm") return 1e4;
  if (unit == "m") return 1e6;
  return 0.0;
}

namespace {

Result<SampleType> sample_type(const std::string& type) {
  if (type == "uint8") return SampleType::kUint8;
  if (type == "uint16") return SampleType::kUint16;
  if (type == "uint32") return SampleType::kUint32;
  if (type == "int8") return SampleType::kInt8;
  if (type == "int16") return SampleType::kInt16;
  if (type == "int32") return SampleType::kInt32;
  if (type == "float") return SampleType::kFloat32;
  return unsupported("OME-TIFF pixel type '" + type + "' is not supported (8-, 16- and 32-bit integers and float are)");
}

int64_t int_attribute(const pugi::xml_node& n, const char* name, int64_t fallback) {
  return parse_int64(n.attribute(name).value()).value_or(fallback);
}

// Nanometres per unit of an OME wavelength unit; 0 when unknown.
double nanometres_per(const std::string& unit) {
  if (unit.empty() || unit == "nm") return 1.0;
  if (unit == "\xC2\xB5m" || unit == "um" || unit == "\xCE\xBCm") return 1e3;
  if (unit == "pm") return 1e-3;
  if (unit == "\xC3\x85" || unit == "\xE2\x84\xAB") return 0.1;  // angstrom
  return 0.0;
}

// Seconds per unit of an OME time unit; 0 when unknown.
double seconds_per(const std::string& unit) {
  if (unit.empty() || unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "\xC2\xB5s" || unit == "us" || unit == "\xCE\xBCs") return 1e-6;
  if (unit == "ns") return 1e-9;
  if (unit == "min") return 60.0;
  return 0.0;
}

std::optional<double> measure(const pugi::xml_node& n, const char* name, double (*per)(const std::string&)) {
  auto value = parse_double(n.attribute(name).value());
  const double scale = per(n.attribute((std::string(name) + "Unit").c_str()).value());
  if (!value || scale <= 0) return std::nullopt;
  return *value * scale;
}

ChannelInfo channel_info(const pugi::xml_node& c) {
  ChannelInfo info;
  info.name = c.attribute("Name").value();
  if (auto rgba = parse_int64(c.attribute("Color").value())) {  // a signed 32-bit RGBA value
    const auto v = static_cast<uint32_t>(*rgba);
    info.color = std::array<uint8_t, 3>{static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
                                        static_cast<uint8_t>(v >> 8)};
  }
  info.excitation_nm = measure(c, "ExcitationWavelength", nanometres_per);
  info.emission_nm = measure(c, "EmissionWavelength", nanometres_per);
  return info;
}

}  // namespace

Result<Pixels> read_pixels(const pugi::xml_node& pixels) {
  Pixels out;
  const int64_t size_c = int_attribute(pixels, "SizeC", 1), size_z = int_attribute(pixels, "SizeZ", 1),
                size_t_ = int_attribute(pixels, "SizeT", 1);
  constexpr int64_t kMaxAxis = 1 << 20;
  if (size_c < 1 || size_z < 1 || size_t_ < 1 || size_c > kMaxAxis || size_z > kMaxAxis || size_t_ > kMaxAxis ||
      size_c * size_z * size_t_ > kMaxAxis) {
    return corrupt("OME-XML Pixels sizes C=" + std::to_string(size_c) + " Z=" + std::to_string(size_z) +
                   " T=" + std::to_string(size_t_) + " are out of range");
  }
  const std::string type = pixels.attribute("Type").value();
  TW_ASSIGN_OR_RETURN(out.axes.sample_type, sample_type(type));

  const auto channels = children(pixels, "Channel");
  const int64_t spp = channels.empty() ? 1 : int_attribute(channels[0], "SamplesPerPixel", 1);
  if (spp < 1 || size_c % spp != 0) {
    return corrupt("OME-XML SizeC=" + std::to_string(size_c) + " is not a multiple of the channels' " +
                   std::to_string(spp) + " samples per pixel");
  }
  const int64_t stored_c = size_c / spp;  // planes per (z, t)
  if (!channels.empty() && static_cast<int64_t>(channels.size()) != stored_c) {
    return corrupt("OME-XML has " + std::to_string(channels.size()) + " Channel elements for SizeC=" +
                   std::to_string(size_c) + " of " + std::to_string(spp) + " samples each");
  }
  for (const pugi::xml_node& c : channels) {
    if (int_attribute(c, "SamplesPerPixel", 1) != spp) {
      return unsupported("OME-TIFF channels of different samples per pixel are not supported");
    }
  }
  out.samples_per_channel = static_cast<int32_t>(spp);
  out.axes.channels = static_cast<int32_t>(size_c);
  out.axes.z = static_cast<int32_t>(size_z);
  out.axes.t = static_cast<int32_t>(size_t_);
  if (size_z > 1) out.axes.z_spacing = std::max(0.0, measure(pixels, "PhysicalSizeZ", microns_per).value_or(0.0));
  out.axes.rgb = spp == 3 && stored_c == 1 && out.axes.sample_type == SampleType::kUint8;
  for (int64_t c = 0; c < stored_c; ++c) {
    ChannelInfo info = channels.empty() ? ChannelInfo{} : channel_info(channels[static_cast<size_t>(c)]);
    for (const pugi::xml_node& plane : children(pixels, "Plane")) {
      if (int_attribute(plane, "TheC", 0) == c) {
        info.exposure_s = measure(plane, "ExposureTime", seconds_per);
        break;
      }
    }
    for (int64_t s = 0; s < spp; ++s) out.axes.channel_info.push_back(info);
  }
  if (out.axes.rgb) {
    const char* names[] = {"R", "G", "B"};
    for (int s = 0; s < 3; ++s) {
      if (out.axes.channel_info[static_cast<size_t>(s)].name.empty()) out.axes.channel_info[static_cast<size_t>(s)].name = names[s];
    }
  }

  // Plane number -> (c, z, t): DimensionOrder names the axes from the fastest (after X and Y).
  std::string order = pixels.attribute("DimensionOrder").value();
  if (order.size() != 5 || order.compare(0, 2, "XY") != 0 || order.find('C') == std::string::npos ||
      order.find('Z') == std::string::npos || order.find('T') == std::string::npos) {
    if (!order.empty()) return corrupt("OME-XML DimensionOrder '" + order + "' is not one of XY with C, Z and T");
    order = "XYCZT";
  }
  const auto size_of = [&](char axis) { return axis == 'C' ? stored_c : axis == 'Z' ? size_z : size_t_; };
  const int64_t plane_count = stored_c * size_z * size_t_;
  const auto number = [&](int64_t c, int64_t z, int64_t t) {
    int64_t p = 0, stride = 1;
    for (int i = 2; i < 5; ++i) {
      const char axis = order[static_cast<size_t>(i)];
      p += (axis == 'C' ? c : axis == 'Z' ? z : t) * stride;
      stride *= size_of(axis);
    }
    return p;
  };

  std::vector<int64_t> ifd_of(static_cast<size_t>(plane_count), -1);
  std::vector<std::string> file_of(static_cast<size_t>(plane_count));
  const auto tiff_data = children(pixels, "TiffData");
  if (tiff_data.empty()) {
    for (int64_t p = 0; p < plane_count; ++p) ifd_of[static_cast<size_t>(p)] = p;
  }
  for (const pugi::xml_node& td : tiff_data) {
    const int64_t ifd = int_attribute(td, "IFD", 0);
    const int64_t first_c = int_attribute(td, "FirstC", 0), first_z = int_attribute(td, "FirstZ", 0),
                  first_t = int_attribute(td, "FirstT", 0);
    if (ifd < 0 || first_c < 0 || first_c >= stored_c || first_z < 0 || first_z >= size_z || first_t < 0 ||
        first_t >= size_t_) {
      return corrupt("OME-XML TiffData IFD=" + std::to_string(ifd) + " FirstC=" + std::to_string(first_c) +
                     " FirstZ=" + std::to_string(first_z) + " FirstT=" + std::to_string(first_t) +
                     " lies outside the image");
    }
    // Without PlaneCount, a lone TiffData holds every plane and one of several holds one (the schema's rule).
    const int64_t count = int_attribute(td, "PlaneCount", tiff_data.size() == 1 && !td.attribute("IFD") ? plane_count : 1);
    const int64_t start = number(first_c, first_z, first_t);
    if (count < 0 || count > plane_count - start) {
      return corrupt("OME-XML TiffData PlaneCount=" + std::to_string(count) + " runs past the image's " +
                     std::to_string(plane_count) + " planes");
    }
    const pugi::xml_node uuid = child(td, "UUID");
    const std::string file = uuid ? uuid.attribute("FileName").value() : "";
    for (int64_t k = 0; k < count; ++k) {
      ifd_of[static_cast<size_t>(start + k)] = ifd + k;
      file_of[static_cast<size_t>(start + k)] = file;
    }
  }
  for (int64_t t = 0; t < size_t_; ++t) {
    for (int64_t z = 0; z < size_z; ++z) {
      for (int64_t c = 0; c < stored_c; ++c) {
        const int64_t p = number(c, z, t);
        if (ifd_of[static_cast<size_t>(p)] < 0) {
          return corrupt("OME-XML TiffData names no directory for channel " + std::to_string(c) + " z " +
                         std::to_string(z) + " t " + std::to_string(t));
        }
        StoredPlane sp;
        sp.channel = static_cast<int32_t>(c * spp);
        sp.samples = static_cast<int32_t>(spp);
        sp.z = static_cast<int32_t>(z);
        sp.t = static_cast<int32_t>(t);
        sp.ifd = ifd_of[static_cast<size_t>(p)];
        sp.file = file_of[static_cast<size_t>(p)];
        out.planes.push_back(std::move(sp));
      }
    }
  }
  return out;
}

}  // namespace tilewise::formats::ome
