#include "io/s3.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <cstdlib>
#include <fstream>

#include "io/digest.h"
#include "io/http_source.h"

namespace tilewise::io {

namespace {

constexpr const char* kEmptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string hmac(const std::string& key, const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), md, &n);
  return std::string(reinterpret_cast<char*>(md), n);
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// The profile's keys of an AWS credentials file (INI: [profile], key = value).
AwsCredentials from_credentials_file() {
  AwsCredentials c;
  std::string path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty() && !env("HOME").empty()) path = env("HOME") + "/.aws/credentials";
  std::ifstream in(path);
  if (!in) return c;
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = trim(line.substr(1, line.size() - 2)) == profile;
      continue;
    }
    const size_t eq = line.find('=');
    if (!inside || eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  return c;
}

AwsCredentials find_credentials() {
  if (!env("AWS_NO_SIGN_REQUEST").empty() && env("AWS_NO_SIGN_REQUEST") != "0" &&
      env("AWS_NO_SIGN_REQUEST") != "false") {
    return {};
  }
  AwsCredentials c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
  if (c.access_key_id.empty() || c.secret_access_key.empty()) c = from_credentials_file();
  if (c.access_key_id.empty() || c.secret_access_key.empty()) return {};
  return c;
}

}  // namespace

bool is_s3_url(const std::string& path) { return path.rfind("s3://", 0) == 0; }

Result<S3Object> resolve_s3(const std::string& s3_url) {
  if (!is_s3_url(s3_url)) return invalid_argument(s3_url + ": not an s3:// URL");
  const std::string rest = s3_url.substr(5);
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) {
    return invalid_argument(redact_url(s3_url) + ": an S3 URL names a bucket and a key (s3://bucket/key)");
  }
  return resolve_s3_object(rest.substr(0, slash), rest.substr(slash + 1));
}

Result<S3Object> resolve_s3_object(const std::string& bucket, const std::string& key) {
  S3Object o;
  o.region = env("AWS_REGION").empty() ? env("AWS_DEFAULT_REGION") : env("AWS_REGION");
  if (o.region.empty()) o.region = "us-east-1";
  std::string endpoint = env("AWS_ENDPOINT_URL_S3").empty() ? env("AWS_ENDPOINT_URL") : env("AWS_ENDPOINT_URL_S3");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!endpoint.empty()) {  // path style: <endpoint>/<bucket>/<key> (the bucket itself: <endpoint>/<bucket>)
    const size_t scheme = endpoint.find("://");
    if (scheme == std::string::npos) return invalid_argument("AWS_ENDPOINT_URL: not a URL: " + redact_url(endpoint));
    o.host = endpoint.substr(scheme + 3);
    o.canonical_uri = encode_url_path("/" + bucket + (key.empty() ? "" : "/" + key));
    o.url = endpoint + o.canonical_uri;
  } else {
    o.host = bucket + ".s3." + o.region + ".amazonaws.com";
    o.canonical_uri = encode_url_path("/" + key);
    o.url = "https://" + o.host + o.canonical_uri;
  }
  o.credentials = find_credentials();
  return o;
}

std::vector<std::string> sign_s3_get(const S3Object& o, const std::string& range, std::time_t when) {
  const AwsCredentials& c = o.credentials;
  if (c.access_key_id.empty()) return {};
  std::tm utc{};
  gmtime_r(&when, &utc);
  char stamp[17], day[9];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::strftime(day, sizeof day, "%Y%m%d", &utc);
  std::string headers = "host:" + o.host + "\n";
  std::string names = "host";
  if (!range.empty()) {
    headers += "range:" + range + "\n";
    names += ";range";
  }
  headers += std::string("x-amz-content-sha256:") + kEmptyPayload + "\nx-amz-date:" + stamp + "\n";
  names += ";x-amz-content-sha256;x-amz-date";
  if (!c.session_token.empty()) {
    headers += "x-amz-security-token:" + c.session_token + "\n";
    names += ";x-amz-security-token";
  }
  const std::string canonical = "GET\n" + o.canonical_uri + "\n" + o.canonical_query + "\n" + headers + "\n" + names + "\n" + kEmptyPayload;
  const std::string scope = std::string(day) + "/" + o.region + "/s3/aws4_request";
  const std::string to_sign = std::string("AWS4-HMAC-SHA256\n") + stamp + "\n" + scope + "\n" + sha256_hex(canonical);
  const std::string key = hmac(hmac(hmac(hmac("AWS4" + c.secret_access_key, day), o.region), "s3"), "aws4_request");
  const std::string signature = hmac(key, to_sign);
  std::vector<std::string> out = {
      std::string("x-amz-content-sha256: ") + kEmptyPayload,
      std::string("x-amz-date: ") + stamp,
      "Authorization: AWS4-HMAC-SHA256 Credential=" + c.access_key_id + "/" + scope + ", SignedHeaders=" + names +
          ", Signature=" + to_hex(reinterpret_cast<const unsigned char*>(signature.data()), signature.size()),
  };
  if (!c.session_token.empty()) out.push_back("x-amz-security-token: " + c.session_token);
  return out;
}

Result<std::shared_ptr<const Source>> open_s3(const std::string& s3_url) {
  TW_ASSIGN_OR_RETURN(S3Object object, resolve_s3(s3_url));
  auto shared = std::make_shared<const S3Object>(std::move(object));
  const std::string url = shared->url;
  return open_http(url, redact_url(s3_url),
                   [shared](const std::string& range) { return sign_s3_get(*shared, range, std::time(nullptr)); });
}

}  // namespace tilewise::io
