#include "dicom/json_model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "util/base64.h"

namespace tilewise::dicom {

namespace {

using nlohmann::json;

constexpr uint32_t kPerFrameGroups = tag(0x5200, 0x9230);
constexpr uint32_t kPlanePositionSlide = tag(0x0048, 0x021A);
constexpr uint32_t kColumnPosition = tag(0x0048, 0x021E);
constexpr uint32_t kRowPosition = tag(0x0048, 0x021F);
constexpr uint32_t kZOffset = tag(0x0040, 0x074A);
constexpr uint32_t kOpticalPathIdentification = tag(0x0048, 0x0207);
constexpr uint32_t kOpticalPathIdentifier = tag(0x0048, 0x0106);
constexpr uint32_t kOpticalPathSequence = tag(0x0048, 0x0105);
constexpr uint32_t kIccProfile = tag(0x0028, 0x2000);
constexpr uint32_t kSopClass = tag(0x0008, 0x0016);
constexpr uint32_t kSopInstance = tag(0x0008, 0x0018);
constexpr uint32_t kAvailableSyntaxes = tag(0x0008, 0x3002);
constexpr uint32_t kTransferSyntax = tag(0x0002, 0x0010);

bool is_one_of(std::string_view vr, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), vr) != set.end();
}

std::string number_text(const json& v, bool integer) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  const double d = v.get<double>();
  if (integer && std::floor(d) == d && std::fabs(d) < 9e15) return std::to_string(static_cast<int64_t>(d));
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);  // shortest form that reads back as d
  return std::string(buf, r.ptr);
}

template <typename T>
void append_le(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (as the Part 10 reader)
  out.insert(out.end(), b, b + sizeof(T));
}

struct Builder {
  const ParseLimits& limits;
  std::string icc_uri;

  Status element(uint32_t t, const json& value, uint32_t depth, Element& e, bool optical_path_item) {
    e.tag = t;
    const std::string vr = value.is_object() && value.contains("vr") && value["vr"].is_string() ? value["vr"].get<std::string>() : "UN";
    if (vr.size() != 2) return corrupt("element " + std::to_string(t) + ": VR \"" + vr + "\"");
    e.vr = {vr[0], vr[1]};
    if (!value.is_object()) return corrupt("an element is not a JSON object");
    if (value.contains("BulkDataURI")) {
      if (optical_path_item && t == kIccProfile && value["BulkDataURI"].is_string()) icc_uri = value["BulkDataURI"].get<std::string>();
      return Status();
    }
    if (value.contains("InlineBinary")) {
      if (!value["InlineBinary"].is_string()) return corrupt("InlineBinary is not a string");
      auto bytes = internal::base64_decode(value["InlineBinary"].get<std::string>());
      if (!bytes) return corrupt("InlineBinary is not base64");
      e.value = std::move(*bytes);
      return Status();
    }
    if (!value.contains("Value")) return Status();  // an empty element
    const json& values = value["Value"];
    if (!values.is_array()) return corrupt("a Value is not an array");
    if (vr == "SQ") {
      if (depth + 1 > limits.max_depth) return corrupt("sequences nested deeper than " + std::to_string(limits.max_depth));
      for (const json& item : values) {
        DataSet d;
        TW_RETURN_IF_ERROR(dataset(item, depth + 1, d, t == kOpticalPathSequence && e.items.empty()));
        e.items.push_back(std::move(d));
      }
      return Status();
    }
    std::vector<uint8_t>& out = e.value;
    auto number = [&](const json& v) -> Result<double> {
      if (!v.is_number()) return corrupt("a " + vr + " value is not a number");
      return v.get<double>();
    };
    if (is_one_of(vr, {"US", "SS", "UL", "SL", "UV", "SV", "FL", "FD"})) {
      for (const json& v : values) {
        TW_ASSIGN_OR_RETURN(const double d, number(v));
        if (vr == "FL") append_le(out, static_cast<float>(d));
        else if (vr == "FD") append_le(out, d);
        else if (!std::isfinite(d)) return corrupt("a " + vr + " value is not finite");
        else if (vr == "US") append_le(out, static_cast<uint16_t>(std::clamp(d, 0.0, 65535.0)));
        else if (vr == "SS") append_le(out, static_cast<int16_t>(std::clamp(d, -32768.0, 32767.0)));
        else if (vr == "UL") append_le(out, static_cast<uint32_t>(std::clamp(d, 0.0, 4294967295.0)));
        else if (vr == "SL") append_le(out, static_cast<int32_t>(std::clamp(d, -2147483648.0, 2147483647.0)));
        else if (vr == "UV") append_le(out, v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(std::max(d, 0.0)));
        else append_le(out, v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(d));
      }
      return Status();
    }
    if (vr == "AT") {
      for (const json& v : values) {
        const std::string s = v.is_string() ? v.get<std::string>() : "";
        uint32_t at = 0;
        if (s.size() != 8 || std::from_chars(s.data(), s.data() + 8, at, 16).ptr != s.data() + 8) return corrupt("an AT value is not a tag");
        append_le(out, static_cast<uint16_t>(at >> 16));
        append_le(out, static_cast<uint16_t>(at & 0xFFFF));
      }
      return Status();
    }
    // Strings: values joined by '\', padded to even length as in a file.
    std::string text;
    for (size_t i = 0; i < values.size(); ++i) {
      const json& v = values[i];
      if (i) text += '\\';
      if (v.is_null()) continue;
      if (vr == "PN" && v.is_object()) {
        auto part = [&](const char* group) { return v.contains(group) && v[group].is_string() ? v[group].get<std::string>() : ""; };
        const std::string ideographic = part("Ideographic"), phonetic = part("Phonetic");
        std::string pn = part("Alphabetic");
        if (!ideographic.empty() || !phonetic.empty()) pn.append(1, '=').append(ideographic);
        if (!phonetic.empty()) pn.append(1, '=').append(phonetic);
        text += pn;
      } else if (v.is_string()) {
        text += v.get<std::string>();
      } else if (v.is_number()) {
        text += number_text(v, vr == "IS");
      } else {
        return corrupt("a " + vr + " value is neither a string nor a number");
      }
    }
    if (text.size() % 2) text += vr == "UI" ? '\0' : ' ';
    out.assign(text.begin(), text.end());
    return Status();
  }

