// Exit codes of the `tilewise` command, one per core status code, and the one place that prints errors.
#pragma once

#include "tilewise/status.h"

namespace tilewise::cli {

enum ExitCode {
  kExitOk = 0,
  kExitFailure = 1,      // internal error
  kExitUsage = 2,        // bad command line or invalid argument
  kExitNotFound = 3,
  kExitUnsupported = 4,
  kExitCorrupt = 5,
  kExitIoError = 6,
  kExitOutOfMemory = 7,
};

// Prints "tilewise: error: <message>" to stderr and returns the exit code for the status.
int report(const Status& status);

}  // namespace tilewise::cli
