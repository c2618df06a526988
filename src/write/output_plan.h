// What convert writes for an image (tilewise/convert.h): the format, resolved from the output's name where
// the options name none; the tile coding; how each level is made from the one before; and the planes in
// the order the format stores them - every option checked against what the format can describe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilewise/convert.h"
#include "tilewise/status.h"
#include "write/downsample.h"
#include "write/tile_encoder.h"

namespace tilewise::write {

struct OutputPlan {
  std::string format;  // "tiff", "ome-tiff", "svs", "ome-zarr", "dicom"
  TileCoding coding;
  Downsample filter = Downsample::kMean;
  int32_t samples = 3;  // interleaved in each plane: 3 for RGB, else 1
  SampleType type = SampleType::kUint8;
  struct Plane {
    int32_t c = 0, z = 0, t = 0;
  };
  // XYCZT for the OME outputs, optical path by optical path for DICOM; an RGB image's focal planes and time
  // points where the format describes them (OME-TIFF, OME-Zarr), else its default focal plane
  std::vector<Plane> planes;
};

// The format `output` is written as: `named` when not empty, else from the output's name (*.ome.tif[f],
// *.tif[f], *.svs, *.zarr); "" when neither says.
std::string output_format(const std::string& output, const std::string& named);

// The plan for writing `image` to `output`; InvalidArgument or Unsupported as tilewise::convert states.
Result<OutputPlan> plan_output(const WritableImage& image, const std::string& output, const ConvertOptions& options);

}  // namespace tilewise::write
