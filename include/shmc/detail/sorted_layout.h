// Layout of ShmSortedArray segments (docs/layout/sorted_array.md), without
// the key and value types: ShmSortedArray and the `shmc` tool both derive
// offsets, checksums and the Eytzinger walk from these.
//
// Two kinds of segment:
//  * the directory, at the user's key: a SortedDirHeader whose `current`
//    word names the published data segment (generation << 1 | slot);
//  * data segments at key + "0" and key + "1" (slots, used alternately):
//    a SortedDataHeader, then keys[records + 1], then values[records + 1],
//    each array starting on a cache line.
//
// kSorted stores records in key order at indices 0..n-1. kEytzinger stores
// them in BFS order of an implicit binary search tree at indices 1..n (node
// k has children 2k and 2k+1); index 0 is unused. Both arrays use the same
// order, so a key's index is also its value's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "shmc/detail/segment.h"
#include "shmc/detail/segment_header.h"
#include "shmc/hash.h"

namespace shmc {

// How a ShmSortedArray orders its records in memory.
enum class SortedLayout : uint64_t {
  kSorted = 0,     // key order; branch-free binary search; fastest scans
  kEytzinger = 1,  // BFS order; prefetching search; fastest point lookups
};

namespace detail {

struct SortedDirHeader {
  // generation << 1 | slot of the published data; 0 until the first build.
  std::atomic<uint64_t> current;
  std::atomic<uint64_t> publish_time_ns;  // CLOCK_REALTIME of the last publish
  std::atomic<uint64_t> builds;           // builds published
  uint8_t reserved[40];
};
static_assert(sizeof(SortedDirHeader) == kCacheLine, "one line");

struct SortedDataHeader {
  // 0 while the builder fills the arrays; the generation once complete.
  std::atomic<uint64_t> sealed;
  uint64_t checksum;  // SortedChecksum() of both arrays, set before sealing
  uint64_t build_ns;  // time spent filling and checksumming
  uint8_t reserved[40];
};
static_assert(sizeof(SortedDataHeader) == kCacheLine, "one line");

constexpr uint64_t kSortedDirHeaderEnd =
    sizeof(SegmentHeader) + sizeof(SortedDirHeader);
constexpr uint64_t kSortedDataHeaderEnd =
    sizeof(SegmentHeader) + sizeof(SortedDataHeader);
constexpr uint32_t kSortedLayoutVersion = 1;
constexpr uint64_t kSortedMaxRecords = 1ULL << 40;
constexpr uint64_t kSortedMaxItemSize = 1ULL << 20;

// Byte geometry of a data segment, from its params alone.
struct SortedGeometry {
  uint64_t key_size = 0, key_align = 0;
  uint64_t value_size = 0, value_align = 0;
  uint64_t records = 0;
  uint64_t layout = 0;

