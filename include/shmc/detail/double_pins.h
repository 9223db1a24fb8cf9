// The publication protocol of a two-half container (ShmDoubleBuf,
// ShmDoubleTable; docs/layout/double_buf.md): one state word says which
// half is current and which version it holds, and each reader process pins
// the state it reads in a slot of its own.
//
//   writer: wait until no slot pins the spare half; fill it; Flip
//   reader: store pin; load state; equal to what it pinned? -> safe
//
// Both sides use seq_cst: either the writer's scan of the pins sees a pin,
// or the reader's re-load of the state sees the newer state and retries
// (docs/memory-ordering.md). A pinned half is therefore never rewritten
// while pinned, and a reader never waits.
#pragma once

#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "shmc/detail/process.h"
#include "shmc/detail/process_slot.h"
#include "shmc/detail/segment_header.h"

namespace shmc {
namespace detail {

struct DoubleBufHeader {
  std::atomic<uint64_t> state;   // version << 1 | current half
  std::atomic<uint64_t> len[2];  // bytes in each half (ShmDoubleBuf)
  uint8_t reserved[40];
};
static_assert(sizeof(DoubleBufHeader) == kCacheLine, "one line");

struct DoubleBufSlot {
  std::atomic<uint64_t> owner_pid;  // 0: free
  std::atomic<uint64_t> owner_start;
  std::atomic<uint64_t> pin;  // 0: none; else the pinned state word + 1
  uint8_t reserved[40];
};
static_assert(sizeof(DoubleBufSlot) == kCacheLine,
              "one slot per line: readers never share a line");

// Reader slots a two-half container accepts.
constexpr uint64_t kMaxPinSlots = 65536;

constexpr uint64_t StateVersion(uint64_t state) { return state >> 1; }
constexpr uint32_t StateHalf(uint64_t state) {
  return static_cast<uint32_t>(state & 1);
}

// A reader's pin, held until released or destroyed (move-only): the guard
// part of ShmDoubleBuf::ReadGuard and ShmDoubleTable::Pinned. A reader
// object has one slot, so its guards nest: `depth` counts those alive,
// and only the last one to go clears the pin.
class PinHold {
 public:
  PinHold() = default;
  PinHold(DoubleBufSlot* slot, int* depth) : slot_(slot), depth_(depth) {
    ++*depth_;
  }
  PinHold(PinHold&& o) noexcept : slot_(o.slot_), depth_(o.depth_) {
    o.slot_ = nullptr;
  }
  PinHold& operator=(PinHold&& o) noexcept {
    if (this != &o) {
      Release();
      slot_ = o.slot_;
      depth_ = o.depth_;
      o.slot_ = nullptr;
    }
    return *this;
  }
  PinHold(const PinHold&) = delete;
  PinHold& operator=(const PinHold&) = delete;
  ~PinHold() { Release(); }

  bool held() const { return slot_ != nullptr; }
  void Release() {
    if (slot_ != nullptr && --*depth_ == 0) {
      // SYNC POINT (release): the reads of the half are done before the
      // writer can see the pin gone.
      slot_->pin.store(0, std::memory_order_release);
    }
    slot_ = nullptr;
  }

 private:
  DoubleBufSlot* slot_ = nullptr;
  int* depth_ = nullptr;
};

// The pin protocol over a header and its slots, as mapped by one process.
class DoublePins {
 public:
  DoublePins() = default;
  DoublePins(DoubleBufHeader* hdr, DoubleBufSlot* slots, uint64_t n)
      : hdr_(hdr), slots_(slots), n_(n) {}

  bool bound() const { return hdr_ != nullptr; }
  uint64_t slot_count() const { return n_; }
  uint64_t state() const {
    return hdr_ != nullptr ? hdr_->state.load(std::memory_order_acquire) : 0;
  }

