// Amazon S3 (and S3-compatible stores: MinIO, Ceph, moto) as HTTP range reads: `s3://bucket/key` resolved
// to an HTTPS URL, each request signed with AWS Signature Version 4 when credentials are found.
//
// Where the object is: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (a custom endpoint, path-style
// `<endpoint>/<bucket>/<key>`), else `https://<bucket>.s3.<region>.amazonaws.com/<key>`; the region from
// AWS_REGION or AWS_DEFAULT_REGION (default us-east-1).
// Credentials, as the AWS tools look for them: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
// AWS_SESSION_TOKEN) in the environment, else the profile AWS_PROFILE (default "default") of
// AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials). None found, or AWS_NO_SIGN_REQUEST set:
// anonymous requests (public buckets). Secrets never appear in names or errors.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "io/source.h"

namespace tilewise::io {

bool is_s3_url(const std::string& path);

struct AwsCredentials {
  std::string access_key_id;  // empty: anonymous
  std::string secret_access_key;
  std::string session_token;
};

struct S3Object {
  std::string url;            // the HTTP(S) URL of the object
  std::string host;           // as signed (host[:port])
  std::string canonical_uri;  // the URL's path, each segment URI-encoded as SigV4 requires
  std::string canonical_query;  // the URL's query (parameters sorted by name, URI-encoded); empty for objects
  std::string region;
  AwsCredentials credentials;
};

// Resolves `s3://bucket/key` with the environment (above). InvalidArgument for a URL without bucket or key.
Result<S3Object> resolve_s3(const std::string& s3_url);

// The object `key` of `bucket` (an empty key: the bucket itself, as object listings address it).
Result<S3Object> resolve_s3_object(const std::string& bucket, const std::string& key);

// The headers that sign a GET of the object with the Range header value `range` ("bytes=0-9"; empty: no
// range) at `when`: x-amz-content-sha256, x-amz-date, Authorization and the session token; none for
// anonymous access.
std::vector<std::string> sign_s3_get(const S3Object& object, const std::string& range, std::time_t when);

// Opens `s3://bucket/key` for range reads (io/http_source.h), every request signed.
Result<std::shared_ptr<const Source>> open_s3(const std::string& s3_url);

}  // namespace tilewise::io
