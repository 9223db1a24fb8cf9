// Per-process slots in shared memory (ShmPercentile writers, ShmDoubleBuf
// readers): a slot has atomic<uint64_t> owner_pid (0: free) and
// owner_start (the owner's start time, so that a recycled pid is not taken
// for the owner). A container object claims a free slot, or one whose
// owner is gone, and gives it back when destroyed. A slot of another live
// object, even in this process, is never taken: one slot per object.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "shmc/detail/process.h"

namespace shmc {
namespace detail {

template <class Slot>
bool SlotOwnerGone(const Slot* s) {
  uint64_t owner = s->owner_pid.load(std::memory_order_acquire);
  if (owner == 0 || !ProcessAlive(owner)) return true;
  uint64_t start = s->owner_start.load(std::memory_order_acquire);
  // 0: the owner is between claiming and storing its start time.
  return start != 0 && start != ProcessStartTime(owner);
}

// The first free or orphaned slot of slots[0, n), now owned by this
// process; nullptr when every slot has a live owner.
template <class Slot>
Slot* ClaimProcessSlot(Slot* slots, uint64_t n) {
  const uint64_t me = static_cast<uint64_t>(getpid());
  const uint64_t my_start = ProcessStartTime(me);
  for (uint64_t i = 0; i < n; ++i) {
    Slot* s = &slots[i];
    uint64_t owner = s->owner_pid.load(std::memory_order_acquire);
    if (owner != 0 && (owner == me || !SlotOwnerGone(s))) continue;
    if (!s->owner_pid.compare_exchange_strong(owner, me,
                                              std::memory_order_acq_rel)) {
      continue;  // another process claimed it first
    }
    s->owner_start.store(my_start, std::memory_order_release);
    return s;
  }
  return nullptr;
}

template <class Slot>
void ReleaseProcessSlot(Slot* s) {
  s->owner_start.store(0, std::memory_order_relaxed);
  s->owner_pid.store(0, std::memory_order_release);
}

}  // namespace detail
}  // namespace shmc