  // Pins the current state in `mine` and returns it (0: nothing was
  // published yet, nothing pinned). With `depth` guards of this slot
  // alive, the state they pin is returned instead: nested guards share it.
  uint64_t Pin(DoubleBufSlot* mine, int depth) const {
    if (depth > 0) return mine->pin.load(std::memory_order_relaxed) - 1;
    for (;;) {
      uint64_t s = hdr_->state.load(std::memory_order_seq_cst);
      if (StateVersion(s) == 0) return 0;
      mine->pin.store(s + 1, std::memory_order_seq_cst);
      if (hdr_->state.load(std::memory_order_seq_cst) == s) return s;
      // A flip raced with the pin: pin the newer state.
      mine->pin.store(0, std::memory_order_relaxed);
    }
  }
  // Writer: the half a build goes into.
  uint32_t spare() const {
    return StateHalf(hdr_->state.load(std::memory_order_seq_cst)) ^ 1;
  }

  // Writer: waits until no live reader pins `half`, clearing the pins of
  // readers that died pinning. False after `wait_ms` with a reader still
  // pinning it; *why then names the reader.
  bool WaitUnpinned(uint32_t half, uint64_t wait_ms, std::string* why) const {
    uint64_t deadline = MonotonicNs() + wait_ms * 1000000ULL;
    for (uint64_t i = 0; i < n_; ++i) {
      DoubleBufSlot* s = &slots_[i];
      for (uint64_t spins = 0;; ++spins) {
        // SYNC POINT (seq_cst): pairs with the reader's pin store and
        // state re-load in Pin.
        uint64_t pin = s->pin.load(std::memory_order_seq_cst);
        if (pin == 0 || StateHalf(pin - 1) != half) break;
        uint64_t owner = s->owner_pid.load(std::memory_order_acquire);
        if (SlotOwnerGone(s)) {
          // Died while pinning: nobody will release it.
          s->pin.compare_exchange_strong(pin, 0, std::memory_order_acq_rel);
          continue;
        }
        if (MonotonicNs() >= deadline) {
          *why = "reader pid " + std::to_string(owner) +
                 " still pins version " +
                 std::to_string(StateVersion(pin - 1)) + " after " +
                 std::to_string(wait_ms) + " ms";
          return false;
        }
        if (spins < 64) {
          sched_yield();
        } else {
          struct timespec ts = {0, 100000};  // 0.1 ms
          nanosleep(&ts, nullptr);
        }
      }
    }
    return true;
  }

  // Writer: publishes the spare half as the next version; returns it.
  uint64_t Flip() {
    uint64_t s = hdr_->state.load(std::memory_order_relaxed);
    uint64_t next = ((StateVersion(s) + 1) << 1) | (StateHalf(s) ^ 1);
    // SYNC POINT (seq_cst store): publishes the half's bytes (release), and
    // orders the flip before the next build's pin scan.
    hdr_->state.store(next, std::memory_order_seq_cst);
    return StateVersion(next);
  }

  // A reader's slot: claimed (a dead owner's pin cleared), or nullptr when
  // every slot has a live owner.
  DoubleBufSlot* Claim() const {
    DoubleBufSlot* mine = ClaimProcessSlot(slots_, n_);
    if (mine != nullptr) mine->pin.store(0, std::memory_order_release);
    return mine;
  }
  static void Release(DoubleBufSlot* mine) {
    mine->pin.store(0, std::memory_order_release);
    ReleaseProcessSlot(mine);
  }

  // Slots held, or pins set (statistics).
  uint64_t Count(bool pinned) const {
    uint64_t n = 0;
    for (uint64_t i = 0; hdr_ != nullptr && i < n_; ++i) {
      n += (pinned ? slots_[i].pin : slots_[i].owner_pid)
               .load(std::memory_order_relaxed) != 0;
    }
    return n;
  }

 private:
  DoubleBufHeader* hdr_ = nullptr;
  DoubleBufSlot* slots_ = nullptr;
  uint64_t n_ = 0;
};

}  // namespace detail
}  // namespace shmc
