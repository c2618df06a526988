// Small text helpers for vendor metadata: splitting, trimming, strict number parsing (the whole string
// must be a number, as OpenSlide's _openslide_parse_* require), and base64.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/base64.h"

namespace tilewise::formats {

std::vector<std::string> split(std::string_view s, char sep);
std::string strip(std::string_view s);  // ASCII whitespace at both ends
// Whether `s` ends with `lower_suffix` (given in lower case), ignoring the case of ASCII letters.
bool ends_with_ignoring_case(std::string_view s, std::string_view lower_suffix);
std::optional<int64_t> parse_int64(const std::string& s);
std::optional<double> parse_double(const std::string& s);
using internal::base64_decode;  // util/base64.h
// GLib's g_base64_decode, as OpenSlide uses it (Leica barcodes): characters outside the alphabet are
// skipped, an incomplete last group is dropped; never fails.
std::string glib_base64_decode(std::string_view s);

}  // namespace tilewise::formats
