#include "dicom/data_set.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "util/bytes.h"
#include "util/checked_math.h"

namespace tilewise::dicom {

namespace {

struct DictionaryEntry {
  uint32_t tag;
  const char* vr;
  const char* keyword;
};

constexpr DictionaryEntry kDictionary[] = {
#include "dicom/dictionary.inc"
};

const DictionaryEntry* lookup(uint32_t t) {
  const auto* end = std::end(kDictionary);
  const auto* it =
      std::lower_bound(std::begin(kDictionary), end, t, [](const DictionaryEntry& e, uint32_t v) { return e.tag < v; });
  return it != end && it->tag == t ? it : nullptr;
}

constexpr uint32_t kItem = tag(0xFFFE, 0xE000);
constexpr uint32_t kItemDelimitation = tag(0xFFFE, 0xE00D);
constexpr uint32_t kSequenceDelimitation = tag(0xFFFE, 0xE0DD);
constexpr uint32_t kPixelData = tag(0x7FE0, 0x0010);
constexpr uint32_t kTransferSyntax = tag(0x0002, 0x0010);
constexpr uint32_t kPerFrameGroups = tag(0x5200, 0x9230);
constexpr uint32_t kColumnPosition = tag(0x0048, 0x021E);
constexpr uint32_t kRowPosition = tag(0x0048, 0x021F);
constexpr uint32_t kZOffset = tag(0x0040, 0x074A);
constexpr uint32_t kOpticalPathIdentifier = tag(0x0048, 0x0106);
constexpr uint32_t kExtendedOffsetTable = tag(0x7FE0, 0x0001);
constexpr uint32_t kExtendedOffsetTableLengths = tag(0x7FE0, 0x0002);
constexpr uint64_t kUndefined = 0xFFFFFFFFull;
constexpr uint64_t kNoEnd = ~0ull;
constexpr uint64_t kSampledFrames = 4;  // fragment headers checked against a Basic Offset Table at open

constexpr auto le16 = internal::load_le16;  // DICOM Part 10 here is little endian (big endian is refused)
constexpr auto le32 = internal::load_le32;
constexpr auto le64 = internal::load_le64;

std::string hex_tag(uint32_t t) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "(%04X,%04X)", t >> 16, t & 0xFFFF);
  return buf;
}

// VRs whose explicit-VR header has 2 reserved bytes and a 32-bit length.
bool long_form(char a, char b) {
  switch (a << 8 | b) {
    case 'O' << 8 | 'B':
    case 'O' << 8 | 'D':
    case 'O' << 8 | 'F':
    case 'O' << 8 | 'L':
    case 'O' << 8 | 'V':
    case 'O' << 8 | 'W':
    case 'S' << 8 | 'Q':
    case 'S' << 8 | 'V':
    case 'U' << 8 | 'C':
    case 'U' << 8 | 'N':
    case 'U' << 8 | 'R':
    case 'U' << 8 | 'T':
    case 'U' << 8 | 'V':
      return true;
    default:
      return false;
  }
}

// Sequential reads through a window of the source (the dataset is read front to back once).
class Reader {
 public:
  explicit Reader(const io::Source& source) : source_(source), size_(source.size()) {}
  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  void seek(uint64_t p) { pos_ = p; }

