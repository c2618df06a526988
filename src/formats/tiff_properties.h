// Property helpers shared by the format drivers: OpenSlide's `tiff.*` keys from a directory, the
// `openslide.level[N].*` keys, and number formatting identical to OpenSlide's (g_ascii_dtostr, "%.17g").
#pragma once

#include <map>
#include <string>

#include "formats/slide_model.h"
#include "tiff/ifd.h"
#include "tilewise/status.h"

namespace tilewise::formats {

using PropertyMap = std::map<std::string, std::string>;

std::string format_double(double v);

// tiff.ImageDescription, tiff.Make, ..., tiff.XResolution, tiff.ResolutionUnit as OpenSlide reports them.
void add_tiff_properties(const tiff::Ifd& ifd, PropertyMap& props);

// openslide.level-count and openslide.level[N].{width,height,downsample,tile-width,tile-height};
// openslide.quickhash-1 over the last (smallest) level and IFD 0's strings (formats/quickhash.h; when the
// level's bytes cannot be read the property is left out and a warning recorded); also
// openslide.mpp-x/-y and the model's mpp when they are set in props; openslide.icc-size.
void add_standard_properties(SlideModel& model, PropertyMap& props);

// Removes openslide.level[N].tile-width/-height: OpenSlide gives no tile size for levels that are not one
// regular tile grid (positioned levels: MIRAX with offsets, Leica, Ventana BIF).
void drop_tile_size_properties(SlideModel& model);

// Resolution from a directory's XResolution/YResolution in microns per pixel when ResolutionUnit is
// centimetre (OpenSlide's rule for generic TIFF: inch resolutions are too often a 72-dpi placeholder).
void add_mpp_from_resolution(const tiff::Ifd& ifd, PropertyMap& props);

}  // namespace tilewise::formats
