// ShmDoubleTable<Key, Node, Alloc>: a read-mostly hash table (configs,
// routing rules, dictionaries) rebuilt by one updater process and looked up
// in place by every reader process, which never sees a half-built or mixed
// version (shmc addition; docs/double_table.md).
//
//   updater: Table* t = BeginBuild(kCopyCurrent);   // or kEmpty
//            t->FindOrAlloc(...), fill or clear nodes, ...
//            Commit();        // checksum, then one flip publishes it
//   reader:  InitForRead(key) verifies the current version's checksum;
//            auto pin = Pin(); pin.Find(k) ... ; (pin released at scope end)
//
// Two halves, each a whole ShmHashTable image (detail/double_table_layout.h)
// with its own header: the version it was sealed as and a checksum of its
// bytes. The pins and the flip are ShmDoubleBuf's (detail/double_pins.h):
// a reader pins the half it reads, BeginBuild waits (bounded) until no live
// reader pins the spare half before writing it, and a pinned half is never
// rewritten. A reader's lookups through a pin are ShmHashTable::Find on
// that half: the pin costs two seq_cst accesses per Pin(), not per lookup.
//
// Crash safety: nothing is published before Commit's flip, so an updater
// killed anywhere leaves readers on the last committed version; the next
// updater takes over the writer lease and builds again.
//
// Limits: capacity as ShmHashTable's (fixed at creation, about 90% of the
// slots usable); one updater; a build with kCopyCurrent copies the whole
// current half (one pass over it, which also checks its checksum).
#pragma once

#include <time.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "shmc/common_utils.h"
#include "shmc/detail/double_pins.h"
#include "shmc/detail/double_table_layout.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"
#include "shmc/shm_hash_table.h"

namespace shmc {

template <class Key, class Node, class Alloc = SVIPC>
class ShmDoubleTable {
 public:
  using Table = ShmHashTable<Key, Node, Alloc>;
  static constexpr uint32_t kLayoutVersion = detail::kDoubleTableLayoutVersion;
  static constexpr size_t kDefaultReaderSlots = 256;

  // Where a build starts: a copy of the current version (to edit it), or
  // an empty table.
  enum BuildFrom { kCopyCurrent, kEmpty };

  ShmDoubleTable() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmDoubleTable);
  ~ShmDoubleTable() { ReleaseSlot(); }

