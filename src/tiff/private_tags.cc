#include "tiff/private_tags.h"

#include <algorithm>
#include <cstring>

#include "tiff/tags.h"

namespace tilewise::tiff {

namespace {

uint64_t raw_at(const Ifd& ifd, const PrivateTag& t, uint64_t i, uint32_t size) {
  const uint8_t* p = t.payload.data() + i * size;
  uint64_t v = 0;
  if (ifd.little_endian) {
    for (int b = static_cast<int>(size) - 1; b >= 0; --b) v = (v << 8) | p[b];
  } else {
    for (uint32_t b = 0; b < size; ++b) v = (v << 8) | p[b];
  }
  return v;
}

int64_t sign_extend(uint64_t v, uint32_t size) {
  if (size >= 8) return static_cast<int64_t>(v);
  const uint64_t sign = uint64_t{1} << (size * 8 - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

bool has_values(const PrivateTag* t) {
  const uint32_t size = t ? field_type_size(t->type) : 0;
  return size > 0 && t->count > 0 && t->payload.size() >= t->count * size;
}

}  // namespace

const PrivateTag* find_private_tag(const Ifd& ifd, uint16_t tag) {
  auto it = std::lower_bound(ifd.private_tags.begin(), ifd.private_tags.end(), tag,
                             [](const PrivateTag& t, uint16_t v) { return t.tag < v; });
  return it != ifd.private_tags.end() && it->tag == tag ? &*it : nullptr;
}

std::optional<double> private_double(const Ifd& ifd, uint16_t tag) {
  const PrivateTag* t = find_private_tag(ifd, tag);
  if (!has_values(t)) return std::nullopt;
  switch (t->type) {
    case kFloat: {
      const uint32_t bits = static_cast<uint32_t>(raw_at(ifd, *t, 0, 4));
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case kDouble: {
      const uint64_t bits = raw_at(ifd, *t, 0, 8);
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    case kRational: {
      const double num = static_cast<double>(raw_at(ifd, *t, 0, 4)), den = static_cast<double>(raw_at(ifd, *t, 1, 4));
      return num / den;
    }
    case kSRational: {
      const double num = static_cast<double>(sign_extend(raw_at(ifd, *t, 0, 4), 4));
      const double den = static_cast<double>(sign_extend(raw_at(ifd, *t, 1, 4), 4));
      return num / den;
    }
    default: return std::nullopt;
  }
}

std::optional<int64_t> private_sint(const Ifd& ifd, uint16_t tag) {
  const PrivateTag* t = find_private_tag(ifd, tag);
  if (!has_values(t)) return std::nullopt;
  const uint32_t size = field_type_size(t->type);
  switch (t->type) {
    case kSByte: case kSShort: case kSLong: case kSLong8: return sign_extend(raw_at(ifd, *t, 0, size), size);
    default: return std::nullopt;  // as OpenSlide's get_sint: unsigned types do not count
  }
}

std::optional<std::vector<uint64_t>> private_uints(const Ifd& ifd, uint16_t tag) {
  const PrivateTag* t = find_private_tag(ifd, tag);
  if (!has_values(t)) return std::nullopt;
  switch (t->type) {
    case kByte: case kShort: case kLong: case kLong8: case kIfd: case kIfd8: break;
    default: return std::nullopt;
  }
  const uint32_t size = field_type_size(t->type);
  std::vector<uint64_t> out(t->count);
  for (uint64_t i = 0; i < t->count; ++i) out[i] = raw_at(ifd, *t, i, size);
  return out;
}

std::optional<std::string> private_text(const Ifd& ifd, uint16_t tag) {
  const PrivateTag* t = find_private_tag(ifd, tag);
  if (!t || (t->type != kAscii && t->type != kUndefined && t->type != kByte)) return std::nullopt;
  std::string s(t->payload.begin(), t->payload.end());
  const size_t nul = s.find('\0');
  if (nul != std::string::npos) s.resize(nul);
  return s;
}

}  // namespace tilewise::tiff
