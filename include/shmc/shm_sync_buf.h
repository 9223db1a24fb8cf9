// ShmSyncBuf<Alloc>: a broadcast log. One writer appends records; any number
// of readers follow at their own pace; the oldest records are recycled to
// make room. A reader that falls more than the buffer behind is told so
// (Read returns -1, IsOverrun) and can resync to Head(); it never gets
// recycled bytes as data.
//
// Layout version 2 (docs/layout/queue.md, its ShmSyncBuf section):
//   [SegmentHeader 512][SyncHeader 128][seq index: index_size x uint32,
//   padded to 64 bytes][ring: capacity bytes, a multiple of 8, <= 32 GiB]
// The capacity is the buffer size asked for, rounded up to 8 bytes (as in
// the reference); so is the whole segment but for the index, which has one
// 4-byte slot per record the ring can hold (a sixth of the ring).
// head and tail are monotonic byte positions; a record at position p lives
// at p mod capacity (a mask when the capacity is a power of two) and never
// straddles the ring's end: a pad record
// fills the rest of the ring instead, or, when fewer than 24 bytes remain,
// those bytes are an implicit pad without a header. Record: {uint32 len; uint32 kind;
// uint64 seq; uint32 sec; uint32 usec} + data padded to 8 bytes.
// index[seq mod index_size] holds the position of record seq divided by 8,
// cut to 32 bits: a record still in the ring is less than 2^35 bytes behind
// tail, so the full position is rebuilt from tail. The index has a slot for
// every record the ring can hold (plus one), so a slot is overwritten only
// after its record was recycled, and FindBySeq is O(1). Layout version 1
// (a power-of-two ring and 8-byte slots: up to 1.9x the memory asked for)
// is refused with kVersionMismatch; remove such a segment (`shmc rm`).
//
// Synchronisation: the writer advances head (release) before it overwrites
// anything, writes the record, then publishes it by storing tail (release).
// A reader loads tail (acquire), copies the record with relaxed word loads,
// then checks head again after an acquire fence: if head passed the record,
// the copy is discarded (-1). Readers map the segment read-only.
#pragma once

#include <sys/time.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "shmc/common_utils.h"
#include "shmc/detail/counter.h"
#include "shmc/detail/link_layout.h"
#include "shmc/detail/prefetch.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc {

struct SyncMeta {
  uint64_t seq;
  timeval time;
};

struct SyncIter {
  uint64_t pos;
};

namespace detail {

struct SyncHeader {
  std::atomic<uint64_t> head;       // oldest record still readable
  std::atomic<uint64_t> tail;       // where the next record goes
  std::atomic<uint64_t> next_seq;   // seq of the next record
  std::atomic<uint64_t> first_seq;  // seq of the record at head
  std::atomic<uint64_t> pushed;     // records pushed (statistics)
  std::atomic<uint64_t> recycled;   // records dropped to make room
  uint8_t reserved[80];
};
static_assert(sizeof(SyncHeader) == 128, "sync header");

struct SyncRecord {
  uint32_t len;
  uint32_t kind;  // kSyncData or kSyncPad
  uint64_t seq;
  uint32_t sec;
  uint32_t usec;
};
static_assert(sizeof(SyncRecord) == 24, "record header");

constexpr uint32_t kSyncData = 0x53594e44;  // "DNYS"
constexpr uint32_t kSyncPad = 0x53594e50;

inline uint64_t SyncRecordSize(uint64_t len) {
  return sizeof(SyncRecord) + ((len + 7) & ~7ULL);
}

}  // namespace detail

template <class Alloc = SVIPC>
class ShmSyncBuf {
 public:
  static constexpr uint32_t kLayoutVersion = 2;
  static constexpr size_t kMinBytes = 4096;
  // Index slots hold a position / 8 in 32 bits (see the layout above); the
  // reference had the same limit.
  static constexpr uint64_t kMaxBytes = uint64_t{1} << 35;

