// URL helpers of the I/O layer, built with or without libcurl.
#include <cctype>
#include <string_view>

#include "io/http_source.h"
#include "util/settings.h"

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

std::vector<std::string> auth_headers(const HttpAuth& auth) {
  std::string token = auth.bearer_token;
  std::vector<std::string> out = auth.headers;
  if (token.empty() && out.empty()) {
    token = internal::settings().http_token;
    const std::string& lines = internal::settings().http_headers;
    for (size_t at = 0; at < lines.size();) {
      size_t end = lines.find('\n', at);
      if (end == std::string::npos) end = lines.size();
      std::string line = lines.substr(at, end - at);
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.find(':') != std::string::npos) out.push_back(line);
      at = end + 1;
    }
  }
  if (!token.empty()) out.push_back("Authorization: Bearer " + token);
  return out;
}

Result<std::shared_ptr<const Source>> open_http(const std::string& url, const HttpAuth& auth) {
  std::vector<std::string> headers = auth_headers(auth);
  if (headers.empty()) return open_http(url);
  return open_http(url, redact_url(url), [headers = std::move(headers)](const std::string&) { return headers; });
}

std::string encode_url_path(const std::string& path) { return percent_encode(path, true); }

std::string encode_url_component(const std::string& text) { return percent_encode(text, false); }

}  // namespace tilewise::io
