// What the RDB codec's files (codec.cc, stream_codec.cc) share inside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/rdb/codec.h"

namespace shmkv {
namespace rdb {

// The integer whose canonical decimal text `s` is (no sign but '-', no
// leading zeros, no "-0"), as Redis takes a string for an integer.
bool CanonicalInt(std::string_view s, int64_t* v);

// A listpack entry's back length: the length l of its encoding and data,
// 7 bits a byte, the first byte holding the highest bits; its bytes.
size_t Backlen(uint64_t l, unsigned char* buf);

// A listpack made entry by entry (integers in their shortest encoding,
// strings as strings), as Redis's reader takes it.
class ListpackBuilder {
 public:
  ListpackBuilder() : b_(6, '\0') {}
  size_t bytes() const { return b_.size() + 1; }
  void Int(int64_t v) {
    unsigned char e[9];
    size_t n = 0;
    auto le = [&](unsigned char tag, int bytes) {
      e[0] = tag;
      for (int k = 0; k < bytes; ++k) {
        e[1 + k] = static_cast<unsigned char>(static_cast<uint64_t>(v) >> (8 * k));
      }
      n = 1 + static_cast<size_t>(bytes);
    };
    if (v >= 0 && v <= 127) {
      e[0] = static_cast<unsigned char>(v);
      n = 1;
    } else if (v >= -4096 && v <= 4095) {
      const uint64_t u = static_cast<uint64_t>(v) & 0x1fff;
      e[0] = static_cast<unsigned char>(0xc0 | (u >> 8));
      e[1] = static_cast<unsigned char>(u & 0xff);
      n = 2;
    } else if (v >= INT16_MIN && v <= INT16_MAX) {
      le(0xf1, 2);
    } else if (v >= -(int64_t{1} << 23) && v < (int64_t{1} << 23)) {
      le(0xf2, 3);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      le(0xf3, 4);
    } else {
      le(0xf4, 8);
    }
    Put(e, n, {});
  }
  void Str(std::string_view s) {
    unsigned char e[5];
    size_t n = 0;
    const size_t len = s.size();
    if (len < 64) {
      e[0] = static_cast<unsigned char>(0x80 | len);
      n = 1;
    } else if (len < 4096) {
      e[0] = static_cast<unsigned char>(0xe0 | (len >> 8));
      e[1] = static_cast<unsigned char>(len & 0xff);
      n = 2;
    } else {
      e[0] = 0xf0;
      for (int k = 0; k < 4; ++k) {
        e[1 + k] = static_cast<unsigned char>(len >> (8 * k));
      }
      n = 5;
    }
    Put(e, n, s);
  }
  std::string Finish() {
    b_.push_back(static_cast<char>(0xff));
    const uint64_t total = b_.size();
    const uint64_t count = count_ < 65535 ? count_ : 65535;
    for (int k = 0; k < 4; ++k) b_[k] = static_cast<char>(total >> (8 * k));
    for (int k = 0; k < 2; ++k) b_[4 + k] = static_cast<char>(count >> (8 * k));
    return std::move(b_);
  }

 private:
  void Put(const unsigned char* head, size_t n, std::string_view data) {
    b_.append(reinterpret_cast<const char*>(head), n);
    b_.append(data.data(), data.size());
    unsigned char back[5];
    const size_t bn = Backlen(n + data.size(), back);
    b_.append(reinterpret_cast<const char*>(back), bn);
    ++count_;
  }
  std::string b_;
  uint64_t count_ = 0;
};

// A stream's body as Redis's RDB_TYPE_STREAM_LISTPACKS_2 writes it:
// its nodes, counters and consumer groups.
void WriteStream(Writer* w, const StreamBody& s);

}  // namespace rdb
}  // namespace shmkv