  ShmSyncBuf() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmSyncBuf);

  // Writer; the ring holds buf_size_bytes (kMinBytes..32 GiB) rounded up
  // to a multiple of 8.
  // Errors: create errors; kWriterBusy; kInvalidArgument for a size out
  // of range.
  bool InitForWrite(const std::string& shm_key, size_t buf_size_bytes) {
    error_.Clear();
    const char* who = "ShmSyncBuf::InitForWrite";
    if (buf_size_bytes < kMinBytes || buf_size_bytes > kMaxBytes) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "buf_size_bytes must be %zu..2^35 (got %zu)", kMinBytes,
          buf_size_bytes);
    }
    uint64_t cap = (static_cast<uint64_t>(buf_size_bytes) + 7) & ~7ULL;
    auto init = [](char* base) {
      auto* h = reinterpret_cast<detail::SyncHeader*>(
          base + sizeof(detail::SegmentHeader));
      h->next_seq.store(1, std::memory_order_relaxed);
      h->first_seq.store(1, std::memory_order_relaxed);
    };
    int flags = DefaultCreateFlags();
    detail::SegmentSpec spec = Spec(cap);
    // kGrowInSteps (shmc addition): a buffer this call creates reserves
    // the memory of its index and ring as records first reach it (Push),
    // not at once.
    if (flags & kGrowInSteps) spec.reserve_bytes = kIndexOffset;
    if (!seg_.OpenForWrite(shm_key, spec, flags, init, who, &error_) ||
        !seg_.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    writer_ = true;
    shared_writers_ = (flags & kSharedWriters) != 0;
    return Bind(cap, who);
  }

  // Reader: attaches read-only; any number of them.
  // Errors: attach errors.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmSyncBuf::InitForRead";
    if (!seg_.OpenForRead(shm_key, Spec(0), false, who, &error_)) return false;
    uint64_t cap = seg_.param(kCapacityParam);
    bool plausible = cap >= kMinBytes && cap <= kMaxBytes && cap % 8 == 0;
    if (!seg_.AcceptGeometry(plausible, Spec(cap).total_size, "capacity",
                             who, &error_)) {
      return false;
    }
    writer_ = false;
    return Bind(cap, who);
  }

  bool Push(const void* buf, size_t len, const timeval& ts) {
    if (!writer_ || hdr_ == nullptr) return false;
    uint64_t size = detail::SyncRecordSize(len);
    if (size > cap_ / 4) return false;  // too big for this buffer
    if (shared_writers_) {
      // Writers taking turns (kSharedWriters): continue the counts the
      // last one stored, not this handle's copies.
      pushed_.Bind(&hdr_->pushed);
      recycled_.Bind(&hdr_->recycled);
    }
    uint64_t tail = hdr_->tail.load(std::memory_order_relaxed);
    uint64_t off = Off(tail);
    uint64_t pad = cap_ - off < size ? cap_ - off : 0;
    // The bytes this record writes are reserved first: false (kNoSpace),
    // with nothing written, where a write would have raised SIGBUS.
    // A record that wraps ends the ring's first pass: all of it is then
    // reserved (the pad at its end included).
    const uint64_t index_bytes = IndexBytes(cap_);
    if (!Reserved(&ring_reserved_, index_bytes, index_bytes + cap_,
                  index_bytes + (pad > 0 ? cap_ : off + size)) ||
        !Reserved(&index_reserved_, 0, index_bytes,
                  (Slot(hdr_->next_seq.load(std::memory_order_relaxed)) + 1) *
                      4)) {
      return false;
    }
    ClaimAhead(off, size);
    Recycle(tail + pad + size);
    if (pad >= sizeof(detail::SyncRecord)) {  // shorter: an implicit pad
      detail::SyncRecord p{static_cast<uint32_t>(pad - sizeof(detail::SyncRecord)),
                           detail::kSyncPad, 0, 0, 0};
      StoreBytes(off, &p, sizeof(p));
    }
    uint64_t pos = tail + pad;
    uint64_t seq = hdr_->next_seq.load(std::memory_order_relaxed);
    detail::SyncRecord r{static_cast<uint32_t>(len), detail::kSyncData, seq,
                         static_cast<uint32_t>(ts.tv_sec),
                         static_cast<uint32_t>(ts.tv_usec)};
    uint64_t at = off + pad == cap_ ? 0 : off + pad;  // Off(pos)
    StoreBytes(at, &r, sizeof(r));
    if (len > 0) StoreBytes(at + sizeof(r), buf, len);
    index_[Slot(seq)].store(static_cast<uint32_t>(pos / 8),
                            std::memory_order_relaxed);
    hdr_->next_seq.store(seq + 1, std::memory_order_relaxed);
    // SYNC POINT (release): publishes the record and its index entry to
    // readers that acquire tail.
    hdr_->tail.store(pos + size, std::memory_order_release);
    pushed_.Add(1);
    return true;
  }
  // Timestamped now (gettimeofday; the reference used whole seconds).
  bool Push(const void* buf, size_t len) { return Push(buf, len, Now()); }
  bool Push(const std::string& data, const timeval& ts) {
    return Push(data.data(), data.size(), ts);
  }
  bool Push(const std::string& data) { return Push(data.data(), data.size()); }

  SyncIter Head() const {
    return SyncIter{hdr_ ? hdr_->head.load(std::memory_order_acquire) : 0};
  }
  SyncIter Tail() const {
    return SyncIter{hdr_ ? hdr_->tail.load(std::memory_order_acquire) : 0};
  }

  // Moves *it to the next record. False at the tail, or when *it was
  // overrun (see IsOverrun; resync with Head()).
  bool Next(SyncIter* it) const {
    detail::SyncRecord r;
    uint64_t pos = 0;
    if (Locate(it->pos, &r, &pos) != 1) return false;
    it->pos = pos + detail::SyncRecordSize(r.len);
    return true;
  }

  // True when the record at *it has been recycled by the writer.
  bool IsOverrun(const SyncIter& it) const {
    return hdr_ == nullptr || it.pos < hdr_->head.load(std::memory_order_acquire);
  }

  // O(1) through the seq index.
  bool FindBySeq(uint64_t seq, SyncIter* it) const {
    if (hdr_ == nullptr) return false;
    // The slot is read after tail (acquire): a slot written for a record up
    // to that tail rebuilds to its position. One rewritten since (a newer
    // record) rebuilds to a position Locate refuses or to a record whose
    // seq differs; either way the answer is "not found", never a wrong one.
    uint64_t tail = hdr_->tail.load(std::memory_order_acquire);
    uint32_t slot = index_[Slot(seq)].load(std::memory_order_relaxed);
    uint64_t pos =
        tail - 8 * uint64_t{static_cast<uint32_t>(tail / 8) - slot};
    detail::SyncRecord r;
    uint64_t at = 0;
    if (Locate(pos, &r, &at) != 1 || r.seq != seq || at != pos) return false;
    it->pos = pos;
    return true;
  }

  // The first record whose time is >= ts (records are assumed to be pushed
  // in time order); O(log n) binary search over seqs.
  bool FindByTime(const timeval& ts, SyncIter* it) const {
    if (hdr_ == nullptr) return false;
    uint64_t lo = hdr_->first_seq.load(std::memory_order_acquire);
    uint64_t hi = hdr_->next_seq.load(std::memory_order_acquire);
    auto before = [&](uint64_t seq, bool* ok) {
      SyncIter x;
      SyncMeta m;
      *ok = FindBySeq(seq, &x) && Read(x, &m) == 1;
      return *ok && (m.time.tv_sec < ts.tv_sec ||
                     (m.time.tv_sec == ts.tv_sec && m.time.tv_usec < ts.tv_usec));
    };
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      bool ok = false;
      if (before(mid, &ok)) {
        lo = mid + 1;
      } else if (!ok) {
        lo = mid + 1;  // recycled meanwhile: only newer records remain
      } else {
        hi = mid;
      }
    }
    return FindBySeq(lo, it);
  }

  // 1: read (data truncated to *len bytes; *len set to the full length),
  // 0: at the tail, nothing yet; -1: overrun (recycled) or damaged.
  int Read(const SyncIter& it, SyncMeta* meta, void* buf, size_t* len) const {
    detail::SyncRecord r;
    uint64_t pos = 0;
    int rc = Locate(it.pos, &r, &pos);
    if (rc != 1) return rc;
    size_t cap = (buf == nullptr || len == nullptr) ? 0 : *len;
    size_t n = r.len < cap ? r.len : cap;
    if (n > 0) LoadBytes(Off(pos) + sizeof(r), buf, n);
    if (!StillThere(pos)) return -1;
    if (meta != nullptr) {
      meta->seq = r.seq;
      meta->time.tv_sec = r.sec;
      meta->time.tv_usec = r.usec;
    }
    if (len != nullptr) *len = r.len;
    return 1;
  }
  int Read(const SyncIter& it, SyncMeta* meta, std::string* out) const {
    detail::SyncRecord r;
    uint64_t pos = 0;
    int rc = Locate(it.pos, &r, &pos);
    if (rc != 1) return rc;
    out->resize(r.len);
    if (r.len > 0) LoadBytes(Off(pos) + sizeof(r), &(*out)[0], r.len);
    if (!StillThere(pos)) return -1;
    if (meta != nullptr) {
      meta->seq = r.seq;
      meta->time.tv_sec = r.sec;
      meta->time.tv_usec = r.usec;
    }
    return 1;
  }
  int Read(const SyncIter& it, SyncMeta* meta) const {
    size_t len = 0;
    return Read(it, meta, nullptr, &len);
  }

  size_t sync_buf_size() const { return cap_; }
  size_t used_size() const {
    return hdr_ ? hdr_->tail.load(std::memory_order_acquire) -
                      hdr_->head.load(std::memory_order_acquire)
                : 0;
  }
  size_t free_size() const { return cap_ - used_size(); }
  uint64_t pushed() const {
    return hdr_ ? hdr_->pushed.load(std::memory_order_relaxed) : 0;
  }
  uint64_t recycled() const {
    return hdr_ ? hdr_->recycled.load(std::memory_order_relaxed) : 0;
  }
  const Error& last_error() const { return error_; }

  // The writer's line claims, as ShmQueue::SetWriteAhead describes for
  // its producer (shmc addition): set after InitForWrite; 0 turns them off.
  void SetWriteAhead(uint64_t bytes) {
    write_ahead_ = detail::WriteAheadWithin(bytes, cap_);
  }
  uint64_t write_ahead() const { return write_ahead_; }

 private:
  static constexpr const char* kCapacityParam = "capacity";
  static detail::SegmentSpec Spec(uint64_t cap) {
    return detail::SegmentSpec::Geometry(
        detail::ContainerKind::kSyncBuf, kLayoutVersion, kIndexOffset,
        kIndexOffset + IndexBytes(cap) + cap, {{kCapacityParam, cap}});
  }
  // A slot for every record the ring can hold (records are >= 24 bytes),
  // and one more. A power-of-two ring gets a power-of-two index, so both
  // map positions by masks; other rings pay a division for each.
  static uint64_t IndexSize(uint64_t cap) {
    uint64_t need = cap / sizeof(detail::SyncRecord) + 1;
    if ((cap & (cap - 1)) != 0) return need;
    uint64_t n = 1;
    while (n < need) n <<= 1;
    return n;
  }
  // Bytes of the index, padded so the ring starts on a cache line.
  static uint64_t IndexBytes(uint64_t cap) {
    return (IndexSize(cap) * 4 + detail::kCacheLine - 1) /
           detail::kCacheLine * detail::kCacheLine;
  }
  // Ring offset of position p, and index slot of seq.
  uint64_t Off(uint64_t p) const {
    return ring_pow2_ ? p & (cap_ - 1) : p % cap_;
  }
  uint64_t Slot(uint64_t seq) const {
    return index_pow2_ ? seq & (index_size_ - 1) : seq % index_size_;
  }
  static constexpr uint64_t kIndexOffset =
      sizeof(detail::SegmentHeader) + sizeof(detail::SyncHeader);

  static timeval Now() {
    timeval tv;
    gettimeofday(&tv, nullptr);
    return tv;
  }

  bool Bind(uint64_t cap, const char* who) {
    cap_ = cap;
    ring_pow2_ = (cap & (cap - 1)) == 0;
    index_size_ = IndexSize(cap);
    index_pow2_ = (index_size_ & (index_size_ - 1)) == 0;
    write_ahead_ = detail::WriteAheadBytes(cap);
    hdr_ = reinterpret_cast<detail::SyncHeader*>(
        seg_.base() + sizeof(detail::SegmentHeader));
    index_ = reinterpret_cast<std::atomic<uint32_t>*>(seg_.base() +
                                                      kIndexOffset);
    ring_ = reinterpret_cast<std::atomic<uint64_t>*>(
        seg_.base() + kIndexOffset + IndexBytes(cap));
    uint64_t h = hdr_->head.load(), t = hdr_->tail.load();
    if (t < h || t - h > cap_ || (t & 7) != 0 || (h & 7) != 0) {
      detail::Segment<Alloc>::Fail(&error_, ErrorCode::kCorrupted, 0,
                                   seg_.key(), who, "head/tail impossible");
      hdr_ = nullptr;
      seg_.Reset();
      return false;
    }
    pushed_.Bind(&hdr_->pushed);
    recycled_.Bind(&hdr_->recycled);
    return true;
  }

  // Requests for writing the lines a record of `size` bytes will take
  // write_ahead_ bytes past ring offset `off`: Recycle reads the oldest
  // record's header there and the writer overwrites it soon after, and in
  // a ring larger than the cache both would otherwise wait for memory
  // (bench/RESULTS.md).
  void ClaimAhead(uint64_t off, uint64_t size) {
    if (write_ahead_ == 0) return;
    const char* ring = reinterpret_cast<const char*>(ring_);
    for (uint64_t x = 0; x < size; x += detail::kCacheLine) {
      detail::PrefetchLineForWrite(ring + Off(off + write_ahead_ + x));
    }
  }

  // Makes sure bytes [begin, end) past kIndexOffset (the index, or the
  // ring, ending at `limit`) are reserved: from *mark, what this handle
  // reserved of them before, on, a step at least at a time. A step is as
  // large as what is reserved already, from 64 KiB up to 2 MiB: a buffer
  // little used holds little.
  bool Reserved(uint64_t* mark, uint64_t begin, uint64_t limit, uint64_t end) {
    if (*mark < begin) *mark = begin;
    if (end <= *mark) return true;
    const uint64_t step =
        std::min(kReserveStep, std::max(kFirstReserveStep, *mark - begin));
    const uint64_t to = std::min(limit, std::max(end, *mark + step));
    if (!seg_.Reserve(kIndexOffset + *mark, to - *mark, "ShmSyncBuf::Push",
                      &error_)) {
      return false;
    }
    *mark = to;
    return true;
  }
  static constexpr uint64_t kFirstReserveStep = uint64_t{64} << 10;
  static constexpr uint64_t kReserveStep = uint64_t{2} << 20;

  // Ring offsets are multiples of 8: copy whole words (TSan-clean).
  void StoreBytes(uint64_t off, const void* src, size_t n) {
    detail::StoreWords(ring_ + off / 8, src, n);
  }
  void LoadBytes(uint64_t off, void* dst, size_t n) const {
    detail::LoadWords(dst, ring_ + off / 8, n);
  }

  // Drops the oldest records until [head, end) fits in the ring. A pad is
  // only ever dropped together with the record after it: an iterator may
  // point at a pad (it resolves to that record), and it must read as
  // overrun exactly when its record is gone.
  void Recycle(uint64_t end) {
    uint64_t head = hdr_->head.load(std::memory_order_relaxed);
    const uint64_t tail = hdr_->tail.load(std::memory_order_relaxed);
    uint64_t first = hdr_->first_seq.load(std::memory_order_relaxed);
    uint64_t dropped = 0;
    bool after_pad = false;
    while ((end - head > cap_ || after_pad) && head < tail) {
      uint64_t off = Off(head);
      if (cap_ - off < sizeof(detail::SyncRecord)) {
        head += cap_ - off;  // implicit pad: too short for a header
        after_pad = true;
        continue;
      }
      detail::SyncRecord r;
      LoadBytes(off, &r, sizeof(r));
      if (r.kind == detail::kSyncPad) {
        head += sizeof(r) + r.len;
        after_pad = true;
        continue;
      }
      head += detail::SyncRecordSize(r.len);
      first = r.seq + 1;
      ++dropped;
      after_pad = false;
    }
    if (dropped > 0 || head != hdr_->head.load(std::memory_order_relaxed)) {
      hdr_->first_seq.store(first, std::memory_order_relaxed);
      // SYNC POINT (release fence after the store): head moves before any
      // byte behind it is overwritten; pairs with the acquire fence in
      // StillThere. A release fence is enough: it orders this store before
      // every later store of the overwrite (seq_cst would add an mfence to
      // each recycling push on x86 for nothing).
      hdr_->head.store(head, std::memory_order_release);
      std::atomic_thread_fence(std::memory_order_release);
      recycled_.Add(dropped);
    }
  }

  // Finds the data record at or after p (skipping a pad). 1 found, 0 at the
  // tail, -1 overrun or damaged. Its header is copied into *r.
  int Locate(uint64_t p, detail::SyncRecord* r, uint64_t* pos) const {
    if (hdr_ == nullptr) return -1;
    for (int hop = 0; hop < 2; ++hop) {
      uint64_t tail = hdr_->tail.load(std::memory_order_acquire);
      if (p >= tail) return p == tail ? 0 : -1;
      if ((p & 7) != 0) return -1;
      uint64_t off = Off(p);
      if (cap_ - off < sizeof(*r)) {  // implicit pad at the ring's end
        p += cap_ - off;
        continue;
      }
      LoadBytes(off, r, sizeof(*r));
      if (!StillThere(p)) return -1;
      if (r->kind == detail::kSyncPad && r->len + sizeof(*r) == cap_ - off) {
        p += cap_ - off;
        continue;
      }
      if (r->kind != detail::kSyncData ||
          detail::SyncRecordSize(r->len) > cap_ - off ||
          p + detail::SyncRecordSize(r->len) > tail) {
        return -1;
      }
      *pos = p;
      return 1;
    }
    return -1;
  }

  // After copying bytes of the record at p: were they still the record's?
  bool StillThere(uint64_t p) const {
    std::atomic_thread_fence(std::memory_order_acquire);
    return p >= hdr_->head.load(std::memory_order_relaxed);
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::SyncHeader* hdr_ = nullptr;
  std::atomic<uint32_t>* index_ = nullptr;
  std::atomic<uint64_t>* ring_ = nullptr;
  uint64_t write_ahead_ = 0;  // how far ahead Push claims lines; 0: none
  uint64_t cap_ = 0, index_size_ = 0;
  // What this handle reserved of the index and of the ring (from
  // kIndexOffset; Push).
  uint64_t index_reserved_ = 0, ring_reserved_ = 0;
  bool ring_pow2_ = false, index_pow2_ = false;
  bool writer_ = false;
  detail::OwnedCounter pushed_, recycled_;  // the writer's
  bool shared_writers_ = false;
};

}  // namespace shmc
