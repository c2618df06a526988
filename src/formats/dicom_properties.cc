#include "formats/dicom_properties.h"

namespace tilewise::formats {

namespace {

std::vector<std::string> values_as_strings(const dicom::Element& e) {
  const std::string_view vr = e.vr_view();
  if (vr == "FL" || vr == "FD") {
    std::vector<std::string> out;
    for (double d : dicom::float_values(e)) out.push_back(format_double(d));
    return out;
  }
  if (vr == "AT") {  // libdicom reads a tag as its two 16-bit halves: group, then element
    std::vector<std::string> out;
    for (size_t at = 0; at + 2 <= e.value.size(); at += 2)
      out.push_back(std::to_string(e.value[at] | e.value[at + 1] << 8));
    return out;
  }
  if (vr == "US" || vr == "SS" || vr == "UL" || vr == "SL" || vr == "SV") {
    std::vector<std::string> out;
    for (int64_t v : dicom::integer_values(e)) out.push_back(std::to_string(v));
    return out;
  }
  if (vr == "UV") {
    std::vector<std::string> out;
    for (int64_t v : dicom::integer_values(e)) out.push_back(std::to_string(static_cast<uint64_t>(v)));
    return out;
  }
  static constexpr std::string_view kBinary[] = {"OB", "OW", "OD", "OF", "OL", "OV", "UN"};
  for (std::string_view b : kBinary) {
    if (vr == b) return {};
  }
  return dicom::stored_string_values(e);
}

}  // namespace

void add_dicom_properties(const dicom::DataSet& dataset, const std::string& prefix, PropertyMap& props) {
  for (const dicom::Element& e : dataset.elements) {
    const std::string_view keyword = dicom::keyword(e.tag);
    if (keyword.empty() || (e.tag & 0xFFFF) == 0) continue;
    const std::string name = prefix + "." + std::string(keyword);
    if (e.is_sequence()) {
      for (size_t i = 0; i < e.items.size(); ++i)
        add_dicom_properties(e.items[i], name + "[" + std::to_string(i) + "]", props);
      continue;
    }
    const std::vector<std::string> values = values_as_strings(e);
    if (values.size() == 1) {
      props[name] = values[0];
    } else {
      for (size_t i = 0; i < values.size(); ++i) props[name + "[" + std::to_string(i) + "]"] = values[i];
    }
  }
}

}  // namespace tilewise::formats
