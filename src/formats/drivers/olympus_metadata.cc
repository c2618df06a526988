#include "formats/drivers/olympus_metadata.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace tilewise::formats::olympus {
namespace {

// Tags of the stream (what each holds: olympus_metadata.h).
constexpr int32_t kCollection = 2000, kImageVolume = 2001, kFrameVolume = 2002, kStackProperties = 2005,
                  kDimensionVolume = 2007, kDimensionParameters = 2008, kExternalFile = 2018,
                  kCalibration = 2019, kDimensionKind = 2023, kStackName = 2030, kBoundary = 2053,
                  kStackType = 2074, kChannelName = 2419, kHasExternalFile = 20005;
// Field types.
constexpr uint32_t kExtraTag = 0x8000000, kExtended = 0x10000000, kInline = 0x40000000;
constexpr uint32_t kNewVolumes = 0, kPropertySet = 1, kNewMdimVolume = 2;
constexpr int kMaxDepth = 32;
constexpr size_t kMaxFields = 1'000'000;

struct Field {
  int32_t tag = 0;
  int32_t second = -1;
  uint32_t type = 0;               // the field type's low 24 bits
  std::span<const uint8_t> value;  // empty for extended fields
  std::optional<uint32_t> inline_value;
  std::vector<Field> children;     // the fields of an extended field's volumes
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : b_(bytes) {}

  // The fields of the volume at `pos` appended to `out`; false when no volume starts there. `end` is set to
  // the furthest byte its fields use (where a volume following it in a run starts).
  bool volume(uint64_t pos, int depth, std::vector<Field>& out, uint64_t& end) {
    end = pos;
    if (depth > kMaxDepth || pos + 24 > b_.size()) return false;
    if (u16(pos) != 24 || u16(pos + 2) != 21321) return false;
    const int64_t first = static_cast<int64_t>(u64(pos + 8));
    const uint32_t count = u32(pos + 16) & 0x0fffffff;
    end = pos + 24;
    if (first < 24 || static_cast<uint64_t>(first) >= b_.size() - pos) return true;
    uint64_t at = pos + static_cast<uint64_t>(first);
    for (uint32_t i = 0; i < count && fields_ < kMaxFields; ++i, ++fields_) {
      if (at + 16 > b_.size()) break;
      const uint32_t type = u32(at);
      Field f;
      f.tag = static_cast<int32_t>(u32(at + 4));
      const uint32_t next = u32(at + 8);
      const uint32_t size = u32(at + 12);
      uint64_t data = at + 16;
      if (type & kExtraTag) {
        if (data + 4 > b_.size()) break;
        f.second = static_cast<int32_t>(u32(data));
        data += 4;
      }
      if (f.tag < 0) break;
      f.type = type & 0xffffff;
      if (type & kInline) {
        f.inline_value = size;
        end = std::max(end, data);
      } else {
        if (size > b_.size() - std::min<uint64_t>(data, b_.size())) break;
        end = std::max(end, data + size);
        if (type & kExtended) {
          nested(f, data, size, depth);
        } else {
          f.value = b_.subspan(data, size);
        }
      }
      out.push_back(std::move(f));
      if (next == 0) break;
      const uint64_t following = pos + next;
      if (following <= at || following >= b_.size()) break;  // fields only move forward
      at = following;
    }
    return true;
  }

 private:
  void nested(Field& f, uint64_t data, uint32_t size, int depth) {
    if (f.type == kPropertySet || f.type == kNewMdimVolume) {
      uint64_t end = 0;
      volume(data, depth + 1, f.children, end);
    } else if (f.type == kNewVolumes) {
      uint64_t at = data;
      while (at < data + size) {
        uint64_t end = 0;
        if (!volume(at, depth + 1, f.children, end) || end <= at) break;
        at = end;
      }
    }
  }
  uint16_t u16(uint64_t p) const { uint16_t v; std::memcpy(&v, b_.data() + p, 2); return v; }
  uint32_t u32(uint64_t p) const { uint32_t v; std::memcpy(&v, b_.data() + p, 4); return v; }
  uint64_t u64(uint64_t p) const { uint64_t v; std::memcpy(&v, b_.data() + p, 8); return v; }

