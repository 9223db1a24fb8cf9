// File-backed allocator (shmc addition): the segment is a regular file mapped
// MAP_SHARED, so its data outlives a reboot. Key: the file's path.
//
// Durability: the kernel writes dirty pages back on its own schedule; Detach
// (and so a container's destruction) flushes them with msync(MS_SYNC), and a
// container's Sync() does so on request. Without either, a power loss can
// lose recent writes, but a process crash never does (the page cache holds
// them).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "shmc/detail/fd_alloc.h"

namespace shmc {
namespace impl {

struct MapFilePolicy {
  static constexpr bool kSyncOnDetach = true;
  static int Open(const std::string& key, int oflag, mode_t mode) {
    return open(key.c_str(), oflag, mode);
  }
  static int Remove(const std::string& key) { return unlink(key.c_str()); }
  static std::string Dir(const std::string& key) {
    size_t slash = key.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : key.substr(0, slash);
  }
  static std::string Path(const std::string& key) { return key; }
  static std::string InDir(const std::string& key, const std::string& entry) {
    size_t slash = key.rfind('/');
    return slash == std::string::npos ? entry
                                      : key.substr(0, slash + 1) + entry;
  }
};

using MapFileAlloc = FdShmAlloc<MapFilePolicy>;

}  // namespace impl

using MAPFILE = impl::MapFileAlloc;

}  // namespace shmc