  Status read(uint8_t* out, uint64_t n) {
    if (n == 0) return Status();
    if (!internal::range_inside(pos_, n, size_)) {
      return corrupt("at offset " + std::to_string(pos_) + ": " + std::to_string(n) +
                     " bytes run past the end of the file");
    }
    if (n > kWindow) {
      TW_RETURN_IF_ERROR(source_.pread({out, static_cast<size_t>(n)}, pos_));
      pos_ += n;
      return Status();
    }
    // Windows start small (most datasets end within a few KiB, and a folder scan reads many files) and
    // double while the reading goes on.
    TW_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, peek(n));
    std::memcpy(out, bytes.data(), static_cast<size_t>(n));
    pos_ += n;
    return Status();
  }

  // Up to `n` bytes from the position without consuming them (fewer only at the end of the file); the
  // pointer is valid until the next read.
  Result<std::span<const uint8_t>> peek(uint64_t n) {
    n = std::min(n, size_ - std::min(pos_, size_));
    if (pos_ < window_start_ || pos_ + n > window_start_ + window_.size()) {
      window_.resize(static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(next_window_, n), size_ - pos_)));
      TW_RETURN_IF_ERROR(source_.pread(window_, pos_));
      window_start_ = pos_;
      next_window_ = std::min<uint64_t>(next_window_ * 2, kWindow);
    }
    return std::span<const uint8_t>(window_.data() + (pos_ - window_start_), static_cast<size_t>(n));
  }
  void advance(uint64_t n) { pos_ += n; }

  Status skip(uint64_t n, uint64_t end) {
    if (!internal::range_inside(pos_, n, std::min(size_, end))) {
      return corrupt("at offset " + std::to_string(pos_) + ": a value of " + std::to_string(n) +
                     " bytes runs past the end of its item or of the file");
    }
    pos_ += n;
    return Status();
  }

 private:
  static constexpr uint64_t kWindow = 64 << 10;
  const io::Source& source_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t window_start_ = 0;
  uint64_t next_window_ = 4 << 10;
  std::vector<uint8_t> window_;
};

struct Header {
  uint32_t tag = 0;
  std::array<char, 2> vr{'U', 'N'};
  uint64_t length = 0;  // kUndefined for undefined length
  uint64_t at = 0;      // offset of the tag
};

Result<Header> read_header(Reader& r, bool explicit_vr) {
  Header h;
  h.at = r.pos();
  TW_ASSIGN_OR_RETURN(std::span<const uint8_t> b, r.peek(12));  // the longest header, in one look
  auto cut = [&] {
    return corrupt("at offset " + std::to_string(h.at) + ": an element header runs past the end of the file");
  };
  if (b.size() < 8) return cut();
  h.tag = uint32_t{le16(b.data())} << 16 | le16(b.data() + 2);
  if ((h.tag >> 16) == 0xFFFE || !explicit_vr) {
    h.length = le32(b.data() + 4);
    if (!explicit_vr && (h.tag >> 16) != 0xFFFE) {
      const std::string_view vr = dictionary_vr(h.tag);
      h.vr = {vr[0], vr[1]};
    }
    r.advance(8);
    return h;
  }
  if (b[4] < 'A' || b[4] > 'Z' || b[5] < 'A' || b[5] > 'Z') {
    return corrupt("element " + hex_tag(h.tag) + " at offset " + std::to_string(h.at) + " has no valid VR");
  }
  h.vr = {static_cast<char>(b[4]), static_cast<char>(b[5])};
  if (long_form(h.vr[0], h.vr[1])) {
    if (b.size() < 12) return cut();
    h.length = le32(b.data() + 8);
    r.advance(12);
  } else {
    h.length = le16(b.data() + 6);
    r.advance(8);
  }
  return h;
}

// What the top-level dataset does with the elements only it has.
struct TopLevel {
  std::optional<PixelData>* pixel_data;
  std::vector<FramePosition>* positions;
  std::vector<std::string>* optical_paths;
};

class Parser {
 public:
  Parser(Reader& r, bool explicit_vr, const ParseLimits& limits) : r_(r), explicit_(explicit_vr), limits_(limits) {}

