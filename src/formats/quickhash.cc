#include "formats/quickhash.h"

#include <openssl/evp.h>

#include <memory>
#include <vector>

namespace tilewise::formats {

Result<std::optional<std::string>> quickhash1(const tiff::TiffFile& tiff, const tiff::Ifd& lowest_level,
                                              const tiff::Ifd& property_ifd) {
  uint64_t total = 0;
  for (uint64_t n : lowest_level.chunk_byte_counts) {
    total += n;
    if (total > (5u << 20)) return std::optional<std::string>();
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return internal_error("cannot start SHA-256");
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < lowest_level.chunk_offsets.size(); ++i) {
    bytes.resize(lowest_level.chunk_byte_counts[i]);
    Status s = tiff.source().pread(bytes, lowest_level.chunk_offsets[i]);
    if (!s.ok()) return s.with_context("cannot hash the lowest-resolution level");
    EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  }
  auto hash_string = [&](const std::string& s) { EVP_DigestUpdate(ctx.get(), s.c_str(), s.size() + 1); };
  const std::pair<const char*, const std::optional<std::string>*> tags[] = {
      {"tiff.ImageDescription", &property_ifd.image_description}, {"tiff.Make", &property_ifd.make},
      {"tiff.Model", &property_ifd.model}, {"tiff.Software", &property_ifd.software},
      {"tiff.DateTime", &property_ifd.date_time}, {"tiff.Artist", &property_ifd.artist},
      {"tiff.HostComputer", &property_ifd.host_computer}, {"tiff.Copyright", &property_ifd.copyright},
      {"tiff.DocumentName", &property_ifd.document_name}};
  for (const auto& [name, value] : tags) {
    hash_string(name);
    hash_string(value->value_or(""));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return std::optional<std::string>(hex);
}

}  // namespace tilewise::formats
