// Steps shared by the containers with a single writer: taking the writer
// lease after the segment is open, and sizing/validating ring capacities.
#pragma once

#include <cstdint>

#include "shmc/detail/segment.h"
#include "shmc/detail/writer_lease.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"

namespace shmc {
namespace detail {

// Takes the writer lease of an open segment, honouring kSharedWriters in
// `flags`. On a live holder: kWriterBusy, the segment is detached, false.
// *own_lease says whether this object must release it; *result tells the
// caller whether a previous holder died (recovery may be due).
template <class Alloc>
bool TakeWriterLease(Segment<Alloc>* seg, int flags, const char* who,
                     Error* err, bool* own_lease,
                     LeaseResult* result = nullptr) {
  uint64_t holder = 0;
  LeaseResult r = AcquireLease(seg->header(), flags & kSharedWriters, &holder);
  if (result != nullptr) *result = r;
  if (r == LeaseResult::kBusy) {
    std::string key = seg->key();
    seg->Reset();
    return Segment<Alloc>::Fail(
        err, ErrorCode::kWriterBusy, 0, key, who,
        "writer lease held by live pid %llu (one writer per segment; "
        "kSharedWriters opts out)", static_cast<unsigned long long>(holder));
  }
  *own_lease = r != LeaseResult::kShared;
  return true;
}

// Ring capacities are powers of two (positions map to offsets by a mask).
inline uint64_t RingCapacityFor(uint64_t bytes) {
  uint64_t cap = 1;
  while (cap < bytes) cap <<= 1;
  return cap;
}

inline bool ValidRingCapacity(uint64_t cap, uint64_t min, uint64_t max) {
  return cap >= min && cap <= max && (cap & (cap - 1)) == 0;
}

}  // namespace detail
}  // namespace shmc
