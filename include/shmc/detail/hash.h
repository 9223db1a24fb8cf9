// Fixed hash functions. Anything that decides where data lives in a segment,
// or fingerprints a layout, must hash the same in every build and process, so
// std::hash (implementation-defined, may be salted) is never used for that.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shmc {
namespace detail {

// FNV-1a, 64-bit. Used for layout fingerprints and header checksums, where
// inputs are short and speed does not matter.
constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

inline uint64_t Fnv1a64(const void* data, size_t len,
                        uint64_t h = kFnvOffset) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

inline uint64_t Fnv1a64U64(uint64_t v, uint64_t h) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  return Fnv1a64(b, 8, h);
}

}  // namespace detail
}  // namespace shmc
