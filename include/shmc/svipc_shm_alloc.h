// System V shared memory allocators: SVIPC and SVIPC_HugeTLB.
//
// Key: a number in decimal, octal ("010") or hex ("0x10003"), 1..0xffffffff.
// Anything else (trailing characters, 0 = IPC_PRIVATE, out of range) is
// refused with kErrBadParam: the reference silently turned such keys into 0.
#pragma once

#include <sys/ipc.h>
#include <sys/shm.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "shmc/detail/alloc_base.h"

namespace shmc {
namespace impl {

// Parses a SysV key; false for anything but a whole number in 1..UINT32_MAX.
inline bool ParseSysvKey(const std::string& key, key_t* out) {
  if (key.empty() || key[0] == '-' || key[0] == '+' || key[0] == ' ') {
    return false;
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(key.c_str(), &end, 0);
  if (errno != 0 || end == key.c_str() || *end != '\0' || v == 0 ||
      v > UINT32_MAX) {
    return false;
  }
  *out = static_cast<key_t>(static_cast<uint32_t>(v));
  return true;
}

template <bool kHugeTLB>
class SVIPCShmAlloc : public ShmAlloc {
 public:
  // SHM_HUGETLB segments are sized in whole 2 MiB pages.
  static constexpr size_t kHugePageSize = 2UL << 20;

  void* Attach(const std::string& key, size_t size, int flags,
               size_t* mapped_size = nullptr) override {
    key_t k;
    if (!ParseSysvKey(key, &k)) {
      set_last_errno(kErrBadParam, EINVAL);
      return nullptr;
    }
    // The permission bits name the access asked for: a read-only attach
    // asks only for read, so a reader needs no more than read permission.
    // A creator gives the segment exactly mode() (SysV applies no umask).
    int shmflg = (flags & kCreate) ? static_cast<int>(mode())
                 : (flags & kReadOnly) ? 0400 : 0600;
    if (flags & kCreate) shmflg |= IPC_CREAT;
    if (flags & kCreateExcl) shmflg |= IPC_EXCL;
    if (kHugeTLB) {
      shmflg |= SHM_HUGETLB;
      size = (size + kHugePageSize - 1) / kHugePageSize * kHugePageSize;
    }
    int id = shmget(k, size, shmflg);
    if (id < 0) {
      int e = errno;
      if (e == EINVAL && !(flags & kCreate)) {
        set_last_errno(kErrBiggerSize, e);  // exists, but smaller than asked
      } else if (kHugeTLB && (flags & kCreate) && e == ENOMEM) {
        set_last_errno(kErrNoHugePages, e);
      } else {
        set_last_errno(FromErrno(e), e);
      }
      return nullptr;
    }
    void* addr = shmat(id, nullptr, (flags & kReadOnly) ? SHM_RDONLY : 0);
    if (addr == reinterpret_cast<void*>(-1)) {
      set_from_errno();
      return nullptr;
    }
    struct shmid_ds ds;
    if (shmctl(id, IPC_STAT, &ds) < 0) {
      set_from_errno();
      shmdt(addr);
      return nullptr;
    }
    bool created_excl = (flags & kCreate) && (flags & kCreateExcl);
    if (created_excl && !kHugeTLB && !(flags & kSparse) &&
        !Populate(addr, ds.shm_segsz)) {
      // Hugetlb pages were reserved by shmget itself; others are not.
      shmdt(addr);
      shmctl(id, IPC_RMID, nullptr);
      return nullptr;
    }
    if (mapped_size != nullptr) *mapped_size = ds.shm_segsz;
    set_last_object(ds.shm_perm.uid, ds.shm_perm.mode);
    set_last_errno(kErrOK);
    return addr;
  }

  bool Detach(void* addr, size_t /*size*/) override {
    if (shmdt(addr) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

  bool Unlink(const std::string& key) override {
    key_t k;
    if (!ParseSysvKey(key, &k)) {
      set_last_errno(kErrBadParam, EINVAL);
      return false;
    }
    int id = shmget(k, 0, 0);
    if (id < 0 || shmctl(id, IPC_RMID, nullptr) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

  size_t AlignSize() override { return kHugeTLB ? kHugePageSize : 1; }
};

}  // namespace impl

using SVIPC = impl::SVIPCShmAlloc<false>;
using SVIPC_HugeTLB = impl::SVIPCShmAlloc<true>;

}  // namespace shmc
