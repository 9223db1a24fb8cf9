// The packed form of small collections (server/commands/packed.h).
#include "server/commands/packed.h"

namespace shmkv {

namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a varint below 2^32 at *p; false past `end` or when longer.
bool GetVarint(const char** p, const char* end, uint32_t* v) {
  uint64_t acc = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (*p == end) return false;
    uint8_t b = static_cast<uint8_t>(*(*p)++);
    acc |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      if (acc > UINT32_MAX) return false;
      *v = static_cast<uint32_t>(acc);
      return true;
    }
  }
  return false;
}

}  // namespace

void Pack(const std::vector<std::string_view>& items, std::string* out) {
  size_t bytes = 5;
  for (std::string_view s : items) bytes += 5 + s.size();
  out->reserve(out->size() + bytes);
  PutVarint(items.size(), out);
  for (std::string_view s : items) {
    PutVarint(s.size(), out);
    out->append(s.data(), s.size());
  }
}

bool Unpack(std::string_view bytes, std::vector<std::string_view>* items) {
  items->clear();
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  uint32_t count = 0;
  if (!GetVarint(&p, end, &count)) return false;
  // Each string takes at least its length byte: a count beyond what is
  // left is damage, found before anything is reserved for it.
  if (count > static_cast<size_t>(end - p)) return false;
  items->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = 0;
    if (!GetVarint(&p, end, &len) || len > static_cast<size_t>(end - p)) {
      items->clear();
      return false;
    }
    items->emplace_back(p, len);
    p += len;
  }
  if (p != end) {
    items->clear();
    return false;
  }
  return true;
}

bool PackedCount(std::string_view head, uint32_t* count) {
  const char* p = head.data();
  return GetVarint(&p, p + head.size(), count);
}

}  // namespace shmkv
