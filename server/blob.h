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

// A value blob in the map: this head, the key, the value.
struct BlobHead {
  uint64_t expire_at_ms;  // CLOCK_REALTIME ms; 0: no TTL
  uint32_t key_len;
  uint32_t reserved;      // 0
};
static_assert(sizeof(BlobHead) == 16 && offsetof(BlobHead, key_len) == 8,
              "blobs already in a map keep this head (docs/server.md)");
constexpr size_t kBlobHeader = sizeof(BlobHead);

// A parsed blob (views into a buffer).
struct Blob {
  int64_t expire_ms = 0;
  std::string_view key, value;
  bool Parse(const char* p, size_t n) {
    if (n < kBlobHeader) return false;
    BlobHead h;
    std::memcpy(&h, p, sizeof(h));
    uint32_t klen = h.key_len;
    if (klen > n - kBlobHeader) return false;
    expire_ms = static_cast<int64_t>(h.expire_at_ms);
    key = std::string_view(p + kBlobHeader, klen);
    value = std::string_view(p + kBlobHeader + klen, n - kBlobHeader - klen);
    return true;
  }
  bool Expired(int64_t now) const { return expire_ms != 0 && expire_ms <= now; }
};

inline void MakeBlob(std::string* out, std::string_view key, std::string_view value,
              int64_t expire_ms) {
  out->resize(kBlobHeader + key.size() + value.size());
  char* p = &(*out)[0];
  BlobHead h{static_cast<uint64_t>(expire_ms),
             static_cast<uint32_t>(key.size()), 0};
  std::memcpy(p, &h, sizeof(h));
  std::memcpy(p + kBlobHeader, key.data(), key.size());
  if (!value.empty()) {
    std::memcpy(p + kBlobHeader + key.size(), value.data(), value.size());
  }
}

}  // namespace shmkv
