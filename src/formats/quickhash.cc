#include "formats/quickhash.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace tilewise::formats {

namespace {

// SHA-256 through OpenSSL's libcrypto, as a hex string.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    ok_ = ctx_ && EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1;
  }
  bool ok() const { return ok_; }
  void update(const void* data, size_t size) { EVP_DigestUpdate(ctx_.get(), data, size); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &len);
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
      out += kHex[digest[i] >> 4];
      out += kHex[digest[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
  bool ok_ = false;
};

}  // namespace

struct Quickhash::State {
  Sha256 sha;
};
Quickhash::Quickhash() : state_(std::make_unique<State>()) {}
Quickhash::~Quickhash() = default;
void Quickhash::update(const void* data, size_t size) {
  if (size) state_->sha.update(data, size);
}
std::string Quickhash::hex() { return state_->sha.hex(); }

Result<std::string> quickhash1_of_ranges(std::span<const HashedRange> ranges) {
  Sha256 sha;
  if (!sha.ok()) return internal_error("cannot start SHA-256");
  std::vector<uint8_t> buf;
  for (const HashedRange& r : ranges) {
    if (r.offset > r.source->size() || r.length > r.source->size() - r.offset) {
      return corrupt("cannot hash " + r.source->name() + ": " + std::to_string(r.length) + " bytes at offset " +
                     std::to_string(r.offset) + " run past its end");
    }
    for (uint64_t at = 0; at < r.length;) {
      buf.resize(static_cast<size_t>(std::min<uint64_t>(r.length - at, 1 << 20)));
      TW_RETURN_IF_ERROR(r.source->pread(buf, r.offset + at).with_context("cannot hash " + r.source->name()));
      sha.update(buf.data(), buf.size());
      at += buf.size();
    }
  }
  return sha.hex();
}

Result<std::string> quickhash1_of_files(std::span<const io::Source* const> files) {
  std::vector<HashedRange> ranges;
  for (const io::Source* f : files) ranges.push_back({f, 0, f->size()});
  return quickhash1_of_ranges(ranges);
}

Result<std::optional<std::string>> quickhash1(const tiff::TiffFile& tiff, const tiff::Ifd& lowest_level,
                                              const tiff::Ifd& property_ifd) {
  uint64_t total = 0;
  for (uint64_t n : lowest_level.chunk_byte_counts) {
    total += n;
    if (total > (5u << 20)) return std::optional<std::string>();
  }
  Sha256 sha;
  if (!sha.ok()) return internal_error("cannot start SHA-256");
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < lowest_level.chunk_offsets.size(); ++i) {
    bytes.resize(lowest_level.chunk_byte_counts[i]);
    Status s = tiff.source().pread(bytes, lowest_level.chunk_offsets[i]);
    if (!s.ok()) return s.with_context("cannot hash the lowest-resolution level");
    sha.update(bytes.data(), bytes.size());
  }
  auto hash_string = [&](const std::string& s) { sha.update(s.c_str(), s.size() + 1); };
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
  return std::optional<std::string>(sha.hex());
}

std::string quickhash1_of_string(const std::string& s) {
  Sha256 sha;
  sha.update(s.c_str(), s.size() + 1);
  return sha.hex();
}

}  // namespace tilewise::formats
