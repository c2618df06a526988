// Google Cloud Storage as HTTP range reads: `gs://bucket/key` through the XML API
// (`https://storage.googleapis.com/<bucket>/<key>`, or `<endpoint>/<bucket>/<key>` with
// TILEWISE_GCS_ENDPOINT or STORAGE_EMULATOR_HOST), with an OAuth 2 bearer token from
// GOOGLE_OAUTH_ACCESS_TOKEN or CLOUDSDK_AUTH_ACCESS_TOKEN (`gcloud auth print-access-token`), anonymous
// without one (public buckets). The token never appears in names or errors.
#pragma once

#include <memory>
#include <string>

#include "io/http_source.h"

namespace tilewise::io {

bool is_gcs_url(const std::string& path);

// The object's HTTP(S) URL; InvalidArgument for a URL without bucket or key.
Result<std::string> resolve_gcs(const std::string& gs_url);

// Where the XML API is (without a trailing '/'), and the bearer-token header (none without a token).
std::string gcs_endpoint();
RequestSigner gcs_signer();

Result<std::shared_ptr<const Source>> open_gcs(const std::string& gs_url);

}  // namespace tilewise::io
