// ShmDoubleBuf<Alloc>: a blob (a config, a small table) published whole by
// one writer and read in place by any number of processes (shmc addition,
// docs/layout/double_buf.md).
//
// Two halves of max_bytes each. The writer fills the spare half, then
// flips one word (`state` = version << 1 | current half) with a seq_cst
// store. A reader pins the half it reads in its own slot and re-checks the
// state word: a pin that raced with a flip is dropped and retried, so a
// pinned half is never rewritten while pinned. Readers therefore never see
// a mix of two versions, and never wait.
//
//   writer: store state (flip)  ...  later: scan pins of the spare half
//   reader: store pin; load state; equal to what it pinned? -> safe
// Both sides use seq_cst: either the writer's scan sees the pin, or the
// reader's re-load sees the newer state and retries (docs/memory-ordering.md).
//
// The writer waits for pins on the spare half for at most
// `publish_wait_ms` (default 1000): a reader that died while pinning is
// detected (pid gone or recycled) and its pin cleared; a live reader still
// pinning past the bound makes BeginWrite fail with kTimeout.
//
// Readers map the segment read-write (they store their pin) and each reader
// object holds one of `reader_slots` slots (kNoSlot when all are held by
// live processes). After fork(), a child must InitForRead its own object.
#pragma once

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "shmc/common_utils.h"
#include "shmc/detail/process.h"
#include "shmc/detail/process_slot.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc {

namespace detail {

struct DoubleBufHeader {
  std::atomic<uint64_t> state;   // version << 1 | current half
  std::atomic<uint64_t> len[2];  // bytes in each half
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

}  // namespace detail

template <class Alloc = SVIPC>
class ShmDoubleBuf {
 public:
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr size_t kDefaultReaderSlots = 256;
  static constexpr uint64_t kMaxBytes = 1ULL << 40;

  ShmDoubleBuf() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmDoubleBuf);
  ~ShmDoubleBuf() { ReleaseSlot(); }