  // Elements until `end` (kNoEnd: until an item delimiter), or Pixel Data at the top level. `skim` (inside
  // the per-frame functional groups, one item per frame, possibly millions): nothing is stored; the plane
  // position's column and row are noted in pending_.
  Status dataset(uint64_t end, uint32_t depth, DataSet& out, const TopLevel* top, bool skim = false) {
    while (end == kNoEnd || r_.pos() < end) {
      TW_ASSIGN_OR_RETURN(Header h, read_header(r_, explicit_));
      if (h.tag == kItemDelimitation) {
        if (end == kNoEnd) return Status();
        return corrupt("item delimiter at offset " + std::to_string(h.at) + " inside an item of defined length");
      }
      if ((h.tag >> 16) == 0xFFFE)
        return corrupt("unexpected item tag " + hex_tag(h.tag) + " at offset " + std::to_string(h.at));
      if (top && h.tag == kPixelData) {
        *top->pixel_data = PixelData{r_.pos(), h.length == kUndefined ? 0 : h.length, h.length == kUndefined};
        if (h.length != kUndefined) TW_RETURN_IF_ERROR(r_.skip(h.length, kNoEnd).with_context("Pixel Data"));
        return Status();
      }
      if (top && (h.tag == tag(0x7FE0, 0x0008) || h.tag == tag(0x7FE0, 0x0009))) {
        return unsupported("float pixel data " + hex_tag(h.tag) + " is not a slide image");
      }
      Element e;
      e.tag = h.tag;
      e.vr = h.vr;
      const bool sequence = e.is_sequence() || (h.length == kUndefined && (e.vr_view() == "UN" || !explicit_));
      if (sequence) {
        // A UN element of undefined length is a sequence whose items are implicit VR little endian
        // (PS3.5 6.2.2), whatever the transfer syntax.
        ImplicitScope scope(*this, explicit_ && !e.is_sequence());
        e.vr = {'S', 'Q'};
        if (depth + 1 > limits_.max_depth) {
          return corrupt("sequences nested deeper than " + std::to_string(limits_.max_depth) + " at offset " +
                         std::to_string(h.at));
        }
        if (top && h.tag == kPerFrameGroups) {
          pending_ = {};
          top_ = top;
          TW_RETURN_IF_ERROR(sequence_items(h, end, depth, true, [&](DataSet&&) {
            top->positions->push_back(pending_);
            pending_ = {};
            return Status();
          }));
          continue;
        }
        TW_RETURN_IF_ERROR(sequence_items(h, end, depth, skim, [&](DataSet&& item) {
          if (!skim) e.items.push_back(std::move(item));
          return Status();
        }));
        if (skim) continue;
      } else {
        if (h.length == kUndefined) return corrupt("element " + hex_tag(h.tag) + " has an undefined length");
        const bool group_length = (h.tag & 0xFFFF) == 0;
        if (skim && (h.tag == kColumnPosition || h.tag == kRowPosition) && h.length == 4) {
          uint8_t v[4];
          TW_RETURN_IF_ERROR(r_.read(v, 4));
          (h.tag == kColumnPosition ? pending_.column : pending_.row) = static_cast<int32_t>(le32(v));
          pending_.has_position = true;
          continue;
        }
        if (skim && top_ && (h.tag == kZOffset || h.tag == kOpticalPathIdentifier) && h.length <= 64) {
          char v[65] = {};
          TW_RETURN_IF_ERROR(r_.read(reinterpret_cast<uint8_t*>(v), h.length));
          std::string text(v, strnlen(v, h.length));
          while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.pop_back();
          while (!text.empty() && text.front() == ' ') text.erase(text.begin());
          if (h.tag == kZOffset) {
            char* stop = nullptr;
            const double z = std::strtod(text.c_str(), &stop);
            if (!text.empty() && stop && *stop == '\0' && std::isfinite(z)) pending_.z_offset = z, pending_.has_z = true;
          } else {
            std::vector<std::string>& ids = *top_->optical_paths;
            auto it = std::find(ids.begin(), ids.end(), text);
            if (it == ids.end() && ids.size() < FramePosition::kNoPath) it = ids.insert(ids.end(), text);
            if (it != ids.end()) pending_.optical_path = static_cast<uint16_t>(it - ids.begin());
          }
          continue;
        }
        if (h.length > limits_.max_value_bytes || group_length || skim) {
          TW_RETURN_IF_ERROR(r_.skip(h.length, end));
          continue;
        } else {
          if (end != kNoEnd && !internal::range_inside(r_.pos(), h.length, end)) {
            return corrupt("element " + hex_tag(h.tag) + " at offset " + std::to_string(h.at) +
                           " runs past the end of its item");
          }
          e.value.resize(static_cast<size_t>(h.length));
          TW_RETURN_IF_ERROR(r_.read(e.value.data(), h.length));
        }
      }
      out.elements.push_back(std::move(e));
    }
    if (r_.pos() != end) return corrupt("an item's elements run past its end at offset " + std::to_string(end));
    return Status();
  }

