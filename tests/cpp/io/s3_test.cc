// S3 URLs and Signature Version 4, against the example in AWS's S3 documentation ("GET Object": bucket
// examplebucket, key test.txt, Range bytes=0-9, 2013-05-24T00:00:00Z, the documentation's example keys).
#include "io/s3.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tilewise::io {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(S3, SignsAsTheDocumentationsExample) {
  S3Object o;
  o.host = "examplebucket.s3.amazonaws.com";
  o.canonical_uri = "/test.txt";
  o.region = "us-east-1";
  o.credentials = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  const std::vector<std::string> headers = sign_s3_get(o, "bytes=0-9", 1369353600);  // 20130524T000000Z
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers[1], "x-amz-date: 20130524T000000Z");
  EXPECT_EQ(headers[2],
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  o.credentials = {};
  EXPECT_TRUE(sign_s3_get(o, "bytes=0-9", 1369353600).empty());  // anonymous: unsigned
}

// The same documentation's "GET Bucket (List Objects)" example: the query in the canonical request, no Range.
TEST(S3, SignsAListingAsTheDocumentationsExample) {
  S3Object o;
  o.host = "examplebucket.s3.amazonaws.com";
  o.canonical_uri = "/";
  o.canonical_query = "max-keys=2&prefix=J";
  o.region = "us-east-1";
  o.credentials = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  const std::vector<std::string> headers = sign_s3_get(o, "", 1369353600);
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers[2],
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(S3, ResolvesEndpointsRegionsAndCredentials) {
  ScopedEnv endpoint("AWS_ENDPOINT_URL_S3", nullptr), generic("AWS_ENDPOINT_URL", nullptr);
  ScopedEnv region("AWS_REGION", "eu-west-1"), key("AWS_ACCESS_KEY_ID", "AK"), secret("AWS_SECRET_ACCESS_KEY", "SK");
  ScopedEnv nosign("AWS_NO_SIGN_REQUEST", nullptr);
  auto o = resolve_s3("s3://bucket/dir/slide one.svs");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->url, "https://bucket.s3.eu-west-1.amazonaws.com/dir/slide%20one.svs");
  EXPECT_EQ(o->credentials.access_key_id, "AK");
  {
    ScopedEnv custom("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/");
    ScopedEnv anonymous("AWS_NO_SIGN_REQUEST", "1");
    o = resolve_s3("s3://bucket/dir/slide.svs");
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->url, "http://127.0.0.1:9000/bucket/dir/slide.svs");
    EXPECT_EQ(o->host, "127.0.0.1:9000");
    EXPECT_TRUE(o->credentials.access_key_id.empty());
  }
  {
    ScopedEnv custom("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
    o = resolve_s3_object("bucket", "");  // the bucket itself, as listings address it
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->url, "http://127.0.0.1:9000/bucket");
    EXPECT_EQ(o->canonical_uri, "/bucket");
  }
  o = resolve_s3_object("bucket", "");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->url, "https://bucket.s3.eu-west-1.amazonaws.com/");
  EXPECT_EQ(resolve_s3("s3://bucket").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolve_s3("s3:///key").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tilewise::io
