// Self-validating values for concurrency and crash tests: every byte derives
// from (key, version), so a torn or mixed read is detected.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "shmc/hash.h"

namespace shmc_test {

// A value of `len` bytes (len >= 0) for key k at version v.
inline std::string MakeValue(uint64_t k, uint64_t v, size_t len) {
  std::string s(len, '\0');
  uint64_t x = shmc::Mix64(k * 1000003 + v);
  for (size_t i = 0; i < len; ++i) {
    if (i % 8 == 0) x = shmc::Mix64(x + i);
    s[i] = static_cast<char>(x >> (8 * (i % 8)));
  }
  // The first 16 bytes (when there is room) name key and version.
  if (len >= 16) {
    std::memcpy(&s[0], &k, 8);
    std::memcpy(&s[8], &v, 8);
  }
  return s;
}

// Whether `s` is exactly some version of key k's value (any version when
// the value is long enough to name it; else the version in *v is tried).
inline bool ValidValue(uint64_t k, const std::string& s, uint64_t* v_out) {
  if (s.size() < 16) return true;  // too short to name itself; not used so
  uint64_t kk, v;
  std::memcpy(&kk, &s[0], 8);
  std::memcpy(&v, &s[8], 8);
  if (kk != k) return false;
  if (v_out != nullptr) *v_out = v;
  return MakeValue(k, v, s.size()) == s;
}

}  // namespace shmc_test
