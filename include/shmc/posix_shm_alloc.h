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
};

using POSIXShmAlloc = FdShmAlloc<PosixShmPolicy>;

}  // namespace impl

using POSIX = impl::POSIXShmAlloc;

}  // namespace shmc
