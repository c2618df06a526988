// libFuzzer target: what a DICOMweb server answers. The first byte selects the reader: 0, a WADO-RS
// multipart/related body (boundary "b0undary") and each part's transfer-syntax parameter; 1, a series'
// metadata (DICOM JSON) made datasets, with their frame positions and strings read back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dicom/json_model.h"
#include "io/multipart.h"

using namespace tilewise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] == 0) {
    auto parts = io::parse_multipart(body, "multipart/related; type=\"application/octet-stream\"; boundary=b0undary");
    if (!parts.ok()) return 0;
    size_t total = 0;
    for (const io::MultipartPart& p : *parts) {
      total += body.substr(p.offset, p.length).size();  // every part lies inside the body
      (void)io::header_parameter(p.content_type, "transfer-syntax");
    }
    return total > size ? 1 : 0;
  }
  dicom::ParseLimits limits;
  limits.max_frames = 100000;
  auto instances = dicom::parse_json_metadata(body, limits);
  if (!instances.ok()) return 0;
  for (const dicom::JsonInstance& in : *instances) {
    for (const dicom::Element& e : in.file.dataset.elements) {
      if (!e.is_sequence()) (void)dicom::string_values(e);
    }
    (void)in.file.dataset.integer(dicom::tag(0x0028, 0x0008));
  }
  return 0;
}
