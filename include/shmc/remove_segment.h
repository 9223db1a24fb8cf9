// shmc::RemoveSegment (shmc addition): deletes the segment at a key only
// when it proves to be a shmc segment (it maps and starts with shmc's
// magic). An empty file, a device node or anybody else's data under the
// key is left where it is. `shmc rm` removes segments by the same rule.
#pragma once

#include <string>

#include "shmc/detail/segment.h"

namespace shmc {

enum class RemoveStatus {
  kRemoved,
  kAbsent,   // nothing under the key
  kForeign,  // something that is not a shmc segment: left alone
  kFailed,   // it could not be examined or removed: see *why
};

// Alloc is the allocator the segment was made with (POSIX, SVIPC, ...).
// *why (if given) says what was wrong for kForeign and kFailed.
template <class Alloc>
RemoveStatus RemoveSegment(const std::string& key, std::string* why = nullptr) {
  Alloc alloc;
  switch (detail::RemoveOwnSegment(key, &alloc)) {
    case detail::RemoveResult::kRemoved: return RemoveStatus::kRemoved;
    case detail::RemoveResult::kAbsent: return RemoveStatus::kAbsent;
    case detail::RemoveResult::kForeign:
      if (why != nullptr) *why = "not a shmc segment: left alone";
      return RemoveStatus::kForeign;
    case detail::RemoveResult::kFailed:
      break;
  }
  if (why != nullptr) *why = detail::AllocErrorText(alloc.last_errno());
  return RemoveStatus::kFailed;
}

}  // namespace shmc
