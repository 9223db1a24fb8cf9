// ShmDoubleBuf<Alloc>: a blob (a config, a small table) published whole by
// one writer and read in place by any number of processes (shmc addition,
// docs/layout/double_buf.md).
//
// Usage:
//   shmc::ShmDoubleBuf<shmc::POSIX> w;
//   w.InitForWrite("/config", 64 << 10);    // blobs up to 64 KiB
//   w.Publish(serialized);                  // or BeginWrite(len) + Commit()
//   // any reader process:
//   shmc::ShmDoubleBuf<shmc::POSIX> r;
//   r.InitForRead("/config");
//   auto g = r.ReadInPlace();               // pinned until g goes
//   if (g.ok()) use(g.data(), g.size(), g.version());
//   // or r.Read(&copy) for a copy
//
// Two halves of max_bytes each. The writer fills the spare half, then
// flips one word (`state` = version << 1 | current half). A reader pins the
// half it reads in its own slot and re-checks the state word, so a pinned
// half is never rewritten while pinned (the protocol: detail/double_pins.h).
// Readers therefore never see a mix of two versions, and never wait.
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

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "shmc/common_utils.h"
#include "shmc/detail/double_pins.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc {

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
        reader_slots > detail::kMaxPinSlots) {
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
      seg_.FailOn(&error_, ErrorCode::kNotInitialized, who,
                  "not initialized for writing");
      return nullptr;
    }
    if (len > half_) {
      seg_.FailOn(&error_, ErrorCode::kInvalidArgument, who,
                  "%zu bytes exceed max_bytes %llu", len,
                  static_cast<unsigned long long>(half_));
      return nullptr;
    }
    uint32_t spare = pins_.spare();
    std::string why;
    if (!pins_.WaitUnpinned(spare, wait_ms_, &why)) {
      seg_.FailOn(&error_, ErrorCode::kTimeout, who, "%s", why.c_str());
      return nullptr;
    }
    pending_len_ = len;
    pending_ = true;
    return Half(spare);
  }

  // Publishes what BeginWrite's buffer holds (len may be lowered).
  bool Commit(size_t len) {
    if (!writer_ || !pending_ || len > pending_len_) return false;
    hdr_->len[pins_.spare()].store(len, std::memory_order_relaxed);
    pins_.Flip();  // publishes the length with the bytes
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
    // False when nothing was pinned (no version published yet, or error).
    bool ok() const { return pin_.held(); }
    const void* data() const { return data_; }
    size_t size() const { return size_; }
    uint64_t version() const { return version_; }
    void Release() { pin_.Release(); }

   private:
    friend class ShmDoubleBuf;
    detail::PinHold pin_;
    const void* data_ = nullptr;
    size_t size_ = 0;
    uint64_t version_ = 0;
  };

  // Guards of one reader object nest: while one is alive, another (and
  // every read that pins for itself) gets the same version;
  // a guard must not outlive the ShmDoubleBuf it came from.
  ReadGuard ReadInPlace() const {
    ReadGuard g;
    if (mine_ == nullptr) return g;
    uint64_t s = pins_.Pin(mine_, depth_);
    if (s == 0) return g;  // nothing published yet
    uint32_t h = detail::StateHalf(s);
    uint64_t len = hdr_->len[h].load(std::memory_order_relaxed);
    g.pin_ = detail::PinHold(mine_, &depth_);
    g.data_ = Half(h);
    g.size_ = static_cast<size_t>(len <= half_ ? len : half_);
    g.version_ = detail::StateVersion(s);
    return g;
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
    return detail::StateVersion(pins_.state());
  }
  size_t max_bytes() const { return half_; }
  // Reader slots held, and pins currently set (statistics).
  size_t readers() const { return pins_.Count(false); }
  size_t pins() const { return pins_.Count(true); }
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
    pins_ = detail::DoublePins(
        hdr_,
        reinterpret_cast<detail::DoubleBufSlot*>(seg_.base() + kSlotsOffset),
        slots);
    halves_ = seg_.base() + kSlotsOffset +
              slots * sizeof(detail::DoubleBufSlot);
  }

  char* Half(uint32_t h) const { return halves_ + h * half_; }

  bool CheckGeometry(const char* who) {
    uint64_t half = seg_.param(kHalfParam), slots = seg_.param(kSlotsParam);
    bool plausible = half != 0 && half <= kMaxBytes &&
                     half % detail::kCacheLine == 0 && slots != 0 &&
                     slots <= detail::kMaxPinSlots;
    if (!seg_.AcceptGeometry(plausible, Spec(half, slots).total_size,
                             "geometry", who, &error_)) {
      return false;
    }
    Bind(half, slots);
    return true;
  }

  bool ClaimSlot(const char* who) {
    mine_ = pins_.Claim();
    if (mine_ != nullptr) return true;
    seg_.FailOn(&error_, ErrorCode::kNoSlot, who,
                "all %llu reader slots are held by live "
                "processes",
                static_cast<unsigned long long>(slots_));
    seg_.Reset();
    hdr_ = nullptr;
    pins_ = detail::DoublePins();
    return false;
  }

  void ReleaseSlot() {
    if (mine_ != nullptr) {
      detail::DoublePins::Release(mine_);
      mine_ = nullptr;
    }
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::DoubleBufHeader* hdr_ = nullptr;
  detail::DoublePins pins_;
  detail::DoubleBufSlot* mine_ = nullptr;
  mutable int depth_ = 0;  // this object's live guards (PinHold)
  char* halves_ = nullptr;
  uint64_t half_ = 0, slots_ = 0;
  uint64_t wait_ms_ = 1000;
  bool writer_ = false;
  bool pending_ = false;
  size_t pending_len_ = 0;
};

}  // namespace shmc
