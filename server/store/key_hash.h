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

// A key of database `db` (physical, 0..15): database 0's keys hash as
// they did before databases; another's hash is mixed with its number, so
// one name in two databases is two map keys (the blob's head carries
// the database too, checked on every read).
inline KeyHash HashKeyIn(uint32_t db, std::string_view k) {
  KeyHash h = HashKey(k);
  if (db == 0) return h;
  return KeyHash{shmc::Mix64(h.a ^ (db * 0xa0761d6478bd642fULL)),
                 shmc::Mix64(h.b + db * 0xe7037ed1a0b428dbULL)};
}

// A part of a collection (server/store/blob.h) is keyed by its id and
// index, mixed with constants no byte-string hash uses, so parts and Redis
// keys never share a hash except by a 128-bit accident (and a read checks
// the blob's kind as well as its key).
inline KeyHash HashPart(uint64_t id, uint64_t index) {
  uint64_t a = shmc::Mix64(id * 0xd6e8feb86659fd93ULL ^ 0x6a09e667f3bcc909ULL);
  a = shmc::Mix64(a ^ (index * 0x9e3779b97f4a7c15ULL + 0xbb67ae8584caa73bULL));
  uint64_t b = shmc::Mix64(index * 0xff51afd7ed558ccdULL ^ 0x3c6ef372fe94f82bULL);
  b = shmc::Mix64(b ^ (id * 0xc4ceb9fe1a85ec53ULL + 0xa54ff53a5f1d36f1ULL));
  return KeyHash{a, b};
}

}  // namespace shmkv
