// A second, read-write mapping of a POSIX segment that bypasses every shmc
// check: tests use it to set fields the way a long run, an older build, a
// stray write or a hostile process would.
#pragma once

#include <cstddef>
#include <string>

#include "shmc/posix_shm_alloc.h"

namespace shmc_test {

class RawSegment {
 public:
  explicit RawSegment(const std::string& key)
      : base_(static_cast<char*>(alloc_.Attach(key, 0, 0, &size_))) {}
  ~RawSegment() {
    if (base_ != nullptr) alloc_.Detach(base_, size_);
  }
  RawSegment(const RawSegment&) = delete;
  RawSegment& operator=(const RawSegment&) = delete;

  bool ok() const { return base_ != nullptr; }
  char* base() const { return base_; }
  size_t size() const { return size_; }
  // The bytes at `offset`, seen as a T.
  template <class T>
  T* at(size_t offset) const {
    return reinterpret_cast<T*>(base_ + offset);
  }

 private:
  shmc::POSIX alloc_;
  size_t size_ = 0;
  char* base_;
};

}  // namespace shmc_test
