// What every part of the `shmc` tool shares: a container as resolved from
// its name, the exit codes (docs/cli.md) and the options of `dump`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "shmc/errors.h"
#include "tools/shmc/segments.h"

namespace shmc_tool {

// 0 ok; 1 error (no such segment, permission, another program's segment,
// a live writer in the way); 2 usage; 3 problems found (damaged, truncated
// or abandoned segment, or check findings).
enum ExitCode {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitProblems = 3,
};

// The exit code for a library error: 3 when the segment is damaged.
inline int ExitFor(shmc::ErrorCode code) {
  switch (code) {
    case shmc::ErrorCode::kCorrupted:
    case shmc::ErrorCode::kSizeMismatch:
    case shmc::ErrorCode::kNotReady:
      return kExitProblems;
    default:
      return kExitError;
  }
}

// One container: the segments that make it (resolve.h) and their headers.
struct Container {
  SegName name;               // as the user gave it
  std::string kind;           // kind name; "hash_map" for a map's pair
  std::vector<SegName> segments;
  std::vector<HeaderPeek> peeks;  // one per segment
};

struct DumpOptions {
  size_t limit = 0;  // 0: all
  bool hex = false;  // data as hex instead of escaped strings
};

}  // namespace shmc_tool
