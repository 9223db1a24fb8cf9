// What an allocator failure means to a caller: its ErrorCode and its text
// (and, for a short hugepage pool, the pool's figures). Used by segments,
// RemoveSegment and the sorted array's build.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "shmc/detail/alloc_base.h"
#include "shmc/errors.h"

namespace shmc {
namespace detail {

// Maps an allocator failure to an ErrorCode.
inline ErrorCode AllocErrorCode(int alloc_errno) {
  switch (alloc_errno) {
    case impl::kErrNotExist: return ErrorCode::kNotFound;
    case impl::kErrAlreadyExist: return ErrorCode::kAlreadyExists;
    case impl::kErrBadParam: return ErrorCode::kInvalidArgument;
    case impl::kErrPermission: return ErrorCode::kPermissionDenied;
    case impl::kErrBiggerSize: return ErrorCode::kSizeMismatch;
    case impl::kErrNoSpace: return ErrorCode::kNoSpace;
    case impl::kErrNoHugePages: return ErrorCode::kNoHugePages;
    case impl::kErrEmpty: return ErrorCode::kNotReady;
    case impl::kErrInvalid: return ErrorCode::kInvalidArgument;
    case impl::kErrNotRegular: return ErrorCode::kInvalidArgument;
    default: return ErrorCode::kSystem;
  }
}

inline const char* AllocErrorText(int alloc_errno) {
  switch (alloc_errno) {
    case impl::kErrNotExist: return "no such segment";
    case impl::kErrAlreadyExist: return "segment already exists";
    case impl::kErrBadParam: return "invalid key (SysV keys are numbers "
                                    "1..0xffffffff: decimal, 0octal or 0xhex)";
    case impl::kErrPermission: return "permission denied";
    case impl::kErrBiggerSize: return "segment is smaller than requested";
    case impl::kErrNoSpace: return "no space to reserve the segment's pages "
                                   "(full /dev/shm, disk or memory limit)";
    case impl::kErrNoHugePages: return "not enough free hugepages (see "
                                       "/proc/sys/vm/nr_hugepages)";
    case impl::kErrEmpty: return "exists but is empty (0 bytes): not a shmc "
                                  "segment (shmc publishes a segment only "
                                  "once it is complete); it is left alone";
    case impl::kErrNotRegular: return "not a regular file (a device node, "
                                      "directory, FIFO or socket)";
    case impl::kErrInvalid: return "invalid argument";
    default: return "system error";
  }
}

// Why a hugetlb segment of `bytes` could not be made, with the pool's
// figures from /proc/meminfo: "... needs 35 hugepages of 2048 KiB; 20 of
// 700 are free (/proc/sys/vm/nr_hugepages reserves more)".
inline std::string HugePoolText(size_t bytes) {
  long total = -1, free_pages = -1, page_kib = 2048;
  if (FILE* f = std::fopen("/proc/meminfo", "re")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      std::sscanf(line, "HugePages_Total: %ld", &total);
      std::sscanf(line, "HugePages_Free: %ld", &free_pages);
      std::sscanf(line, "Hugepagesize: %ld kB", &page_kib);
    }
    std::fclose(f);
  }
  if (page_kib <= 0) page_kib = 2048;
  size_t page = static_cast<size_t>(page_kib) << 10;
  char text[256];
  std::snprintf(text, sizeof(text),
                "not enough free hugepages: the segment needs %zu hugepages "
                "of %ld KiB; %ld of %ld are free (/proc/sys/vm/nr_hugepages "
                "reserves more)",
                (bytes + page - 1) / page, page_kib, free_pages, total);
  return text;
}

}  // namespace detail
}  // namespace shmc
