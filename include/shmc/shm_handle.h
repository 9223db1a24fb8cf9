// ShmHandle<T, Alloc>: a typed handle to one object of type T at the start
// of a raw segment (no shmc header: the bytes are the caller's), as in the
// reference API. It attaches or creates the segment, keeps it mapped while
// the handle lives, and detaches it on Reset or destruction.
//
// T must be standard-layout and trivially copyable: other processes map the
// same bytes. The handle validates nothing inside the segment; containers
// that need validated layouts use shmc's own segment format instead.
//
// Errors: InitForWrite and InitForRead return false and log the allocator's
// error; last_errno() and sys_errno() (shmc additions) give it as numbers.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "shmc/common_utils.h"
#include "shmc/mmap_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_alloc.h"
#include "shmc/svipc_shm_alloc.h"

namespace shmc {

template <class T, class Alloc>
class ShmHandle {
  static_assert(std::is_standard_layout<T>::value,
                "a shared object must be standard-layout");

 public:
  ShmHandle() = default;
  ~ShmHandle() { Reset(); }
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmHandle);

  // Attaches `key` read-write with at least `size` bytes, creating it as
  // `create_flags` (ShmCreateFlag bits) allow. False if the handle is
  // already initialized or the allocator fails.
  bool InitForWrite(const std::string& key, size_t size,
                    int create_flags = kCreateIfNotExist) {
    if (is_initialized()) return false;
    Alloc alloc;
    void* p = alloc.Attach_AutoCreate(key, size, create_flags, &size_,
                                      &is_newly_created_);
    return Bind(alloc, p, key, "InitForWrite");
  }

  // Attaches `key` read-only; it must have at least `size` bytes.
  bool InitForRead(const std::string& key, size_t size) {
    if (is_initialized()) return false;
    Alloc alloc;
    is_newly_created_ = false;
    void* p = alloc.Attach_ReadOnly(key, size, &size_);
    return Bind(alloc, p, key, "InitForRead");
  }

  // Detaches the segment (it stays in the system) and clears the handle.
  void Reset() {
    if (ptr_ != nullptr) Alloc().Detach(ptr_, size_);
    ptr_ = nullptr;
    size_ = 0;
    key_.clear();
    is_newly_created_ = false;
  }

  T* ptr() { return ptr_; }
  const T* ptr() const { return ptr_; }
  T* operator->() { return ptr_; }
  const T* operator->() const { return ptr_; }

  std::string key() const { return key_; }
  // Bytes mapped (the size asked for, rounded up to the allocator's unit).
  size_t size() const { return size_; }
  bool is_newly_created() const { return is_newly_created_; }
  bool is_initialized() const { return ptr_ != nullptr; }

  // Whether the mapping is exactly `expected_size` rounded up to the
  // allocator's alignment, i.e. the segment was made for that size.
  bool CheckSize(size_t expected_size) const {
    return Utils::RoundAlign(expected_size, Alloc().AlignSize()) == size_;
  }

  // shmc additions: the allocator's error of the last failed Init.
  int last_errno() const { return last_errno_; }
  int sys_errno() const { return sys_errno_; }

 private:
  bool Bind(const Alloc& alloc, void* p, const std::string& key,
            const char* who) {
    last_errno_ = alloc.last_errno();
    sys_errno_ = alloc.sys_errno();
    if (p == nullptr) {
      size_ = 0;
      is_newly_created_ = false;
      Utils::Log(kError, "ShmHandle::%s(%s): allocator error %d (%s)\n", who,
                 key.c_str(), last_errno_, std::strerror(sys_errno_));
      return false;
    }
    ptr_ = static_cast<T*>(p);
    key_ = key;
    return true;
  }

  std::string key_;
  size_t size_ = 0;
  bool is_newly_created_ = false;
  T* ptr_ = nullptr;
  int last_errno_ = 0;
  int sys_errno_ = 0;
};

}  // namespace shmc
