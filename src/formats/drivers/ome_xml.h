// What an OME-XML <Image> says about its pixels: the axes (channels, focal planes, time points), the sample
// type, each channel's metadata and which TIFF directory holds each plane (TiffData and DimensionOrder).
// Written against the OME schema 2016-06: https://docs.openmicroscopy.org/ome-model/latest/ome-tiff/specification.html
#pragma once

#include <pugixml.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "tilewise/status.h"
#include "tilewise/types.h"

namespace tilewise::formats::ome {

// Element names may carry a namespace prefix ("ome:Pixels"); these compare local names.
bool is(const pugi::xml_node& n, const char* local);
pugi::xml_node child(const pugi::xml_node& n, const char* local);
std::vector<pugi::xml_node> children(const pugi::xml_node& n, const char* local);

// Microns per unit of an OME length unit symbol; 0 when unknown.
double microns_per(const std::string& unit);

// One stored plane: `samples` channels from `channel` on at (z, t), in directory `ifd` of file `file`
// (empty: the file holding the XML).
struct StoredPlane {
  int32_t channel = 0, samples = 1, z = 0, t = 0;
  int64_t ifd = 0;
  std::string file;
};

struct Pixels {
  ImageAxes axes;                   // rgb: one 3-sample uint8 channel
  int32_t samples_per_channel = 1;  // samples of each <Channel> (3 for RGB)
  std::vector<StoredPlane> planes;  // in (t, z, channel) order
};

// Reads an <Image>'s <Pixels>: Unsupported for a pixel type or layout tilewise cannot give, Corrupt for
// sizes or TiffData that contradict each other.
Result<Pixels> read_pixels(const pugi::xml_node& pixels);

}  // namespace tilewise::formats::ome
