// The checks of a ShmHashTable's own metadata against its nodes, in one
// place: ShmHashTable::HealthCheck runs them knowing the program's Node and
// its keys, and `shmc check` runs the same ones over a segment it reads as
// bytes (docs/hash_table.md, docs/cli.md).
//
// What can hide a key from lookups, each counted on its own:
//  * a node in use whose tag is 0 (0 marks a slot never handed out);
//  * a node in use whose tag is not its key's (lookups compare the tag
//    before the key);
//  * an overflow row holding nodes deeper than the recorded overflow depth
//    (lookups stop at the depth), or a depth beyond the table's rows.
// With `fix` (a writer's mapping) tags are rewritten from their keys and
// the depth is raised to the deepest row in use.
#pragma once

#include <atomic>
#include <cstdint>

#include "shmc/detail/fixed_layout.h"
#include "shmc/detail/table_geometry.h"

namespace shmc {
namespace detail {

struct TableHealth {
  uint64_t nodes_in_use;
  uint64_t untagged;        // in use with tag 0: unreachable
  uint64_t mistagged;       // in use, tag not the key's: unreachable
  uint64_t retagged;        // tags rewritten (fix)
  uint32_t over_rows;       // the table's overflow rows
  uint32_t overflow_depth;  // as recorded before any fix
  uint32_t deepest_used;    // 1 + deepest overflow row in use; 0: none
  uint32_t depth_fixed;     // 1: a fix set the depth to deepest_used

  // No key that lookups cannot reach, and a depth lookups can trust.
  bool ok() const {
    return untagged == 0 && mistagged == 0 && !depth_hides_nodes() &&
           !depth_out_of_range();
  }
  bool depth_hides_nodes() const { return deepest_used > overflow_depth; }
  bool depth_out_of_range() const { return overflow_depth > over_rows; }
};

// The tag recorded for `slot` of the table mapped at `base`.
inline uint32_t TableTagAt(const char* base, const FixedLayout& lay,
                           uint64_t slot) {
  const auto* w = reinterpret_cast<const std::atomic<uint32_t>*>(
      base + TableTagsOffset(lay.geometry().main_buckets));
  uint32_t slots = lay.geometry().slots;
  // Relaxed: a check reads a quiescent table (or the writer's own view).
  uint32_t word =
      w[TagWordIndex(slot, slots)].load(std::memory_order_relaxed);
  return (word >> TagShift(slot, slots)) & 0xffu;
}

// Writes `tag` for `slot` (single writer: load and store, as FindOrAlloc).
inline void SetTableTag(char* base, const FixedLayout& lay, uint64_t slot,
                        uint32_t tag) {
  auto* w = reinterpret_cast<std::atomic<uint32_t>*>(
      base + TableTagsOffset(lay.geometry().main_buckets));
  uint32_t slots = lay.geometry().slots;
  std::atomic<uint32_t>& word = w[TagWordIndex(slot, slots)];
  uint32_t shift = TagShift(slot, slots);
  uint32_t v = word.load(std::memory_order_relaxed);
  word.store((v & ~(0xffu << shift)) | (tag << shift),
             std::memory_order_relaxed);
}

inline HashTableHeader* TableHeaderAt(char* base) {
  return reinterpret_cast<HashTableHeader*>(base + kTableHeaderOffset);
}

// Runs the checks over the table mapped at `base` (writable if `fix`).
// used(slot) says whether a node is in use; key_hash(slot, &h) gives the
// hash of its key, or false where the key is not known (then only a zero
// tag is found wrong, and nothing is retagged).
template <class Used, class KeyHash>
void CheckTable(char* base, const FixedLayout& lay, const Used& used,
                const KeyHash& key_hash, bool fix, TableHealth* out) {
  *out = TableHealth{};
  const TableGeometry& g = lay.geometry();
  out->over_rows = g.over_rows;
  for (uint64_t i = 0; i < g.total_slots(); ++i) {
    if (!used(i)) continue;
    ++out->nodes_in_use;
    uint32_t have = TableTagAt(base, lay, i);
    uint64_t h = 0;
    bool known = key_hash(i, &h);
    uint32_t want = known ? TagOf(h) : have;
    if (have == 0) {
      ++out->untagged;
    } else if (have != want) {
      ++out->mistagged;
    }
    if (fix && known && have != want) {
      SetTableTag(base, lay, i, want);
      ++out->retagged;
    }
  }
  for (uint32_t r = 0; r < g.over_rows; ++r) {
    RowSpan span = lay.row(2 + r);
    for (uint64_t s = 0; s < span.slots; ++s) {
      if (used(span.first + s)) {
        out->deepest_used = r + 1;
        break;
      }
    }
  }
  HashTableHeader* th = TableHeaderAt(base);
  out->overflow_depth = th->overflow_depth.load(std::memory_order_relaxed);
  if (fix && (out->depth_hides_nodes() || out->depth_out_of_range())) {
    out->depth_fixed = 1;
    th->overflow_depth.store(out->deepest_used, std::memory_order_relaxed);
  }
  // SYNC POINT: repaired tags and depth are visible before any later
  // release store of this writer (as FindOrAlloc's fence orders them).
  if (fix) std::atomic_thread_fence(std::memory_order_release);
}

}  // namespace detail
}  // namespace shmc
