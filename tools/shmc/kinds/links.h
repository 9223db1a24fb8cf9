// What the hash map's and the value pools' handlers share: a link table or
// an extent table opened to read or to repair, its facts and its health
// findings.
#pragma once

#include <string>

#include "shmc/detail/link_table_impl.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_link_table.h"
#include "tools/shmc/kinds/kind.h"

namespace shmc_tool {
namespace kinds {

template <class Alloc>
int OpenLinks(const SegName& n, shmc::ShmLinkTable<Alloc>* lt,
              std::string* err) {
  if (!lt->InitForRead(n.key)) return Fail(lt->last_error(), err);
  return kExitOk;
}

// For --fix: the link table opened as its writer (the lease, and the
// recovery of an interrupted write), a damaged intent record dropped.
template <class Alloc>
int OpenLinksToRepair(const SegName& n, const HeaderPeek& peek,
                      const sd::LinkSlotResolver* resolve,
                      shmc::ShmLinkTable<Alloc>* lt, std::string* err) {
  if (!sd::LinkTableWriter<Alloc>::InitForWrite(
          *lt, n.key, peek.param(sd::kLinkParamDataWords) * 8,
          peek.param(sd::kLinkParamNodeNum), resolve, true)) {
    return Fail(lt->last_error(), err);
  }
  return kExitOk;
}

template <class Alloc>
Json LinkFacts(const shmc::ShmLinkTable<Alloc>& lt) {
  Json j = Json::object();
  j["node_num"] = lt.total_nodes();
  j["node_data_bytes"] = lt.node_capacity();
  j["free_nodes"] = lt.free_nodes();
  j["used_nodes"] = lt.total_nodes() - lt.free_nodes();
  // A pool made with kGrowInSteps: the nodes whose memory it holds so far.
  j["reserved_nodes"] = lt.reserved_nodes();
  j["values"] = lt.link_bufs();
  j["value_bytes"] = lt.link_buf_bytes();
  return j;
}

// A link table's HealthStat as problems, repairs and stats.
template <class HealthStat>
void LinkProblems(const HealthStat& hs, Findings* f) {
  auto add = [](Json* list, size_t n, const char* what) {
    if (n > 0) list->push_back(std::to_string(n) + " " + what);
  };
  add(&f->problems, hs.leaked_nodes,
      "leaked nodes (neither free nor in a value)");
  add(&f->problems, hs.bad_linked_link_bufs, "values with a broken chain");
  add(&f->problems, hs.too_long_link_bufs,
      "values with more nodes than their length");
  add(&f->problems, hs.too_short_link_bufs,
      "values with fewer nodes than their length");
  add(&f->problems, hs.bad_free_list, "broken free list");
  add(&f->problems, hs.counter_mismatches, "header counters wrong");
  add(&f->fixed, hs.recycled_leaked_nodes,
      "leaked nodes returned to the pool");
  add(&f->fixed, hs.cleared_link_bufs, "broken values cleared");
  f->stats["free_nodes"] = hs.total_free_nodes;
  f->stats["values"] = hs.total_link_bufs;
  f->stats["value_bytes"] = hs.total_link_buf_bytes;
}

template <class Alloc>
int OpenLinks(const SegName& n, shmc::ShmExtentTable<Alloc>* lt,
              std::string* err) {
  if (!lt->InitForRead(n.key)) return Fail(lt->last_error(), err);
  return kExitOk;
}

template <class Alloc>
int OpenLinksToRepair(const SegName& n, const HeaderPeek& peek,
                      const sd::LinkSlotResolver* resolve,
                      shmc::ShmExtentTable<Alloc>* lt, std::string* err) {
  const uint64_t granules = peek.param(sd::kExtentParamGranules);
  if (!sd::ExtentTableWriter<Alloc>::InitForWrite(
          *lt, n.key, sd::kGranule, granules == 0 ? 0 : granules - 1,
          resolve, true)) {
    return Fail(lt->last_error(), err);
  }
  return kExitOk;
}

template <class Alloc>
Json LinkFacts(const shmc::ShmExtentTable<Alloc>& lt) {
  Json j = Json::object();
  j["granules"] = lt.total_nodes();
  j["granule_bytes"] = sd::kGranule;
  j["free_granules"] = lt.free_nodes();
  j["used_granules"] = lt.used_nodes();
  j["reserved_bytes"] = lt.reserved_bytes();
  j["values"] = lt.link_bufs();
  j["value_bytes"] = lt.link_buf_bytes();
  return j;
}

inline void LinkProblems(const sd::ExtentHealthStat& hs, Findings* f) {
  if (hs.broken_at != 0) {
    f->problems.push_back("extents broken at granule " +
                          std::to_string(hs.broken_at));
  }
  if (hs.bad_free_list != 0) f->problems.push_back("1 broken free list");
  if (hs.counter_mismatches != 0) {
    f->problems.push_back(std::to_string(hs.counter_mismatches) +
                          " header counters wrong");
  }
  if (hs.lost_granules != 0) {
    f->fixed.push_back(std::to_string(hs.lost_granules) +
                       " granules of broken extents made free");
  }
  f->stats["free_granules"] = hs.total_free_nodes;
  f->stats["values"] = hs.total_link_bufs;
  f->stats["value_bytes"] = hs.total_link_buf_bytes;
}

}  // namespace kinds
}  // namespace shmc_tool
