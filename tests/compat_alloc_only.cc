// A translation unit that includes only allocator headers, as programs
// written for the reference do before calling shmc::Utils and
// shmc::impl::AllocTraits (both must be reachable from them).
#include "shmc/posix_shm_alloc.h"
#include "shmc/svipc_shm_alloc.h"

#include <cstddef>

namespace compat_alloc_only {

size_t RoundToAlloc(size_t n) {
  shmc::POSIX alloc;
  return shmc::Utils::RoundAlign(n, alloc.AlignSize());
}

bool PosixIsNamed() { return shmc::impl::AllocTraits<shmc::POSIX>::is_named; }
bool SvipcIsNamed() { return shmc::impl::AllocTraits<shmc::SVIPC>::is_named; }

}  // namespace compat_alloc_only