  // Writer: creates or attaches the buffer (halves of max_bytes each) and
  // takes the writer lease.
  // Errors: create errors; kWriterBusy; kInvalidArgument for sizes out of
  // range.
  bool InitForWrite(const std::string& shm_key, size_t max_bytes,
                    size_t reader_slots = kDefaultReaderSlots) {
    error_.Clear();
    const char* who = "ShmDoubleBuf::InitForWrite";
    if (max_bytes == 0 || max_bytes > kMaxBytes || reader_slots == 0 ||
        reader_slots > 65536) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "max_bytes must be 1..2^40 and reader_slots 1..65536");
    }
    uint64_t half = detail::RoundUp(max_bytes, detail::kCacheLine);
    int flags = DefaultCreateFlags();
    if (!seg_.OpenForWrite(shm_key, Spec(half, reader_slots), flags, nullptr,
                           who, &error_) ||
        !seg_.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    Bind(half, reader_slots);
    writer_ = true;
    return true;
  }

  // Reader: attaches and claims a pin slot.
  // Errors: attach errors; kNoSlot when every slot is held by a live
  // process.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmDoubleBuf::InitForRead";
    if (!seg_.OpenForRead(shm_key, Spec(0, 0), true, who, &error_)) {
      return false;
    }
    return CheckGeometry(who) && ClaimSlot(who);
  }

  // Inspection (the `shmc` tool): maps read-only and claims no slot;
  // version(), max_bytes(), reader_slots(), readers() and pins() work,
  // reads do not.
  // Errors: attach errors.
  bool InitForInspect(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmDoubleBuf::InitForInspect";
    if (!seg_.OpenForRead(shm_key, Spec(0, 0), false, who, &error_)) {
      return false;
    }
    return CheckGeometry(who);
  }

  // --- writer ---------------------------------------------------------
  // The spare half to write `len` bytes into, then Commit(). Waits (bounded)
  // for readers still pinning it; nullptr on error (last_error()).
  void* BeginWrite(size_t len) {
    const char* who = "ShmDoubleBuf::BeginWrite";
    if (!writer_) {
      Fail(ErrorCode::kNotInitialized, who, "not initialized for writing");
      return nullptr;
    }
    if (len > half_) {
      Fail(ErrorCode::kInvalidArgument, who, "%zu bytes exceed max_bytes %llu",
           len, static_cast<unsigned long long>(half_));
      return nullptr;
    }
    uint64_t s = hdr_->state.load(std::memory_order_seq_cst);
    uint32_t spare = static_cast<uint32_t>(s & 1) ^ 1;
    if (!WaitUnpinned(spare, who)) return nullptr;
    pending_len_ = len;
    pending_ = true;
    return Half(spare);
  }

  // Publishes what BeginWrite's buffer holds (len may be lowered).
  bool Commit(size_t len) {
    if (!writer_ || !pending_ || len > pending_len_) return false;
    uint64_t s = hdr_->state.load(std::memory_order_relaxed);
    uint32_t spare = static_cast<uint32_t>(s & 1) ^ 1;
    hdr_->len[spare].store(len, std::memory_order_relaxed);
    // SYNC POINT (seq_cst store): publishes the half's bytes and length
    // (release), and orders the flip before the next BeginWrite's pin scan.
    hdr_->state.store((((s >> 1) + 1) << 1) | spare,
                      std::memory_order_seq_cst);
    pending_ = false;
    return true;
  }
  bool Commit() { return Commit(pending_len_); }

  bool Publish(const void* data, size_t len) {
    void* dst = BeginWrite(len);
    if (dst == nullptr) return false;
    if (len > 0) std::memcpy(dst, data, len);
    return Commit(len);
  }
  bool Publish(const std::string& data) {
    return Publish(data.data(), data.size());
  }

  // --- reader ---------------------------------------------------------
  // Pins the current version in place until destroyed or Release()d.
  class ReadGuard {
   public:
    ReadGuard() = default;
    ReadGuard(ReadGuard&& o) noexcept { *this = std::move(o); }
    ReadGuard& operator=(ReadGuard&& o) noexcept {
      if (this != &o) {
        Release();
        slot_ = o.slot_;
        data_ = o.data_;
        size_ = o.size_;
        version_ = o.version_;
        o.slot_ = nullptr;
      }
      return *this;
    }
    ReadGuard(const ReadGuard&) = delete;
    ReadGuard& operator=(const ReadGuard&) = delete;
    ~ReadGuard() { Release(); }

    // False when nothing was pinned (no version published yet, or error).
    bool ok() const { return slot_ != nullptr; }
    const void* data() const { return data_; }
    size_t size() const { return size_; }
    uint64_t version() const { return version_; }
    void Release() {
      if (slot_ != nullptr) {
        // SYNC POINT (release): the reads of the half are done before the
        // writer can see the pin gone.
        slot_->pin.store(0, std::memory_order_release);
        slot_ = nullptr;
      }
    }

   private:
    friend class ShmDoubleBuf;
    detail::DoubleBufSlot* slot_ = nullptr;
    const void* data_ = nullptr;
    size_t size_ = 0;
    uint64_t version_ = 0;
  };

  // One guard per reader object at a time (a second pins over the first);
  // a guard must not outlive the ShmDoubleBuf it came from.
  ReadGuard ReadInPlace() const {
    ReadGuard g;
    if (mine_ == nullptr) return g;
    for (;;) {
      uint64_t s = hdr_->state.load(std::memory_order_seq_cst);
      if ((s >> 1) == 0) return g;  // nothing published yet
      mine_->pin.store(s + 1, std::memory_order_seq_cst);
      if (hdr_->state.load(std::memory_order_seq_cst) != s) {
        mine_->pin.store(0, std::memory_order_relaxed);
        continue;  // a flip raced with the pin: pin the newer version
      }
      uint32_t h = static_cast<uint32_t>(s & 1);
      uint64_t len = hdr_->len[h].load(std::memory_order_relaxed);
      g.slot_ = mine_;
      g.data_ = Half(h);
      g.size_ = static_cast<size_t>(len <= half_ ? len : half_);
      g.version_ = s >> 1;
      return g;
    }
  }

  // Copies the current version; false if none was published yet.
  bool Read(std::string* out, uint64_t* version = nullptr) const {
    ReadGuard g = ReadInPlace();
    if (!g.ok()) return false;
    out->assign(static_cast<const char*>(g.data()), g.size());
    if (version != nullptr) *version = g.version();
    return true;
  }

  // Version of the current data (0: nothing published).
  uint64_t version() const {
    return hdr_ ? hdr_->state.load(std::memory_order_acquire) >> 1 : 0;
  }
  size_t max_bytes() const { return half_; }
  // Reader slots held, and pins currently set (statistics).
  size_t readers() const { return CountSlots(false); }
  size_t pins() const { return CountSlots(true); }
  size_t reader_slots() const { return slots_; }
  void set_publish_wait_ms(uint64_t ms) { wait_ms_ = ms; }
  const Error& last_error() const { return error_; }

 private:
  static constexpr uint64_t kSlotsOffset =
      sizeof(detail::SegmentHeader) + sizeof(detail::DoubleBufHeader);

  static constexpr const char* kHalfParam = "half_bytes";
  static constexpr const char* kSlotsParam = "reader_slots";

  static detail::SegmentSpec Spec(uint64_t half, uint64_t slots) {
    return detail::SegmentSpec::Geometry(
        detail::ContainerKind::kDoubleBuf, kLayoutVersion, kSlotsOffset,
        kSlotsOffset + slots * sizeof(detail::DoubleBufSlot) + 2 * half,
        {{kHalfParam, half}, {kSlotsParam, slots}});
  }

  void Bind(uint64_t half, uint64_t slots) {
    half_ = half;
    slots_ = slots;
    hdr_ = reinterpret_cast<detail::DoubleBufHeader*>(
        seg_.base() + sizeof(detail::SegmentHeader));
    slot_ = reinterpret_cast<detail::DoubleBufSlot*>(seg_.base() +
                                                     kSlotsOffset);
    halves_ = seg_.base() + kSlotsOffset +
              slots * sizeof(detail::DoubleBufSlot);
  }

  char* Half(uint32_t h) const { return halves_ + h * half_; }

  bool CheckGeometry(const char* who) {
    uint64_t half = seg_.param(kHalfParam), slots = seg_.param(kSlotsParam);
    bool plausible = half != 0 && half <= kMaxBytes &&
                     half % detail::kCacheLine == 0 && slots != 0 &&
                     slots <= 65536;
    if (!seg_.AcceptGeometry(plausible, Spec(half, slots).total_size,
                             "geometry", who, &error_)) {
      return false;
    }
    Bind(half, slots);
    return true;
  }

  __attribute__((format(printf, 4, 5))) bool Fail(ErrorCode code,
                                                  const char* who,
                                                  const char* fmt, ...) {
    char detail_msg[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(detail_msg, sizeof(detail_msg), fmt, args);
    va_end(args);
    return detail::Segment<Alloc>::Fail(&error_, code, 0, seg_.key(), who,
                                        "%s", detail_msg);
  }

  bool WaitUnpinned(uint32_t spare, const char* who) {
    uint64_t deadline = detail::MonotonicNs() + wait_ms_ * 1000000ULL;
    for (uint64_t i = 0; i < slots_; ++i) {
      detail::DoubleBufSlot* s = &slot_[i];
      for (uint64_t spins = 0;; ++spins) {
        // SYNC POINT (seq_cst): pairs with the reader's pin store and
        // state re-load in ReadInPlace.
        uint64_t pin = s->pin.load(std::memory_order_seq_cst);
        if (pin == 0 || ((pin - 1) & 1) != spare) break;
        uint64_t owner = s->owner_pid.load(std::memory_order_acquire);
        if (detail::SlotOwnerGone(s)) {
          // Died while pinning: nobody will release it.
          s->pin.compare_exchange_strong(pin, 0, std::memory_order_acq_rel);
          continue;
        }
        if (detail::MonotonicNs() >= deadline) {
          return Fail(ErrorCode::kTimeout, who,
                      "reader pid %llu still pins version %llu after %llu "
                      "ms", static_cast<unsigned long long>(owner),
                      static_cast<unsigned long long>((pin - 1) >> 1),
                      static_cast<unsigned long long>(wait_ms_));
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

  bool ClaimSlot(const char* who) {
    mine_ = detail::ClaimProcessSlot(slot_, slots_);
    if (mine_ != nullptr) {
      mine_->pin.store(0, std::memory_order_release);  // a dead owner's pin
      return true;
    }
    Fail(ErrorCode::kNoSlot, who, "all %llu reader slots are held by live "
         "processes", static_cast<unsigned long long>(slots_));
    seg_.Reset();
    hdr_ = nullptr;
    return false;
  }

  size_t CountSlots(bool pinned) const {
    size_t n = 0;
    for (uint64_t i = 0; hdr_ != nullptr && i < slots_; ++i) {
      n += (pinned ? slot_[i].pin : slot_[i].owner_pid)
               .load(std::memory_order_relaxed) != 0;
    }
    return n;
  }

  void ReleaseSlot() {
    if (mine_ != nullptr) {
      mine_->pin.store(0, std::memory_order_release);
      detail::ReleaseProcessSlot(mine_);
      mine_ = nullptr;
    }
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::DoubleBufHeader* hdr_ = nullptr;
  detail::DoubleBufSlot* slot_ = nullptr;
  detail::DoubleBufSlot* mine_ = nullptr;
  char* halves_ = nullptr;
  uint64_t half_ = 0, slots_ = 0;
  uint64_t wait_ms_ = 1000;
  bool writer_ = false;
  bool pending_ = false;
  size_t pending_len_ = 0;
};

}  // namespace shmc
