// The OME-XML of an OME-TIFF that convert writes: one Image whose Pixels (DimensionOrder XYCZT) are stored
// one plane per directory of the main chain from IFD 0 (each plane's reduced levels its SubIFDs), with the
// image's channels (name, colour, wavelengths), per-plane exposure and physical pixel size where the image
// states them. An RGB image's planes (its focal planes and time points) are each three interleaved samples
// (one Channel, SamplesPerPixel 3).
#pragma once

#include <string>

#include "tilewise/convert.h"

namespace tilewise::write {

// The document for `image` (its name, axes and level 0), written by `creator`.
std::string ome_xml(const WritableImage& image, const std::string& creator);

}  // namespace tilewise::write
