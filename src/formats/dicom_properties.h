// OpenSlide's `dicom.*` properties of a DICOM slide: every element of the file meta and the dataset (Pixel
// Data and the per-frame functional groups excluded) whose tag has a dictionary keyword, named by keyword,
// with "[i]" for each value of a multi-valued element and "Sequence[i]." for each item of a sequence;
// string values as stored (padding removed), FL/FD as OpenSlide formats doubles, integers in decimal;
// a tag (AT) as its group and element; binary values (OB, OW, OD, OF, OL, OV, UN) and group lengths left out.
#pragma once

#include "dicom/data_set.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {

void add_dicom_properties(const dicom::DataSet& dataset, const std::string& prefix, PropertyMap& props);

}  // namespace tilewise::formats
