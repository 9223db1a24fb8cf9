// The allocator interface of the reference API (shmc::impl::ShmAlloc), with
// its error numbers and convenience attaches. Concrete allocators live in
// svipc_shm_alloc.h, posix_shm_alloc.h, mmap_alloc.h and mapfile_alloc.h.
//
// What shmc adds to the reference contract:
//  - sys_errno(): the errno of the system call behind last_errno();
//  - kErrNoSpace / kErrNoHugePages / kErrEmpty for failures the reference
//    folded into kErrDefault;
//  - a segment created exclusively has its pages reserved before Attach
//    returns, so a full tmpfs or an exhausted memory cgroup is reported here
//    (kErrNoSpace) instead of as a SIGBUS on first touch;
//  - Sync(): flush a file-backed mapping to its file (a no-op elsewhere);
//  - set_mode(): the permission bits of the segments it creates (default
//    DefaultSegmentMode(), 0600), applied exactly on every backend;
//  - last_object(): owner and mode of the segment attached last, so that a
//    writer can refuse one that another user could have crafted;
//  - a name that is not a regular file (a device node, a directory) is
//    refused with kErrNotRegular instead of being mapped.
#pragma once

#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include "shmc/common_utils.h"
#include "shmc/global_options.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14+
#endif

namespace shmc {
namespace impl {

enum ShmAllocFlag {
  kCreate = 0x1,
  kCreateExcl = 0x2,
  kReadOnly = 0x4,
  // With kCreate: reserve none of the segment's pages; the creator
  // reserves ranges as it uses them (ShmAlloc::Reserve). Allocators whose
  // pages are reserved by the system call itself (hugetlb) ignore it.
  kSparse = 0x8,
};

enum ShmAllocErrno {
  kErrOK = 0,
  kErrDefault = 1,
  kErrNotExist = 2,
  kErrAlreadyExist = 3,
  kErrInvalid = 4,
  kErrBadParam = 5,
  kErrPermission = 6,
  kErrBiggerSize = 7,
  // shmc additions
  kErrNoSpace = 8,       // tmpfs, disk or memory full while reserving pages
  kErrNoHugePages = 9,   // not enough free hugepages in the pool
  kErrEmpty = 10,        // the segment exists but has no bytes yet
  kErrNotRegular = 11,   // the name is a device node, directory, socket ...
};

// Owner and permission bits of a named segment, as its allocator saw them
// when it attached it.
struct ObjectInfo {
  bool known = false;  // false for ANON/HEAP mappings (no other owner)
  uid_t uid = 0;
  mode_t mode = 0;     // permission bits only
};

// Whether segments of an allocator can be found again by key, so that a
// second handle (another process, or InitForRead) can attach what
// InitForWrite made. True for every allocator but ANON and HEAP, whose
// mappings have no name (mmap_alloc.h specializes it).
template <class Alloc>
struct AllocTraits {
  static constexpr bool is_named = true;
};

class ShmAlloc {
 public:
  virtual ~ShmAlloc() = default;

  int last_errno() const { return last_errno_; }
  // errno of the system call that failed last, 0 when none did.
  int sys_errno() const { return sys_errno_; }

  // Permission bits (0..0777) of the segments this allocator creates.
  mode_t mode() const { return mode_; }
  void set_mode(mode_t mode) { mode_ = mode & 0777; }
  // Owner and mode of the segment the last successful Attach mapped.
  const ObjectInfo& last_object() const { return last_object_; }

  void* Attach_ReadOnly(const std::string& key, size_t size,
                        size_t* mapped_size = nullptr) {
    return Attach(key, size, kReadOnly, mapped_size);
  }

  void* Attach_ExclCreate(const std::string& key, size_t size,
                          size_t* mapped_size = nullptr) {
    return Attach(key, size, kCreate | kCreateExcl, mapped_size);
  }

  // Create anew, removing a segment that is in the way.
  void* Attach_ForceCreate(const std::string& key, size_t size,
                           size_t* mapped_size = nullptr) {
    void* addr = Attach_ExclCreate(key, size, mapped_size);
    if (addr == nullptr && last_errno() == kErrAlreadyExist && Unlink(key)) {
      addr = Attach_ExclCreate(key, size, mapped_size);
    }
    return addr;
  }

  // Attach read-write; create only when no segment exists.
  void* Attach_MayCreate(const std::string& key, size_t size,
                         size_t* mapped_size = nullptr,
                         bool* created = nullptr) {
    if (created != nullptr) *created = false;
    void* addr = Attach(key, size, 0, mapped_size);
    if (addr == nullptr && last_errno() == kErrNotExist) {
      addr = Attach_ExclCreate(key, size, mapped_size);
      if (addr != nullptr && created != nullptr) *created = true;
    }
    return addr;
  }

