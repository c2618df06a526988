// Base64 (RFC 4648, standard alphabet), as file formats and DICOM JSON's InlineBinary hold binary values.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tilewise::internal {

// A base64 alphabet character's value; -1 for anything else.
int base64_value(char ch);

// Decodes base64 (padding optional, whitespace ignored); nullopt on invalid input.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view s);

}  // namespace tilewise::internal
