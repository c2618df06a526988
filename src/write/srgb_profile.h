// The sRGB ICC profile (IEC 61966-2-1), made by Little CMS: what a DICOM optical path of a slide without a
// profile of its own declares (its ICC Profile is required for colour images).
#pragma once

#include <cstdint>
#include <vector>

namespace tilewise::write {

const std::vector<uint8_t>& srgb_icc_profile();

}  // namespace tilewise::write
