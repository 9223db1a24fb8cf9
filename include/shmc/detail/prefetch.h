// A software prefetch the optimizer keeps (used by batched lookups).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace shmc {
namespace detail {

// Prefetches the cache line holding `p` into all cache levels. GCC 12 was
// seen deleting __builtin_prefetch in FindMany's look-ahead once inlined
// (objdump showed the hash computed and no prefetch issued), so on x86 the
// instruction is emitted directly, where the optimizer cannot remove it.
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// Requests the line holding `p` for writing (exclusive), so that stores to
// it later do not wait for other cores' copies to be invalidated. CPUs
// without the instruction execute it as a no-op.
inline void PrefetchLineForWrite(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

// A batched lookup's loop, stages kDepth keys apart: step(j, full) for j
// in [0, n + 2 * kDepth), running stage 1 for key j, stage 2 for key
// j - kDepth and stage 3 for key j - 2 * kDepth. `full` is
// std::true_type where all three keys exist (the steady state, which then
// checks nothing), std::false_type while the pipeline fills and drains.
template <size_t kDepth, class Step>
__attribute__((always_inline)) inline void RunPipeline3(size_t n,
                                                        const Step& step) {
  size_t j = 0;
  for (; j < 2 * kDepth; ++j) step(j, std::false_type());
  for (; j < n; ++j) step(j, std::true_type());
  for (; j < n + 2 * kDepth; ++j) step(j, std::false_type());
}

// How far past its tail a ring's writer claims lines with
// PrefetchLineForWrite: 2 KiB (measured against 512 B and 8 KiB; the git
// history of bench/RESULTS.md), or a quarter of a smaller ring.
inline uint64_t WriteAheadBytes(uint64_t ring_bytes) {
  return ring_bytes / 4 < 2048 ? ring_bytes / 4 : 2048;
}

// A distance a ring's writer was asked for (SetWriteAhead), within the
// ring: more than half is cut to half; 0 means no claims at all.
inline uint64_t WriteAheadWithin(uint64_t bytes, uint64_t ring_bytes) {
  return bytes < ring_bytes / 2 ? bytes : ring_bytes / 2;
}

}  // namespace detail
}  // namespace shmc
