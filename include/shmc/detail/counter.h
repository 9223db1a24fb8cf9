// Statistics counters in a segment that exactly one process writes (a
// queue's producer or consumer, a sync buffer's writer) and any process
// reads.
#pragma once

#include <atomic>
#include <cstdint>

namespace shmc {
namespace detail {

// Adds `by` to a counter only the calling process writes. A load and a
// store, both relaxed, instead of fetch_add: on x86 fetch_add is a locked
// instruction that drains the store buffer and waits for the line, which
// on a queue's hot path cost more than the record itself (queue_bench:
// ShmQueue at 0.26x the fixed-slot ring with fetch_add here). Readers see
// the old or the new value, never a torn one.
inline void SoleWriterAdd(std::atomic<uint64_t>* c, uint64_t by) {
  c->store(c->load(std::memory_order_relaxed) + by,
           std::memory_order_relaxed);
}

}  // namespace detail
}  // namespace shmc
