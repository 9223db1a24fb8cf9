// The packed form of small collections (server/commands/packed.h).
#include "server/commands/packed.h"

#include <algorithm>

namespace shmkv {

namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
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
