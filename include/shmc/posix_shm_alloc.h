// POSIX shared memory allocator (shm_open). Key: a shm name such as
// "/my_table" or "my_table" (one component, no other '/').
#pragma once

#include <sys/mman.h>

#include <string>

#include "shmc/detail/fd_alloc.h"

namespace shmc {
namespace impl {

struct PosixShmPolicy {
  static constexpr bool kSyncOnDetach = false;
  static int Open(const std::string& key, int oflag, mode_t mode) {
    return shm_open(key.c_str(), oflag, mode);
  }
  static int Remove(const std::string& key) { return shm_unlink(key.c_str()); }
  // glibc keeps POSIX shared memory objects as files in /dev/shm.
  static std::string Dir(const std::string&) { return "/dev/shm"; }
  static std::string Path(const std::string& key) {
    size_t skip = key.find_first_not_of('/');
    return "/dev/shm/" + (skip == std::string::npos ? "" : key.substr(skip));
  }
  static std::string InDir(const std::string&, const std::string& entry) {
    return "/" + entry;
  }
};

using POSIXShmAlloc = FdShmAlloc<PosixShmPolicy>;

}  // namespace impl

using POSIX = impl::POSIXShmAlloc;

}  // namespace shmc
