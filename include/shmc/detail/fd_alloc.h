// Allocator over a file descriptor that is mapped MAP_SHARED: the common code
// of POSIX (shm_open under /dev/shm) and MAPFILE (a regular file). A Policy
// supplies Open(key, oflag, mode), Remove(key) and kSyncOnDetach.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "shmc/detail/alloc_base.h"

namespace shmc {
namespace impl {

template <class Policy>
class FdShmAlloc : public ShmAlloc {
 public:
  void* Attach(const std::string& key, size_t size, int flags,
               size_t* mapped_size = nullptr) override {
    if (key.empty()) {
      set_last_errno(kErrBadParam, EINVAL);
      return nullptr;
    }
    bool read_only = flags & kReadOnly;
    int oflag = read_only ? O_RDONLY : O_RDWR;
    if (flags & kCreate) oflag |= O_CREAT;
    if (flags & kCreateExcl) oflag |= O_EXCL;
    oflag |= O_CLOEXEC;
    int fd = Policy::Open(key, oflag, 0640);
    if (fd < 0) {
      set_from_errno();
      return nullptr;
    }
    bool created = (flags & kCreate) && (flags & kCreateExcl);
    void* addr = MapFd(fd, key, size, flags, created, mapped_size);
    close(fd);
    return addr;
  }

  bool Detach(void* addr, size_t size) override {
    if (Policy::kSyncOnDetach) Sync(addr, size);
    if (munmap(addr, size) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

  bool Unlink(const std::string& key) override {
    if (key.empty()) {
      set_last_errno(kErrBadParam, EINVAL);
      return false;
    }
    if (Policy::Remove(key) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

  size_t AlignSize() override { return 1; }

  bool Sync(void* addr, size_t size) override {
    if (!Policy::kSyncOnDetach) return true;
    if (msync(addr, size, MS_SYNC) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

 private:
  void* MapFd(int fd, const std::string& key, size_t size, int flags,
              bool created, size_t* mapped_size) {
    struct stat st;
    if (fstat(fd, &st) < 0) {
      set_from_errno();
      return nullptr;
    }
    size_t have = static_cast<size_t>(st.st_size);
    if (size > have) {
      if (!(flags & kCreate)) {
        set_last_errno(kErrBiggerSize, 0);
        return nullptr;
      }
      // Reserve the blocks now: on a full tmpfs or disk this fails with
      // ENOSPC instead of the mapping raising SIGBUS on first touch.
      int rc = posix_fallocate(fd, 0, static_cast<off_t>(size));
      if (rc != 0) {
        set_last_errno(FromErrno(rc), rc);
        if (created) {
          Policy::Remove(key);
        } else {
          // Give back what a partial reservation may have grown.
          (void)!ftruncate(fd, static_cast<off_t>(have));
        }
        return nullptr;
      }
      have = size;
    }
    if (have == 0) {
      // A creator has made the name but not sized it yet (or died doing so).
      set_last_errno(kErrEmpty, 0);
      return nullptr;
    }
    int prot = (flags & kReadOnly) ? PROT_READ : PROT_READ | PROT_WRITE;
    void* addr = mmap(nullptr, have, prot, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
      set_from_errno();
      if (created) Policy::Remove(key);
      return nullptr;
    }
    if (mapped_size != nullptr) *mapped_size = have;
    set_last_errno(kErrOK);
    return addr;
  }
};

}  // namespace impl
}  // namespace shmc