 private:
  // Parses implicit VR while it lives, when `on`; restores the encoding after.
  struct ImplicitScope {
    ImplicitScope(Parser& p, bool on) : parser(p), saved(p.explicit_) {
      if (on) p.explicit_ = false;
    }
    ~ImplicitScope() { parser.explicit_ = saved; }
    Parser& parser;
    bool saved;
  };

  template <typename Sink>
  Status sequence_items(const Header& seq, uint64_t outer_end, uint32_t depth, bool skim, Sink&& sink) {
    uint64_t end = kNoEnd;
    if (seq.length != kUndefined) {
      end = r_.pos() + seq.length;
      if (!internal::range_inside(r_.pos(), seq.length, std::min(r_.size(), outer_end))) {
        return corrupt("sequence " + hex_tag(seq.tag) + " at offset " + std::to_string(seq.at) + " runs past its end");
      }
    }
    uint64_t count = 0;
    while (end == kNoEnd || r_.pos() < end) {
      TW_ASSIGN_OR_RETURN(Header item, read_header(r_, explicit_));
      if (item.tag == kSequenceDelimitation) {
        if (end == kNoEnd) return Status();
        return corrupt("sequence delimiter inside sequence " + hex_tag(seq.tag) + " of defined length");
      }
      if (item.tag != kItem) {
        return corrupt("sequence " + hex_tag(seq.tag) + " holds " + hex_tag(item.tag) + " at offset " +
                       std::to_string(item.at) + " where an item belongs");
      }
      if (++count > limits_.max_frames) return corrupt("sequence " + hex_tag(seq.tag) + " has too many items");
      uint64_t item_end = kNoEnd;
      if (item.length != kUndefined) {
        item_end = r_.pos() + item.length;
        if (!internal::range_inside(r_.pos(), item.length, std::min(r_.size(), end))) {
          return corrupt("item at offset " + std::to_string(item.at) + " runs past the end of its sequence");
        }
      }
      DataSet ds;
      TW_RETURN_IF_ERROR(dataset(item_end, depth + 1, ds, nullptr, skim));
      TW_RETURN_IF_ERROR(sink(std::move(ds)));
    }
    if (r_.pos() != end) return corrupt("sequence " + hex_tag(seq.tag) + " runs past its end");
    return Status();
  }

  Reader& r_;
  FramePosition pending_;  // the position of the per-frame item being skimmed
  const TopLevel* top_ = nullptr;  // the file's top level, while its per-frame groups are skimmed
  bool explicit_;
  const ParseLimits& limits_;
};

std::string trim_right(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

// The string VRs whose backslashes separate values. The standard allows several values in AS, DA, IS and
// LO elements too, but libdicom keeps those whole (measured against OpenSlide 4.0.1: SoftwareVersions,
// ContentDate, PatientAge and ReferencedFrameNumber come back with their backslashes), and the `dicom.*`
// properties must be OpenSlide's; no element a slide reader needs is multi-valued in those VRs.
bool is_multi_string(std::string_view vr) {
  static constexpr std::string_view kMulti[] = {"AE", "CS", "DS", "DT", "PN", "SH", "TM", "UI", "UC"};
  return std::find(std::begin(kMulti), std::end(kMulti), vr) != std::end(kMulti);
}

}  // namespace

