// Which segments make one container: the one rule every `shmc` command
// uses (info, check, dump and rm on a name; ls on every segment found).
//
// From the name a program gave its container:
//  - NAME is a sorted array's directory: NAME, with NAME0 and NAME1 when
//    they are its data segments (or shmc segments too short for a header:
//    damaged data, which check reports and rm removes);
//  - NAME does not exist, NAME0 is a hash table whose nodes a map's index
//    can have and NAME1 a link table: the map's pair (the reference's
//    naming);
//  - otherwise NAME alone, of the kind its header says.
#pragma once

#include <functional>
#include <string>

#include "tools/shmc/container.h"
#include "tools/shmc/segments.h"

namespace shmc_tool {

// A segment's header: PeekHeader, or the peeks `ls` has taken already.
using PeekFn = std::function<HeaderPeek(const SegName&)>;

// The container named `name` (an exit code; *err says why when not ok).
int Resolve(const SegName& name, const PeekFn& peek, Container* out,
            std::string* err);
int Resolve(const SegName& name, Container* out, std::string* err);

// For `rm`, which is often run on what no longer resolves: when Resolve
// fails, the segments that may have been the container (NAME, or the
// halves NAME0/NAME1 of a map that exist), of kind "damaged"; rm then
// removes only those that prove to be shmc's. Fails as Resolve did when
// there are none.
int ResolveForRemoval(const SegName& name, Container* out, std::string* err);

}  // namespace shmc_tool
