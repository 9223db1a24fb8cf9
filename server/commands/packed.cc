// The packed form of small collections (server/commands/packed.h).
#include "server/commands/packed.h"

#include <algorithm>

namespace shmkv {

namespace {

// The varint of `v` into buf (at least 10 bytes): its length.
size_t EncodeVarint(uint64_t v, char* buf) {
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  return n;
}

void PutVarint(uint64_t v, std::string* out) {
  if (v < 0x80) {  // most lengths: one byte
    out->push_back(static_cast<char>(v));
    return;
  }
  char buf[10];
  out->append(buf, EncodeVarint(v, buf));
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

namespace {

// Whether items[lo, hi) (lo < hi) lie in `from` one after another, each
// behind its own length as Pack writes it: then from's bytes between the
// first one's length and the last one's end are their packed form, and
// *begin, *end say where. (Addresses compared as integers: the items may
// point anywhere.)
bool PackedRunIn(const std::vector<std::string_view>& items, size_t lo,
                 size_t hi, std::string_view from, const char** begin,
                 const char** end) {
  const uintptr_t low = reinterpret_cast<uintptr_t>(from.data());
  const uintptr_t high = low + from.size();
  uintptr_t start = 0, at = 0;  // the first length; where the next must be
  for (size_t k = lo; k < hi; ++k) {
    const uintptr_t data = reinterpret_cast<uintptr_t>(items[k].data());
    const size_t size = items[k].size();
    char buf[10];
    const size_t n = size < 0x80 ? 1 : EncodeVarint(size, buf);
    // Inside `from`, with room for its length before it.
    if (data < low + n || data > high || size > high - data) return false;
    if (k == lo) start = at = data - n;
    if (data - n != at) return false;
    const char* len = reinterpret_cast<const char*>(at);
    if (n == 1 ? static_cast<uint8_t>(*len) != size
               : std::memcmp(len, buf, n) != 0) {
      return false;
    }
    at = data + size;
  }
  *begin = reinterpret_cast<const char*>(start);
  *end = reinterpret_cast<const char*>(at);
  return true;
}

}  // namespace

void PackReusing(const std::vector<std::string_view>& items, size_t lo,
                 size_t hi, std::string_view from, std::string* out) {
  const char* begin = nullptr;
  const char* end = nullptr;
  if (lo >= hi || hi > items.size() ||
      !PackedRunIn(items, lo, hi, from, &begin, &end)) {
    Pack(items, out);
    return;
  }
  size_t bytes = 5 + static_cast<size_t>(end - begin);
  for (size_t k = 0; k < items.size(); ++k) {
    if (k < lo || k >= hi) bytes += 5 + items[k].size();
  }
  out->reserve(out->size() + bytes);
  PutVarint(items.size(), out);
  auto put = [out](std::string_view s) {
    PutVarint(s.size(), out);
    out->append(s.data(), s.size());
  };
  for (size_t k = 0; k < lo; ++k) put(items[k]);
  out->append(begin, static_cast<size_t>(end - begin));
  for (size_t k = hi; k < items.size(); ++k) put(items[k]);
}

PackedWriter::PackedWriter(std::string* out, size_t count, size_t room)
    : out_(out) {
  PutVarint(count, out);
  const size_t used = out->size();
  out->resize(used + room);
  at_ = out->data() + used;
  end_ = out->data() + out->size();
}

void PackedWriter::Grow(size_t n) {
  const size_t used = static_cast<size_t>(at_ - out_->data());
  out_->resize(std::max(2 * out_->size(), used + n + kMaxVarint));
  at_ = out_->data() + used;
  end_ = out_->data() + out_->size();
}

void PackedWriter::Finish() {
  out_->resize(static_cast<size_t>(at_ - out_->data()));
  end_ = at_;
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
  return ReadPackedVarint(&p, p + head.size(), count);
}

}  // namespace shmkv
