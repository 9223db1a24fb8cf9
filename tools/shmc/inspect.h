// What the `shmc` commands do to one container, whatever its kind, once
// resolve.h has found its segments: describe it (info), check it
// (optionally repairing), dump it record by record, or remove it.
//
// Every function returns an exit code (container.h). Segment bytes are
// untrusted: nothing is read before the header and geometry have been
// checked against the mapped size.
#pragma once

#include <functional>
#include <string>

#include "tools/shmc/container.h"
#include "tools/shmc/json.h"

namespace shmc_tool {

int Info(const Container& c, Json* out, std::string* err);
int Check(const Container& c, bool fix, Json* out, std::string* err);
int Dump(const Container& c, const DumpOptions& opt,
         const std::function<void(const Json&)>& emit, std::string* err);
int Remove(const Container& c, bool force, Json* out, std::string* err);

}  // namespace shmc_tool