  bool Plausible() const {
    return key_size != 0 && key_size <= kSortedMaxItemSize &&
           PowerOfTwo(key_align) && key_align <= 4096 &&
           key_size % key_align == 0 && value_size != 0 &&
           value_size <= kSortedMaxItemSize && PowerOfTwo(value_align) &&
           value_align <= 4096 && value_size % value_align == 0 &&
           records <= kSortedMaxRecords &&
           layout <= static_cast<uint64_t>(SortedLayout::kEytzinger);
  }
  // Both arrays hold records + 1 slots so that either base works.
  uint64_t keys_offset() const {
    return NodesStart(kSortedDataHeaderEnd, key_align);
  }
  uint64_t keys_bytes() const { return (records + 1) * key_size; }
  uint64_t values_offset() const {
    return NodesStart(keys_offset() + keys_bytes(), value_align);
  }
  uint64_t values_bytes() const { return (records + 1) * value_size; }
  uint64_t total() const {
    return RoundUp(values_offset() + values_bytes(), kCacheLine);
  }
  // Array index of the first and one-past-last record in memory order.
  uint64_t first_index() const { return eytzinger() ? 1 : 0; }
  bool eytzinger() const {
    return layout == static_cast<uint64_t>(SortedLayout::kEytzinger);
  }
};

// Segment specs: the four type params (layout role: another key or value
// type is refused) and, for data, the geometry params records, layout and
// generation. A reader passes records = layout = generation = 0.
inline void SortedTypeParams(const SortedGeometry& g, SegmentSpec* spec) {
  spec->params = {{"key_size", g.key_size, ParamRole::kLayout},
                  {"key_align", g.key_align, ParamRole::kLayout},
                  {"value_size", g.value_size, ParamRole::kLayout},
                  {"value_align", g.value_align, ParamRole::kLayout}};
}

inline SegmentSpec SortedDirSpec(const SortedGeometry& g) {
  SegmentSpec spec;
  spec.kind = ContainerKind::kSortedDir;
  spec.layout_version = kSortedLayoutVersion;
  spec.header_size = static_cast<uint32_t>(kSortedDirHeaderEnd);
  spec.total_size = kSortedDirHeaderEnd;
  SortedTypeParams(g, &spec);
  return spec;
}

// Geometry params of a data segment.
constexpr const char* kSortedRecords = "records";
constexpr const char* kSortedLayoutParam = "layout";
constexpr const char* kSortedGeneration = "generation";

inline SegmentSpec SortedDataSpec(const SortedGeometry& g, uint64_t gen) {
  SegmentSpec spec;
  spec.kind = ContainerKind::kSortedArray;
  spec.layout_version = kSortedLayoutVersion;
  spec.header_size = static_cast<uint32_t>(kSortedDataHeaderEnd);
  spec.total_size = g.total();
  SortedTypeParams(g, &spec);
  spec.params.push_back({kSortedRecords, g.records, ParamRole::kGeometry});
  spec.params.push_back({kSortedLayoutParam, g.layout, ParamRole::kGeometry});
  spec.params.push_back({kSortedGeneration, gen, ParamRole::kGeometry});
  return spec;
}

// Attaches a data segment read-only whose key and value types are those
// of `types`, and reads its geometry back (checked against its size).
// Whether it is sealed is the caller's question.
template <class Alloc>
bool OpenSortedData(const std::string& key, const SortedGeometry& types,
                    const char* who, Segment<Alloc>* seg, SortedGeometry* g,
                    uint64_t* gen, Error* e) {
  if (!seg->OpenForRead(key, SortedDataSpec(types, 0), false, who, e)) {
    return false;
  }
  *g = types;
  g->records = seg->param(kSortedRecords);
  g->layout = seg->param(kSortedLayoutParam);
  *gen = seg->param(kSortedGeneration);
  return seg->AcceptGeometry(g->Plausible() && *gen != 0, g->total(),
                             "records, layout or generation", who, e);
}

inline const SortedDataHeader* SortedData(const char* base) {
  return reinterpret_cast<const SortedDataHeader*>(base +
                                                   sizeof(SegmentHeader));
}
inline const SortedDirHeader* SortedDir(const char* base) {
  return reinterpret_cast<const SortedDirHeader*>(base +
                                                  sizeof(SegmentHeader));
}

// Checksum of both arrays (the unused slot is zero and included).
inline uint64_t SortedChecksum(const char* base, const SortedGeometry& g) {
  uint64_t k = HashBytes(base + g.keys_offset(), g.keys_bytes());
  uint64_t v = HashBytes(base + g.values_offset(), g.values_bytes());
  return Mix64(k ^ (v * 0x9e3779b97f4a7c15ULL) ^ g.records);
}

// In-order walk of an Eytzinger tree of n nodes (1-based); 0 means the end.
inline uint64_t EytzFirst(uint64_t n) {
  if (n == 0) return 0;
  uint64_t k = 1;
  while (2 * k <= n) k *= 2;
  return k;
}
inline uint64_t EytzNext(uint64_t k, uint64_t n) {
  if (2 * k + 1 <= n) {
    k = 2 * k + 1;
    while (2 * k <= n) k *= 2;
    return k;
  }
  // Climb while k is a right child (odd), then once more: the parent of
  // the last left turn, or 0 past the root.
  return k >> (__builtin_ctzll(~k) + 1);
}

// Data segment key of a slot: key + "0" or key + "1" (as ShmHashMap does).
inline std::string SortedDataKey(const std::string& key, uint64_t slot) {
  return key + (slot ? "1" : "0");
}

}  // namespace detail
}  // namespace shmc
