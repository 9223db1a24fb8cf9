// ShmQueue<Alloc>: a single-producer single-consumer FIFO of variable-length
// records between two processes.
//
// Layout (docs/layout/queue.md):
//   [SegmentHeader 512]
//   [producer line 64: tail, pushed, full_spins, high_water]
//   [consumer line 64: head, popped]
//   [128 reserved]
//   [ring: capacity bytes, a power of two]
// tail and head are monotonic byte positions (never wrap: 2^64 bytes), so
// used = tail - head and a record lives at pos & (capacity - 1). A record is
// an 8-byte header {uint32 len, uint32 kind} + data padded to 8 bytes; a
// record that does not fit before the ring's end is preceded by a pad record
// (kind 2) covering the rest of the ring.
//
// Synchronisation: the producer writes a record, then publishes it by
// storing tail with release; the consumer loads tail with acquire, reads,
// then frees the space by storing head with release, which the producer
// acquires before reusing it. Each side keeps the other's position cached
// and reloads it only when it looks full/empty. tail and head sit on
// separate cache lines (no false sharing between the two cores).
//
// Roles: InitForWrite = producer (takes the writer lease: one live producer;
// kSharedWriters opts out), InitForRead = consumer. The consumer must store
// its head, so InitForRead maps the segment read-write (the reference did the
// same, silently). A producer killed mid-push leaves no partial record: a
// record exists only once tail covers it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "shmc/common_utils.h"
#include "shmc/detail/copy.h"
#include "shmc/detail/counter.h"
#include "shmc/detail/segment.h"
#include "shmc/detail/writer_open.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc {

// A record's bytes inside the queue, for zero-copy push and pop.
struct ZeroCopyBuf {
  void* ptr;
  size_t len;
};

namespace detail {

struct QueueHeader {
  // producer's line
  std::atomic<uint64_t> tail;
  std::atomic<uint64_t> pushed;
  std::atomic<uint64_t> full_spins;  // pushes refused because full
  std::atomic<uint64_t> high_water;  // most bytes ever in use
  uint8_t pad0[32];
  // consumer's line
  std::atomic<uint64_t> head;
  std::atomic<uint64_t> popped;
  uint8_t pad1[48];
  uint8_t reserved[128];
};
static_assert(sizeof(QueueHeader) == 256, "queue header");
static_assert(offsetof(QueueHeader, head) == 64,
              "head and tail on separate cache lines: the producer's and "
              "consumer's stores must not bounce one line between cores");

constexpr uint32_t kQueueData = 1;
constexpr uint32_t kQueuePad = 2;

inline uint64_t QueueRecordSize(uint64_t len) { return 8 + ((len + 7) & ~7ULL); }

}  // namespace detail

template <class Alloc = SVIPC>
class ShmQueue {
 public:
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr size_t kMinBytes = 1024;