std::string_view keyword(uint32_t t) {
  const DictionaryEntry* e = lookup(t);
  return e ? e->keyword : "";
}

std::string_view dictionary_vr(uint32_t t) {
  const DictionaryEntry* e = lookup(t);
  return e ? e->vr : "UN";
}

const Element* DataSet::find(uint32_t t) const {
  auto it =
      std::lower_bound(elements.begin(), elements.end(), t, [](const Element& e, uint32_t v) { return e.tag < v; });
  if (it != elements.end() && it->tag == t) return &*it;
  for (const Element& e : elements) {  // file meta elements are not guaranteed sorted
    if (e.tag == t) return &e;
  }
  return nullptr;
}

std::optional<std::string> DataSet::string(uint32_t t, size_t index) const {
  const Element* e = find(t);
  if (!e) return std::nullopt;
  std::vector<std::string> v = string_values(*e);
  if (index >= v.size()) return std::nullopt;
  return v[index];
}

std::optional<int64_t> DataSet::integer(uint32_t t) const {
  const Element* e = find(t);
  if (!e) return std::nullopt;
  if (e->vr_view() == "IS") {
    auto s = string(t);
    if (!s) return std::nullopt;
    const std::string v = s->substr(s->find_first_not_of(' ') == std::string::npos ? 0 : s->find_first_not_of(' '));
    char* endp = nullptr;
    const long long n = std::strtoll(v.c_str(), &endp, 10);
    if (v.empty() || *endp != '\0') return std::nullopt;
    return n;
  }
  std::vector<int64_t> v = integer_values(*e);
  if (v.empty()) return std::nullopt;
  return v[0];
}

const DataSet* DataSet::item(uint32_t sequence, size_t index) const {
  const Element* e = find(sequence);
  return e && index < e->items.size() ? &e->items[index] : nullptr;
}

