// Sizing and validating the rings of ShmQueue and ShmSyncBuf.
#pragma once

#include <cstdint>
#include <string>

#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"

namespace shmc {
namespace detail {

constexpr uint64_t kMaxRingBytes = 1ULL << 40;

// Validates a ring's requested size (kInvalidArgument otherwise).
template <class Alloc>
bool CheckRingBytes(size_t bytes, size_t min, const std::string& key,
                    const char* who, Error* err) {
  if (bytes >= min && bytes <= kMaxRingBytes) return true;
  return Segment<Alloc>::Fail(err, ErrorCode::kInvalidArgument, 0, key, who,
                              "buf_size_bytes must be %zu..2^40 (got %zu)",
                              min, bytes);
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
