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
#include <string>
#include <string_view>
#include <vector>

namespace shmkv {

// Appends the packed form of `items` to *out.
void Pack(const std::vector<std::string_view>& items, std::string* out);

// The strings of packed `bytes` one at a time, with Unpack's checks and
// without its vector: Next() until it is false, then Done() says whether
// the bytes were exactly the packed list their count announced.
class PackedReader {
 public:
  explicit PackedReader(std::string_view bytes);
  // False when the bytes do not begin with a count they could hold.
  bool ok() const { return ok_; }
  uint32_t count() const { return count_; }
  // The next string; false past the last or at a length that overruns.
  bool Next(std::string_view* s);
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
