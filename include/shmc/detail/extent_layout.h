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

constexpr uint32_t kExtentLayoutVersion = 2;
constexpr uint64_t kGranule = 8;

// An extent's head word, in its first granule:
//   bits  0..31  tag: the value's (never 0), or 0 for a free extent
//   bits 32..58  size: granules the extent spans, its head included (>= 1)
//   bits 59..60  prev: what the extent just below this one is, for a free
//                to merge with it: 0 a value (or none), 1 a free extent of
//                one granule, 2 of two granules, 3 a free extent of three
//                or more, whose size its last granule (the footer) holds
//   bits 61..63  pad: bytes of its data granules the value leaves unused
// A free extent of two granules or more is on a free list: its first data
// word links it {next granule (low 32 bits), previous (high 32)}, 0 = none.
// One of three or more also ends in a footer word {0, size}. A free
// extent of one granule (a filler) is on no list; its neighbours absorb it.
constexpr uint64_t kExtentMinGranules = 2;  // the smallest listed
constexpr uint64_t kExtentMaxGranules = (uint64_t{1} << 27) - 1;
constexpr int kExtentPrevShift = 59;
constexpr uint64_t kExtentPrevMask = uint64_t{3} << kExtentPrevShift;

inline uint64_t ExtentHead(uint32_t tag, uint64_t size, uint64_t pad,
                           uint64_t prev = 0) {
  return static_cast<uint64_t>(tag) | (size << 32) |
         (prev << kExtentPrevShift) | (pad << 61);
}
inline uint32_t ExtentTag(uint64_t head) {
  return static_cast<uint32_t>(head);
}
inline uint64_t ExtentSize(uint64_t head) {
  return (head >> 32) & kExtentMaxGranules;
}
inline uint64_t ExtentPrev(uint64_t head) {
  return (head & kExtentPrevMask) >> kExtentPrevShift;
}
inline uint64_t ExtentPad(uint64_t head) { return head >> 61; }
inline uint64_t ExtentWithPrev(uint64_t head, uint64_t prev) {
  return (head & ~kExtentPrevMask) | (prev << kExtentPrevShift);
}
// The prev mark a free extent of `size` granules leaves on the extent
// above it.
inline uint64_t ExtentPrevMark(uint64_t size) {
  return size >= 3 ? 3 : size;
}
// The value bytes an extent of this head holds, or -1 when the head
// cannot be one (damage): a reader never sizes a copy from it then.
inline int64_t ExtentLength(uint64_t head) {
  uint64_t size = ExtentSize(head), pad = ExtentPad(head);
  if (size == 0) return -1;
  uint64_t room = (size - 1) * kGranule;
  return pad > room ? -1 : static_cast<int64_t>(room - pad);
}

// Free lists, doubly linked: one per exact size of 2 .. kExtentExactMax
// granules (list index = size), then one per power of two above (index
// kExtentExactMax + floor(log2(size)) - kExtentExactBits + 1), taken
// first-fit. (The last of the 532 heads is never used since version 2's
// sizes stop below 2^27.)
constexpr uint64_t kExtentExactBits = 9;
constexpr uint64_t kExtentExactMax = uint64_t{1} << kExtentExactBits;  // 512
constexpr uint64_t kExtentLists = kExtentExactMax + 1 + (28 - kExtentExactBits);
constexpr uint64_t kExtentListWords = (kExtentLists + 63) / 64;
inline uint64_t ExtentList(uint64_t size) {
  if (size <= kExtentExactMax) return size;
  return kExtentExactMax + (63 - __builtin_clzll(size)) - kExtentExactBits + 1;
}
static_assert(kExtentLists == 532, "lists: 0..512 exact, then 19 classes");
inline uint64_t ExtentLinkNext(uint64_t links) { return links & 0xffffffffULL; }
inline uint64_t ExtentLinkPrev(uint64_t links) { return links >> 32; }
inline uint64_t ExtentLinks(uint64_t next, uint64_t prev) {
  return next | (prev << 32);
}

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
