// Where a writer puts its output until it is complete: a hidden name beside the output, unique to this
// process and call (".NAME.partial-PID-N"), renamed to the output at the end, so that a failed, killed or
// concurrent conversion never leaves or clobbers a complete-looking output.
#pragma once

#include <string>

namespace tilewise::write {

// The partial name of `path` (a file, or a folder with or without a trailing '/').
std::string partial_name(const std::string& path);

}  // namespace tilewise::write
