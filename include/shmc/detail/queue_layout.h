// ShmQueue's segment layout and record format (docs/layout/queue.md): the
// header lines after the SegmentHeader, and the 8-byte record header that
// publishes a record in band. The queue itself is shmc/shm_queue.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "shmc/detail/segment.h"

namespace shmc {
namespace detail {

struct QueueHeader {
  // producer's line
  std::atomic<uint64_t> tail;
  std::atomic<uint64_t> pushed;
  std::atomic<uint64_t> full_spins;  // pushes refused because full
  std::atomic<uint64_t> high_water;  // most bytes in use (see high_water())
  uint8_t pad0[32];
  // consumer's line
  std::atomic<uint64_t> head;
  std::atomic<uint64_t> popped;
  uint8_t pad1[48];
  uint8_t reserved[128];
};
static_assert(sizeof(QueueHeader) == 256, "queue header");
static_assert(offsetof(QueueHeader, head) == 64,
              "head and tail on separate cache lines: the producer's and "
              "consumer's stores must not bounce one line between cores");

constexpr uint32_t kQueueData = 1;
constexpr uint32_t kQueuePad = 2;

inline uint64_t QueueRecordSize(uint64_t len) { return 8 + ((len + 7) & ~7ULL); }

// The header word of a record at `at` (8-byte aligned), stored and loaded
// whole: {uint32 len, uint32 kind} in memory order, zero when nothing is
// published there.
inline void StoreQueueHeader(char* at, uint64_t len, uint32_t kind) {
  uint32_t h[2] = {static_cast<uint32_t>(len), kind};
  uint64_t word = 0;
  std::memcpy(&word, h, 8);
  // SYNC POINT (release): publishes the record (or pad) and everything
  // written before it, the zeroed header after it included; pairs with the
  // consumer's acquire load in LoadQueueHeader.
  StoreWord(at, word, true);
}
inline uint64_t LoadQueueHeader(const char* at, uint32_t* len,
                                uint32_t* kind) {
  uint64_t word = LoadWordAcquire(at);
  uint32_t h[2];
  std::memcpy(h, &word, 8);
  *len = h[0];
  *kind = h[1];
  return word;
}

// The record at position `head` of a ring of `cap` bytes (the consumer's
// head, a walk of Peek or of the producer's catch-up): 1 with its position
// (after any pad) in *at and its length in *len; 0 when none is published
// there; -1 when the header is impossible (*at: where).
inline int QueueRecordAt(const char* ring, uint64_t cap, uint64_t head,
                         uint64_t* at, uint32_t* len) {
  uint64_t off = head & (cap - 1);
  uint32_t kind = 0;
  *at = head;
  // SYNC POINT (acquire): the header word; nonzero means the record (or
  // pad) and what was written before it are complete (StoreQueueHeader).
  // Ring bytes are untrusted: every length is checked against the ring.
  if (LoadQueueHeader(ring + off, len, &kind) == 0) return 0;
  if (kind == kQueuePad && *len == cap - off - 8) {
    head += cap - off;  // the pad was stored after the record at 0
    off = 0;
    LoadQueueHeader(ring, len, &kind);
  }
  *at = head;
  if (kind != kQueueData || QueueRecordSize(*len) > cap - off) return -1;
  return 1;
}

}  // namespace detail
}  // namespace shmc
