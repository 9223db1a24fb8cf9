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

PackedReader::PackedReader(std::string_view bytes)
    : p_(bytes.data()), end_(bytes.data() + bytes.size()) {
  // Each string takes at least its length byte: a count beyond what is
  // left is damage, found before anything is sized by it.
  ok_ = GetVarint(&p_, end_, &count_) &&
        count_ <= static_cast<size_t>(end_ - p_);
}

bool PackedReader::Next(std::string_view* s) {
  if (!ok_ || read_ == count_) return false;
  uint32_t len = 0;
  if (!GetVarint(&p_, end_, &len) || len > static_cast<size_t>(end_ - p_)) {
    ok_ = false;
    return false;
  }
  *s = std::string_view(p_, len);
  p_ += len;
  ++read_;
  return true;
}

bool Unpack(std::string_view bytes, std::vector<std::string_view>* items) {
  items->clear();
  PackedReader r(bytes);
  if (!r.ok()) return false;
  items->reserve(r.count());
  std::string_view s;
  while (r.Next(&s)) items->push_back(s);
  if (!r.Done()) {
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
