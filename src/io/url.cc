// URL helpers of the I/O layer, built with or without libcurl.
#include <cctype>
#include <string_view>

#include "io/http_source.h"

namespace tilewise::io {

bool is_http_url(const std::string& path) {
  auto starts = [&](std::string_view prefix) {
    if (path.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(path[i])) != prefix[i]) return false;
    }
    return true;
  };
  return starts("http://") || starts("https://");
}

std::string redact_url(const std::string& url) {
  std::string out = url.substr(0, url.find_first_of("?#"));
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t host = scheme + 3;
    const size_t at = out.find('@', host);
    const size_t slash = out.find('/', host);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) out.erase(host, at + 1 - host);
  }
  return out;
}

namespace {

std::string percent_encode(const std::string& text, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string encode_url_path(const std::string& path) { return percent_encode(path, true); }

std::string encode_url_component(const std::string& text) { return percent_encode(text, false); }

}  // namespace tilewise::io