  Status dataset(const json& object, uint32_t depth, DataSet& out, bool optical_path_item = false) {
    if (!object.is_object()) return corrupt("a dataset is not a JSON object");
    for (const auto& [key, value] : object.items()) {
      uint32_t t = 0;
      if (key.size() != 8 || std::from_chars(key.data(), key.data() + 8, t, 16).ptr != key.data() + 8) {
        return corrupt("a key is not a tag: " + key.substr(0, 16));
      }
      Element e;
      TW_RETURN_IF_ERROR(element(t, value, depth, e, optical_path_item).with_context(key));
      out.elements.push_back(std::move(e));
    }
    std::sort(out.elements.begin(), out.elements.end(), [](const Element& a, const Element& b) { return a.tag < b.tag; });
    return Status();
  }
};

// Each per-frame item's position, focal plane and optical path, as the Part 10 reader notes them.
void frame_positions(const Element& groups, File& file) {
  for (const DataSet& item : groups.items) {
    FramePosition p;
    if (const DataSet* pos = item.item(kPlanePositionSlide)) {
      auto c = pos->integer(kColumnPosition), r = pos->integer(kRowPosition);
      if (c && r) p.column = *c, p.row = *r, p.has_position = true;
      if (auto z = pos->string(kZOffset)) {
        char* stop = nullptr;
        const double v = std::strtod(z->c_str(), &stop);
        if (!z->empty() && stop && *stop == '\0' && std::isfinite(v)) p.z_offset = v, p.has_z = true;
      }
    }
    if (const DataSet* ident = item.item(kOpticalPathIdentification)) {
      if (auto id = ident->string(kOpticalPathIdentifier)) {
        std::vector<std::string>& ids = file.frame_optical_paths;
        auto it = std::find(ids.begin(), ids.end(), *id);
        if (it == ids.end() && ids.size() < FramePosition::kNoPath) it = ids.insert(ids.end(), *id);
        if (it != ids.end()) p.optical_path = static_cast<uint16_t>(it - ids.begin());
      }
    }
    file.frame_positions.push_back(p);
  }
}

}  // namespace

Result<std::vector<JsonInstance>> parse_json_metadata(std::string_view text, const ParseLimits& limits) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return corrupt("the metadata is not JSON");
  if (!doc.is_array()) return corrupt("the metadata is not a JSON array of instances");
  std::vector<JsonInstance> out;
  for (const json& object : doc) {
    Builder b{limits, {}};
    JsonInstance in;
    DataSet all;
    TW_RETURN_IF_ERROR(b.dataset(object, 0, all));
    for (Element& e : all.elements) {
      if (e.tag == kPerFrameGroups) {
        if (e.items.size() > limits.max_frames) return corrupt("over " + std::to_string(limits.max_frames) + " per-frame items");
        frame_positions(e, in.file);
        continue;
      }
      if ((e.tag >> 16) == 0x0002) {
        in.file.meta.elements.push_back(std::move(e));
      } else {
        in.file.dataset.elements.push_back(std::move(e));
      }
    }
    in.icc_profile_uri = std::move(b.icc_uri);
    if (auto ts = in.file.meta.string(kTransferSyntax)) in.transfer_syntaxes.push_back(*ts);
    if (const Element* available = in.file.dataset.find(kAvailableSyntaxes)) {
      for (const std::string& ts : string_values(*available)) in.transfer_syntaxes.push_back(ts);
    }
    // The file meta a Part 10 file would have (its Transfer Syntax UID set by the caller).
    auto meta_copy = [&](uint32_t from, uint16_t to) {
      const Element* e = in.file.dataset.find(from);
      if (!e || in.file.meta.find(tag(0x0002, to))) return;
      Element m = *e;
      m.tag = tag(0x0002, to);
      in.file.meta.elements.push_back(std::move(m));
    };
    meta_copy(kSopClass, 0x0002);
    meta_copy(kSopInstance, 0x0003);
    std::sort(in.file.meta.elements.begin(), in.file.meta.elements.end(),
              [](const Element& a, const Element& b) { return a.tag < b.tag; });
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace tilewise::dicom
