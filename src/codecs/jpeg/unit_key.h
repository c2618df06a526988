// UnitKey: which encoded unit an MCU index entry belongs to, opaque to the codecs: the table of units it is
// part of (any object the caller keeps alive while the units can be read; the cache holds it weakly) and
// its index there.
#pragma once

#include <cstdint>
#include <memory>

namespace tilewise::codecs {

struct UnitKey {
  const std::shared_ptr<const void>& table;
  int64_t index;
};

}  // namespace tilewise::codecs
