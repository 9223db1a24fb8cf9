// ShmQueue<Alloc>: a single-producer single-consumer FIFO of variable-length
// records between two processes.
//
// Usage:
//   shmc::ShmQueue<shmc::POSIX> q;
//   q.InitForWrite("/myqueue", 1 << 20);    // producer: ring of 1 MiB
//   q.Push("record");                       // false when the ring is full
//   // consumer process:
//   shmc::ShmQueue<shmc::POSIX> c;
//   c.InitForRead("/myqueue");
//   std::string rec;
//   while (c.Pop(&rec)) handle(rec);        // false when empty
//   // PushBatch/PopBatch amortize the shared counters; ZeroCopyPush*/
//   // ZeroCopyPop* write and read records in place.
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
// Synchronisation (layout version 2): a record is published in band, by
// its own header. The 8-byte header word at the producer's tail is always
// zero; the producer writes a record's data, zeroes the header word after
// it (the next tail), then stores the record's header with release. The
// consumer loads the header at its head with acquire: zero means empty,
// anything else is a whole record. So the consumer never reads `tail`, and
// a consumer waiting on an empty queue polls the one line the producer
// writes next, not a separate index line as well. `tail` is still stored
// (release) after each push or batch, for inspectors, statistics and the
// next producer. The consumer frees space by storing head with release,
// which the producer acquires before reusing it (cached; reloaded only
// when the ring looks full). tail and head sit on separate cache lines.
//
// Roles: InitForWrite = producer (takes the writer lease: one live producer;
// kSharedWriters opts out, for producers that serialize their pushes
// themselves: each push then starts from the tail the last one stored),
// InitForRead = consumer. The consumer must store
// its head, so InitForRead maps the segment read-write (the reference did the
// same, silently). A producer killed mid-push leaves no partial record: a
// record exists once its header word is stored, one atomic store. A
// producer killed between that store and the store of tail leaves tail
// behind; the next producer walks forward from tail over published headers
// (at most one batch) before it writes.
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
#include "shmc/detail/prefetch.h"
#include "shmc/detail/queue_layout.h"
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


template <class Alloc = SVIPC>
class ShmQueue {
 public:
  // 2: publication by record header (v1 published by tail alone; its ring
  // does not keep the header at tail zeroed, so it cannot be attached).
  static constexpr uint32_t kLayoutVersion = 2;
  static constexpr size_t kMinBytes = 1024;

