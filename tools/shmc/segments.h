// Naming, finding and peeking at shmc segments for the `shmc` tool.
//
// A segment is named BACKEND:KEY with BACKEND one of posix (a shm_open name,
// "/name" or "name"), sysv (a SysV key: decimal, 0octal or 0xhex) or file (a
// path). A container is named by the key given to its InitForWrite; a hash
// map's two segments are KEY+"0" (index) and KEY+"1" (values), the
// reference's naming, so `shmc info posix:/m` finds /m0 and /m1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shmc/detail/alloc_base.h"
#include "shmc/detail/segment_header.h"
#include "shmc/segment_name.h"
#include "tools/shmc/json.h"

namespace shmc_tool {

// The library's segment names (shmc/segment_name.h): one syntax for every
// tool.
using Backend = shmc::SegmentBackend;
using SegName = shmc::SegmentName;

inline bool ParseSegName(const std::string& arg, SegName* out,
                         std::string* err) {
  return SegName::Parse(arg, out, err);
}

std::unique_ptr<shmc::impl::ShmAlloc> MakeAlloc(Backend backend);

// The first 512 bytes of a segment, copied out of a read-only mapping.
struct HeaderPeek {
  enum Status {
    kOk,         // a shmc header (magic right, >= 512 bytes); not yet checked
    kNotFound,   // no such segment
    kError,      // could not map it (permission, ...): see sys_errno
    kForeign,    // exists, but is not a shmc segment
    kTruncated,  // shmc magic, but shorter than the header
  };
  Status status = kNotFound;
  int sys_errno = 0;
  std::string message;  // for every status but kOk
  size_t mapped = 0;    // the segment's size
  alignas(8) unsigned char bytes[sizeof(shmc::detail::SegmentHeader)] = {};

  const shmc::detail::SegmentHeader* header() const {
    return reinterpret_cast<const shmc::detail::SegmentHeader*>(bytes);
  }
  // The kind, or 0 when unknown to this build.
  uint32_t kind() const;
  uint64_t param(const char* name, bool* found = nullptr) const;
};

HeaderPeek PeekHeader(const SegName& name);

// Header facts every command shows: kind, versions, size, params, creator,
// age, state and writer lease.
Json HeaderSummary(const SegName& name, const HeaderPeek& peek);

// Every segment on the machine that may be a shmc segment: /dev/shm, the
// SysV segments with a key, and the regular files in `dirs`.
std::vector<SegName> AllSegments(const std::vector<std::string>& dirs,
                                 std::string* warnings);

}  // namespace shmc_tool
