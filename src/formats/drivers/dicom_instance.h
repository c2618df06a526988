// What the DICOM WSI driver (dicom_wsi.cc) knows of one instance of a series, and the instances of a
// DICOMweb series (dicom_web.cc), which it reads as it reads a folder's files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dicom/data_set.h"
#include "io/dicomweb.h"
#include "io/source.h"
#include "tilewise/status.h"

namespace tilewise::formats::dicom_wsi {

// One instance (file) of the series.
struct Instance {
  std::shared_ptr<const io::Source> source;
  dicom::File file;
  std::string series, pyramid, sop_instance, flavour, concatenation;
  int64_t width = 0, height = 0, frames = 1, concat_number = 1, frame_offset = 0, instance_number = 0;
  int32_t tile_width = 0, tile_height = 0;
  std::vector<std::string> paths;  // Optical Path Identifiers, in the sequence's order ("" if it has none)
  int64_t focal_planes = 1;
  double z0 = 0, z_spacing = 0;  // micrometres: the first focal plane, the spacing of TILED_FULL ones
  bool by_number = false;        // frames fetched by number (a DICOMweb instance), not found in the file
};

// Whether the driver decodes frames of a transfer syntax (what its tile description accepts).
bool decodable(const std::string& transfer_syntax);

// Ok when the file meta names VL Whole Slide Microscopy Image Storage; Unsupported otherwise.
Status check_sop_class(const dicom::File& file);

// An instance from its parsed file (or its DICOM JSON), read from `source`.
Result<Instance> load_parsed(std::shared_ptr<const io::Source> source, dicom::File file);

// A DICOMweb series' WSI instances from its metadata, the level-0 one (the largest VOLUME image) first; each
// instance's frames in the syntax the server answers in (io/dicomweb.h); what was left out goes to `warnings`.
Result<std::vector<Instance>> web_instances(const io::DicomWebSeries& series, std::vector<std::string>& warnings);

}  // namespace tilewise::formats::dicom_wsi
