// Shared-memory layout of ShmLinkTable (docs/layout/link_table.md) and the
// word-wise copy helpers its readers and writer use.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "shmc/detail/segment_header.h"

namespace shmc {
namespace detail {

// Header of every node: the chain link, the owner's tag, (head node only)
// the value's length, and a read-ahead hint (shmc/detail/link_hints.h).
// Node data follows as 64-bit words.
struct LinkNodeHead {
  std::atomic<uint32_t> next;  // next node of the chain / free list, 0 = end
  std::atomic<uint32_t> tag;   // 0 free; tag | kLinkHeadFlag on a head node
  std::atomic<uint32_t> len;   // value length (head node)
  std::atomic<uint32_t> hint;  // a later node of the chain, 0 = none; untrusted
};
static_assert(sizeof(LinkNodeHead) == 16, "node head is 16 bytes");

constexpr uint32_t kLinkHeadFlag = 0x80000000U;

enum LinkOp : uint32_t {
  kLinkOpNone = 0,
  kLinkOpNew = 1,      // standalone New: never committed (rolled back)
  kLinkOpFree = 2,     // standalone Free: always rolled forward
  kLinkOpInsert = 3,   // map: new value published into an empty slot
  kLinkOpReplace = 4,  // map: new value replaces old_lb in the slot
  kLinkOpErase = 5,    // map: slot cleared, old value freed
  kLinkOpExtend = 6,   // nodes never used linked onto the free list:
                       // always rolled forward
};

enum LinkStep : uint32_t {
  kLinkStepFill = 1,       // writing the new value into the free-list prefix
  kLinkStepCut = 2,        // cut_next recorded; detaching the new chain
  kLinkStepDetached = 3,   // new chain no longer in the free list
  kLinkStepPublished = 4,  // slot updated (map ops)
};

// The one in-flight write, recorded before it touches anything, so that the
// next writer can roll it forward or back in O(value size).
struct LinkIntent {
  std::atomic<uint32_t> op;
  std::atomic<uint32_t> step;
  std::atomic<uint64_t> slot;    // hash-table node index + 1 (map ops)
  std::atomic<uint64_t> new_lb;  // packed handle of the value being written
  std::atomic<uint64_t> old_lb;  // packed handle of the value being freed
  std::atomic<uint32_t> new_nodes;
  std::atomic<uint32_t> old_nodes;
  std::atomic<uint32_t> cut_next;  // free-list successor of the new chain
  uint32_t reserved0;
  std::atomic<uint64_t> pre_free, pre_bufs, pre_bytes;
  std::atomic<uint64_t> post_free, post_bufs, post_bytes;
  uint8_t reserved1[96];
};
static_assert(sizeof(LinkIntent) == 192, "intent is 192 bytes");
static_assert(offsetof(LinkIntent, new_lb) == 16, "layout");
static_assert(offsetof(LinkIntent, pre_free) == 48, "layout");

struct LinkTableHeader {
  std::atomic<uint32_t> free_head;
  std::atomic<uint32_t> next_tag;
  std::atomic<uint64_t> free_nodes;
  std::atomic<uint64_t> bufs;
  std::atomic<uint64_t> buf_bytes;
  // The nodes at the top of the pool (the last `unlinked` indexes) that
  // were never linked into the free list: a table made with kGrowInSteps
  // has not reserved their pages yet. 0 in every other table (and in
  // segments made before this field, whose reserved bytes were zero).
  std::atomic<uint64_t> unlinked;
  uint8_t reserved0[24];
  LinkIntent intent;
};
static_assert(sizeof(LinkTableHeader) == 256, "link table header");
static_assert(offsetof(LinkTableHeader, unlinked) == 32, "layout");
static_assert(offsetof(LinkTableHeader, intent) == 64,
              "intent on its own lines, away from the hot counters");

inline uint64_t PackLink(uint32_t head, uint32_t tag) {
  return (static_cast<uint64_t>(tag) << 32) | head;
}

// Copies `n` bytes out of shared words with relaxed atomic loads: a racing
// writer makes the copy stale (caught by tag validation), never undefined.
inline void LoadByWords(void* dst, const std::atomic<uint64_t>* src,
                        size_t n) {
  char* d = static_cast<char*>(dst);
  size_t i = 0;
  for (; n >= 8; n -= 8, d += 8, ++i) {
    uint64_t w = src[i].load(std::memory_order_relaxed);
    std::memcpy(d, &w, 8);
  }
  if (n > 0) {
    // The last 1-7 bytes in fixed-size pieces: a variable-length memcpy
    // here compiled to a byte loop.
    uint64_t w = src[i].load(std::memory_order_relaxed);
    char b[8];
    std::memcpy(b, &w, 8);
    size_t at = 0;
    if (n & 4) {
      std::memcpy(d, b, 4);
      at = 4;
    }
    if (n & 2) {
      std::memcpy(d + at, b + at, 2);
      at += 2;
    }
    if (n & 1) d[at] = b[at];
  }
}

// SHMC_LOAD_BY_16 is 1 where LoadWords copies 16 bytes a load: x86-64
// builds with neither sanitizer (ThreadSanitizer and AddressSanitizer see
// no access inside an asm statement, so their builds keep the atomic word
// loads they can check). Define SHMC_NO_LOAD_BY_16 to keep them anywhere.
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(SHMC_NO_LOAD_BY_16)
#if defined(__has_feature)
#if !__has_feature(thread_sanitizer) && !__has_feature(address_sanitizer)
#define SHMC_LOAD_BY_16 1
#endif
#else
#define SHMC_LOAD_BY_16 1
#endif
#endif
#ifndef SHMC_LOAD_BY_16
#define SHMC_LOAD_BY_16 0
#endif

#if SHMC_LOAD_BY_16
// The same copy for n >= 16, in 16-byte SSE loads (the last one overlapping
// the one before it), each issued by an asm statement. Why this is sound:
// - The racing read is not a C++ access: the compiler sees an opaque
//   statement that reads its memory operand, so it cannot assume the bytes
//   are stable, and no data race exists in the program it compiles.
// - The hardware orders it: x86-64 never lets a load pass an earlier load,
//   so these loads come after the acquire load of the tag before the copy
//   and before the tag load that validates it, as the atomic word loads
//   did. The acquire fence every caller issues after the copy is also a
//   compiler barrier, so nothing moves the asm past the re-check.
// - A torn 16-byte load is a torn copy, rejected by that same re-check.
// Why it is here: half the loads of the word copy, and no general-purpose
// register per word. A map Find of a 100-byte value went from 0.34-0.37x
// to 0.41-0.42x unordered_map's find, the value read alone from 94-107 ns
// to 71-72 (three paired runs, bench/NOTES.md).
// Reads exactly [src, src + n), never the word copy's rounded-up tail.
inline void LoadBy16(void* dst, const std::atomic<uint64_t>* src, size_t n) {
  using Bytes16 = char __attribute__((vector_size(16)));
  char* d = static_cast<char*>(dst);
  const char* s = reinterpret_cast<const char*>(src);
  auto load = [&](size_t at) {
    Bytes16 v;
    asm volatile("movdqu %1, %0"
                 : "=x"(v)
                 : "m"(*reinterpret_cast<const char(*)[16]>(s + at)));
    std::memcpy(d + at, &v, 16);
  };
  size_t at = 0;
  for (; at + 16 <= n; at += 16) load(at);
  if (at < n) load(n - 16);
}
#endif

// What readers copy shared bytes with: 16 bytes a load where the build
// allows it and the copy is long enough, else a word a load.
inline void LoadWords(void* dst, const std::atomic<uint64_t>* src, size_t n) {
#if SHMC_LOAD_BY_16
  if (n >= 16) {
    LoadBy16(dst, src, n);
    return;
  }
#endif
  LoadByWords(dst, src, n);
}

// Writes n bytes at byte `at` of a word array readers load from, a word
// at a time (the range need not be word-aligned): a writer's in-place
// change of part of a value.
inline void PatchWords(std::atomic<uint64_t>* words, size_t at,
                       const void* src, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  for (const size_t end = at + n; at < end;) {
    const size_t w = at / 8, b = at % 8;
    const size_t take = std::min<size_t>(8 - b, end - at);
    uint64_t v = words[w].load(std::memory_order_relaxed);
    std::memcpy(reinterpret_cast<unsigned char*>(&v) + b, s, take);
    words[w].store(v, std::memory_order_relaxed);
    s += take;
    at += take;
  }
}

inline void StoreWords(std::atomic<uint64_t>* dst, const void* src, size_t n) {
  const char* s = static_cast<const char*>(src);
  size_t i = 0;
  for (; n >= 8; n -= 8, s += 8, ++i) {
    uint64_t w;
    std::memcpy(&w, s, 8);
    dst[i].store(w, std::memory_order_relaxed);
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, s, n);
    dst[i].store(w, std::memory_order_relaxed);
  }
}

}  // namespace detail
}  // namespace shmc
