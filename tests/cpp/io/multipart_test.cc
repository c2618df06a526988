#include "io/multipart.h"

#include <gtest/gtest.h>

#include <string>

namespace tilewise::io {
namespace {

const std::string kType = "multipart/related; type=\"application/octet-stream\"; boundary=b0undary";

std::string part(const std::string& headers, const std::string& bytes) {
  return "--b0undary\r\n" + headers + "\r\n" + bytes + "\r\n";
}

TEST(Multipart, PartsInOrderWithTheirHeaders) {
  const std::string body = "preamble\r\n" +
                           part("Content-Type: image/jpeg; transfer-syntax=1.2.840.10008.1.2.4.50\r\n"
                                "Content-Location: /frames/1\r\nContent-Length: 5\r\n",
                                "ab\r\nc") +
                           part("Content-Type: image/jpeg\r\n", "--b0undar") + "--b0undary--\r\n";
  auto parts = parse_multipart(body, kType);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ(body.substr((*parts)[0].offset, (*parts)[0].length), "ab\r\nc");
  EXPECT_EQ((*parts)[0].content_location, "/frames/1");
  EXPECT_EQ(header_parameter((*parts)[0].content_type, "transfer-syntax"), "1.2.840.10008.1.2.4.50");
  EXPECT_EQ(body.substr((*parts)[1].offset, (*parts)[1].length), "--b0undar");
}

TEST(Multipart, ABoundaryInsideAPartIsItsBytesWhereItsLengthSaysSo) {
  const std::string inner = "x\r\n--b0undary\r\ny";
  const std::string body = part("Content-Length: " + std::to_string(inner.size()) + "\r\n", inner) + "--b0undary--";
  auto parts = parse_multipart(body, kType);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ(body.substr((*parts)[0].offset, (*parts)[0].length), inner);
}

TEST(Multipart, BodiesCutShortAreCorrupt) {
  const std::string whole = part("Content-Length: 4\r\n", "abcd") + "--b0undary--\r\n";
  for (size_t cut = 0; cut + 12 < whole.size(); ++cut) {
    auto parts = parse_multipart(whole.substr(0, cut), kType);
    EXPECT_FALSE(parts.ok()) << cut;
    if (!parts.ok()) EXPECT_EQ(parts.status().code(), StatusCode::kCorrupt) << cut;
  }
  EXPECT_TRUE(parse_multipart(whole, kType).ok());
  // a Content-Length the part does not hold
  EXPECT_EQ(parse_multipart(part("Content-Length: 9\r\n", "abcd") + "--b0undary--", kType).status().code(),
            StatusCode::kCorrupt);
  EXPECT_EQ(parse_multipart(part("Content-Length: 99999999999999999999\r\n", "abcd") + "--b0undary--", kType).status().code(),
            StatusCode::kCorrupt);
}

TEST(Multipart, AnswersThatAreNotMultipartAreInvalid) {
  EXPECT_EQ(parse_multipart("{}", "application/json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_multipart("--x\r\n", "multipart/related").status().code(), StatusCode::kInvalidArgument);
}

TEST(Multipart, HeaderParameters) {
  const std::string v = "multipart/related; type=\"image/jp2; transfer-syntax=1.2.840.10008.1.2.4.91\"; boundary=abc";
  EXPECT_EQ(header_parameter(v, "boundary"), "abc");
  EXPECT_EQ(header_parameter(header_parameter(v, "TYPE"), "transfer-syntax"), "1.2.840.10008.1.2.4.91");
  EXPECT_EQ(header_parameter(v, "missing"), "");
}

}  // namespace
}  // namespace tilewise::io