  ShmQueue() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmQueue);

  // Producer. The ring holds buf_size_bytes rounded up to a power of two.
  // Errors: create errors; kWriterBusy (another live producer);
  // kInvalidArgument for a size out of range.
  bool InitForWrite(const std::string& shm_key, size_t buf_size_bytes) {
    error_.Clear();
    const char* who = "ShmQueue::InitForWrite";
    if (!detail::CheckRingBytes<Alloc>(buf_size_bytes, kMinBytes, shm_key,
                                       who, &error_)) {
      return false;
    }
    uint64_t cap = detail::RingCapacityFor(buf_size_bytes);
    int flags = DefaultCreateFlags();
    // The word at tail must be zero (in-band publication): fresh pages are,
    // but a created segment does not rely on it.
    auto init = [](char* base) { std::memset(base + kRingOffset, 0, 8); };
    if (!seg_.OpenForWrite(shm_key, Spec(cap), flags, init, who, &error_) ||
        !seg_.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    producer_ = true;
    // A segment with no name (ANON, HEAP) cannot be attached by a second
    // handle, so the producer's handle (and a forked child's copy of it)
    // is the consumer as well, as in the reference. One thread or process
    // still pushes and one pops.
    consumer_ = !impl::AllocTraits<Alloc>::is_named;
    resync_ = (flags & kSharedWriters) != 0;
    return Bind(cap, who);
  }

  // Consumer (maps read-write: it stores its head).
  // Errors: attach errors.
  bool InitForRead(const std::string& shm_key) {
    return AttachExisting(shm_key, true, "ShmQueue::InitForRead");
  }

  // Inspection (shmc addition; the `shmc` tool uses it): maps read-only in
  // neither role. Statistics and Peek work; Push and Pop refuse.
  // Errors: attach errors.
  bool InitForInspect(const std::string& shm_key) {
    return AttachExisting(shm_key, false, "ShmQueue::InitForInspect");
  }

  // Always inlined, and so are Pop and TryPop: left to its heuristics, GCC
  // 12 -O2 made them calls in queue_bench (which calls them from two
  // places) and inlined them in line_transfer, and the calls cost up to
  // half of Push/Pop's rate (queue_bench: 0.35-0.55x the ring with them,
  // 0.61-0.72x without, alternating runs; bench/NOTES.md).
  __attribute__((always_inline)) bool Push(const void* buf, size_t len) {
    // The common case inline and small: one producer, a record that fits
    // before the ring's end, room by the cached head. Everything else is
    // out of line, so a caller's push loop keeps its state in registers: a
    // call's saved registers are stores, and every store waits behind the
    // ring line's transfer from the consumer (bench/NOTES.md, queue).
    uint64_t tail = tail_;
    uint64_t off = tail & mask_;
    if (__builtin_expect(producer_ && !resync_ && len <= cap_ / 2, 1)) {
      uint64_t need = detail::QueueRecordSize(len);
      if (__builtin_expect(
              need <= cap_ - off && tail + need - cached_head_ <= room_, 1)) {
        Claim(off);
        Write(ring_, off, buf, len, need);
        detail::StoreQueueHeader(ring_ + off, len, detail::kQueueData);
        tail_ = tail + need;
        if (prepared_len_ != kNone) prepared_len_ = kNone;
        Release(1);
        return true;
      }
    }
    return PushSlow(buf, len);
  }
  bool Push(const std::string& data) { return Push(data.data(), data.size()); }

  // Why TryPop popped nothing (shmc addition).
  enum class PopResult {
    kOk,
    kEmpty,           // no record published yet
    kBufferTooSmall,  // the head record is longer than the buffer
    kNotConsumer,     // this handle cannot pop (producer of a named
                      // queue, InitForInspect, or not initialized)
  };

  // Pops the head record into buf[0, cap): kOk with *len its length. On
  // kBufferTooSmall nothing is consumed and *len is the length the record
  // needs; on kEmpty and kNotConsumer *len is 0. buf == nullptr drops the
  // head record whatever its length.
  __attribute__((always_inline))
  PopResult TryPop(void* buf, size_t cap, size_t* len) {
    *len = 0;
    if (!consumer_ || hdr_ == nullptr) return PopResult::kNotConsumer;
    uint64_t at = 0;
    uint32_t n = 0;
    if (!Front(&at, &n)) return PopResult::kEmpty;
    *len = n;
    if (buf != nullptr) {
      if (cap < n) return PopResult::kBufferTooSmall;
      detail::CopyBytes(buf, ring_ + (at & mask_) + 8, n);
    }
    Advance(After(at, detail::QueueRecordSize(n)));
    return PopResult::kOk;
  }

  // The reference's call: pops the head record into buf, *len being buf's
  // size on entry and the record's length on success. False, consuming
  // nothing and leaving *len as it was, when the queue is empty or the
  // record is longer than *len (so a caller that passes *len again never
  // overruns its buffer); TryPop tells the two apart. len == nullptr drops
  // the head record; buf == nullptr with a len drops it if it fits *len.
  __attribute__((always_inline))
  bool Pop(void* buf, size_t* len) {
    uint64_t at = 0;
    uint32_t n = 0;
    if (!Front(&at, &n)) return false;
    if (len != nullptr) {
      if (*len < n) return false;
      if (buf != nullptr) detail::CopyBytes(buf, ring_ + (at & mask_) + 8, n);
      *len = n;
    }
    Advance(After(at, detail::QueueRecordSize(n)));
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
    if (!producer_ || (resync_ && !Resync())) return false;
    uint64_t pad = 0, need = 0;
    if (!Place(tail_, len, &pad, &need)) return false;
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
    if (!consumer_ || popped_size_ == 0 ||
        zcb.ptr != ring_ + (popped_at_ & mask_) + 8) {
      return false;
    }
    Consume();
    return true;
  }

  // Batch forms (shmc additions): several records, one publication (the
  // first record's header), one store of tail and of the counters.
  // Pushes records[0..n) until one does not fit; returns how many.
  // The first record's header is stored last: the consumer sees the whole
  // batch at once, not records whose lines the producer is still writing.
  // Only the last record's next word is zeroed: the words between are
  // the later records' headers, and no consumer reads past the first
  // header, zero until the whole batch is written. Those later headers
  // are stored before their records' bytes, so that the batch is written
  // in ascending address order. Stored after its bytes, each header was a
  // step back to a lower address every record: batches of 16 ran at
  // 0.77-1.04x the 64-byte ring in queue_bench, and at 1.45-1.53x in
  // ascending order (bench/NOTES.md, queue_bench).
  size_t PushBatch(const std::string* records, size_t n) {
    if (resync_ && !Resync()) return 0;
    if (!producer_) return 0;
    uint64_t tail = tail_;
    char* ring = ring_;
    Held first;
    size_t done = 0;
    for (; done < n; ++done) {
      size_t len = records[done].size();
      uint64_t pad = 0, need = 0;
      if (!Place(tail, len, &pad, &need)) break;
      uint64_t off = tail & mask_;
      uint64_t rec = pad > 0 ? 0 : off;
      Held h{rec, len, off, pad};
      if (done == 0) {
        first = h;
      } else {
        Reveal(h);
      }
      detail::CopyBytes(ring + rec + 8, records[done].data(), len);
      tail += pad + need;
    }
    if (done == 0) return 0;
    detail::StoreWord(ring + (tail & mask_), 0, false);
    Reveal(first);
    tail_ = tail;
    if (prepared_len_ != kNone) prepared_len_ = kNone;
    Release(done);
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
      head_ = After(at, detail::QueueRecordSize(len));
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
      if (pos >= tail) break;  // (tail may lag a dead producer)
      int rc = detail::QueueRecordAt(ring_, cap_, pos, &at, &len);
      // Below tail every header is published: zero there is damage too.
      if (rc <= 0 || at + detail::QueueRecordSize(len) > tail) {
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

  // Records published past the stored tail (shmc addition, for checks): a
  // producer killed between publishing records and storing tail leaves
  // some; the next producer continues after them. The count, or -1 when
  // the word at tail is neither zero nor a chain of whole records (damage:
  // the consumer would stop or misread there; *bad_pos says where).
  int64_t PublishedPastTail(uint64_t* bad_pos = nullptr) const {
    if (hdr_ == nullptr) return 0;
    int64_t n = 0;
    uint64_t end = 0;
    // A live producer and consumer may move while the walk runs: an odd
    // header counts only if neither position moved meanwhile.
    for (int tries = 0; tries < 3; ++tries) {
      uint64_t head = hdr_->head.load(std::memory_order_acquire);
      uint64_t tail = hdr_->tail.load(std::memory_order_acquire);
      n = WalkPastTail(tail, head, &end);
      if (n >= 0 || (hdr_->head.load(std::memory_order_acquire) == head &&
                     hdr_->tail.load(std::memory_order_acquire) == tail)) {
        break;
      }
    }
    if (n < 0 && bad_pos != nullptr) *bad_pos = end;
    return n;
  }

  // Statistics any process can read (shmc additions).
  uint64_t pushed() const { return Load(&detail::QueueHeader::pushed); }
  uint64_t popped() const { return Load(&detail::QueueHeader::popped); }
  uint64_t full_spins() const { return Load(&detail::QueueHeader::full_spins); }
  // The most bytes ever in use (records, pads and the record being
  // pushed), as the producer measured them when it read the consumer's
  // position. It reads it whenever the bytes pushed since could exceed the
  // mark by more than capacity / 16 (and when the ring looks full), not at
  // every push, so a peak is seen to within capacity / 16 bytes below it;
  // the bytes in use now raise the answer too.
  uint64_t high_water() const {
    uint64_t mark = Load(&detail::QueueHeader::high_water);
    uint64_t now = used_bytes();
    return now > mark ? now : mark;
  }
  uint64_t used_bytes() const {
    if (hdr_ == nullptr) return 0;
    uint64_t tail = hdr_->tail.load(std::memory_order_acquire);
    uint64_t head = hdr_->head.load(std::memory_order_acquire);
    return tail > head ? tail - head : 0;  // tail may lag a dead producer
  }
  size_t capacity() const { return cap_; }
  const Error& last_error() const { return error_; }

  // How many bytes past its tail the producer claims a line for writing
  // (prefetchw) before writing there (shmc addition). Set after
  // InitForWrite, which sets the default: 2 KiB, or a quarter of a ring
  // smaller than 8 KiB. 0 turns the claim off; more than half the ring is
  // cut to half. It lives in this handle only, not in the segment. Whether
  // the claim helps depends on the machine (the git history of
  // bench/RESULTS.md: Push/Pop faster with it on an Intel guest; on an AMD
  // guest slower in one phase, no different in another); `queue_bench
  // --write-ahead B` measures it.
  void SetWriteAhead(uint64_t bytes) {
    write_ahead_ = detail::WriteAheadWithin(bytes, cap_);
  }
  uint64_t write_ahead() const { return write_ahead_; }

 private:
  static constexpr size_t kNone = ~size_t{0};
  static constexpr uint64_t kRingOffset =
      sizeof(detail::SegmentHeader) + sizeof(detail::QueueHeader);
  static constexpr const char* kCapacityParam = "capacity";

  static detail::SegmentSpec Spec(uint64_t cap) {
    return detail::SegmentSpec::Geometry(detail::ContainerKind::kQueue,
                                         kLayoutVersion, kRingOffset,
                                         kRingOffset + cap,
                                         {{kCapacityParam, cap}});
  }

  bool Bind(uint64_t cap, const char* who) {
    cap_ = cap;
    mask_ = cap - 1;
    write_ahead_ = detail::WriteAheadBytes(cap);
    hdr_ = reinterpret_cast<detail::QueueHeader*>(
        seg_.base() + sizeof(detail::SegmentHeader));
    ring_ = seg_.base() + kRingOffset;
    tail_ = hdr_->tail.load(std::memory_order_acquire);
    head_ = hdr_->head.load(std::memory_order_acquire);
    cached_head_ = head_;
    pushed_.Bind(&hdr_->pushed);
    full_spins_.Bind(&hdr_->full_spins);
    high_water_.Bind(&hdr_->high_water);
    popped_.Bind(&hdr_->popped);
    SetRoom();
    // A producer that died before storing tail may have been overtaken by
    // the consumer: head up to a ring ahead of tail is possible, and such
    // a tail is behind published records, which the producer walks over.
    bool lagging = head_ > tail_ && head_ - tail_ <= cap_;
    if ((!lagging && tail_ - head_ > cap_) || (tail_ & 7) != 0 ||
        (head_ & 7) != 0) {
      detail::Segment<Alloc>::Fail(&error_, ErrorCode::kCorrupted, 0,
                                   seg_.key(), who,
                                   "head %llu / tail %llu impossible",
                                   static_cast<unsigned long long>(head_),
                                   static_cast<unsigned long long>(tail_));
      Unbind();
      return false;
    }
    if (producer_ && !CatchUpTail(head_, who)) {
      Unbind();
      return false;
    }
    return true;
  }

  // A refused segment leaves the handle in no role with nothing mapped:
  // every call on it then answers as on a handle never initialized.
  void Unbind() {
    hdr_ = nullptr;
    ring_ = nullptr;
    producer_ = consumer_ = resync_ = inspector_ = false;
    seg_.Reset();
  }

  // Push's other cases: a pad before the record, a full-looking ring, a
  // shared producer, a handle that is not the producer.
  __attribute__((noinline)) bool PushSlow(const void* buf, size_t len) {
    if (resync_ && !Resync()) return false;
    if (!Append(buf, len)) return false;
    Release(1);
    return true;
  }

  // Producers that share the queue (kSharedWriters: they serialize their
  // pushes themselves, with a lock or by taking turns after fork) each hold
  // a handle with its own cached tail and counters: before each push,
  // reload them from the segment, where the last producer left them.
  bool Resync() {
    if (hdr_ == nullptr) return false;
    tail_ = hdr_->tail.load(std::memory_order_acquire);
    cached_head_ = hdr_->head.load(std::memory_order_acquire);
    pushed_.Bind(&hdr_->pushed);
    full_spins_.Bind(&hdr_->full_spins);
    high_water_.Bind(&hdr_->high_water);
    SetRoom();
    return CatchUpTail(cached_head_, "ShmQueue::Push");
  }

  // A producer killed after publishing records by their headers and before
  // storing tail left tail behind them: walks forward over published
  // headers (at most one batch) to the zero word that ends them, and stores
  // that as tail, so nothing published is overwritten.
  bool CatchUpTail(uint64_t head, const char* who) {
    uint64_t pos = 0;
    if (WalkPastTail(tail_, head, &pos) < 0) {
      detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kCorrupted, 0, seg_.key(), who,
          "impossible record header at position %llu (tail %llu)",
          static_cast<unsigned long long>(pos),
          static_cast<unsigned long long>(tail_));
      return false;
    }
    if (pos != tail_) {
      tail_ = pos;
      hdr_->tail.store(pos, std::memory_order_release);
    }
    return true;
  }

  // Walks from max(tail, head) over published headers to the zero word that
  // ends them (*end); returns how many records it passed, or -1 at an
  // impossible header or a chain longer than the ring (*end: where).
  int64_t WalkPastTail(uint64_t tail, uint64_t head, uint64_t* end) const {
    uint64_t pos = tail < head ? head : tail;
    int64_t n = 0;
    for (;;) {
      uint64_t at = 0;
      uint32_t len = 0;
      *end = pos;
      int rc = detail::QueueRecordAt(ring_, cap_, pos, &at, &len);
      if (rc == 0) return n;
      uint64_t next = at + detail::QueueRecordSize(len);
      if (rc < 0 || next + 8 - head > cap_) return -1;
      pos = next;
      ++n;
    }
  }

  bool AttachExisting(const std::string& shm_key, bool consumer,
                      const char* who) {
    error_.Clear();
    if (!seg_.OpenForRead(shm_key, Spec(0), consumer, who, &error_)) {
      return false;
    }
    uint64_t cap = seg_.param(kCapacityParam);
    if (!seg_.AcceptGeometry(
            detail::ValidRingCapacity(cap, kMinBytes, detail::kMaxRingBytes),
            Spec(cap).total_size, "capacity", who, &error_)) {
      return false;
    }
    producer_ = false;
    consumer_ = consumer;
    inspector_ = !consumer;
    return Bind(cap, who);
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

  // True when `bytes` more fit after position `tail`, with the zero word
  // after them. The cached head answers while they stay within room_.
  bool Room(uint64_t tail, uint64_t bytes) {
    if (tail + bytes - cached_head_ <= room_) return true;
    return RoomFromHead(tail, bytes);
  }
  // Reads the consumer's position: answers Room exactly, and measures the
  // bytes in use for the high-water mark (which a cached head, up to a
  // ring behind, would overstate).
  __attribute__((noinline)) bool RoomFromHead(uint64_t tail, uint64_t bytes) {
    // SYNC POINT (acquire): pairs with the consumer's release of head; the
    // space before it is no longer read.
    cached_head_ = hdr_->head.load(std::memory_order_acquire);
    uint64_t used = tail + bytes - cached_head_;
    if (used > cap_ - 8) {
      full_spins_.Add(1);
      high_water_.Max(tail - cached_head_);  // what a full ring holds
      return false;
    }
    high_water_.Max(used);
    SetRoom();
    return true;
  }
  // room_: how far past the cached head the producer fills before it reads
  // head again. Less than the ring by the zero word after the last record,
  // and at most capacity / 16 past the high-water mark, so that a new peak
  // is measured to within that.
  void SetRoom() {
    uint64_t limit = high_water_.value() + cap_ / 16;
    room_ = limit < cap_ - 8 ? limit : cap_ - 8;
  }

  // Where a record of `len` bytes goes at position `tail`: *pad, the pad
  // record before it (0 when it fits before the ring's end), and *need,
  // its size with its header. False when it is longer than half the ring
  // or there is no room for the pad, the record and the zeroed header word
  // after it. Always inlined: a call in PushBatch's loop costs each record
  // the call's stores (measured: batches slower).
  __attribute__((always_inline)) bool Place(uint64_t tail, size_t len,
                                            uint64_t* pad, uint64_t* need) {
    if (len > cap_ / 2) return false;
    uint64_t off = tail & mask_;
    Claim(off);
    *need = detail::QueueRecordSize(len);
    *pad = cap_ - off < *need ? cap_ - off : 0;
    return Room(tail, *pad + *need);
  }

  // The consumer read the ring's lines last: claiming the line
  // write_ahead_ bytes past ring offset `off` early keeps the writes from
  // waiting for the consumer's copy to be invalidated. Unconditional: in a
  // ring over three quarters full the line is one the consumer has yet to
  // read, which then comes back from this core's cache; skipping those
  // lines measured far slower (the git history of bench/RESULTS.md).
  // write_ahead_ == 0: no claim.
  void Claim(uint64_t off) {
    if (write_ahead_ != 0) {
      detail::PrefetchLineForWrite(ring_ + ((off + write_ahead_) & mask_));
    }
  }

  // Writes a record's data after its header word at ring offset `rec`,
  // and the zero word after it (ZeroNext).
  void Write(char* ring, uint64_t rec, const void* buf, size_t len,
             uint64_t size) {
    detail::CopyBytes(ring + rec + 8, buf, len);
    ZeroNext(ring, rec, size);
  }

  // A data record written but not yet visible: where its header goes, and
  // the pad before it (pad == 0: none). Reveal stores them.
  struct Held {
    uint64_t rec = 0, len = 0, pad_off = 0, pad = 0;
  };

  // Writes a record of `len` bytes from buf at the tail (after a pad record
  // if it must wrap), publishes it and moves tail_ past it; tail itself is
  // stored by Release.
  // False when it does not fit. Works in locals and stores state once:
  // the ring writes go through char*, which may alias any member, so
  // state kept in members would be stored and reloaded around each write.
  bool Append(const void* buf, size_t len) {
    if (!producer_) return false;
    uint64_t tail = tail_;
    uint64_t pad = 0, need = 0;
    if (!Place(tail, len, &pad, &need)) return false;
    uint64_t off = tail & mask_;
    char* ring = ring_;
    uint64_t rec = pad > 0 ? 0 : off;
    Write(ring, rec, buf, len, need);
    Reveal(Held{rec, len, off, pad});
    tail_ = tail + pad + need;
    prepared_len_ = kNone;  // voids a zero-copy reservation not committed
    return true;
  }

  // Zeroes the header word after the record at ring offset `rec` (`size`
  // bytes with its header), where the next record will go; the record's
  // header, stored after this, publishes the zero with it.
  void ZeroNext(char* ring, uint64_t rec, uint64_t size) {
    detail::StoreWord(ring + ((rec + size) & mask_), 0, false);
  }

  // Publishes a written record: its header, then the pad before it (a
  // consumer that passes the pad must find the record published).
  void Reveal(const Held& h) {
    detail::StoreQueueHeader(ring_ + h.rec, h.len, detail::kQueueData);
    if (h.pad > 0) detail::StoreQueueHeader(ring_ + h.pad_off, h.pad - 8, detail::kQueuePad);
  }

  // Stores tail (release: Peek and the next producer read it), after the
  // records it covers were published by their headers.
  void Release(uint64_t records) {
    hdr_->tail.store(tail_, std::memory_order_release);
    pushed_.Add(records);
  }

  // Commits the zero-copy record of `len` bytes prepared at `pos`.
  void Publish(uint64_t pos, size_t len) {
    uint64_t size = detail::QueueRecordSize(len);
    ZeroNext(ring_, pos & mask_, size);
    Reveal(Held{pos & mask_, len, tail_ & mask_, prepared_pad_});
    tail_ = pos + size;
    prepared_len_ = kNone;
    Release(1);
  }

  // The head record: its position (after any pad) and length; false when
  // the queue is empty, this is not the consumer, or the record is damaged
  // (last_error() says so). Changes no state.
  bool Front(uint64_t* at, uint32_t* len) {
    if (!consumer_ || hdr_ == nullptr) return false;
    int rc = detail::QueueRecordAt(ring_, cap_, head_, at, len);
    if (rc < 0) BadRecord(*at);
    return rc > 0;
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

  // The position after the record at `at` of `size` bytes. The next
  // header's address would wait for this header's load (a line coming
  // from the producer's core) if computed from `size`; computed from the
  // last record's size, and checked by a branch, it does not, so the
  // core requests the next records' lines while this one's is on its way
  // (records of one size in a row: Push/Pop about 8% faster,
  // bench/NOTES.md). The empty asm statements hide that the two are
  // equal, which would let the compiler use `size` again.
  uint64_t After(uint64_t at, uint64_t size) {
    uint64_t guess = at + last_size_;
    asm("" : "+r"(guess));
    if (__builtin_expect(guess == at + size, 1)) {
      asm("" : "+r"(guess));
      return guess;
    }
    last_size_ = size;
    return at + size;
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::QueueHeader* hdr_ = nullptr;
  char* ring_ = nullptr;
  uint64_t cap_ = 0, mask_ = 0;
  uint64_t write_ahead_ = 0;  // how far ahead Place claims a line; 0: none
  bool producer_ = false;
  bool consumer_ = false;  // pops: InitForRead, or the producer of ANON/HEAP
  bool resync_ = false;     // kSharedWriters: producers take turns
  bool inspector_ = false;  // InitForInspect: read-only, no role
  // producer state
  uint64_t tail_ = 0, cached_head_ = 0;
  uint64_t room_ = 0;  // see SetRoom
  detail::OwnedCounter pushed_, full_spins_, high_water_;
  uint64_t prepared_pos_ = 0, prepared_pad_ = 0;
  size_t prepared_len_ = kNone;
  // consumer state
  uint64_t head_ = 0, popped_size_ = 0, popped_at_ = 0;
  uint64_t last_size_ = 0;  // the last record's size, for After
  detail::OwnedCounter popped_;
};

}  // namespace shmc
