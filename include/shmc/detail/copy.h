// Copies of record payloads on the queues' hot paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace shmc {
namespace detail {

// memcpy for short records without the call: up to 64 bytes the copy is two
// fixed-size copies that may overlap (the first and the last k bytes, k a
// power of two with k <= n <= 2k), which the compiler emits inline as
// register or vector moves. Longer copies go to memcpy, whose call is
// small against them. dst and src must not overlap.
// GCC 12 may warn, after inlining into a caller with a fixed-size buffer,
// about branches for lengths the caller has already ruled out (Pop checks
// the record fits the buffer before copying): -Warray-bounds and
// -Wstringop-overflow/-overread false positives, silenced here only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#if __GNUC__ >= 11
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
#endif
inline void CopyBytes(void* dst, const void* src, size_t n) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  // Both halves are copied straight from src: with src and dst apart, the
  // bytes where the halves overlap are written twice with the same value.
  if (n > 64) {
    std::memcpy(d, s, n);
  } else if (n > 32) {
    __builtin_memcpy(d, s, 32);
    __builtin_memcpy(d + n - 32, s + n - 32, 32);
  } else if (n > 16) {
    __builtin_memcpy(d, s, 16);
    __builtin_memcpy(d + n - 16, s + n - 16, 16);
  } else if (n >= 8) {
    __builtin_memcpy(d, s, 8);
    __builtin_memcpy(d + n - 8, s + n - 8, 8);
  } else if (n >= 4) {
    __builtin_memcpy(d, s, 4);
    __builtin_memcpy(d + n - 4, s + n - 4, 4);
  } else if (n > 0) {
    d[0] = s[0];
    d[n / 2] = s[n / 2];
    d[n - 1] = s[n - 1];
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace detail
}  // namespace shmc
