// Which pages back a store's map (--hugepages, docs/server.md).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "server/store/store.h"

namespace shmkv {

// The page size, in KiB, of the pages backing process `pid`'s mapping of
// the SysV segment `key` (read from /proc/PID/smaps); 0 when it has none.
long SysvPageKib(pid_t pid, const std::string& key);

// Hugetlb is chosen when a segment is made, and an existing map attaches
// on the pages it was made with: for a store opened with --hugepages, one
// line per map segment this process maps on smaller pages (none when all
// are on hugepages or --hugepages is off).
std::vector<std::string> SmallPageWarnings(const StoreConfig& cfg);

}  // namespace shmkv