  // Attach read-write following ShmCreateFlag bits.
  void* Attach_AutoCreate(const std::string& key, size_t size,
                          int create_flags = kCreateIfNotExist,
                          size_t* mapped_size = nullptr,
                          bool* created = nullptr) {
    if (created != nullptr) *created = false;
    void* addr = (create_flags & kCreateIfNotExist)
                     ? Attach_MayCreate(key, size, mapped_size, created)
                     : Attach(key, size, 0, mapped_size);
    if (addr == nullptr && last_errno() == kErrBiggerSize &&
        (create_flags & kCreateIfExtending)) {
      detail::Log(kWarning,
                  "shmc: segment %s is smaller than the %zu bytes requested; "
                  "recreating it (kCreateIfExtending): its data is lost\n",
                  key.c_str(), size);
      addr = Attach_ForceCreate(key, size, mapped_size);
      if (addr != nullptr && created != nullptr) *created = true;
    }
    return addr;
  }

  // Maps the segment `key` with at least `size` bytes (0: whatever size it
  // has). `flags` is a bit-OR of ShmAllocFlag.
  virtual void* Attach(const std::string& key, size_t size, int flags,
                       size_t* mapped_size = nullptr) = 0;
  virtual bool Detach(void* addr, size_t size) = 0;
  virtual bool Unlink(const std::string& key) = 0;
  virtual size_t AlignSize() = 0;
  // Makes the bytes durable where the backing store is a file.
  virtual bool Sync(void* /*addr*/, size_t /*size*/) { return true; }

  // Reserves the pages of [addr, addr + size) inside a mapping this
  // allocator made (Populate over the whole pages the range touches).
  // (shmc addition; false, kErrNoSpace, where a write there would have
  // raised SIGBUS.)
  bool Reserve(void* addr, size_t size) {
    if (size == 0) return true;
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t from = reinterpret_cast<uintptr_t>(addr) / page * page;
    const uintptr_t to = reinterpret_cast<uintptr_t>(addr) + size;
    return Populate(reinterpret_cast<void*>(from), to - from);
  }
  // Gives back the memory of the whole pages inside [addr, addr + size)
  // (they read as zero after), e.g. what a Reserve that failed halfway
  // took. Best effort: where the system cannot, they stay.
  void Release(void* addr, size_t size) {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t from =
        (reinterpret_cast<uintptr_t>(addr) + page - 1) / page * page;
    const uintptr_t to =
        (reinterpret_cast<uintptr_t>(addr) + size) / page * page;
    if (to > from) {
      (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_REMOVE);
    }
  }

 protected:
  void set_last_errno(ShmAllocErrno err, int sys = 0) {
    last_errno_ = err;
    sys_errno_ = sys;
  }
  // Records the current errno, mapped to the closest ShmAllocErrno.
  void set_from_errno() {
    int e = errno;
    set_last_errno(FromErrno(e), e);
  }
  static ShmAllocErrno FromErrno(int e) {
    switch (e) {
      case 0: return kErrOK;
      case ENOENT: return kErrNotExist;
      case EEXIST: return kErrAlreadyExist;
      case EINVAL: return kErrInvalid;
      case EACCES:
      case EPERM: return kErrPermission;
      case ENOSPC:
      case ENOMEM:
      case EFBIG: return kErrNoSpace;
      default: return kErrDefault;
    }
  }
  void set_last_object(uid_t uid, mode_t mode) {
    last_object_.known = true;
    last_object_.uid = uid;
    last_object_.mode = mode & 0777;
  }
  // Faults in every page of a fresh writable mapping so that a shortage of
  // backing memory is an error now, not a SIGBUS later. Returns false with
  // the errno recorded; kernels without MADV_POPULATE_WRITE are not an error.
  bool Populate(void* addr, size_t size) {
    if (size == 0 || madvise(addr, size, MADV_POPULATE_WRITE) == 0) {
      return true;
    }
    int e = errno;
    if (e == EINVAL) return true;  // kernel < 5.14: nothing to check with
    set_last_errno(kErrNoSpace, e);
    return false;
  }

 private:
  ShmAllocErrno last_errno_ = kErrOK;
  int sys_errno_ = 0;
  mode_t mode_ = DefaultSegmentMode();
  ObjectInfo last_object_;
};

}  // namespace impl
}  // namespace shmc
