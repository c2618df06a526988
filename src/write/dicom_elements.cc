#include "write/dicom_elements.h"

#include <cstring>
#include <random>

namespace tilewise::write {

namespace {

bool long_length(const char* vr) {  // VRs with a reserved 2 bytes and a 32-bit length (PS3.5 Table 7.1-1)
  for (const char* v : {"OB", "OD", "OF", "OL", "OV", "OW", "SQ", "UC", "UN", "UR", "UT"}) {
    if (std::strncmp(vr, v, 2) == 0) return true;
  }
  return false;
}

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (x86-64, AArch64)
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

}  // namespace

void DicomDataSet::element(uint32_t tag, const char* vr, std::span<const uint8_t> value) {
  std::vector<uint8_t> e;
  put(e, static_cast<uint16_t>(tag >> 16));
  put(e, static_cast<uint16_t>(tag & 0xFFFF));
  e.push_back(static_cast<uint8_t>(vr[0]));
  e.push_back(static_cast<uint8_t>(vr[1]));
  if (long_length(vr)) {
    put(e, uint16_t{0});
    put(e, static_cast<uint32_t>(value.size()));
  } else {
    put(e, static_cast<uint16_t>(value.size()));
  }
  e.insert(e.end(), value.begin(), value.end());
  elements_[tag] = std::move(e);
}

DicomDataSet& DicomDataSet::str(uint32_t tag, const char* vr, const std::string& value) {
  std::vector<uint8_t> bytes(value.begin(), value.end());
  if (bytes.size() % 2) bytes.push_back(std::strncmp(vr, "UI", 2) == 0 ? 0 : ' ');
  element(tag, vr, bytes);
  return *this;
}

DicomDataSet& DicomDataSet::us(uint32_t tag, std::initializer_list<uint16_t> values) {
  std::vector<uint8_t> bytes;
  for (uint16_t v : values) put(bytes, v);
  element(tag, "US", bytes);
  return *this;
}

DicomDataSet& DicomDataSet::ul(uint32_t tag, uint32_t value) {
  std::vector<uint8_t> bytes;
  put(bytes, value);
  element(tag, "UL", bytes);
  return *this;
}

DicomDataSet& DicomDataSet::fl(uint32_t tag, float value) {
  std::vector<uint8_t> bytes;
  put(bytes, value);
  element(tag, "FL", bytes);
  return *this;
}

DicomDataSet& DicomDataSet::fd(uint32_t tag, double value) {
  std::vector<uint8_t> bytes;
  put(bytes, value);
  element(tag, "FD", bytes);
  return *this;
}

DicomDataSet& DicomDataSet::at(uint32_t tag, uint32_t value) {
  std::vector<uint8_t> bytes;
  put(bytes, static_cast<uint16_t>(value >> 16));
  put(bytes, static_cast<uint16_t>(value & 0xFFFF));
  element(tag, "AT", bytes);
  return *this;
}

DicomDataSet& DicomDataSet::ob(uint32_t tag, std::span<const uint8_t> bytes) {
  std::vector<uint8_t> padded(bytes.begin(), bytes.end());
  if (padded.size() % 2) padded.push_back(0);
  element(tag, "OB", padded);
  return *this;
}

DicomDataSet& DicomDataSet::sequence(uint32_t tag, const std::vector<DicomDataSet>& items) {
  std::vector<uint8_t> bytes;
  for (const DicomDataSet& item : items) {
    const std::vector<uint8_t> body = item.encode();
    put(bytes, uint16_t{0xFFFE});
    put(bytes, uint16_t{0xE000});
    put(bytes, static_cast<uint32_t>(body.size()));
    bytes.insert(bytes.end(), body.begin(), body.end());
  }
  element(tag, "SQ", bytes);
  return *this;
}

std::vector<uint8_t> DicomDataSet::encode() const {
  std::vector<uint8_t> out;
  for (const auto& [tag, bytes] : elements_) out.insert(out.end(), bytes.begin(), bytes.end());
  return out;
}

DicomDataSet code_item(const std::string& value, const std::string& scheme, const std::string& meaning) {
  DicomDataSet item;
  item.str(0x00080100, "SH", value).str(0x00080102, "SH", scheme).str(0x00080104, "LO", meaning);
  return item;
}

std::string new_uid() {
  std::random_device device;  // the operating system's entropy (getrandom): 128 fresh bits per UID
  unsigned __int128 n = 0;
  for (int i = 0; i < 4; ++i) n = (n << 32) | device();
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(n % 10)));
    n /= 10;
  } while (n != 0);
  return "2.25." + digits;
}

}  // namespace tilewise::write
