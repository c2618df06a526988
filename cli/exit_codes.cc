#include "exit_codes.h"

#include <cstdio>

namespace tilewise::cli {

int report(const Status& status) {
  if (status.ok()) return kExitOk;
  std::fprintf(stderr, "tilewise: error: %s\n", status.message().c_str());
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kNotFound: return kExitNotFound;
    case StatusCode::kUnsupported: return kExitUnsupported;
    case StatusCode::kCorrupt: return kExitCorrupt;
    case StatusCode::kIoError: return kExitIoError;
    case StatusCode::kOutOfMemory: return kExitOutOfMemory;
    default: return kExitFailure;
  }
}

}  // namespace tilewise::cli