  std::span<const uint8_t> b_;
  size_t fields_ = 0;
};

const Field* child(const Field& f, int32_t tag) {
  for (const Field& c : f.children) {
    if (c.tag == tag) return &c;
  }
  return nullptr;
}

std::optional<int64_t> integer(const Field* f) {
  if (!f) return std::nullopt;
  if (f->inline_value) return *f->inline_value;
  const auto& v = f->value;
  if (v.size() == 1) return v[0];
  if (v.size() == 2) return static_cast<int64_t>(v[0] | (v[1] << 8));
  if (v.size() == 4) { int32_t x; std::memcpy(&x, v.data(), 4); return x; }
  if (v.size() == 8) { int64_t x; std::memcpy(&x, v.data(), 8); return x; }
  return std::nullopt;
}

template <typename T, size_t N>
std::optional<std::array<T, N>> values(const Field* f) {
  if (!f || f->value.size() != sizeof(T) * N) return std::nullopt;
  std::array<T, N> out;
  std::memcpy(out.data(), f->value.data(), sizeof(T) * N);
  return out;
}

// A string field: UTF-16LE (as cellSens writes them; ASCII code points kept, others as '?'), or 8-bit text
// when its second byte is not 0; trailing NULs dropped.
std::string text(const Field* f) {
  if (!f) return {};
  const auto& v = f->value;
  std::string out;
  if (v.size() >= 2 && v.size() % 2 == 0 && v[1] == 0) {
    for (size_t i = 0; i + 1 < v.size(); i += 2) {
      const unsigned c = v[i] | (v[i + 1] << 8);
      out.push_back(c < 0x80 ? static_cast<char>(c) : '?');
    }
  } else {
    out.assign(v.begin(), v.end());
  }
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

Stack stack_of(const Field& volume) {
  Stack s;
  if (const Field* props = child(volume, kStackProperties)) {
    s.name = text(child(*props, kStackName));
    s.type = static_cast<int32_t>(integer(child(*props, kStackType)).value_or(0));
    if (auto scale = values<double, 2>(child(*props, kCalibration)); scale && (*scale)[0] > 0 && (*scale)[1] > 0) {
      s.um_per_pixel = std::make_pair((*scale)[0], (*scale)[1]);
    }
  }
  for (const Field& frame : volume.children) {
    if (frame.tag != kFrameVolume) continue;
    const Field* ext = child(frame, kExternalFile);
    if (!ext) continue;
    s.external = integer(child(*ext, kHasExternalFile)).value_or(0) != 0;
    if (auto rect = values<int32_t, 4>(child(*ext, kBoundary))) {
      s.width = (*rect)[2];
      s.height = (*rect)[3];
    }
    break;
  }
  for (const Field& dim : volume.children) {
    if (dim.tag != kDimensionVolume || dim.second < 0 || dim.second > 64) continue;
    for (const Field& p : dim.children) {
      if (p.tag != kDimensionParameters) continue;
      if (auto kind = integer(child(p, kDimensionKind))) {
        if (*kind == 1 || *kind == 2 || *kind == 3 || *kind == 4 || *kind == 9) {
          s.dims.emplace(dim.second + 2, static_cast<DimKind>(*kind));
        }
      }
      if (p.second >= 0) {
        if (const Field* name = child(p, kChannelName)) s.channel_names.emplace(p.second, text(name));
      }
    }
  }
  return s;
}

}  // namespace

Result<std::vector<Stack>> parse_stacks(std::span<const uint8_t> bytes) {
  Reader reader(bytes);
  std::vector<Field> root;
  uint64_t end = 0;
  if (!reader.volume(0, 0, root, end)) return corrupt("no metadata volume after the TIFF header");
  std::vector<Stack> stacks;
  for (const Field& f : root) {
    if (f.tag != kCollection) continue;
    for (const Field& v : f.children) {
      if (v.tag == kImageVolume) stacks.push_back(stack_of(v));
    }
  }
  return stacks;
}

}  // namespace tilewise::formats::olympus
