// multipart/related bodies (RFC 2046, 2387), as DICOMweb answers WADO-RS frame and bulk-data requests: the
// boundary from the answer's Content-Type, then each part's headers and bytes. Every offset is checked against
// the body; a body cut short (no closing delimiter, a part shorter than its Content-Length) is Corrupt, so the
// caller can ask again rather than decode half a frame.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::io {

struct MultipartPart {
  std::string content_type;      // the part's Content-Type header (empty when it has none)
  std::string content_location;  // its Content-Location header
  size_t offset = 0;             // its bytes: body[offset, offset + length)
  size_t length = 0;
};

// A parameter of a header value such as `multipart/related; type="image/jpeg"; boundary=abc`, unquoted
// (names compared without case); empty when absent.
std::string header_parameter(std::string_view value, std::string_view name);

// The parts of `body`, answered with Content-Type `content_type`. InvalidArgument when the answer is not
// multipart (or names no boundary), Corrupt when the body does not hold what it announces.
Result<std::vector<MultipartPart>> parse_multipart(std::string_view body, std::string_view content_type);

}  // namespace tilewise::io
