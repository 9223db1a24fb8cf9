// Geometry of ShmHashTable (docs/hash_table.md).
//
// Rows are arrays of buckets; a bucket holds `slots` consecutive nodes (one
// 64-byte line for nodes of 16 bytes or less). Rows 0 and 1 are the *main*
// rows, of equal size: a key may live in bucket b0 of row 0 or b1 of row 1,
// both derived from one 64-bit hash, so a lookup fetches both lines in
// parallel. Keys that find both buckets full go to the *overflow* rows, each
// probed at one bucket, sizes shrinking by 2/5 per row.
//
// Sizing, chosen by simulation (bench/sim/geometry_sim.cc): total slots =
// capacity * 10/9 (at least 64), 88% of the buckets in the main rows, four
// overflow rows. That reaches 93-94% usable fill at every size tried, with
// ~89% of keys in a main row.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shmc/detail/prefetch.h"
#include "shmc/detail/segment_header.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shmc {
namespace detail {

constexpr uint32_t kMaxOverRows = 8;

// Keys a table of `total_slots` slots is expected to hold for certain: 90%
// of them (expected_capacity(), and what `shmc info` reports).
constexpr uint64_t ExpectedCapacity(uint64_t total_slots) {
  return total_slots * 9 / 10;
}
constexpr uint32_t kDefaultOverRows = 4;

struct TableGeometry {
  uint32_t slots = 0;          // nodes per bucket
  uint64_t main_buckets = 0;   // buckets in each of rows 0 and 1
  uint64_t over_buckets = 0;   // buckets in all overflow rows together
  uint32_t over_rows = 0;      // number of overflow rows
  uint64_t row_buckets[2 + kMaxOverRows] = {};
  uint64_t row_first[2 + kMaxOverRows] = {};  // first bucket index of a row

  uint32_t rows() const { return 2 + over_rows; }
  uint64_t total_buckets() const { return 2 * main_buckets + over_buckets; }
  uint64_t total_slots() const { return total_buckets() * slots; }

  // Fills the per-row tables; false if the numbers cannot describe a table
  // (they may come from a damaged segment).
  bool Derive() {
    if (slots == 0 || slots > 4096 || main_buckets == 0 ||
        main_buckets > (1ULL << 32) || over_rows == 0 ||
        over_rows > kMaxOverRows || over_buckets < over_rows ||
        over_buckets > (1ULL << 32)) {
      return false;
    }
    // Integer weights 1000 * (2/5)^i: the same split in every build.
    uint64_t w[kMaxOverRows];
    uint64_t wsum = 0;
    uint64_t wi = 1000;
    for (uint32_t i = 0; i < over_rows; ++i) {
      w[i] = wi > 0 ? wi : 1;
      wsum += w[i];
      wi = wi * 2 / 5;
    }
    row_buckets[0] = row_buckets[1] = main_buckets;
    uint64_t left = over_buckets;
    for (uint32_t i = 0; i < over_rows; ++i) {
      uint64_t n;
      if (i + 1 == over_rows) {
        n = left;
      } else {
        n = over_buckets * w[i] / wsum;
        uint64_t keep = over_rows - i - 1;  // each later row needs a bucket
        if (n < 1) n = 1;
        if (n > left - keep) n = left - keep;
      }
      row_buckets[2 + i] = n;
      left -= n;
    }
    uint64_t first = 0;
    for (uint32_t r = 0; r < rows(); ++r) {
      row_first[r] = first;
      first += row_buckets[r];
    }
    return true;
  }

  // Sized so that 90% of the slots (ExpectedCapacity, which measured fill
  // of 93-99% keeps below what a table holds) exceeds `capacity`: slots >=
  // capacity * 10/9 + 2. `legacy_sizing` gives the rule of earlier builds
  // (capacity * 10/9 + 1 slots), whose tables are still adopted as they are.
  static TableGeometry ForCapacity(uint64_t capacity, uint32_t slots,
                                   bool legacy_sizing = false) {
    TableGeometry g;
    g.slots = slots;
    uint64_t want = capacity / 9 * 10 + (capacity % 9) * 10 / 9 +
                    (legacy_sizing ? 1 : 3);
    if (want < 64) want = 64;
    uint64_t buckets = (want + slots - 1) / slots;
    g.main_buckets = buckets * 88 / 200;
    if (g.main_buckets == 0) g.main_buckets = 1;
    g.over_rows = kDefaultOverRows;
    uint64_t rest = buckets > 2 * g.main_buckets ? buckets - 2 * g.main_buckets
                                                 : 0;
    g.over_buckets = rest < g.over_rows ? g.over_rows : rest;
    g.Derive();
    return g;
  }
};

// The table's own header, right after the segment header.
struct HashTableHeader {
  // Overflow rows that ever received a node (0..over_rows): lookups probe no
  // deeper. Written by the writer only; relaxed, ordered by the fence in
  // FindOrAlloc.
  std::atomic<uint32_t> overflow_depth;
  uint32_t reserved0;
  // Allocations that had to go to an overflow row (statistics).
  std::atomic<uint64_t> overflow_allocs;
  uint8_t reserved1[48];
};
static_assert(sizeof(HashTableHeader) == kCacheLine,
              "one line, so the bitmaps after it start on a line");
static_assert(offsetof(HashTableHeader, overflow_depth) == 0 &&
                  offsetof(HashTableHeader, overflow_allocs) == 8,
              "fields of layout version 2: moving one needs a version bump");
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "words shared between processes must be lock-free");
constexpr uint64_t kTableHeaderOffset = sizeof(SegmentHeader);

