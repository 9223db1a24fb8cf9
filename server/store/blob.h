// The value blob shmkv stores in the map for each key (docs/server.md,
// "Data"): a fixed head, the key's bytes (checked on every read: the map
// is keyed by the key's hash), then the value's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shmkv {

// The Redis type of a value. Every blob of the first head layout had a
// zero where `type` now is, so those read as strings: a hot upgrade from
// a build of that layout keeps every key as it was.
enum class ValueType : uint8_t {
  kString = 0,
  kList = 1,
  kSet = 2,
  kZSet = 3,
  kHash = 4,
  kStream = 5,
};
constexpr uint8_t kValueTypes = 6;  // types this build knows: 0 .. 5

// A blob of this type is not a key: it is one part of a large
// collection (a bucket of a hash, a chunk of a list, ...), keyed by the
// collection's id and the part's index (PartKey) and hashed apart from
// every Redis key (HashPart, server/store/key_hash.h). Keyspace commands,
// SCAN, RANDOMKEY, DBSIZE and expiry never see parts.
constexpr uint8_t kPartType = 0x80;

// An encoding with this bit set is a collection held in parts: its value
// bytes begin with a PartsRoot, and it owns the parts (id, 0 .. parts-1):
// a hash's and a list's every one of them present, a sorted set's the
// indexes its two halves use (server/commands/zset_tree.h). The store keeps the rule that one live key
// owns an id: a value that leaves the map (DEL, an overwrite, expiry)
// takes its parts with it, and a copy of one (COPY) gets parts of its own.
constexpr uint8_t kEncodingParts = 0x80;
struct PartsRoot {
  uint64_t id;     // the collection's id (never 0)
  uint64_t parts;  // its parts' indexes are 0 .. parts-1
};
static_assert(sizeof(PartsRoot) == 16, "PartsRoot leads a value's bytes");

// A part's key bytes: the collection's id, then the part's index (both
// little-endian). The index kGraveIndex holds a grave: the PartsRoot of a
// collection whose key is gone and whose parts are still being removed
// (parts are removed from the highest index down, the grave's `parts`
// lowered after them, so a grave never claims fewer parts than remain).
constexpr uint64_t kGraveIndex = ~0ULL;
struct PartKey {
  uint64_t id, index;
};
static_assert(sizeof(PartKey) == 16, "a part's key is 16 bytes");
inline std::string_view PartKeyBytes(const PartKey& k, char (&buf)[16]) {
  std::memcpy(buf, &k, 16);
  return std::string_view(buf, 16);
}

// Encodings (BlobHead::encoding) are numbered per type. A string's bytes
// are the string; its encoding says which of Redis's representations
// Redis would have given it (OBJECT ENCODING):
//   kStringAsGiven  as its content says: a canonical integer of up to 20
//                   characters "int", up to 44 bytes "embstr", else "raw"
//                   (Redis's choice for a value it is given whole: SET,
//                   MSET, INCR; every blob of head layout 1)
//   kStringRaw      "raw": changed in place (APPEND, SETRANGE, SETBIT)
//   kStringNotInt   "embstr" up to 44 bytes, else "raw" (INCRBYFLOAT's)
constexpr uint8_t kStringAsGiven = 0;
constexpr uint8_t kStringRaw = 1;
constexpr uint8_t kStringNotInt = 2;
// A hash's bytes are packed (server/commands/packed.h: field, value, ...
// in insertion order). kHashListpack while it has at most 512 fields and
// no field or value over 64 bytes, as Redis's listpack; past that
// kHashTable ("hashtable"), for good, as Redis converts once.
constexpr uint8_t kHashListpack = 0;
constexpr uint8_t kHashTable = 1;

// A value blob in the map: this head, the key, the value.
//
// Head layout 2 (kBlobHeadVersion): layout 1 had `u32 reserved` (always
// 0) where `type`, `encoding` and `db` are. `db` was `reserved` (always
// 0) before databases: every such blob is a key of database 0.
struct BlobHead {
  uint64_t expire_at_ms;  // CLOCK_REALTIME ms; 0: no TTL
  uint32_t key_len;
  uint8_t type;      // ValueType; a type this build does not know answers
                     // WRONGTYPE to every typed command (never misread)
  uint8_t encoding;  // how the type's value bytes are laid out (the
                     // type's own numbering; 0: its first, compact form)
  uint16_t db;  // the key's database (physical: server/store/dbs.h), 0
                // for a part
};
constexpr uint32_t kBlobHeadVersion = 2;
static_assert(sizeof(BlobHead) == 16 && offsetof(BlobHead, key_len) == 8 &&
                  offsetof(BlobHead, type) == 12 &&
                  offsetof(BlobHead, encoding) == 13 &&
                  offsetof(BlobHead, db) == 14,
              "blobs already in a map keep this head: a change is a new "
              "kBlobHeadVersion that reads the old one (docs/server.md)");
constexpr size_t kBlobHeader = sizeof(BlobHead);

// A parsed blob (views into a buffer).
struct Blob {
  int64_t expire_ms = 0;
  ValueType type = ValueType::kString;
  uint8_t encoding = 0;
  uint16_t db = 0;
  std::string_view key, value;
  bool Parse(const char* p, size_t n) {
    if (n < kBlobHeader) return false;
    BlobHead h;
    std::memcpy(&h, p, sizeof(h));
    uint32_t klen = h.key_len;
    if (klen > n - kBlobHeader) return false;
    expire_ms = static_cast<int64_t>(h.expire_at_ms);
    type = static_cast<ValueType>(h.type);
    encoding = h.encoding;
    db = h.db;
    key = std::string_view(p + kBlobHeader, klen);
    value = std::string_view(p + kBlobHeader + klen, n - kBlobHeader - klen);
    return true;
  }
  bool Expired(int64_t now) const { return expire_ms != 0 && expire_ms <= now; }
  bool part() const { return static_cast<uint8_t>(type) == kPartType; }
  // A collection held in parts: its root (false when it is not one, or
  // its bytes are too short to hold the root: damage).
  bool Root(PartsRoot* r) const {
    if (part() || (encoding & kEncodingParts) == 0 ||
        value.size() < sizeof(PartsRoot)) {
      return false;
    }
    std::memcpy(r, value.data(), sizeof(PartsRoot));
    return r->id != 0;
  }
};

inline void MakeBlob(std::string* out, std::string_view key, ValueType type,
                     uint8_t encoding, std::string_view value,
                     int64_t expire_ms, uint16_t db = 0) {
  out->resize(kBlobHeader + key.size() + value.size());
  char* p = &(*out)[0];
  BlobHead h{static_cast<uint64_t>(expire_ms),
             static_cast<uint32_t>(key.size()), static_cast<uint8_t>(type),
             encoding, db};
  std::memcpy(p, &h, sizeof(h));
  std::memcpy(p + kBlobHeader, key.data(), key.size());
  if (!value.empty()) {
    std::memcpy(p + kBlobHeader + key.size(), value.data(), value.size());
  }
}

}  // namespace shmkv
