// Damages one tag byte of a hash table's POSIX segment through a second
// mapping, the way a stray write or a bad disk copy would: the tests of
// CheckTags and of ShmHashMap::HealthCheck use it to hide a key.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "shmc/detail/table_geometry.h"

namespace shmc_test {

// Rewrites the tag byte of node `slot` of table `t`, which lives in the
// POSIX segment named `posix_key`, as change(old byte).
template <class Table, class Change>
::testing::AssertionResult ChangeTagByte(const std::string& posix_key,
                                         const Table& t, uint64_t slot,
                                         const Change& change) {
  constexpr uint64_t kSlots = Table::kSlots;
  uint64_t main_buckets = t.row_slots(0) / kSlots;
  uint64_t off =
      shmc::detail::TableTagByteOffset(main_buckets, kSlots, slot);
  int fd = shm_open(posix_key.c_str(), O_RDWR, 0);
  if (fd < 0) return ::testing::AssertionFailure() << "shm_open " << posix_key;
  void* p = mmap(nullptr, off + 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return ::testing::AssertionFailure() << "mmap";
  volatile uint8_t* b = static_cast<volatile uint8_t*>(p) + off;
  *b = change(*b);
  munmap(p, off + 1);
  return ::testing::AssertionSuccess();
}

// Flips bits of the tag: the key it belongs to can no longer be found.
template <class Table>
::testing::AssertionResult FlipTagByte(const std::string& posix_key,
                                       const Table& t, uint64_t slot) {
  return ChangeTagByte(posix_key, t, slot,
                       [](uint8_t v) { return static_cast<uint8_t>(v ^ 0x5a); });
}

}  // namespace shmc_test
