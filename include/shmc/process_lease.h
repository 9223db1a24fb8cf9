// shmc::ProcessLease (shmc addition): which live process holds a role (the
// master of a server, the one writer of some shared state), kept in
// shared memory as two words inside the user's own struct. It is the rule
// every shmc container's writer lease follows, for roles the containers
// do not know about:
//
//   - free when the pid word is 0, or when its holder is gone: the pid no
//     longer exists, or it exists with another start time (a recycled pid
//     is not the holder);
//   - taken with one compare-and-swap, so two processes starting at once
//     cannot both hold it;
//   - all-zero bytes are a free lease (a fresh segment needs no setup).
//
// A holder that is killed leaves the lease to the next Acquire; nothing is
// recovered here: what the role protects is the caller's to repair.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "shmc/detail/writer_lease.h"

namespace shmc {

class ProcessLease {
 public:
  // What Acquire found.
  enum class Result {
    kAcquired,   // it was free
    kTakenOver,  // its holder is gone: what it guarded may need repair
    kReentered,  // this process held it already
    kBusy,       // another live process holds it (see *holder)
  };

  // Takes the lease unless another live process holds it; *holder (if
  // given) is the pid found in it.
  Result Acquire(uint64_t* holder = nullptr) {
    uint64_t found = 0;
    detail::LeaseResult r = detail::AcquireLease(Words(), false, &found);
    if (holder != nullptr) *holder = found;
    switch (r) {
      case detail::LeaseResult::kAcquired: return Result::kAcquired;
      case detail::LeaseResult::kTakenOver: return Result::kTakenOver;
      case detail::LeaseResult::kReentered: return Result::kReentered;
      default: return Result::kBusy;
    }
  }

  // Gives the lease up if this process holds it.
  void Release() { detail::ReleaseLease(Words()); }

  // The pid of the live process holding the lease; 0 when it is free or
  // its holder is gone.
  uint64_t Holder() const {
    uint64_t pid = pid_.load(std::memory_order_acquire);
    return detail::LeaseHolderAlive(start_, pid) ? pid : 0;
  }

  // How many times it was acquired (reentries not counted).
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

 private:
  detail::LeaseWords Words() {
    return {&pid_, &start_, &epoch_};
  }

  std::atomic<uint64_t> pid_;
  std::atomic<uint64_t> start_;
  std::atomic<uint64_t> epoch_;
};

static_assert(std::is_standard_layout<ProcessLease>::value &&
                  sizeof(ProcessLease) == 24,
              "ProcessLease lives in shared memory: three 8-byte words");
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "a lease shared between processes needs lock-free words");

}  // namespace shmc
