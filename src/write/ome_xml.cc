#include "write/ome_xml.h"

#include <pugixml.hpp>

#include <cstdint>
#include <sstream>

namespace tilewise::write {

namespace {

// OME's Pixels Type names: NumPy's, but float32 is "float".
const char* ome_type(SampleType type) { return type == SampleType::kFloat32 ? "float" : sample_type_name(type); }

std::string number(double v) {
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

}  // namespace

std::string ome_xml(const WritableImage& source, const std::string& creator) {
  const ImageAxes& axes = source.axes;
  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node ome = doc.append_child("OME");
  ome.append_attribute("xmlns") = "http://www.openmicroscopy.org/Schemas/OME/2016-06";
  ome.append_attribute("xmlns:xsi") = "http://www.w3.org/2001/XMLSchema-instance";
  ome.append_attribute("xsi:schemaLocation") =
      "http://www.openmicroscopy.org/Schemas/OME/2016-06 http://www.openmicroscopy.org/Schemas/OME/2016-06/ome.xsd";
  ome.append_attribute("Creator") = creator.c_str();
  pugi::xml_node image = ome.append_child("Image");
  image.append_attribute("ID") = "Image:0";
  image.append_attribute("Name") = source.name.c_str();
  pugi::xml_node pixels = image.append_child("Pixels");
  const int32_t planes = (axes.rgb ? 1 : axes.channels) * axes.z * axes.t;
  pixels.append_attribute("ID") = "Pixels:0";
  pixels.append_attribute("DimensionOrder") = "XYCZT";
  pixels.append_attribute("Type") = axes.rgb ? "uint8" : ome_type(axes.sample_type);
  pixels.append_attribute("SizeX") = static_cast<long long>(source.width);
  pixels.append_attribute("SizeY") = static_cast<long long>(source.height);
  pixels.append_attribute("SizeC") = axes.rgb ? 3 : axes.channels;
  pixels.append_attribute("SizeZ") = axes.z;
  pixels.append_attribute("SizeT") = axes.t;
  pixels.append_attribute("Interleaved") = axes.rgb ? "true" : "false";
  if (const auto& mpp = source.mpp) {
    pixels.append_attribute("PhysicalSizeX") = number(mpp->first).c_str();
    pixels.append_attribute("PhysicalSizeXUnit") = "µm";
    pixels.append_attribute("PhysicalSizeY") = number(mpp->second).c_str();
    pixels.append_attribute("PhysicalSizeYUnit") = "µm";
  }
  if (axes.z > 1 && axes.z_spacing > 0) {
    pixels.append_attribute("PhysicalSizeZ") = number(axes.z_spacing).c_str();
    pixels.append_attribute("PhysicalSizeZUnit") = "µm";
  }
  const int32_t channels = axes.rgb ? 1 : axes.channels;
  for (int32_t c = 0; c < channels; ++c) {
    pugi::xml_node channel = pixels.append_child("Channel");
    channel.append_attribute("ID") = ("Channel:0:" + std::to_string(c)).c_str();
    channel.append_attribute("SamplesPerPixel") = axes.rgb ? 3 : 1;
    if (axes.rgb || static_cast<size_t>(c) >= axes.channel_info.size()) continue;
    const ChannelInfo& info = axes.channel_info[static_cast<size_t>(c)];
    if (!info.name.empty()) channel.append_attribute("Name") = info.name.c_str();
    if (info.color) {
      // OME's Color: RGBA packed in a signed 32-bit integer
      const uint32_t rgba = (uint32_t{(*info.color)[0]} << 24) | (uint32_t{(*info.color)[1]} << 16) |
                            (uint32_t{(*info.color)[2]} << 8) | 0xFFu;
      channel.append_attribute("Color") = static_cast<int>(static_cast<int32_t>(rgba));
    }
    if (info.excitation_nm) channel.append_attribute("ExcitationWavelength") = number(*info.excitation_nm).c_str();
    if (info.emission_nm) channel.append_attribute("EmissionWavelength") = number(*info.emission_nm).c_str();
  }
  pugi::xml_node tiff_data = pixels.append_child("TiffData");
  tiff_data.append_attribute("IFD") = 0;
  tiff_data.append_attribute("PlaneCount") = planes;
  if (!axes.rgb) {
    for (int32_t t = 0; t < axes.t; ++t) {
      for (int32_t z = 0; z < axes.z; ++z) {
        for (int32_t c = 0; c < axes.channels; ++c) {
          const ChannelInfo* info = static_cast<size_t>(c) < axes.channel_info.size() ? &axes.channel_info[static_cast<size_t>(c)] : nullptr;
          if (!info || !info->exposure_s) continue;
          pugi::xml_node plane = pixels.append_child("Plane");
          plane.append_attribute("TheC") = c;
          plane.append_attribute("TheZ") = z;
          plane.append_attribute("TheT") = t;
          plane.append_attribute("ExposureTime") = number(*info->exposure_s).c_str();
          plane.append_attribute("ExposureTimeUnit") = "s";
        }
      }
    }
  }
  std::ostringstream out;
  doc.save(out, "", pugi::format_raw);
  return out.str();
}

}  // namespace tilewise::write
