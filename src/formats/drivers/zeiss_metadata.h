// The metadata XML of a Zeiss CZI (drivers/zeiss.cc reads the segment): OpenSlide 4.0.1's zeiss.<path>
// properties (attributes and non-blank text of AttachmentInfos, DisplaySetting, Information and Scaling;
// members of a list element named by their Id or Name; elements whose name repeats among their siblings
// left out), the level-0 size (Information.Image.SizeX/SizeY), the scene count (SizeS) and names, the mpp
// (Scaling's X/Y Value, metres), the objective power (the objective's NominalMagnification), and the
// channels (Information.Image.Dimensions.Channels: names, wavelengths in nm, exposure in ns, colour
// #AARRGGBB there or in DisplaySetting).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "formats/property_parsing.h"
#include "formats/tiff_properties.h"
#include "tilewise/status.h"
#include "tilewise/types.h"

namespace tilewise::formats::zeiss {

struct Metadata {
  std::string xml;
  PropertyMap props;
  int64_t width = 0, height = 0, scenes = 1;
  std::vector<ChannelInfo> channels;  // as Information.Image.Dimensions.Channels lists them
  std::map<int64_t, std::string> scene_names;  // by scene index, as Dimensions.S.Scenes names them
};

Result<Metadata> parse_metadata(std::string xml);

}  // namespace tilewise::formats::zeiss
