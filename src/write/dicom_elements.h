// DICOM data sets written as explicit VR little endian (PS3.5 7.1.2): elements kept sorted by tag, strings
// padded to even lengths (UI with NUL, the rest with spaces), sequences and items of defined length. What
// the DICOM WSI writer needs of a DICOM encoder, no more: tilewise reads DICOM through src/dicom/, and the
// data dictionary and transfer syntaxes it writes are the few it names.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tilewise::write {

class DicomDataSet {
 public:
  // Strings: AE AS CS DA DS DT IS LO LT PN SH TM UI UC UT, several values joined with '\'.
  DicomDataSet& str(uint32_t tag, const char* vr, const std::string& value);
  DicomDataSet& us(uint32_t tag, std::initializer_list<uint16_t> values);
  DicomDataSet& ul(uint32_t tag, uint32_t value);
  DicomDataSet& fl(uint32_t tag, float value);
  DicomDataSet& fd(uint32_t tag, double value);
  DicomDataSet& at(uint32_t tag, uint32_t value);  // an attribute tag
  DicomDataSet& ob(uint32_t tag, std::span<const uint8_t> bytes);
  // A sequence of these items (possibly none).
  DicomDataSet& sequence(uint32_t tag, const std::vector<DicomDataSet>& items);
  // The elements in tag order.
  std::vector<uint8_t> encode() const;

 private:
  void element(uint32_t tag, const char* vr, std::span<const uint8_t> value);
  std::map<uint32_t, std::vector<uint8_t>> elements_;
};

// A coded concept (Code Value, Coding Scheme Designator, Code Meaning) as a sequence item.
DicomDataSet code_item(const std::string& value, const std::string& scheme, const std::string& meaning);

// A new globally unique identifier: "2.25." and a random 128-bit number (PS3.5 B.2).
std::string new_uid();

}  // namespace tilewise::write
