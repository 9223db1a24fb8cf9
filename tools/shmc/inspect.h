// What the `shmc` commands do to one container, whatever its kind: the
// container is resolved from its name, then described (info), checked
// (check, optionally repairing), dumped record by record, or removed.
//
// Every function returns an exit code (docs/cli.md): 0 ok, 1 error (no such
// segment, permission, another program's segment, a live writer in the
// way), 3 problems found (damaged, truncated or abandoned segment, or check
// findings). Segment bytes are untrusted: nothing is read before the header
// and geometry have been checked against the mapped size.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shmc/errors.h"
#include "tools/shmc/json.h"
#include "tools/shmc/segments.h"

namespace shmc_tool {

enum ExitCode {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitProblems = 3,
};

// The exit code for a library error: 3 when the segment is damaged.
int ExitFor(shmc::ErrorCode code);

struct Container {
  SegName name;               // as the user gave it
  std::string kind;           // kind name; "hash_map" for a map's pair
  std::vector<SegName> segments;
  std::vector<HeaderPeek> peeks;  // one per segment
};

int Resolve(const SegName& name, Container* out, std::string* err);

struct DumpOptions {
  size_t limit = 0;  // 0: all
  bool hex = false;  // data as hex instead of escaped strings
};

int Info(const Container& c, Json* out, std::string* err);
int Check(const Container& c, bool fix, Json* out, std::string* err);
int Dump(const Container& c, const DumpOptions& opt,
         const std::function<void(const Json&)>& emit, std::string* err);
int Remove(const Container& c, bool force, Json* out, std::string* err);

}  // namespace shmc_tool
