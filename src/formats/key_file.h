// INI-style key files as GLib's GKeyFile reads them (OpenSlide reads Hamamatsu VMS indexes and MIRAX's
// Slidedat.ini through it): [group] headers, key=value lines with the whitespace around key and value
// trimmed, # comments, blank lines; a group named twice is one group; a UTF-8 byte-order mark is skipped
// (as OpenSlide's _openslide_read_key_file does). Values are returned raw (no escape processing), as
// g_key_file_get_value returns them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/source.h"
#include "tilewise/status.h"

namespace tilewise::formats {

// The keys of one group, in file order (a key set twice appears twice).
using KeyList = std::vector<std::pair<std::string, std::string>>;
using KeyFile = std::map<std::string, KeyList>;

// Parses the whole source; Unsupported when it is larger than max_bytes, holds a NUL or a line that is
// neither a group, a key nor a comment (so that detection can tell a key file from other files).
Result<KeyFile> read_key_file(const io::Source& source, uint64_t max_bytes);

// The value of `key`: the last one set, as GLib keeps it; nullptr when absent.
const std::string* find_key(const KeyList& keys, const std::string& key);

// GLib's g_key_file_get_integer: the whole value a decimal integer; nullopt when absent or not an integer.
std::optional<int64_t> key_integer(const KeyList& keys, const std::string& key);
// g_key_file_get_double: the whole value a number (C locale).
std::optional<double> key_double(const KeyList& keys, const std::string& key);

}  // namespace tilewise::formats
