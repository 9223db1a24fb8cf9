// The timed lookup loops that several benchmarks share, so that a way
// measured in two programs is the same loop in both. Each folds what it
// read into a sum the optimizer must keep, so every lookup is done.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/bench_util.h"

namespace shmc_bench {

// The 16-byte node of the hash-table benchmarks (hash_table_bench's workload): key
// 0 marks a free slot.
struct Node {
  uint64_t key;
  uint64_t val;
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};

// ShmHashTable::FindMany over `lookups`, out->size() keys a call; every key
// must be present (its node's val is read).
template <class Table>
void FindManyLoop(const Table& t, const std::vector<uint64_t>& lookups,
                  std::vector<const volatile Node*>* out) {
  uint64_t sum = 0;
  for (size_t i = 0; i < lookups.size(); i += out->size()) {
    size_t n = std::min(out->size(), lookups.size() - i);
    t.FindMany(&lookups[i], n, out->data());
    for (size_t j = 0; j < n; ++j) sum += (*out)[j]->val;
  }
  Keep(sum);
}

// ShmHashTable::Find over `lookups`, adding up the found nodes' val.
template <class Table>
void TableFindLoop(const Table& t, const std::vector<uint64_t>& lookups) {
  uint64_t sum = 0;
  for (uint64_t k : lookups) {
    const volatile Node* n = t.Find(k);
    sum += n ? n->val : 0;
  }
  Keep(sum);
}

// find over `lookups` in a map of uint64_t to uint64_t (absl's
// flat_hash_map, the hash tables' baseline), adding up the values found.
template <class Map>
void U64FindLoop(const Map& m, const std::vector<uint64_t>& lookups) {
  uint64_t sum = 0;
  for (uint64_t k : lookups) {
    auto it = m.find(k);
    sum += it == m.end() ? 0 : it->second;
  }
  Keep(sum);
}

// ShmHashMap's copy-free Find into `buf` of `cap` bytes.
template <class Map>
void MapFindLoop(const Map& m, const std::vector<uint64_t>& lookups,
                 char* buf, size_t cap) {
  uint64_t sum = 0;
  for (uint64_t k : lookups) {
    size_t len = cap;
    m.Find(k, buf, &len);
    sum += len + static_cast<unsigned char>(buf[0]);
  }
  Keep(sum);
}

// ShmHashMap's Visit, reading the value's first byte in place.
template <class Map>
void MapVisitLoop(const Map& m, const std::vector<uint64_t>& lookups) {
  uint64_t sum = 0;
  for (uint64_t k : lookups) {
    m.Visit(k, [&](const char* p, size_t n) {
      sum += n + static_cast<unsigned char>(p[0]);
    });
  }
  Keep(sum);
}

// std::unordered_map find that touches the value's first and last byte
// (hash_map_bench's baseline); every key must be present and its value non-empty.
inline void UmFindLoop(const std::unordered_map<uint64_t, std::string>& um,
                       const std::vector<uint64_t>& lookups) {
  uint64_t sum = 0;
  for (uint64_t k : lookups) {
    const std::string& s = um.find(k)->second;
    sum += static_cast<unsigned char>(s[0]) +
           static_cast<unsigned char>(s[s.size() - 1]);
  }
  Keep(sum);
}

}  // namespace shmc_bench