// Byte layout of a ShmHashTable segment after the segment header and the
// table header (docs/layout/hash_table.md): two overflow bitmaps of one bit
// per main bucket, each rounded up to a cache line, then the tag array (one
// byte per slot, each bucket's tags in whole 32-bit words), then the nodes.
constexpr uint64_t kTableBitmapOffset =
    kTableHeaderOffset + sizeof(HashTableHeader);
constexpr uint64_t TableBitmapBytes(uint64_t main_buckets) {
  return (((main_buckets + 63) / 64 * 8) + 63) / 64 * 64;
}
// 32-bit tag words per bucket.
constexpr uint32_t TagWordsPerBucket(uint32_t slots) {
  return (slots + 3) / 4;
}
constexpr uint64_t TableTagsOffset(uint64_t main_buckets) {
  return kTableBitmapOffset + 2 * TableBitmapBytes(main_buckets);
}
// The 32-bit tag word holding slot `slot`'s tag (an index into the tag
// array), and the tag's bit offset in that word.
constexpr uint64_t TagWordIndex(uint64_t slot, uint32_t slots) {
  return (slot / slots) * TagWordsPerBucket(slots) + (slot % slots) / 4;
}
constexpr uint32_t TagShift(uint64_t slot, uint32_t slots) {
  return static_cast<uint32_t>(8 * ((slot % slots) % 4));
}
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tag bytes are addressed as the bytes of their words");
// Offset in the segment of the byte holding slot `slot`'s tag (the byte
// TagShift names, little-endian).
constexpr uint64_t TableTagByteOffset(uint64_t main_buckets, uint32_t slots,
                                      uint64_t slot) {
  return TableTagsOffset(main_buckets) + TagWordIndex(slot, slots) * 4 +
         TagShift(slot, slots) / 8;
}
inline uint64_t TableTagBytes(const TableGeometry& g) {
  return (g.total_buckets() * TagWordsPerBucket(g.slots) * 4 + 63) / 64 * 64;
}
inline uint64_t TableNodesOffset(const TableGeometry& g, uint64_t node_align) {
  uint64_t end = TableTagsOffset(g.main_buckets) + TableTagBytes(g);
  uint64_t align = node_align > 64 ? node_align : 64;
  return (end + align - 1) / align * align;
}

// The tag of a key with hash h: a byte that is never 0 (0 marks a slot that
// was never handed out). Taken from a multiply of all 64 bits, so it is
// independent of the bucket choices, which use the two 32-bit halves.
inline uint32_t TagOf(uint64_t h) {
  uint32_t t = static_cast<uint32_t>((h * 0x9e3779b97f4a7c15ULL) >> 56);
  return t + (t == 0);
}

// Bit i set where byte i of `words` equals `tag`, exactly (no false
// positives from borrows between bytes), for a 4- or 8-byte word: one
// bucket's tag word, or the two main buckets' words at once.
template <class Word>
inline uint32_t MatchTagBytes(Word words, uint32_t tag) {
  static_assert(sizeof(Word) == 4 || sizeof(Word) == 8, "a tag word or two");
  constexpr Word kOnes = static_cast<Word>(~Word{0}) / 0xff;  // 0x0101...
  constexpr Word kLow7 = kOnes * 0x7f;
  Word v = words ^ static_cast<Word>(tag * kOnes);
  // Bit 7 of every byte that was equal, and no other bit.
  Word zero = static_cast<Word>(~(((v & kLow7) + kLow7) | v | kLow7));
  // Bit 8i+7 lands on bit 56+i of the product, and no two partial
  // products share a bit, so nothing carries into the top byte.
  return static_cast<uint32_t>(
      (static_cast<uint64_t>(zero) * 0x0002040810204081ULL) >> 56);
}
inline uint32_t MatchTagWord(uint32_t word, uint32_t tag) {
  return MatchTagBytes(word, tag);
}
// The two main buckets' words at once. With SSE2 (every x86-64): one byte
// compare of the 8 bytes against the tag repeated, and its byte mask; 5
// instructions where the portable form takes 11, on the path of every
// lookup (callgrind: Find 92 -> 85 instructions, bench/NOTES.md).
inline uint32_t MatchTagPair(uint64_t words, uint32_t tag) {
#if defined(__SSE2__)
  __m128i w = _mm_cvtsi64_si128(static_cast<long long>(words));
  __m128i t = _mm_cvtsi64_si128(
      static_cast<long long>(tag * 0x0101010101010101ULL));
  // The upper 8 bytes of both are zero, so equal: keep the low 8 bits.
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, t))) &
         0xffu;
#else
  return MatchTagBytes(words, tag);
#endif
}

// Bits set in x; avoids a libgcc call when popcnt is not a target feature.
inline int BitCount(uint64_t x) {
  int n = 0;
  for (; x != 0; x &= x - 1) ++n;
  return n;
}

// Maps a 32-bit hash uniformly onto [0, n) without a division.
inline uint64_t ReduceRange(uint32_t h, uint64_t n) {
  return (static_cast<uint64_t>(h) * n) >> 32;
}

// Hash for overflow row `r`: independent of the main-row halves of `h`.
inline uint32_t OverflowHash(uint64_t h, uint32_t r) {
  uint64_t x = h + (static_cast<uint64_t>(r) + 1) * 0x9e3779b97f4a7c15ULL;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return static_cast<uint32_t>(x >> 32);
}

}  // namespace detail
}  // namespace shmc
