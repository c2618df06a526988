#include "write/srgb_profile.h"

#include <lcms2.h>

namespace tilewise::write {

const std::vector<uint8_t>& srgb_icc_profile() {
  static const std::vector<uint8_t> profile = [] {
    std::vector<uint8_t> bytes;
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    if (!srgb) return bytes;
    cmsUInt32Number size = 0;
    if (cmsSaveProfileToMem(srgb, nullptr, &size) && size > 0) {
      bytes.resize(size);
      if (!cmsSaveProfileToMem(srgb, bytes.data(), &size)) bytes.clear();
    }
    cmsCloseProfile(srgb);
    return bytes;
  }();
  return profile;
}

}  // namespace tilewise::write
