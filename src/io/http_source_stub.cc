// open_http without libcurl (a build on a machine without its development files, such as the lent GPU
// machine): URLs are refused as Unsupported, local files read as always.
#include "io/http_source.h"

namespace tilewise::io {

Result<std::shared_ptr<const Source>> open_http(const std::string& url) {
  return unsupported(redact_url(url) + ": tilewise was built without libcurl: no HTTP(S) sources");
}

}  // namespace tilewise::io
