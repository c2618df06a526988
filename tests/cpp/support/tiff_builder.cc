#include "support/tiff_builder.h"

#include <algorithm>
#include <cstring>

namespace tilewise::testing {

TiffBuilder::TiffBuilder(bool big_tiff, bool little_endian) : big_(big_tiff), le_(little_endian) {
  body_.resize(big_ ? 16 : 8, 0);
}

void TiffBuilder::put(std::vector<uint8_t>& out, uint64_t v, int bytes) const {
  for (int i = 0; i < bytes; ++i) {
    const int shift = le_ ? 8 * i : 8 * (bytes - 1 - i);
    out.push_back(static_cast<uint8_t>(v >> shift));
  }
}

uint64_t TiffBuilder::append(const std::vector<uint8_t>& bytes) {
  if (body_.size() % 2) body_.push_back(0);  // word alignment, as TIFF asks
  const uint64_t offset = body_.size();
  body_.insert(body_.end(), bytes.begin(), bytes.end());
  return offset;
}

TagSpec TiffBuilder::shorts(uint16_t tag, const std::vector<uint16_t>& v) const {
  TagSpec t{tag, 3, v.size(), {}};
  for (uint16_t x : v) put(t.data, x, 2);
  return t;
}
TagSpec TiffBuilder::longs(uint16_t tag, const std::vector<uint32_t>& v) const {
  TagSpec t{tag, 4, v.size(), {}};
  for (uint32_t x : v) put(t.data, x, 4);
  return t;
}
TagSpec TiffBuilder::long8s(uint16_t tag, const std::vector<uint64_t>& v) const {
  TagSpec t{tag, 16, v.size(), {}};
  for (uint64_t x : v) put(t.data, x, 8);
  return t;
}
TagSpec TiffBuilder::ascii(uint16_t tag, const std::string& s) const {
  TagSpec t{tag, 2, s.size() + 1, std::vector<uint8_t>(s.begin(), s.end())};
  t.data.push_back(0);
  return t;
}
TagSpec TiffBuilder::bytes(uint16_t tag, const std::vector<uint8_t>& v) const { return TagSpec{tag, 7, v.size(), v}; }
TagSpec TiffBuilder::rational(uint16_t tag, uint32_t num, uint32_t den) const {
  TagSpec t{tag, 5, 1, {}};
  put(t.data, num, 4);
  put(t.data, den, 4);
  return t;
}
TagSpec TiffBuilder::offsets(uint16_t tag, const std::vector<uint64_t>& v) const {
  if (big_) return long8s(tag, v);
  std::vector<uint32_t> narrow(v.begin(), v.end());
  return longs(tag, narrow);
}

int TiffBuilder::add_ifd(std::vector<TagSpec> tags) {
  ifds_.push_back(std::move(tags));
  next_.push_back(-2);  // default chain
  children_.emplace_back();
  is_child_.push_back(false);
  return static_cast<int>(ifds_.size()) - 1;
}

void TiffBuilder::set_next(int from, int to) { next_[static_cast<size_t>(from)] = to; }

void TiffBuilder::set_sub_ifds(int parent, std::vector<int> children) {
  for (int c : children) is_child_[static_cast<size_t>(c)] = true;
  children_[static_cast<size_t>(parent)] = std::move(children);
}

void TiffBuilder::pattern(uint32_t x, uint32_t y, uint8_t rgb[3]) {
  rgb[0] = static_cast<uint8_t>(x * 7 + y);
  rgb[1] = static_cast<uint8_t>(y * 5 + (x >> 3));
  rgb[2] = static_cast<uint8_t>((x / 16) * 31 + (y / 16) * 17);
}

std::vector<TagSpec> TiffBuilder::rgb_tiled_image(uint32_t width, uint32_t height, uint32_t tile_w, uint32_t tile_h,
                                                  uint32_t new_subfile_type) {
  std::vector<uint64_t> offs, counts;
  for (uint32_t ty = 0; ty < height; ty += tile_h) {
    for (uint32_t tx = 0; tx < width; tx += tile_w) {
      std::vector<uint8_t> tile(static_cast<size_t>(tile_w) * tile_h * 3, 0);
      for (uint32_t y = 0; y < tile_h; ++y)
        for (uint32_t x = 0; x < tile_w; ++x) pattern(tx + x, ty + y, &tile[(static_cast<size_t>(y) * tile_w + x) * 3]);
      offs.push_back(append(tile));
      counts.push_back(tile.size());
    }
  }
  return {longs(254, {new_subfile_type}), longs(256, {width}), longs(257, {height}), shorts(258, {8, 8, 8}),
          shorts(259, {1}), shorts(262, {2}), shorts(277, {3}), longs(322, {tile_w}), longs(323, {tile_h}),
          offsets(324, offs), offsets(325, counts)};
}

std::vector<uint8_t> TiffBuilder::finish() {
  std::vector<uint8_t> out = body_;
  const int inline_size = big_ ? 8 : 4;
  for (size_t i = 0; i < ifds_.size(); ++i) {
    if (!children_[i].empty()) {
      ifds_[i].push_back(offsets(330, std::vector<uint64_t>(children_[i].size(), 0)));
    }
  }
  const int entry_size = big_ ? 20 : 12;
  // Lay out: payloads that do not fit inline, then each IFD.
  std::vector<uint64_t> ifd_offsets(ifds_.size());
  std::vector<std::vector<uint64_t>> payload_offsets(ifds_.size());
  for (size_t i = 0; i < ifds_.size(); ++i) {
    auto& tags = ifds_[i];
    std::sort(tags.begin(), tags.end(), [](const TagSpec& a, const TagSpec& b) { return a.tag < b.tag; });
    for (auto& t : tags) {
      uint64_t off = 0;
      if (!t.raw_offset && t.data.size() > static_cast<size_t>(inline_size)) {
        if (out.size() % 2) out.push_back(0);
        off = out.size();
        out.insert(out.end(), t.data.begin(), t.data.end());
      }
      payload_offsets[i].push_back(off);
    }
  }
  for (size_t i = 0; i < ifds_.size(); ++i) {
    if (out.size() % 2) out.push_back(0);
    ifd_offsets[i] = out.size();
    const auto& tags = ifds_[i];
    out.resize(out.size() + (big_ ? 8 : 2) + tags.size() * entry_size + (big_ ? 8 : 4), 0);
  }
  // Now that IFD offsets are known, fill in SubIFDs tags (inline or in their payload block).
  for (size_t i = 0; i < ifds_.size(); ++i) {
    if (children_[i].empty()) continue;
    std::vector<uint64_t> offs;
    for (int c : children_[i]) offs.push_back(ifd_offsets[static_cast<size_t>(c)]);
    for (size_t k = 0; k < ifds_[i].size(); ++k) {
      TagSpec& t = ifds_[i][k];
      if (t.tag != 330) continue;
      t.data = offsets(330, offs).data;
      if (t.data.size() > static_cast<size_t>(inline_size)) {
        std::memcpy(out.data() + payload_offsets[i][k], t.data.data(), t.data.size());
      }
    }
  }
  std::vector<uint8_t> ifd_bytes;
  for (size_t i = 0; i < ifds_.size(); ++i) {
    ifd_bytes.clear();
    const auto& tags = ifds_[i];
    put(ifd_bytes, tags.size(), big_ ? 8 : 2);
    for (size_t k = 0; k < tags.size(); ++k) {
      const TagSpec& t = tags[k];
      put(ifd_bytes, t.tag, 2);
      put(ifd_bytes, t.type, 2);
      put(ifd_bytes, t.count, big_ ? 8 : 4);
      if (t.raw_offset) {
        put(ifd_bytes, t.offset, inline_size);
      } else if (t.data.size() <= static_cast<size_t>(inline_size)) {
        std::vector<uint8_t> value(t.data);
        value.resize(inline_size, 0);
        ifd_bytes.insert(ifd_bytes.end(), value.begin(), value.end());
      } else {
        put(ifd_bytes, payload_offsets[i][k], inline_size);
      }
    }
    int next = next_[i];
    if (next == -2) {  // default: the next IFD that is not a SubIFD; SubIFDs end their own chain
      next = -1;
      for (size_t j = i + 1; !is_child_[i] && j < ifds_.size(); ++j) {
        if (!is_child_[j]) {
          next = static_cast<int>(j);
          break;
        }
      }
    }
    put(ifd_bytes, next >= 0 ? ifd_offsets[static_cast<size_t>(next)] : 0, big_ ? 8 : 4);
    std::memcpy(out.data() + ifd_offsets[i], ifd_bytes.data(), ifd_bytes.size());
  }
  // Header.
  std::vector<uint8_t> header;
  header.push_back(le_ ? 'I' : 'M');
  header.push_back(le_ ? 'I' : 'M');
  put(header, big_ ? 43 : 42, 2);
  if (big_) {
    put(header, 8, 2);
    put(header, 0, 2);
    put(header, ifds_.empty() ? 0 : ifd_offsets[0], 8);
  } else {
    put(header, ifds_.empty() ? 0 : ifd_offsets[0], 4);
  }
  std::memcpy(out.data(), header.data(), header.size());
  return out;
}

}  // namespace tilewise::testing
