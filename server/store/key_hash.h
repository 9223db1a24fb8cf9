// How shmkv keys its map: a Redis key (any bytes) becomes a 128-bit hash,
// the map's fixed-size key; the value blob carries the key itself, so a
// read confirms it found the right one (server/blob.h). Changing either
// hash moves every stored key: it is part of the map's layout.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>

#include "shmc/hash.h"

namespace shmkv {

struct KeyHash {
  uint64_t a, b;
  bool operator==(const KeyHash& o) const { return a == o.a && b == o.b; }
};

// A second 64-bit hash, independent of shmc::HashBytes (other constants).
inline uint64_t Hash2(const char* p, size_t n) {
  uint64_t h = 0x9ae16a3b2f90404fULL ^ (n * 0xc2b2ae3d27d4eb4fULL);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = shmc::Mix64(h ^ (w * 0x87c37b91114253d5ULL)) + 0x52dce729;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  return shmc::Mix64(h ^ tail ^ (static_cast<uint64_t>(n) << 59));
}

inline KeyHash HashKey(std::string_view k) {
  return KeyHash{shmc::HashBytes(k.data(), k.size()), Hash2(k.data(), k.size())};
}

}  // namespace shmkv
