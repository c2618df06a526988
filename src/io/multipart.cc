#include "io/multipart.h"

#include <algorithm>
#include <cctype>

namespace tilewise::io {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string header_parameter(std::string_view value, std::string_view name) {
  // Parameters after the first ';', each name=value or name="quoted value" (a quoted value may hold ';').
  size_t at = value.find(';');
  const std::string wanted = lower(name);
  while (at != std::string_view::npos && at < value.size()) {
    ++at;
    const size_t eq = value.find('=', at);
    if (eq == std::string_view::npos) return "";
    const std::string key = lower(trim(value.substr(at, eq - at)));
    size_t v = eq + 1;
    while (v < value.size() && value[v] == ' ') ++v;
    std::string text;
    size_t next;
    if (v < value.size() && value[v] == '"') {
      size_t end = v + 1;
      while (end < value.size() && value[end] != '"') {
        if (value[end] == '\\' && end + 1 < value.size()) ++end;
        text += value[end++];
      }
      next = value.find(';', end);
    } else {
      next = value.find(';', v);
      text = std::string(trim(value.substr(v, next == std::string_view::npos ? std::string_view::npos : next - v)));
    }
    if (key == wanted) return text;
    at = next;
  }
  return "";
}

Result<std::vector<MultipartPart>> parse_multipart(std::string_view body, std::string_view content_type) {
  if (lower(trim(content_type.substr(0, content_type.find(';')))).rfind("multipart/", 0) != 0) {
    return invalid_argument("the answer is not multipart (Content-Type: " + std::string(content_type) + ")");
  }
  const std::string boundary = header_parameter(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 200) {
    return invalid_argument("a multipart answer without a usable boundary (Content-Type: " + std::string(content_type) + ")");
  }
  const std::string delimiter = "--" + boundary;
  // The first delimiter starts the body or a line; a preamble before it is ignored.
  size_t at = body.rfind(delimiter, 0) == 0 ? 0 : body.find("\r\n" + delimiter);
  if (at == std::string_view::npos) return corrupt("the multipart body holds no boundary");
  if (at != 0) at += 2;
  std::vector<MultipartPart> parts;
  while (true) {
    at += delimiter.size();
    if (body.substr(at, 2) == "--") return parts;  // the closing delimiter
    // the rest of the delimiter line (transport padding), then the part's headers up to an empty line
    const size_t line_end = body.find("\r\n", at);
    if (line_end == std::string_view::npos) return corrupt("the multipart body ends inside a boundary line");
    const size_t headers_end = body.find("\r\n\r\n", line_end);
    MultipartPart part;
    size_t content_length = std::string_view::npos;
    size_t data;
    if (body.substr(line_end, 4) == "\r\n\r\n") {
      data = line_end + 4;  // a part without headers
    } else {
      if (headers_end == std::string_view::npos) return corrupt("the multipart body ends inside a part's headers");
      data = headers_end + 4;
      for (size_t h = line_end + 2; h < headers_end + 2;) {
        const size_t e = body.find("\r\n", h);
        const std::string_view line = body.substr(h, e - h);
        h = e + 2;
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string key = lower(trim(line.substr(0, colon)));
        const std::string_view value = trim(line.substr(colon + 1));
        if (key == "content-type") part.content_type = value;
        if (key == "content-location") part.content_location = value;
        if (key == "content-length") {
          size_t n = 0;
          bool digits = !value.empty() && value.size() <= 18;
          for (char c : value) digits = digits && std::isdigit(static_cast<unsigned char>(c)), n = n * 10 + size_t(c - '0');
          if (!digits) return corrupt("a multipart part with an unreadable Content-Length: " + std::string(value));
          content_length = n;
        }
      }
    }
    // The part's bytes end at the next delimiter; a Content-Length, where given, must agree with it.
    const size_t next = body.find("\r\n" + delimiter, data);
    if (next == std::string_view::npos) {
      return corrupt("multipart part " + std::to_string(parts.size() + 1) + " is cut short (no boundary after it)");
    }
    if (content_length != std::string_view::npos && content_length != next - data) {
      // a part's bytes may hold the delimiter's text only where its length says so
      const size_t end = data + content_length;
      if (content_length > body.size() - data || body.substr(end, 2 + delimiter.size()) != "\r\n" + delimiter) {
        return corrupt("multipart part " + std::to_string(parts.size() + 1) + " holds " + std::to_string(next - data) +
                       " bytes, not its Content-Length " + std::to_string(content_length));
      }
      part.offset = data, part.length = content_length;
      parts.push_back(std::move(part));
      at = end + 2;
      continue;
    }
    part.offset = data, part.length = next - data;
    parts.push_back(std::move(part));
    at = next + 2;
  }
}

}  // namespace tilewise::io
