// Anonymous-mapping allocators. Neither can be attached by key: each Attach
// with kCreate makes a new mapping and the key is ignored.
//  - ANON: MAP_SHARED, so it is shared with children forked after Init.
//  - HEAP: MAP_PRIVATE, process-private (copy-on-write across fork).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "shmc/detail/alloc_base.h"

namespace shmc {
namespace impl {

template <bool kShared>
class MmapAlloc : public ShmAlloc {
 public:
  void* Attach(const std::string& /*key*/, size_t size, int flags,
               size_t* mapped_size = nullptr) override {
    if (!(flags & kCreate)) {
      // Nothing to attach: an anonymous mapping has no name.
      set_last_errno(kErrNotExist, ENOENT);
      return nullptr;
    }
    if (size == 0) {
      set_last_errno(kErrBadParam, EINVAL);
      return nullptr;
    }
    int prot = (flags & kReadOnly) ? PROT_READ : PROT_READ | PROT_WRITE;
    int share = kShared ? MAP_SHARED : MAP_PRIVATE;
    void* addr = mmap(nullptr, size, prot, share | MAP_ANONYMOUS, -1, 0);
    if (addr == MAP_FAILED) {
      set_from_errno();
      return nullptr;
    }
    if (kShared && !(flags & (kReadOnly | kSparse)) && !Populate(addr, size)) {
      munmap(addr, size);
      return nullptr;
    }
    if (mapped_size != nullptr) {
      *mapped_size = Utils::RoundAlign(size, AlignSize());
    }
    set_last_errno(kErrOK);
    return addr;
  }

  bool Detach(void* addr, size_t size) override {
    if (munmap(addr, size) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

  // The pages go with the last mapping; there is nothing to remove.
  bool Unlink(const std::string& /*key*/) override { return true; }
  // A mapping is made of whole pages, and mapped_size says so. (The
  // reference answered 1 here while rounding mapped_size to pages, so
  // ShmHandle::CheckSize failed on a handle it had just created.)
  size_t AlignSize() override { return Utils::GetPageSize(); }
};

template <bool kShared>
struct AllocTraits<MmapAlloc<kShared>> {
  static constexpr bool is_named = false;
};

}  // namespace impl

using ANON = impl::MmapAlloc<true>;
using HEAP = impl::MmapAlloc<false>;

}  // namespace shmc
