// The packed form of a small collection's value bytes: its strings one
// after another, each behind its length, with the count in front.
//
//   varint count   then per string: varint length, its bytes
//
// (a varint holds 7 bits a byte, low bits first, the top bit set on every
// byte but the last; at most 5 bytes: a value below 2^32). A hash packs
// field, value, field, value...; a list its elements in order.
//
// The bytes come from shared memory, which another process (or damage)
// may have written: Unpack checks every length against what is left and
// the count against the strings found, and refuses bytes that are not
// exactly one packed list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace shmkv {

// Appends the packed form of `items` to *out.
void Pack(const std::vector<std::string_view>& items, std::string* out);

// As Pack, but items[lo, hi), when they are strings of `from` (packed
// bytes they were read from) still one after another there, each right
// behind its own length, are copied as one block: a list that gained or
// lost strings at its ends is written again without re-encoding the
// rest. Checked, not trusted: a run that is not so (or lo, hi out of
// range) is written item by item, and the bytes are Pack's either way.
void PackReusing(const std::vector<std::string_view>& items, size_t lo,
                 size_t hi, std::string_view from, std::string* out);

// Appends a packed list item by item, the bytes Pack makes of the same
// items, with no list of them built first: the count, then each item.
// Items are written straight into *out's bytes (sized ahead, at least
// `room` bytes, and grown when an item needs more); Finish trims what was
// not used, and must be called before *out is read.
class PackedWriter {
 public:
  PackedWriter(std::string* out, size_t count, size_t room = 0);
  void Add(const void* p, size_t n) {
    if (static_cast<size_t>(end_ - at_) < n + kMaxVarint) Grow(n);
    uint64_t v = n;
    while (v >= 0x80) {
      *at_++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *at_++ = static_cast<char>(v);
    if (n != 0) std::memcpy(at_, p, n);
    at_ += n;
  }
  void Add(std::string_view item) { Add(item.data(), item.size()); }
  void Finish();

 private:
  static constexpr size_t kMaxVarint = 10;
  void Grow(size_t n);
  std::string* out_;
  char* at_ = nullptr;
  char* end_ = nullptr;
};

inline bool ReadPackedVarint(const char** p, const char* end, uint32_t* v) {
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

// The strings of packed `bytes` one at a time, with Unpack's checks and
// without its vector: Next() until it is false, then Done() says whether
// the bytes were exactly the packed list their count announced.
// (Inline: a tree node's parse reads a hundred strings.)
class PackedReader {
 public:
  explicit PackedReader(std::string_view bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {
    // Each string takes at least its length byte: a count beyond what is
    // left is damage, found before anything is sized by it.
    ok_ = ReadPackedVarint(&p_, end_, &count_) &&
          count_ <= static_cast<size_t>(end_ - p_);
  }
  // False when the bytes do not begin with a count they could hold.
  bool ok() const { return ok_; }
  uint32_t count() const { return count_; }
  // The next string; false past the last or at a length that overruns.
  bool Next(std::string_view* s) {
    if (!ok_ || read_ == count_) return false;
    uint32_t len = 0;
    if (!ReadPackedVarint(&p_, end_, &len) ||
        len > static_cast<size_t>(end_ - p_)) {
      ok_ = false;
      return false;
    }
    *s = std::string_view(p_, len);
    p_ += len;
    ++read_;
    return true;
  }
  bool Done() const { return ok_ && read_ == count_ && p_ == end_; }

 private:
  const char* p_;
  const char* end_;
  uint32_t count_ = 0, read_ = 0;
  bool ok_ = false;
};

// The strings of packed `bytes` (views into it); false, with *items
// cleared, when the bytes are not a whole, well-formed packed list.
bool Unpack(std::string_view bytes, std::vector<std::string_view>* items);

// The count in front of packed bytes, from their first bytes alone (at
// most 5): false when they do not begin with one.
bool PackedCount(std::string_view head, uint32_t* count);

}  // namespace shmkv