  // Updater: creates or attaches the segment (two tables sized for
  // `capacity` keys each) and takes the writer lease.
  // Errors: create errors; kWriterBusy; kInvalidArgument for a capacity
  // outside 1..Table::kMaxCapacity or reader_slots outside 1..65536.
  bool InitForWrite(const std::string& shm_key, size_t capacity,
                    size_t reader_slots = kDefaultReaderSlots) {
    error_.Clear();
    const char* who = "ShmDoubleTable::InitForWrite";
    if (capacity < 1 || capacity > Table::kMaxCapacity || reader_slots < 1 ||
        reader_slots > detail::kMaxPinSlots) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "capacity must be 1..%llu and reader_slots 1..%llu",
          static_cast<unsigned long long>(Table::kMaxCapacity),
          static_cast<unsigned long long>(detail::kMaxPinSlots));
    }
    detail::DoubleTableLayout lay(
        TableLayout(detail::TableGeometry::ForCapacity(capacity,
                                                       Table::kSlots)),
        reader_slots);
    int flags = DefaultCreateFlags();
    if (!seg_.OpenForWrite(shm_key, lay.spec(), flags, nullptr, who,
                           &error_) ||
        !seg_.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    Bind(lay, false);
    writer_ = true;
    return true;
  }

  // Reader: attaches, claims a pin slot and verifies the current version's
  // checksum.
  // Errors: attach errors; kCorrupted (the current half fails its
  // checksum, or its header names another version); kNoSlot when every
  // slot is held by a live process.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmDoubleTable::InitForRead";
    detail::TableGeometry shape;  // the node layout to match; no geometry
    shape.slots = Table::kSlots;
    detail::DoubleTableLayout want(TableLayout(shape), 1);
    if (!seg_.OpenForRead(shm_key, want.spec(), true, who, &error_)) {
      return false;
    }
    detail::DoubleTableLayout lay;
    std::string why;
    bool plausible = detail::DoubleTableLayout::FromHeader(*seg_.header(),
                                                           &lay, &why) &&
                     lay.table().geometry().slots == Table::kSlots;
    if (!seg_.AcceptGeometry(plausible, lay.total_size(), "geometry", who,
                             &error_)) {
      return false;
    }
    Bind(lay, true);
    mine_ = pins_.Claim();
    if (mine_ == nullptr) {
      seg_.FailOn(&error_, ErrorCode::kNoSlot, who,
                  "all %llu reader slots are held by live "
                  "processes",
                  static_cast<unsigned long long>(lay.reader_slots()));
      Unbind();
      return false;
    }
    if (!Verify(who)) {
      ReleaseSlot();
      Unbind();
      return false;
    }
    return true;
  }

  // --- updater --------------------------------------------------------
  // The spare half as a writable table, empty or a copy of the current
  // version. Waits (bounded, publish_wait_ms) for readers still pinning
  // it. nullptr on error: kNotInitialized; kTimeout (a live reader still
  // pins it); kCorrupted (kCopyCurrent: the current half fails its
  // checksum; build from kEmpty instead).
  Table* BeginBuild(BuildFrom from = kCopyCurrent) {
    const char* who = "ShmDoubleTable::BeginBuild";
    error_.Clear();
    if (!writer_) {
      seg_.FailOn(&error_, ErrorCode::kNotInitialized, who,
                  "not initialized for writing");
      return nullptr;
    }
    uint32_t spare = pins_.spare();
    std::string why;
    if (!pins_.WaitUnpinned(spare, wait_ms_, &why)) {
      seg_.FailOn(&error_, ErrorCode::kTimeout, who, "%s", why.c_str());
      return nullptr;
    }
    detail::DoubleTableHalf* dst = HalfHeader(spare);
    dst->sealed.store(0, std::memory_order_relaxed);
    uint64_t s = pins_.state();
    char* to = HalfData(spare);
    if (from == kCopyCurrent && detail::StateVersion(s) != 0) {
      uint32_t cur = detail::StateHalf(s);
      uint64_t sum =
          detail::CopyWithChecksum(to, HalfData(cur), lay_.summed_bytes());
      if (sum != HalfHeader(cur)->checksum) {
        seg_.FailOn(&error_, ErrorCode::kCorrupted, who,
                    "version %llu (half %u) fails its "
                    "checksum: cannot copy it; build from kEmpty",
                    static_cast<unsigned long long>(detail::StateVersion(s)),
                    cur);
        return nullptr;
      }
    } else {
      std::memset(to, 0, lay_.summed_bytes());
    }
    building_ = spare;
    return &tables_[spare];
  }

  // Seals the build (its checksum) and publishes it with one flip; returns
  // the new version, or 0 without a build in progress.
  uint64_t Commit() {
    if (!writer_ || building_ > 1) return 0;
    uint32_t h = building_;
    detail::DoubleTableHalf* hh = HalfHeader(h);
    hh->checksum = detail::HalfChecksum(HalfData(h), lay_.summed_bytes());
    hh->sealed_ns = RealtimeNs();
    hh->sealed.store(detail::StateVersion(pins_.state()) + 1,
                     std::memory_order_relaxed);
    building_ = kNoBuild;
    return pins_.Flip();  // publishes the half and its header
  }
  // Drops the build; nothing was published.
  void Abort() { building_ = kNoBuild; }

  // --- reader ---------------------------------------------------------
  // The current version, pinned until the guard is released or destroyed.
  // Guards of one reader object nest: while one is alive, another (and
  // every read that pins for itself) gets the same version;
  // a guard must not outlive its ShmDoubleTable.
  class Pinned {
   public:
    // False when nothing is pinned (no version published yet).
    bool ok() const { return pin_.held(); }
    uint64_t version() const { return version_; }
    const Table& table() const { return *table_; }
    const volatile Node* Find(const Key& key) const {
      return table_->Find(key);
    }
    size_t FindMany(const Key* keys, size_t n,
                    const volatile Node** out) const {
      return table_->FindMany(keys, n, out);
    }
    void Release() { pin_.Release(); }

   private:
    friend class ShmDoubleTable;
    detail::PinHold pin_;
    const Table* table_ = nullptr;
    uint64_t version_ = 0;
  };

  Pinned Pin() const {
    Pinned p;
    if (mine_ == nullptr) return p;
    uint64_t s = pins_.Pin(mine_, depth_);
    if (s == 0) return p;
    p.pin_ = detail::PinHold(mine_, &depth_);
    p.table_ = &tables_[detail::StateHalf(s)];
    p.version_ = detail::StateVersion(s);
    return p;
  }

  // Copies the node of `key` out of the current version (one pin per
  // call); false when absent or nothing was published.
  bool Get(const Key& key, Node* out) const {
    Pinned p = Pin();
    const volatile Node* n = p.ok() ? p.Find(key) : nullptr;
    if (n == nullptr) return false;
    for (size_t i = 0; i < sizeof(Node); ++i) {
      reinterpret_cast<unsigned char*>(out)[i] =
          reinterpret_cast<const volatile unsigned char*>(n)[i];
    }
    return true;
  }

  // Re-verifies the current version's checksum (a full pass over it).
  // Errors: kCorrupted; kNotInitialized.
  bool Verify() { return Verify("ShmDoubleTable::Verify"); }

  // Version of the current data (0: nothing published yet).
  uint64_t version() const { return detail::StateVersion(pins_.state()); }
  size_t capacity() const {
    return static_cast<size_t>(detail::ExpectedCapacity(
        lay_.table().geometry().total_slots()));
  }
  size_t reader_slots() const { return lay_.reader_slots(); }
  // Bytes of each half (the segment holds two, and a line per reader).
  size_t half_bytes() const { return lay_.half_bytes(); }
  size_t readers() const { return pins_.Count(false); }
  size_t pins() const { return pins_.Count(true); }
  void set_publish_wait_ms(uint64_t ms) { wait_ms_ = ms; }
  const Error& last_error() const { return error_; }

 private:
  static constexpr uint32_t kNoBuild = 2;

  static detail::FixedLayout TableLayout(const detail::TableGeometry& g) {
    return detail::FixedLayout::Table(sizeof(Node), alignof(Node),
                                      ShmHash<Key>::kId, g);
  }

  static uint64_t RealtimeNs() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL +
           static_cast<uint64_t>(ts.tv_nsec);
  }

  void Bind(const detail::DoubleTableLayout& lay, bool read_only) {
    lay_ = lay;
    char* base = seg_.base();
    pins_ = detail::DoublePins(
        reinterpret_cast<detail::DoubleBufHeader*>(
            base + detail::DoubleTableLayout::header_offset()),
        reinterpret_cast<detail::DoubleBufSlot*>(
            base + detail::DoubleTableLayout::slots_offset()),
        lay.reader_slots());
    for (uint32_t h = 0; h < 2; ++h) {
      tables_[h].Bind(base + lay.half_offset(h), lay.table().geometry(),
                      read_only);
    }
  }
  void Unbind() {
    seg_.Reset();
    pins_ = detail::DoublePins();
    lay_ = detail::DoubleTableLayout();
  }

  char* Half(uint32_t h) const { return seg_.base() + lay_.half_offset(h); }
  detail::DoubleTableHalf* HalfHeader(uint32_t h) const {
    return reinterpret_cast<detail::DoubleTableHalf*>(Half(h));
  }
  char* HalfData(uint32_t h) const {
    return Half(h) + sizeof(detail::DoubleTableHalf);
  }

  // The pinned current half's header and checksum against its bytes.
  bool Verify(const char* who) {
    if (mine_ == nullptr) {
      return seg_.FailOn(&error_, ErrorCode::kNotInitialized, who,
                         "not attached as reader");
    }
    Pinned p = Pin();
    if (!p.ok()) return true;  // nothing published yet
    uint32_t h = &p.table() == &tables_[1] ? 1 : 0;
    const detail::DoubleTableHalf* hh = HalfHeader(h);
    uint64_t sealed = hh->sealed.load(std::memory_order_relaxed);
    if (sealed != p.version()) {
      return seg_.FailOn(&error_, ErrorCode::kCorrupted, who,
                         "the current half (%u) says "
                         "version %llu, the state word %llu",
                         h, static_cast<unsigned long long>(sealed),
                         static_cast<unsigned long long>(p.version()));
    }
    uint64_t sum = detail::HalfChecksum(HalfData(h), lay_.summed_bytes());
    if (sum != hh->checksum) {
      return seg_.FailOn(&error_, ErrorCode::kCorrupted, who,
                         "version %llu (half %u) fails "
                         "its checksum: stored %016llx, computed %016llx",
                         static_cast<unsigned long long>(p.version()), h,
                         static_cast<unsigned long long>(hh->checksum),
                         static_cast<unsigned long long>(sum));
    }
    return true;
  }

  void ReleaseSlot() {
    if (mine_ != nullptr) {
      detail::DoublePins::Release(mine_);
      mine_ = nullptr;
    }
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::DoubleTableLayout lay_;
  detail::DoublePins pins_;
  detail::DoubleBufSlot* mine_ = nullptr;
  mutable int depth_ = 0;  // this object's live guards (PinHold)
  Table tables_[2];
  uint64_t wait_ms_ = 1000;
  bool writer_ = false;
  uint32_t building_ = kNoBuild;
};

}  // namespace shmc
