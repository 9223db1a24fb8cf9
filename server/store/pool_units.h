// How --memory is spent in each of a store's value pools (docs/server.md,
// "The value pool"): the unit each pool counts, its cost, the limit and
// the high-water mark, for StoreT (server/store/store.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "shmc/shm_extent_table.h"
#include "shmc/shm_link_table.h"

namespace shmkv {

constexpr size_t kNodeBytes = 64;  // value node payload
// What one node costs in the value segment: its payload and the link
// table's bookkeeping (docs/layout/link_table.md). --memory is spent in
// these units, and INFO's memory figures count them.
constexpr size_t kNodeCost = shmc::ShmLinkTable<shmc::POSIX>::NodeCost(kNodeBytes);
static_assert(kNodeCost == 80, "--memory's accounting (docs/server.md)");

// How --memory is spent in each value pool (docs/server.md): a link
// table's units are 80-byte nodes, all of them the limit; an extent
// table's are 8-byte granules, --memory's worth of them in use the limit,
// its segment an eighth larger so that free space split among sizes
// seldom stands between a write and the limit (its pages are reserved
// only as the top reaches them).
template <class Values>
struct PoolUnits;
template <class A>
struct PoolUnits<shmc::ShmLinkTable<A>> {
  static constexpr uint64_t kCost = kNodeCost;
  static constexpr uint64_t kInitSize = kNodeBytes;
  static constexpr const char* kName = "nodes";
  static uint64_t InitCount(uint64_t memory) {
    return std::max<uint64_t>(16, memory / kNodeCost);
  }
  static uint64_t Limit(const shmc::ShmLinkTable<A>& p, uint64_t memory) {
    return std::min<uint64_t>(p.total_nodes(), InitCount(memory));
  }
  // Units ever handed out: the nodes reserved (a free node stays linked).
  static uint64_t Top(const shmc::ShmLinkTable<A>& p) {
    return p.reserved_nodes();
  }
};
template <class A>
struct PoolUnits<shmc::ShmExtentTable<A>> {
  static constexpr uint64_t kCost = shmc::detail::kGranule;
  static constexpr uint64_t kInitSize = shmc::detail::kGranule;
  static constexpr const char* kName = "extents";
  static uint64_t InitCount(uint64_t memory) {
    const uint64_t g = std::max<uint64_t>(256, memory / kCost);
    return g + g / 8;
  }
  static uint64_t Limit(const shmc::ShmExtentTable<A>& p, uint64_t memory) {
    return std::min<uint64_t>(p.total_nodes(),
                              std::max<uint64_t>(256, memory / kCost));
  }
  // Granules below the top: the values and the free extents among them.
  static uint64_t Top(const shmc::ShmExtentTable<A>& p) {
    return p.used_nodes();
  }
};

}  // namespace shmkv
