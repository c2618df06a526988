// open_http without libcurl (a build on a machine without its development files, such as the lent GPU
// machine): URLs are refused as Unsupported, local files read as always.
#include "io/http_source.h"

namespace tilewise::io {

Result<std::shared_ptr<const Source>> open_http(const std::string& url) {
  return unsupported(redact_url(url) + ": tilewise was built without libcurl: no HTTP(S) sources");
}

Result<std::shared_ptr<const Source>> open_http(const std::string&, std::string name, RequestSigner) {
  return unsupported(name + ": tilewise was built without libcurl: no remote sources");
}

Result<std::string> http_get(const std::string&, const std::string& name, const RequestSigner&, size_t) {
  return unsupported(name + ": tilewise was built without libcurl: no remote sources");
}

Result<HttpAnswer> http_fetch(const std::string&, const std::string& name, const std::vector<std::string>&, size_t) {
  return unsupported(name + ": tilewise was built without libcurl: no remote sources");
}

Result<PostAnswer> http_post(const std::string&, const std::string& name, const std::vector<std::string>&,
                             const std::vector<PostPart>&) {
  return unsupported(name + ": tilewise was built without libcurl: no HTTP uploads");
}

}  // namespace tilewise::io
