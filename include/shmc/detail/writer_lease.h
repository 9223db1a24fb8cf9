// The writer lease of a segment (SegmentHeader::lease_*): at most one live
// writer process at a time, so that a crashed writer's half-done operation is
// recovered by exactly one successor.
//
//   lease_pid    0 = free, else the holder's pid
//   lease_start  the holder's start time (clock ticks since boot); 0 while
//                the holder is still installing it
//   lease_epoch  bumped on every acquisition
//
// A holder is considered alive when its pid exists and its start time is the
// recorded one (a recycled pid is not the holder). The lease is checked at
// InitForWrite only: writes through a handle inherited by fork() keep working
// as in the reference, and a process that exits cleanly releases it.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>

#include "shmc/detail/process.h"
#include "shmc/detail/segment_header.h"

namespace shmc {
namespace detail {

enum class LeaseResult {
  kAcquired,   // was free
  kTakenOver,  // the previous holder is gone: its work may need recovery
  kReentered,  // this process already held it
  kShared,     // held by another live process, allowed by kSharedWriters
  kBusy,       // held by another live process
};

// The two words of a lease, wherever they live: the holder's pid and its
// start time (ProcessLease keeps them in a user's shared struct, the
// segment header in lease_pid/lease_start).
struct LeaseWords {
  std::atomic<uint64_t>* pid;
  std::atomic<uint64_t>* start;
  std::atomic<uint64_t>* epoch;  // bumped per acquisition; may be null
};

inline bool LeaseHolderAlive(const std::atomic<uint64_t>& start_word,
                             uint64_t pid) {
  if (pid == 0 || !ProcessAlive(pid)) return false;
  uint64_t start = start_word.load(std::memory_order_acquire);
  // 0: the holder is between its CAS and storing its start time.
  return start == 0 || start == ProcessStartTime(pid);
}

inline bool LeaseHolderAlive(const SegmentHeader* h, uint64_t pid) {
  return LeaseHolderAlive(h->lease_start, pid);
}

inline LeaseResult AcquireLease(LeaseWords w, bool shared, uint64_t* holder) {
  const uint64_t me = static_cast<uint64_t>(getpid());
  const uint64_t my_start = ProcessStartTime(me);
  for (;;) {
    uint64_t cur = w.pid->load(std::memory_order_acquire);
    *holder = cur;
    if (cur == me) {
      // Same pid: ours, unless a previous process with our recycled pid
      // left it (then its start time differs).
      if (w.start->load(std::memory_order_acquire) == my_start) {
        return LeaseResult::kReentered;
      }
    } else if (LeaseHolderAlive(*w.start, cur)) {
      return shared ? LeaseResult::kShared : LeaseResult::kBusy;
    }
    if (w.pid->compare_exchange_strong(cur, me, std::memory_order_acq_rel)) {
      w.start->store(my_start, std::memory_order_release);
      if (w.epoch != nullptr) w.epoch->fetch_add(1, std::memory_order_acq_rel);
      return cur == 0 ? LeaseResult::kAcquired : LeaseResult::kTakenOver;
    }
  }
}

inline LeaseResult AcquireLease(SegmentHeader* h, bool shared,
                                uint64_t* holder) {
  return AcquireLease({&h->lease_pid, &h->lease_start, &h->lease_epoch},
                      shared, holder);
}

inline void ReleaseLease(LeaseWords w) {
  uint64_t me = static_cast<uint64_t>(getpid());
  if (w.pid->load(std::memory_order_acquire) == me) {
    w.start->store(0, std::memory_order_relaxed);
    w.pid->store(0, std::memory_order_release);
  }
}

inline void ReleaseLease(SegmentHeader* h) {
  ReleaseLease({&h->lease_pid, &h->lease_start, &h->lease_epoch});
}

// Crash points for tests: SHMC_CRASH_POINT(id) calls the hook installed by a
// test (which may SIGKILL the process there). Compiled out unless
// SHMC_TEST_HOOKS is defined, so it costs nothing in production builds.
#ifdef SHMC_TEST_HOOKS
inline void (*&CrashHook())(int) {
  static void (*hook)(int) = nullptr;
  return hook;
}
#define SHMC_CRASH_POINT(id)                                   \
  do {                                                         \
    if (::shmc::detail::CrashHook()) ::shmc::detail::CrashHook()(id); \
  } while (0)
#else
#define SHMC_CRASH_POINT(id) \
  do {                       \
  } while (0)
#endif

}  // namespace detail
}  // namespace shmc