namespace {

// Splits at backslashes where the VR is multi-valued, applying `clean` to each value.
template <typename Clean>
std::vector<std::string> split_values(std::string_view vr, const std::string& all, Clean clean) {
  if (!is_multi_string(vr)) return {clean(all)};
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t sep = all.find('\\', at);
    out.push_back(clean(all.substr(at, sep == std::string::npos ? std::string::npos : sep - at)));
    if (sep == std::string::npos) break;
    at = sep + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> string_values(const Element& e) {
  // An empty string is one empty value (as libdicom, and so OpenSlide, counts it).
  return split_values(e.vr_view(), std::string(e.value.begin(), e.value.end()), trim_right);
}

std::vector<std::string> stored_string_values(const Element& e) {
  std::string all(e.value.begin(), e.value.end());
  const std::string_view vr = e.vr_view();
  if (vr != "UI" && !all.empty() && std::isspace(static_cast<unsigned char>(all.back()))) all.pop_back();
  all.resize(std::min(all.size(), all.find('\0')));
  if (vr != "DS" && vr != "IS") return split_values(vr, all, [](std::string v) { return v; });
  return split_values(vr, all, [](const std::string& v) {
    const size_t first = v.find_first_not_of(' ');
    return first == std::string::npos ? std::string() : v.substr(first, v.find_last_not_of(' ') - first + 1);
  });
}

std::vector<double> float_values(const Element& e) {
  std::vector<double> out;
  const std::string_view vr = e.vr_view();
  const size_t width = vr == "FL" ? 4 : vr == "FD" ? 8 : 0;
  if (!width) return out;
  for (size_t at = 0; at + width <= e.value.size(); at += width) {
    if (width == 4) {
      float f;
      const uint32_t bits = le32(e.value.data() + at);
      std::memcpy(&f, &bits, 4);
      out.push_back(f);
    } else {
      double d;
      const uint64_t bits = le64(e.value.data() + at);
      std::memcpy(&d, &bits, 8);
      out.push_back(d);
    }
  }
  return out;
}

std::vector<int64_t> integer_values(const Element& e) {
  std::vector<int64_t> out;
  const std::string_view vr = e.vr_view();
  const uint8_t* p = e.value.data();
  const size_t n = e.value.size();
  if (vr == "US") {
    for (size_t at = 0; at + 2 <= n; at += 2) out.push_back(le16(p + at));
  } else if (vr == "SS") {
    for (size_t at = 0; at + 2 <= n; at += 2) out.push_back(static_cast<int16_t>(le16(p + at)));
  } else if (vr == "UL") {
    for (size_t at = 0; at + 4 <= n; at += 4) out.push_back(le32(p + at));
  } else if (vr == "SL") {
    for (size_t at = 0; at + 4 <= n; at += 4) out.push_back(static_cast<int32_t>(le32(p + at)));
  } else if (vr == "UV" || vr == "SV") {
    for (size_t at = 0; at + 8 <= n; at += 8) out.push_back(static_cast<int64_t>(le64(p + at)));
  }
  return out;
}

bool has_part10_header(const io::Source& source) {
  uint8_t magic[4];
  if (source.size() < 132 || !source.pread(magic, 128).ok()) return false;
  return std::memcmp(magic, "DICM", 4) == 0;
}

Result<File> parse(const io::Source& source, bool meta_only, const ParseLimits& limits) {
  Reader r(source);
  TW_ASSIGN_OR_RETURN(std::span<const uint8_t> head, r.peek(132));
  if (head.size() < 132 || std::memcmp(head.data() + 128, "DICM", 4) != 0) {
    return unsupported("not a DICOM Part 10 file (no \"DICM\" after the preamble)");
  }
  r.seek(132);
  File file;
  // File meta: explicit VR little endian elements of group 0002.
  while (r.pos() + 8 <= r.size()) {
    const uint64_t at = r.pos();
    uint8_t b[2];
    TW_RETURN_IF_ERROR(r.read(b, 2));
    r.seek(at);
    if (le16(b) != 0x0002) break;
    TW_ASSIGN_OR_RETURN(Header h, read_header(r, true));
    if (h.length == kUndefined || h.length > (1u << 20))
      return corrupt("file meta element " + hex_tag(h.tag) + " is too long");
    Element e;
    e.tag = h.tag;
    e.vr = h.vr;
    e.value.resize(static_cast<size_t>(h.length));
    TW_RETURN_IF_ERROR(r.read(e.value.data(), h.length));
    if ((h.tag & 0xFFFF) != 0) file.meta.elements.push_back(std::move(e));
  }
  auto syntax = file.meta.string(kTransferSyntax);
  if (!syntax) return corrupt("the file meta has no Transfer Syntax UID");
  file.transfer_syntax = *syntax;
  if (meta_only) return file;
  bool explicit_vr = true;
  if (file.transfer_syntax == "1.2.840.10008.1.2") {
    explicit_vr = false;
  } else if (file.transfer_syntax == "1.2.840.10008.1.2.2") {
    return unsupported("big-endian transfer syntax 1.2.840.10008.1.2.2 (retired)");
  } else if (file.transfer_syntax == "1.2.840.10008.1.2.1.99") {
    return unsupported("deflated transfer syntax 1.2.840.10008.1.2.1.99");
  }
  Parser parser(r, explicit_vr, limits);
  const TopLevel top{&file.pixel_data, &file.frame_positions, &file.frame_optical_paths};
  Status s = parser.dataset(r.size(), 0, file.dataset, &top);
  if (!s.ok()) return s;
  return file;
}

namespace {

Result<Header> item_header_at(const io::Source& source, uint64_t at) {
  uint8_t b[8];
  if (!internal::range_inside(at, 8, source.size())) {
    return corrupt("an item header at offset " + std::to_string(at) + " lies past the end of the file");
  }
  TW_RETURN_IF_ERROR(source.pread(b, at));
  Header h;
  h.at = at;
  h.tag = uint32_t{le16(b)} << 16 | le16(b + 2);
  h.length = le32(b + 4);
  return h;
}

struct Fragment {
  uint64_t at;      // item tag
  uint64_t length;  // value length
  uint8_t head[4];  // the value's first bytes (zero-padded)
};

// True when the file ends inside a Sequence Delimitation Item at `at`: its tag is there, its (always zero)
// length cut off. Nothing after the last fragment is needed, and OpenSlide reads such a file.
bool ends_in_delimiter(const io::Source& source, uint64_t at) {
  uint8_t b[4];
  if (!internal::range_inside(at, 4, source.size()) || internal::range_inside(at, 8, source.size())) return false;
  return source.pread(b, at).ok() && (uint32_t{le16(b)} << 16 | le16(b + 2)) == kSequenceDelimitation;
}

// Every fragment from `first` to the sequence delimiter.
Result<std::vector<Fragment>> walk_fragments(const io::Source& source, uint64_t first) {
  std::vector<Fragment> out;
  for (uint64_t at = first;;) {
    if (ends_in_delimiter(source, at)) return out;
    TW_ASSIGN_OR_RETURN(Header h, item_header_at(source, at));
    if (h.tag == kSequenceDelimitation) return out;
    if (h.tag != kItem)
      return corrupt("pixel data holds " + hex_tag(h.tag) + " at offset " + std::to_string(at) +
                     " where a fragment belongs");
    if (h.length == kUndefined || !internal::range_inside(at + 8, h.length, source.size())) {
      return corrupt("fragment at offset " + std::to_string(at) + " runs past the end of the file");
    }
    if (out.size() >= 16'000'000) return corrupt("pixel data has too many fragments");
    Fragment f{at, h.length, {0, 0, 0, 0}};
    const uint64_t peek = std::min<uint64_t>(4, h.length);
    if (peek) TW_RETURN_IF_ERROR(source.pread({f.head, static_cast<size_t>(peek)}, at + 8));
    out.push_back(f);
    at += 8 + h.length;
  }
}

bool starts_codestream(const Fragment& f) {
  return f.length >= 2 && f.head[0] == 0xFF && (f.head[1] == 0xD8 || f.head[1] == 0x4F);
}

}  // namespace

Result<std::vector<FrameRange>> locate_frames(const io::Source& source, const File& file, uint64_t frames) {
  if (!file.pixel_data || !file.pixel_data->encapsulated) return invalid_argument("pixel data is not encapsulated");
  const uint64_t start = file.pixel_data->offset;
  TW_ASSIGN_OR_RETURN(Header bot, item_header_at(source, start));
  if (bot.tag != kItem || bot.length == kUndefined || bot.length % 4 != 0 ||
      !internal::range_inside(start + 8, bot.length, source.size())) {
    return corrupt("pixel data at offset " + std::to_string(start) + " does not start with a Basic Offset Table item");
  }
  const uint64_t first = start + 8 + bot.length;
  std::vector<FrameRange> out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(frames, 1 << 20)));