  ShmQueue() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmQueue);

  // Producer. The ring holds buf_size_bytes rounded up to a power of two.
  bool InitForWrite(const std::string& shm_key, size_t buf_size_bytes) {
    error_.Clear();
    const char* who = "ShmQueue::InitForWrite";
    if (!detail::CheckRingBytes<Alloc>(buf_size_bytes, kMinBytes, shm_key,
                                       who, &error_)) {
      return false;
    }
    uint64_t cap = detail::RingCapacityFor(buf_size_bytes);
    int flags = DefaultCreateFlags();
    if (!seg_.OpenForWrite(shm_key, Spec(cap), flags, nullptr, who, &error_) ||
        !seg_.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    producer_ = true;
    return Bind(cap, who);
  }

  // Consumer (maps read-write: it stores its head).
  bool InitForRead(const std::string& shm_key) {
    return AttachExisting(shm_key, true, "ShmQueue::InitForRead");
  }

  // Inspection (shmc addition; the `shmc` tool uses it): maps read-only in
  // neither role. Statistics and Peek work; Push and Pop refuse.
  bool InitForInspect(const std::string& shm_key) {
    return AttachExisting(shm_key, false, "ShmQueue::InitForInspect");
  }

  bool Push(const void* buf, size_t len) {
    if (!Append(buf, len)) return false;
    Release(1);
    return true;
  }
  bool Push(const std::string& data) { return Push(data.data(), data.size()); }

  // Pops the head record into buf. Fails, consuming nothing, when empty or
  // when *len (buf's size) is smaller than the record. len == nullptr (or
  // buf == nullptr) drops the head record.
  bool Pop(void* buf, size_t* len) {
    uint64_t at = 0;
    uint32_t n = 0;
    if (!Front(&at, &n)) return false;
    if (len != nullptr && buf != nullptr) {
      if (*len < n) return false;
      detail::CopyBytes(buf, ring_ + (at & mask_) + 8, n);
    }
    if (len != nullptr) *len = n;
    Advance(at + detail::QueueRecordSize(n));
    return true;
  }
  // Pops into *data; nullptr drops the head record.
  bool Pop(std::string* data) {
    ZeroCopyBuf zcb;
    if (!ZeroCopyPopPrepare(&zcb)) return false;
    if (data != nullptr) data->assign(static_cast<char*>(zcb.ptr), zcb.len);
    Consume();
    return true;
  }

  // Reserves room for a record of `len` bytes; write it at zcb->ptr, then
  // ZeroCopyPushCommit (zcb.len may be lowered to commit fewer bytes).
  bool ZeroCopyPushPrepare(size_t len, ZeroCopyBuf* zcb) {
    if (!producer_ || len > cap_ / 2) return false;
    uint64_t off = tail_ & mask_;
    uint64_t need = detail::QueueRecordSize(len);
    uint64_t pad = cap_ - off < need ? cap_ - off : 0;
    if (!Room(pad + need)) return false;
    prepared_pos_ = tail_ + pad;
    prepared_len_ = len;
    prepared_pad_ = pad;
    if (zcb != nullptr) {
      zcb->ptr = ring_ + (prepared_pos_ & mask_) + 8;
      zcb->len = len;
    }
    return true;
  }
  bool ZeroCopyPushCommit(const ZeroCopyBuf& zcb) {
    if (!producer_ || prepared_len_ == kNone ||
        zcb.ptr != ring_ + (prepared_pos_ & mask_) + 8 ||
        zcb.len > prepared_len_) {
      detail::Log(kWarning, "ShmQueue::ZeroCopyPushCommit: not the buffer "
                  "prepared, or longer than prepared\n");
      return false;
    }
    Publish(prepared_pos_, zcb.len);
    return true;
  }

  // The head record in place; ZeroCopyPopCommit consumes it.
  bool ZeroCopyPopPrepare(ZeroCopyBuf* zcb) {
    uint64_t at = 0;
    uint32_t len = 0;
    if (!Front(&at, &len)) return false;
    popped_at_ = at;
    popped_size_ = at - head_ + detail::QueueRecordSize(len);
    if (zcb != nullptr) {
      zcb->ptr = ring_ + (at & mask_) + 8;
      zcb->len = len;
    }
    return true;
  }
  bool ZeroCopyPopCommit(const ZeroCopyBuf& zcb) {
    if (producer_ || popped_size_ == 0 ||
        zcb.ptr != ring_ + (popped_at_ & mask_) + 8) {
      return false;
    }
    Consume();
    return true;
  }

  // Batch forms (shmc additions): several records, one publication.
  // Pushes records[0..n) until one does not fit; returns how many.
  size_t PushBatch(const std::string* records, size_t n) {
    size_t done = 0;
    while (done < n && Append(records[done].data(), records[done].size())) {
      ++done;
    }
    if (done > 0) Release(done);
    return done;
  }
  // Calls f(data, len) for up to max records; returns how many. f is any
  // callable taking (const void*, size_t), called in place (no type
  // erasure per record); it must not call back into this queue.
  template <class F>
  size_t PopBatch(F&& f, size_t max) {
    size_t done = 0;
    uint64_t at = 0;
    uint32_t len = 0;
    while (done < max && Front(&at, &len)) {
      f(static_cast<const void*>(ring_ + (at & mask_) + 8),
        static_cast<size_t>(len));
      head_ = at + detail::QueueRecordSize(len);
      ++done;
    }
    if (done > 0) {
      popped_size_ = 0;  // voids a zero-copy pop not committed
      popped_.Add(done);
      hdr_->head.store(head_, std::memory_order_release);
    }
    return done;
  }

  enum PeekResult {
    kPeekDone,       // every pending record (or `max`) was reported
    kPeekOvertaken,  // the consumer passed the walk; what was reported holds
    kPeekCorrupted,  // an impossible record header at *bad_pos
  };
  // Reports up to `max` pending records (0: all), oldest first, without
  // consuming them (shmc addition; any role). Each record is copied, then
  // reported only if the consumer had not passed it by the end of the copy,
  // so a live consumer never makes Peek report recycled bytes.
  PeekResult Peek(size_t max,
                  const std::function<void(const std::string&)>& f,
                  uint64_t* bad_pos = nullptr) const {
    if (hdr_ == nullptr) return kPeekDone;
    uint64_t pos = hdr_->head.load(std::memory_order_acquire);
    uint64_t tail = hdr_->tail.load(std::memory_order_acquire);
    std::string rec;
    for (size_t n = 0; max == 0 || n < max; ++n) {
      uint64_t at = 0;
      uint32_t len = 0;
      int rc = Locate(pos, tail, &at, &len);
      if (rc == 0) break;
      if (rc < 0) {
        if (Overtaken(pos)) return kPeekOvertaken;
        if (bad_pos != nullptr) *bad_pos = at;
        return kPeekCorrupted;
      }
      rec.assign(ring_ + (at & mask_) + 8, len);
      if (Overtaken(pos)) return kPeekOvertaken;
      f(rec);
      pos = at + detail::QueueRecordSize(len);
    }
    return kPeekDone;
  }

  // Statistics any process can read (shmc additions).
  uint64_t pushed() const { return Load(&detail::QueueHeader::pushed); }
  uint64_t popped() const { return Load(&detail::QueueHeader::popped); }
  uint64_t full_spins() const { return Load(&detail::QueueHeader::full_spins); }
  uint64_t high_water() const { return Load(&detail::QueueHeader::high_water); }
  uint64_t used_bytes() const {
    return hdr_ ? hdr_->tail.load(std::memory_order_acquire) -
                      hdr_->head.load(std::memory_order_acquire)
                : 0;
  }
  size_t capacity() const { return cap_; }
  const Error& last_error() const { return error_; }

 private:
  static constexpr size_t kNone = ~size_t{0};
  static constexpr uint64_t kRingOffset =
      sizeof(detail::SegmentHeader) + sizeof(detail::QueueHeader);

  static detail::SegmentSpec Spec(uint64_t cap) {
    detail::SegmentSpec spec;
    spec.kind = detail::ContainerKind::kQueue;
    spec.layout_version = kLayoutVersion;
    spec.header_size = static_cast<uint32_t>(kRingOffset);
    spec.total_size = kRingOffset + cap;
    spec.params = {{"capacity", cap, detail::ParamRole::kGeometry}};
    return spec;
  }

  bool Bind(uint64_t cap, const char* who) {
    cap_ = cap;
    mask_ = cap - 1;
    hdr_ = reinterpret_cast<detail::QueueHeader*>(
        seg_.base() + sizeof(detail::SegmentHeader));
    ring_ = seg_.base() + kRingOffset;
    tail_ = hdr_->tail.load(std::memory_order_acquire);
    head_ = hdr_->head.load(std::memory_order_acquire);
    cached_head_ = head_;
    cached_tail_ = tail_;
    pushed_.Bind(&hdr_->pushed);
    full_spins_.Bind(&hdr_->full_spins);
    high_water_.Bind(&hdr_->high_water);
    popped_.Bind(&hdr_->popped);
    if (tail_ - head_ > cap_ || (tail_ & 7) != 0 || (head_ & 7) != 0) {
      detail::Segment<Alloc>::Fail(&error_, ErrorCode::kCorrupted, 0,
                                   seg_.key(), who,
                                   "head %llu / tail %llu impossible",
                                   static_cast<unsigned long long>(head_),
                                   static_cast<unsigned long long>(tail_));
      hdr_ = nullptr;
      seg_.Reset();
      return false;
    }
    return true;
  }

  bool AttachExisting(const std::string& shm_key, bool consumer,
                      const char* who) {
    error_.Clear();
    if (!seg_.OpenForRead(shm_key, Spec(0), consumer, who, &error_)) {
      return false;
    }
    uint64_t cap = seg_.param(0);
    if (!seg_.AcceptGeometry(
            detail::ValidRingCapacity(cap, kMinBytes, detail::kMaxRingBytes),
            Spec(cap).total_size, "capacity", who, &error_)) {
      return false;
    }
    producer_ = false;
    inspector_ = !consumer;
    return Bind(cap, who);
  }

  // The record at ring position `pos` (< tail), skipping a pad record that
  // ends the ring: 1 with its position in *at and length in *len; 0 when
  // nothing is there; -1 when the header is impossible (*at: where).
  // Ring bytes are untrusted: every length is checked against the ring.
  int Locate(uint64_t pos, uint64_t tail, uint64_t* at, uint32_t* len) const {
    for (int pass = 0; pass < 2; ++pass) {
      *at = pos;
      if (pos == tail) return 0;
      uint64_t off = pos & mask_;
      uint32_t kind = 0;
      std::memcpy(len, ring_ + off, 4);
      std::memcpy(&kind, ring_ + off + 4, 4);
      uint64_t avail = tail - pos;
      if (kind == detail::kQueuePad && cap_ - off <= avail) {
        pos += cap_ - off;  // skip to the ring's start
        continue;
      }
      uint64_t size = detail::QueueRecordSize(*len);
      if (kind != detail::kQueueData || size > avail || size > cap_ - off) {
        return -1;
      }
      return 1;
    }
    return -1;  // two pads in a row
  }

  // Out of line: keeps the pop path small enough to inline.
  __attribute__((noinline, cold)) void BadRecord(uint64_t at) {
    detail::Segment<Alloc>::Fail(&error_, ErrorCode::kCorrupted, 0,
                                 seg_.key(), "ShmQueue::Pop",
                                 "bad record at position %llu",
                                 static_cast<unsigned long long>(at));
  }

  // True when the consumer has moved past ring position `pos`.
  bool Overtaken(uint64_t pos) const {
    // SYNC POINT (acquire): orders the copy before this check; pairs with
    // the consumer's release of head (then the producer may reuse it).
    std::atomic_thread_fence(std::memory_order_acquire);
    return hdr_->head.load(std::memory_order_relaxed) > pos;
  }

  uint64_t Load(std::atomic<uint64_t> detail::QueueHeader::*field) const {
    return hdr_ ? (hdr_->*field).load(std::memory_order_relaxed) : 0;
  }

  bool Room(uint64_t bytes) {
    if (tail_ + bytes - cached_head_ <= cap_) return true;
    // SYNC POINT (acquire): pairs with the consumer's release of head; the
    // space before it is no longer read.
    cached_head_ = hdr_->head.load(std::memory_order_acquire);
    if (tail_ + bytes - cached_head_ <= cap_) return true;
    full_spins_.Add(1);
    return false;
  }

  // Writes a record of `len` bytes from buf at the tail (after a pad record
  // if it must wrap) and moves tail_ past it; not yet published. False when
  // it does not fit. Works in locals and stores the object's state once:
  // the ring writes go through char*, which may alias any member, so
  // state kept in members would be stored and reloaded around each write.
  bool Append(const void* buf, size_t len) {
    if (!producer_ || len > cap_ / 2) return false;
    uint64_t tail = tail_;
    uint64_t off = tail & mask_;
    uint64_t need = detail::QueueRecordSize(len);
    uint64_t pad = cap_ - off < need ? cap_ - off : 0;
    if (!Room(pad + need)) return false;
    char* ring = ring_;
    if (pad > 0) {
      uint32_t pad_hdr[2] = {static_cast<uint32_t>(pad - 8),
                             detail::kQueuePad};
      std::memcpy(ring + off, pad_hdr, 8);
      off = 0;
    }
    uint32_t rec_hdr[2] = {static_cast<uint32_t>(len), detail::kQueueData};
    std::memcpy(ring + off, rec_hdr, 8);
    detail::CopyBytes(ring + off + 8, buf, len);
    tail_ = tail + pad + need;
    prepared_len_ = kNone;  // voids a zero-copy reservation not committed
    return true;
  }

  // Writes the record's header (and the pad before it); tail not yet moved.
  void Stage(uint64_t pos, size_t len) {
    if (prepared_pad_ > 0) {
      uint32_t pad_hdr[2] = {static_cast<uint32_t>(prepared_pad_ - 8),
                             detail::kQueuePad};
      std::memcpy(ring_ + (tail_ & mask_), pad_hdr, 8);
    }
    uint32_t rec_hdr[2] = {static_cast<uint32_t>(len), detail::kQueueData};
    std::memcpy(ring_ + (pos & mask_), rec_hdr, 8);
    tail_ = pos + detail::QueueRecordSize(len);
    prepared_len_ = kNone;
  }

  // SYNC POINT (release): publishes every staged record to the consumer.
  void Release(uint64_t records) {
    hdr_->tail.store(tail_, std::memory_order_release);
    pushed_.Add(records);
    high_water_.Max(tail_ - cached_head_);
  }

  void Publish(uint64_t pos, size_t len) {
    Stage(pos, len);
    Release(1);
  }

  // The head record: its position (after any pad) and length; false when
  // the queue is empty, this is not the consumer, or the record is damaged
  // (last_error() says so). Changes no state but the cached tail.
  bool Front(uint64_t* at, uint32_t* len) {
    if (producer_ || inspector_ || hdr_ == nullptr) return false;
    uint64_t head = head_;
    if (head == cached_tail_) {
      // SYNC POINT (acquire): pairs with the producer's release of tail;
      // the records before it are complete.
      cached_tail_ = hdr_->tail.load(std::memory_order_acquire);
      if (head == cached_tail_) return false;
    }
    int rc = Locate(head, cached_tail_, at, len);
    if (rc <= 0) {
      if (rc < 0) BadRecord(*at);
      return false;
    }
    return true;
  }

  // Consumes every record before `new_head`.
  void Advance(uint64_t new_head) {
    head_ = new_head;
    popped_size_ = 0;  // voids a zero-copy pop not committed
    popped_.Add(1);
    // SYNC POINT (release): the record's space may be reused by the producer.
    hdr_->head.store(new_head, std::memory_order_release);
  }

  void Consume() { Advance(head_ + popped_size_); }

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::QueueHeader* hdr_ = nullptr;
  char* ring_ = nullptr;
  uint64_t cap_ = 0, mask_ = 0;
  bool producer_ = false;
  bool inspector_ = false;  // InitForInspect: read-only, no role
  // producer state
  uint64_t tail_ = 0, cached_head_ = 0;
  detail::OwnedCounter pushed_, full_spins_, high_water_;
  uint64_t prepared_pos_ = 0, prepared_pad_ = 0;
  size_t prepared_len_ = kNone;
  // consumer state
  uint64_t head_ = 0, cached_tail_ = 0, popped_size_ = 0, popped_at_ = 0;
  detail::OwnedCounter popped_;
};

}  // namespace shmc
