#include "io/gcs.h"

#include <cctype>
#include <cstdlib>

#include "io/http_source.h"

namespace tilewise::io {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

bool is_gcs_url(const std::string& path) { return path.rfind("gs://", 0) == 0; }

std::string gcs_endpoint() {
  std::string endpoint =
      env("TILEWISE_GCS_ENDPOINT").empty() ? env("STORAGE_EMULATOR_HOST") : env("TILEWISE_GCS_ENDPOINT");
  if (endpoint.empty()) endpoint = "https://storage.googleapis.com";
  if (endpoint.find("://") == std::string::npos) endpoint = "http://" + endpoint;  // emulators: host:port
  while (endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

RequestSigner gcs_signer() {
  std::string token = env("GOOGLE_OAUTH_ACCESS_TOKEN");
  if (token.empty()) token = env("CLOUDSDK_AUTH_ACCESS_TOKEN");
  if (token.empty()) return {};
  return [header = "Authorization: Bearer " + token](const std::string&) { return std::vector<std::string>{header}; };
}

Result<std::string> resolve_gcs(const std::string& gs_url) {
  if (!is_gcs_url(gs_url)) return invalid_argument(gs_url + ": not a gs:// URL");
  const std::string rest = gs_url.substr(5);
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) {
    return invalid_argument(redact_url(gs_url) + ": a GCS URL names a bucket and an object (gs://bucket/object)");
  }
  return gcs_endpoint() + "/" + encode_url_path(rest.substr(0, slash)) + "/" + encode_url_path(rest.substr(slash + 1));
}

Result<std::shared_ptr<const Source>> open_gcs(const std::string& gs_url) {
  TW_ASSIGN_OR_RETURN(std::string url, resolve_gcs(gs_url));
  return open_http(url, redact_url(gs_url), gcs_signer());
}

}  // namespace tilewise::io
