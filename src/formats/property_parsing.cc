#include "formats/property_parsing.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <clocale>
#include <cmath>
#include <cstdlib>

namespace tilewise::formats {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string strip(std::string_view s) {
  const char* ws = " \t\r\n\v\f";
  const size_t a = s.find_first_not_of(ws);
  if (a == std::string_view::npos) return "";
  const size_t b = s.find_last_not_of(ws);
  return std::string(s.substr(a, b - a + 1));
}

bool ends_with_ignoring_case(std::string_view s, std::string_view lower_suffix) {
  if (s.size() < lower_suffix.size()) return false;
  for (size_t i = 0; i < lower_suffix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[s.size() - lower_suffix.size() + i])) != lower_suffix[i]) return false;
  }
  return true;
}

std::optional<int64_t> parse_int64(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  // strtod honours the C locale's decimal point; metadata always uses '.', so parse in the "C" locale.
  static locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", nullptr);
  errno = 0;
  char* end = nullptr;
  const double v = strtod_l(s.c_str(), &end, c_locale);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string glib_base64_decode(std::string_view s) {
  std::string out;
  uint32_t acc = 0;
  int n = 0;
  char last[2] = {0, 0};  // the last two alphabet characters seen ('=' among them shortens the output)
  for (char ch : s) {
    const int v = ch == '=' ? 0 : internal::base64_value(ch);
    if (v < 0) continue;  // GLib skips characters outside the alphabet
    last[0] = last[1];
    last[1] = ch;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    if (++n == 4) {
      out.push_back(static_cast<char>(acc >> 16));
      out.push_back(static_cast<char>(acc >> 8));
      out.push_back(static_cast<char>(acc));
      acc = 0;
      n = 0;
    }
  }
  // An incomplete last group is dropped; '=' padding in the last two characters takes its bytes back.
  size_t drop = (last[1] == '=') + (last[0] == '=');
  out.resize(out.size() - std::min(drop, out.size()));
  return out;
}

}  // namespace tilewise::formats
