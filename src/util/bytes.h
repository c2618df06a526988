// Fixed-width integers read from bytes in a stated byte order (file formats' fields: DICOM, CZI, MIRAX,
// NGR, JPEG and JPEG 2000 markers), independent of the host's byte order and alignment.
#pragma once

#include <cstdint>

namespace tilewise::internal {

inline uint16_t load_le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
inline uint64_t load_le64(const uint8_t* p) { return uint64_t{load_le32(p)} | uint64_t{load_le32(p + 4)} << 32; }
inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t load_be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace tilewise::internal
