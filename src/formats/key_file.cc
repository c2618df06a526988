#include "formats/key_file.h"

#include <cstdlib>
#include <optional>

#include "formats/property_parsing.h"

namespace tilewise::formats {

namespace {
std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}
}  // namespace

Result<KeyFile> read_key_file(const io::Source& source, uint64_t max_bytes) {
  if (source.size() > max_bytes)
    return unsupported("larger than a key file (" + std::to_string(max_bytes >> 10) + " KiB)");
  std::string text(static_cast<size_t>(source.size()), '\0');
  TW_RETURN_IF_ERROR(source.pread({reinterpret_cast<uint8_t*>(text.data()), text.size()}, 0));
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  if (text.find('\0') != std::string::npos) return unsupported("not a text file");
  KeyFile groups;
  KeyList* group = nullptr;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = trim(text.substr(at, end - at));
    at = end + 1;
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[' && line.back() == ']') {
      group = &groups[line.substr(1, line.size() - 2)];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos || !group) return unsupported("not a key file (line \"" + line.substr(0, 40) + "\")");
    group->emplace_back(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  return groups;
}

const std::string* find_key(const KeyList& keys, const std::string& key) {
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    if (it->first == key) return &it->second;
  }
  return nullptr;
}

std::optional<int64_t> key_integer(const KeyList& keys, const std::string& key) {
  const std::string* v = find_key(keys, key);
  if (!v) return std::nullopt;
  return parse_int64(*v);
}

std::optional<double> key_double(const KeyList& keys, const std::string& key) {
  const std::string* v = find_key(keys, key);
  if (!v) return std::nullopt;
  return parse_double(*v);
}

}  // namespace tilewise::formats
