// The fields of the small values shmkv keeps beside the data (the
// function libraries, a long script's record: function_family.cc,
// script_lua.cc): fixed-width words as they lie in memory and byte
// strings after a u32 length. Every length is checked against what is
// left before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shmkv {
namespace cmd {

class FieldReader {
 public:
  explicit FieldReader(std::string_view v) : v_(v) {}
  // The next n bytes into `out`: false when fewer are left.
  bool Take(void* out, size_t n) {
    if (v_.size() - at_ < n) return false;
    std::memcpy(out, v_.data() + at_, n);
    at_ += n;
    return true;
  }
  // A u32 length, then that many bytes.
  bool Bytes(std::string* out) {
    uint32_t n = 0;
    if (!Take(&n, 4) || v_.size() - at_ < n) return false;
    out->assign(v_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool Done() const { return at_ == v_.size(); }

 private:
  std::string_view v_;
  size_t at_ = 0;
};

class FieldWriter {
 public:
  explicit FieldWriter(std::string* out) : out_(out) {}
  void Put(const void* p, size_t n) {
    out_->append(static_cast<const char*>(p), n);
  }
  void Bytes(std::string_view s) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    Put(&n, 4);
    out_->append(s);
  }

 private:
  std::string* out_;
};

}  // namespace cmd
}  // namespace shmkv