  const Element* eot = file.dataset.find(kExtendedOffsetTable);
  const Element* eot_lengths = file.dataset.find(kExtendedOffsetTableLengths);
  if (eot && eot_lengths && eot->value.size() == frames * 8 && eot_lengths->value.size() == frames * 8) {
    for (uint64_t i = 0; i < frames; ++i) {
      const uint64_t value = first + le64(eot->value.data() + i * 8) + 8;
      const uint64_t length = le64(eot_lengths->value.data() + i * 8);
      if (value < first || !internal::range_inside(value, length, source.size())) {
        return corrupt("the Extended Offset Table's frame " + std::to_string(i + 1) + " lies outside the file");
      }
      out.push_back({value, length, false});
    }
    return out;
  }

  if (bot.length / 4 == frames && frames > 0) {
    // Each frame is the run of items from its offset to the next frame's; the items are joined when the
    // frame is read (UnitStream::kItems), so no fragment header is read here but those of a sample of
    // frames: a table that fails the sample (a wrong origin, offsets into fragments) is walked instead.
    std::vector<uint64_t> offsets(static_cast<size_t>(frames));
    std::vector<uint8_t> table(static_cast<size_t>(bot.length));
    TW_RETURN_IF_ERROR(source.pread(table, start + 8));
    bool ok = true;
    for (uint64_t i = 0; i < frames; ++i) {
      offsets[i] = first + le32(table.data() + i * 4);
      if ((i == 0 && offsets[0] != first) || (i > 0 && offsets[i] <= offsets[i - 1]) ||
          !internal::range_inside(offsets[i], 8, source.size())) {
        ok = false;
      }
    }
    auto fragment_fits = [&](uint64_t i) {
      auto h = item_header_at(source, offsets[i]);
      const uint64_t end = i + 1 < frames ? offsets[i + 1] : source.size();
      return h.ok() && h->tag == kItem && h->length != kUndefined && offsets[i] + 8 + h->length <= end;
    };
    const uint64_t step = std::max<uint64_t>(1, frames / kSampledFrames);
    for (uint64_t k = 0; ok && k < kSampledFrames; ++k) ok = fragment_fits(std::min(frames - 1, k * step));
    ok = ok && fragment_fits(frames - 1);
    if (ok) {
      for (uint64_t i = 0; i + 1 < frames; ++i) out.push_back({offsets[i], offsets[i + 1] - offsets[i], true});
      auto tail = walk_fragments(source, offsets[frames - 1]);
      if (tail.ok() && !tail->empty()) {
        const Fragment& last = tail->back();
        out.push_back({offsets[frames - 1], last.at + 8 + last.length - offsets[frames - 1], true});
        return out;
      }
      out.clear();
    }
  }

