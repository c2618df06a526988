// Typed reads of an Ifd's private (vendor) tags, as OpenSlide's tifflike getters read them: the first value
// of a floating-point or rational tag, or of a signed integer tag; all values of an unsigned integer tag;
// an ASCII/UNDEFINED/BYTE tag as text cut at the first NUL. nullopt when the tag is absent, empty or of another kind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tiff/ifd.h"

namespace tilewise::tiff {

const PrivateTag* find_private_tag(const Ifd& ifd, uint16_t tag);
std::optional<double> private_double(const Ifd& ifd, uint16_t tag);
std::optional<int64_t> private_sint(const Ifd& ifd, uint16_t tag);
std::optional<std::vector<uint64_t>> private_uints(const Ifd& ifd, uint16_t tag);
std::optional<std::string> private_text(const Ifd& ifd, uint16_t tag);

}  // namespace tilewise::tiff
