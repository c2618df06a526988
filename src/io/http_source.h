// Slides over HTTP(S): a Source whose reads are HTTP range requests (libcurl).
//
// Opening asks for the first byte (GET with a one-byte range: servers that answer HEAD differently from GET,
// such as pre-signed object-store URLs, still work) and keeps the size and the ETag (or Last-Modified). Reads
// go through a block cache (aligned blocks, least recently used, a byte budget): the planner's many small
// reads of directories and neighbouring tiles become a few requests, and the missing blocks of one read are
// fetched as one range. Each request names the version it expects (If-Match / If-Unmodified-Since), so a
// file replaced while open fails with a clear error rather than mixing pixels of two versions. Transient
// failures (connection errors, timeouts, 5xx, 429, a short body) are retried with backoff; 404 is NotFound,
// 401/403 say access was denied. Credentials in the URL (user:password@, the query string) never appear in
// names or errors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/source.h"

namespace tilewise::io {

// Whether `path` is an http:// or https:// URL (case-insensitive scheme).
bool is_http_url(const std::string& path);

// Opens the URL for range reads. NotFound (404), IoError (access denied, no range support, network), or
// Unsupported when tilewise was built without libcurl.
Result<std::shared_ptr<const Source>> open_http(const std::string& url);

// Extra headers for one request ("Name: value"), given its Range header's value: request signing (S3).
using RequestSigner = std::function<std::vector<std::string>(const std::string& range)>;
// open_http with the name errors show (instead of the redacted URL) and a signer called for every request.
Result<std::shared_ptr<const Source>> open_http(const std::string& url, std::string name, RequestSigner signer);

// One GET of a whole document (an object listing): retried as range reads are (connection failures, 5xx,
// 429); NotFound for 404, IoError for access denied, other statuses and answers over `max_bytes`.
// `signer` is called with an empty range. Unsupported without libcurl.
Result<std::string> http_get(const std::string& url, const std::string& name, const RequestSigner& signer,
                             size_t max_bytes = 16u << 20);

// Credentials a caller gives for HTTP(S) requests (OpenOptions): an OAuth 2 bearer token and extra headers
// ("Name: value"). Where both are empty, TILEWISE_HTTP_TOKEN and TILEWISE_HTTP_HEADERS (one header per line)
// stand in. Never part of names or errors.
struct HttpAuth {
  std::string bearer_token;
  std::vector<std::string> headers;
};
// The headers every request of `auth` carries.
std::vector<std::string> auth_headers(const HttpAuth& auth);

// open_http with credentials.
Result<std::shared_ptr<const Source>> open_http(const std::string& url, const HttpAuth& auth);

// A whole document and its Content-Type.
struct HttpAnswer {
  std::string body;
  std::string content_type;
};
// One GET with `headers` ("Name: value"), judged and retried as http_get (an answer over `max_bytes` is an
// IoError). Signed requests go through http_get.
Result<HttpAnswer> http_fetch(const std::string& url, const std::string& name, const std::vector<std::string>& headers,
                              size_t max_bytes);

// One part of a POST's body: `bytes`, or the whole file at `file` (streamed from disk, not held in memory).
struct PostPart {
  std::string bytes;
  std::string file;
};
// The server's answer to a POST: its status and body (at most the first MiB).
struct PostAnswer {
  long status = 0;
  std::string body;
};
// One POST of `parts` in order, with `headers` ("Name: value"). Connection failures, 5xx, 408 and 429 are
// retried with backoff (the body sent again from its start); any other status is returned for the caller to
// judge. IoError when the server cannot be reached or a file cannot be read; Unsupported without libcurl.
Result<PostAnswer> http_post(const std::string& url, const std::string& name, const std::vector<std::string>& headers,
                             const std::vector<PostPart>& parts);

// The URL as errors show it: without user information and without the query string.
std::string redact_url(const std::string& url);

// Percent-encodes a URL path (an object key): every byte but the unreserved characters and '/', as
// Signature Version 4 and the object stores' XML APIs expect.
std::string encode_url_path(const std::string& path);
// The same for a query parameter's name or value: '/' encoded too.
std::string encode_url_component(const std::string& text);

}  // namespace tilewise::io