  TW_ASSIGN_OR_RETURN(std::vector<Fragment> fragments, walk_fragments(source, first));
  if (fragments.size() == frames) {
    for (const Fragment& f : fragments) out.push_back({f.at + 8, f.length, false});
    return out;
  }
  if (frames == 1 && !fragments.empty()) {
    const Fragment& last = fragments.back();
    out.push_back({first, last.at + 8 + last.length - first, true});
    return out;
  }
  // Several fragments per frame and no offset table: a frame starts at each fragment that starts a JPEG
  // (SOI) or JPEG 2000 (SOC) codestream.
  for (size_t i = 0; i < fragments.size(); ++i) {
    if (starts_codestream(fragments[i]) || i == 0) {
      out.push_back({fragments[i].at, 0, true});
    }
    FrameRange& f = out.back();
    f.length = fragments[i].at + 8 + fragments[i].length - f.offset;
  }
  if (out.size() != frames) {
    return corrupt("pixel data has " + std::to_string(fragments.size()) + " fragments in " +
                   std::to_string(out.size()) + " codestreams for " + std::to_string(frames) +
                   " frames, and no offset table says which are which");
  }
  return out;
}

Status join_items(std::vector<uint8_t>& bytes) {
  size_t out = 0;  // values are moved down over the item headers, in place
  for (size_t at = 0; at < bytes.size();) {
    if (bytes.size() - at < 8) return corrupt("a fragment header is cut short");
    const uint32_t t = uint32_t{le16(&bytes[at])} << 16 | le16(&bytes[at + 2]);
    const uint64_t length = le32(&bytes[at + 4]);
    if (t == kSequenceDelimitation) break;
    if (t != kItem) return corrupt("a frame's fragments hold " + hex_tag(t) + " where a fragment belongs");
    if (length > bytes.size() - at - 8) return corrupt("a fragment runs past the end of its frame");
    std::memmove(bytes.data() + out, bytes.data() + at + 8, static_cast<size_t>(length));
    out += static_cast<size_t>(length);
    at += 8 + static_cast<size_t>(length);
  }
  bytes.resize(out);
  return Status();
}

}  // namespace tilewise::dicom
