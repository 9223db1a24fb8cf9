// Shared-memory layout of ShmExtentTable (docs/layout/extent_table.md):
// values stored whole, each in one run of 8-byte granules (an extent)
// behind a one-word head.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shmc/detail/segment_header.h"

namespace shmc {
namespace detail {

constexpr uint32_t kExtentLayoutVersion = 1;
constexpr uint64_t kGranule = 8;

// An extent's head word, in its first granule:
//   bits  0..31  tag: the value's (never 0), or 0 for a free extent
//   bits 32..59  size: granules the extent spans, its head included (>= 2)
//   bits 60..63  pad: bytes of its data granules the value leaves unused
// A free extent keeps its size and its first data word holds the next
// free extent of its list (a granule index, 0 = end).
constexpr uint64_t kExtentMinGranules = 2;
constexpr uint64_t kExtentMaxGranules = (uint64_t{1} << 28) - 1;
constexpr uint64_t kExtentMaxPad = 15;

inline uint64_t ExtentHead(uint32_t tag, uint64_t size, uint64_t pad) {
  return static_cast<uint64_t>(tag) | (size << 32) | (pad << 60);
}
inline uint32_t ExtentTag(uint64_t head) {
  return static_cast<uint32_t>(head);
}
inline uint64_t ExtentSize(uint64_t head) {
  return (head >> 32) & kExtentMaxGranules;
}
inline uint64_t ExtentPad(uint64_t head) { return head >> 60; }
// The value bytes an extent of this head holds, or -1 when the head
// cannot be one (damage): a reader never sizes a copy from it then.
inline int64_t ExtentLength(uint64_t head) {
  uint64_t size = ExtentSize(head), pad = ExtentPad(head);
  if (size < kExtentMinGranules) return -1;
  uint64_t room = (size - 1) * kGranule;
  return pad > room ? -1 : static_cast<int64_t>(room - pad);
}

// Free lists: one per exact size of 2 .. kExtentExactMax granules (list
// index = size), then one per power of two above (index kExtentExactMax +
// floor(log2(size)) - kExtentExactBits + 1), taken first-fit.
constexpr uint64_t kExtentExactBits = 9;
constexpr uint64_t kExtentExactMax = uint64_t{1} << kExtentExactBits;  // 512
constexpr uint64_t kExtentLists = kExtentExactMax + 1 + (28 - kExtentExactBits);
constexpr uint64_t kExtentListWords = (kExtentLists + 63) / 64;
inline uint64_t ExtentList(uint64_t size) {
  if (size <= kExtentExactMax) return size;
  return kExtentExactMax + (63 - __builtin_clzll(size)) - kExtentExactBits + 1;
}
static_assert(kExtentLists == 532, "lists: 0..512 exact, then 19 classes");

enum ExtentOp : uint32_t {
  kExtentOpNone = 0,
  kExtentOpInsert = 1,   // map: new value published into an empty slot
  kExtentOpReplace = 2,  // map: new value replaces old_lb in the slot
  kExtentOpErase = 3,    // map: slot cleared, old value freed
  kExtentOpFree = 4,     // a value freed outside a map write, or a repair
};

// The one in-flight write, recorded before it changes anything. Recovery
// decides from the slot whether the write took effect, frees the value
// that lost (the new one or the old one) and rebuilds the free lists
// from the extents themselves (their heads tile granules 1 .. top).
struct ExtentIntent {
  std::atomic<uint32_t> op;
  std::atomic<uint32_t> reserved0;
  std::atomic<uint64_t> slot;    // hash-table node index + 1
  std::atomic<uint64_t> new_lb;  // {granule (0 until placed), tag}
  std::atomic<uint64_t> old_lb;  // the value replaced or erased
  uint8_t reserved1[32];
};
static_assert(sizeof(ExtentIntent) == 64, "intent is one line");

struct ExtentTableHeader {
  std::atomic<uint64_t> top;       // granules 1 .. top-1 are extents
  std::atomic<uint64_t> reserved;  // granules whose pages are reserved
  std::atomic<uint64_t> free_granules;  // in free extents below top
  std::atomic<uint64_t> bufs;           // live values
  std::atomic<uint64_t> buf_bytes;      // their bytes
  std::atomic<uint32_t> next_tag;
  uint32_t reserved0;
  uint8_t reserved1[16];
  ExtentIntent intent;
  // Which lists hold an extent (bit i: list i), then the lists' heads.
  std::atomic<uint64_t> nonempty[kExtentListWords];
  std::atomic<uint32_t> list[kExtentLists];
};
static_assert(offsetof(ExtentTableHeader, intent) == 64, "layout");
static_assert(offsetof(ExtentTableHeader, nonempty) == 128, "layout");
static_assert(offsetof(ExtentTableHeader, list) == 128 + 9 * 8, "layout");

// Geometry param of an extent table's header: its granules.
constexpr const char* kExtentParamGranules = "granules";

}  // namespace detail
}  // namespace shmc
