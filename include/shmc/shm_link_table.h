// ShmLinkTable<Alloc>: variable-length values ("link bufs") stored as chains
// of fixed-size nodes in a shared-memory pool. One writer, any number of
// readers; the writer may be killed at any instruction.
//
// Usage (most code wants ShmHashMap, which keys these values):
//   shmc::ShmLinkTable<shmc::POSIX> t;
//   t.InitForWrite("/values", 56, 100000);  // 56 data bytes a node
//   auto lb = t.New(data, len);             // a handle; falsy when full
//   // store lb (a 64-bit value) where readers find it, then:
//   std::string v;
//   t.Read(lb, &v);                         // any process, InitForRead
//   t.Free(lb);                             // the writer, when done
//
// Layout (docs/layout/link_table.md):
//   [SegmentHeader 512][LinkTableHeader 256: free list, counters, intent]
//   [node 0 (unused: index 0 means "none")][node 1]...[node N]
//   node = LinkNodeHead (16 bytes) + data words (node_size rounded up to 8)
//
// A value is a chain of nodes, all carrying the value's tag (a 31-bit
// sequence number), the head node also kLinkHeadFlag and the length. Its
// handle is link_buf_t {head, tag}. Readers copy the data word by word and
// check each node's tag before and after copying (a seqlock per node): a
// node freed or reused meanwhile fails the check, so a read returns the
// value whole or fails, never torn (docs/memory-ordering.md).
//
// Crash safety: a new value is written into the first nodes of the free list
// (already linked together), then cut off; a freed value's tags are cleared
// before its nodes are linked back. Each write records its intent in the
// header first; InitForWrite of the next writer finishes or undoes it in
// O(value size) (Recover), so nothing leaks and counters stay right.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "shmc/common_utils.h"
#include "shmc/detail/link_hints.h"
#include "shmc/detail/link_layout.h"
#include "shmc/detail/prefetch.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

#ifdef UNIT_TEST
template <class Alloc>
class ShmLinkTableTest;
#endif

namespace shmc {

// Handle of a link buf: {head node, tag} in one 8-byte word, the head in
// the low half (as the reference lays it out on little-endian machines).
// Assignable, comparable, true when not all zero. The library reads and
// writes it through head_and_tag and the accessors; `m` is the reference's
// view of the two halves, kept for programs (and the reference's tests)
// that name it.
struct link_buf_t {
  // Named outside the union: a type declared inside an anonymous union is
  // a compiler extension (clang -Wpedantic refuses it).
  struct Halves {
    uint32_t head;
    uint32_t tag;
  };
  union {
    uint64_t head_and_tag;
    Halves m;
  };

  link_buf_t() : head_and_tag(0) {}
  link_buf_t(uint32_t h, uint32_t t) : head_and_tag(detail::PackLink(h, t)) {}
  link_buf_t(const link_buf_t& lb) : head_and_tag(lb.head_and_tag) {}
  link_buf_t& operator=(const link_buf_t& lb) {
    head_and_tag = lb.head_and_tag;
    return *this;
  }
  // Copies from volatile storage, as the reference allowed.
  link_buf_t(const volatile link_buf_t& lb)  // NOLINT: implicit, as the reference
      : head_and_tag(lb.head_and_tag) {}
  link_buf_t& operator=(const volatile link_buf_t& lb) {
    head_and_tag = lb.head_and_tag;
    return *this;
  }
  void operator=(const volatile link_buf_t& lb) volatile {
    head_and_tag = lb.head_and_tag;
  }
  bool operator==(const volatile link_buf_t& lb) const volatile {
    return head_and_tag == lb.head_and_tag;
  }
  bool operator!=(const volatile link_buf_t& lb) const volatile {
    return !(*this == lb);
  }
  operator bool() const volatile { return head_and_tag != 0; }  // NOLINT
  uint32_t head() const volatile {
    return static_cast<uint32_t>(head_and_tag);
  }
  uint32_t tag() const volatile {
    return static_cast<uint32_t>(head_and_tag >> 32);
  }
  void clear() volatile { head_and_tag = 0; }
  // shmc additions: the word as stored in a map's index node, and back.
  uint64_t packed() const { return head_and_tag; }
  static link_buf_t Unpack(uint64_t v) {
    link_buf_t lb;
    lb.head_and_tag = v;
    return lb;
  }
};
static_assert(sizeof(link_buf_t) == 8 && alignof(link_buf_t) == 8,
              "link_buf_t is one 8-byte word");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "link_buf_t::m puts the head in the low half of the word");

template <class Alloc>
class ShmLinkTable;

namespace detail {

// Geometry params of a link table's header.
constexpr const char* kLinkParamDataWords = "data_words";
constexpr const char* kLinkParamNodeNum = "node_num";

// Recovery's way from a slot id (index slot + 1; 0 names none) to the
// handle word a map operation was writing.
using LinkSlotResolver = std::function<std::atomic<uint64_t>*(uint64_t)>;

// The write protocol a map runs over its link table: not part of the
// public API (a value published without an index slot would leak).
// ShmHashMap uses it, and so does `shmc check --fix` on a map.
template <class Alloc>
struct LinkTableWriter {
  using Links = ShmLinkTable<Alloc>;
  static bool InitForWrite(Links& lt, const std::string& shm_key,
                           size_t node_size, size_t node_num,
                           const LinkSlotResolver* resolve,
                           bool repair = false) {
    return lt.InitForWriteImpl(shm_key, node_size, node_num, resolve, repair);
  }
  static bool Publish(Links& lt, std::atomic<uint64_t>* slot,
                      uint64_t slot_id, link_buf_t old, const void* buf,
                      size_t size) {
    return lt.PublishValue(slot, slot_id, old, buf, size);
  }
  static bool Erase(Links& lt, std::atomic<uint64_t>* slot, uint64_t slot_id,
                    link_buf_t old) {
    return lt.EraseValue(slot, slot_id, old);
  }
  static bool Recover(Links& lt, const LinkSlotResolver* resolve) {
    return lt.Recover(resolve);
  }
};

}  // namespace detail

template <class Alloc = SVIPC>
class ShmLinkTable {
 public:
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr uint64_t kMaxNodes = 0xfffffffeULL;
  static constexpr size_t kMaxValueLen = 0xffffffffULL;

  ShmLinkTable() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmLinkTable);

  // `node_size` data bytes per node, `node_num` nodes. Takes the writer
  // lease (kWriterBusy if another live process holds it) and recovers the
  // operation a crashed writer left half done.
  // Errors: create errors; kWriterBusy; kInvalidArgument for a node size
  // or count out of range; kCorrupted when the interrupted operation's
  // record is damaged (nothing is touched: `shmc check --fix` repairs it).
  bool InitForWrite(const std::string& shm_key, size_t node_size,
                    size_t node_num) {
    return InitForWriteImpl(shm_key, node_size, node_num, nullptr);
  }

  // Attaches an existing table read-only.
  // Errors: attach errors.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmLinkTable::InitForRead";
    if (!seg_.OpenForRead(shm_key, Spec(0, 0), false, who, &error_)) {
      return false;
    }
    uint64_t words = seg_.param(kWordsParam), nodes = seg_.param(kNodesParam);
    bool plausible = words != 0 && words <= (1u << 20) && nodes != 0 &&
                     nodes <= kMaxNodes;
    if (!seg_.AcceptGeometry(plausible, Spec(words, nodes).total_size,
                             "geometry", who, &error_)) {
      return false;
    }
    Bind(words, nodes);
    return true;
  }

  // Stores a copy of buf[0, size) (size may be 0). Empty handle when the
  // pool lacks nodes or the table is not writable.
  link_buf_t New(const void* buf, size_t size) {
    if (!Writable() || size > kMaxValueLen || (size > 0 && buf == nullptr)) {
      return link_buf_t();
    }
    uint32_t n = NodesFor(size);
    if (!Reserve(n) || !FreeListHolds(n, "ShmLinkTable::New")) {
      return link_buf_t();
    }
    link_buf_t lb = BeginNew(detail::kLinkOpNew, 0, link_buf_t(), 0, n,
                             size, 1, 0);
    FillAndDetach(buf, size, n, lb);
    Commit();
    return lb;
  }

  // Copies the value into buf (at most *size bytes; truncating) and sets
  // *size to its full length. False if the handle is stale or invalid (or a
  // concurrent Free of it won). A truncated read visits only the nodes of
  // the bytes it copies: reading a long value's first bytes costs them
  // alone.
  bool Read(link_buf_t lb, void* buf, size_t* size) const {
    if (hdr_ == nullptr || size == nullptr) return false;
    size_t cap = buf == nullptr ? 0 : *size;
    char* out = static_cast<char*>(buf);
    uint32_t len = 0;
    bool ok = Walk(lb, &len, [out, cap](const std::atomic<uint64_t>* words,
                                        size_t offset, size_t n, size_t) {
      if (offset < cap) {
        detail::LoadWords(out + offset, words, std::min(n, cap - offset));
      }
    }, cap);
    if (ok) *size = len;
    return ok;
  }

  bool Read(link_buf_t lb, std::string* out) const {
    if (hdr_ == nullptr || out == nullptr) return false;
    uint32_t len = 0;
    // One pass: sized when the first piece arrives, from the length the
    // walk validated (every piece then ends within it).
    return Walk(lb, &len, [out](const std::atomic<uint64_t>* words,
                                size_t offset, size_t n, size_t total) {
      if (offset == 0) out->resize(total);
      detail::LoadWords(&(*out)[offset], words, n);
    });
  }

  // Copy-free read (shmc addition): `visit(data, n)` sees each piece of the
  // value in place, in order. The bytes may change under the visitor; a
  // false return means the value was freed meanwhile and what the visitor
  // saw must be discarded (retry through the owner of the handle).
  bool Visit(link_buf_t lb,
             const std::function<void(const char*, size_t)>& visit) const {
    if (hdr_ == nullptr) return false;
    uint32_t len = 0;
    return Walk(lb, &len, [&](const std::atomic<uint64_t>* words, size_t,
                              size_t n, size_t) {
      visit(reinterpret_cast<const char*>(words), n);
    });
  }

  // Changes `n` bytes of a live value in place, from byte `offset` on:
  // false, with nothing written, when the handle is stale, the chain does
  // not check out, or the range passes the value's end. Readers of this
  // table cannot tell a value that changes under them (its tags stay):
  // only for a writer whose readers check a sequence of their own
  // (ShmHashMap::Overwrite).
  bool Overwrite(link_buf_t lb, size_t offset, const void* data, size_t n) {
    if (!Writable() || n == 0) return n == 0;
    const uint32_t head = lb.head(), tag = lb.tag();
    if (!Linkable(head) || tag == 0 || (tag & detail::kLinkHeadFlag) ||
        Head(head)->tag.load(std::memory_order_relaxed) !=
            (tag | detail::kLinkHeadFlag)) {
      return false;
    }
    const uint64_t len = Head(head)->len.load(std::memory_order_relaxed);
    const uint64_t cap = words_ * 8;
    if (offset > len || n > len - offset || (len + cap - 1) / cap > nodes_) {
      return false;
    }
    // The chain to the range's last node checked whole, then written: no
    // byte is written unless every node it needs checks out.
    const uint64_t first = offset / cap, last = (offset + n - 1) / cap;
    uint64_t i = head;
    for (uint64_t k = 0; k <= last; ++k) {
      if (!Linkable(i)) return false;
      const uint32_t t = Head(i)->tag.load(std::memory_order_relaxed);
      if (t != (k == 0 ? (tag | detail::kLinkHeadFlag) : tag)) return false;
      i = Head(i)->next.load(std::memory_order_relaxed);
    }
    const auto* src = static_cast<const unsigned char*>(data);
    uint64_t at = offset;  // byte of the value
    i = head;
    for (uint64_t k = 0; k <= last; ++k) {
      if (k >= first) {
        std::atomic<uint64_t>* words = Data(i);
        const uint64_t base = k * cap;
        const uint64_t end = std::min<uint64_t>(base + cap, offset + n);
        detail::PatchWords(words, at - base, src + (at - offset), end - at);
        at = end;
      }
      i = Head(i)->next.load(std::memory_order_relaxed);
    }
    return true;
  }

  // Requests the lines of the value's first node (at most its first 256
  // bytes: the header and 240 bytes of data), for batched readers. Never
  // faults: a stale or invalid handle is ignored.
  void Prefetch(link_buf_t lb) const {
    if (hdr_ == nullptr || !Linkable(lb.head())) return;
    const char* p = reinterpret_cast<const char*>(Head(lb.head()));
    uint64_t bytes = stride_ < 4 * detail::kCacheLine ? stride_
                                                       : 4 * detail::kCacheLine;
    for (uint64_t off = 0; off < bytes; off += detail::kCacheLine) {
      detail::PrefetchLine(p + off);
    }
    detail::PrefetchLine(p + bytes - 1);
  }

  // Returns the value's nodes to the pool.
  bool Free(link_buf_t lb) {
    if (!Writable()) return false;
    uint32_t len = 0;
    if (!HeadLength(lb, &len)) return false;
    uint32_t n = NodesFor(len);
    BeginNew(detail::kLinkOpFree, 0, lb, n, 0, 0, static_cast<uint64_t>(-1),
             len);
    FreeChain(lb, n);
    Commit();
    return true;
  }

  bool Dump(link_buf_t lb) const {
    if (hdr_ == nullptr) return false;
    uint32_t len = 0;
    if (!HeadLength(lb, &len)) {
      detail::Log(kInfo, "ShmLinkTable::Dump: handle {%u, %u} is not live\n",
                  lb.head(), lb.tag());
      return false;
    }
    std::string v;
    bool ok = Read(lb, &v);
    detail::Log(kInfo, "ShmLinkTable::Dump: {%u, %u} len %u nodes %u%s\n",
                lb.head(), lb.tag(), len, NodesFor(len), ok ? "" : " (changed)");
    std::string hex;
    for (size_t i = 0; i < v.size() && i < 256; ++i) {
      char b[4];
      std::snprintf(b, sizeof(b), "%02x", static_cast<unsigned char>(v[i]));
      hex += b;
    }
    detail::Log(kInfo, "  %s%s\n", hex.c_str(), v.size() > 256 ? "..." : "");
    return ok;
  }

  // Calls f for every live value (found by scanning for head nodes).
  bool Travel(std::function<void(link_buf_t)> f) const {
    if (hdr_ == nullptr) return false;
    const uint64_t linked = Linked();
    for (uint64_t i = 1; i <= linked; ++i) {
      uint32_t t = Head(i)->tag.load(std::memory_order_acquire);
      if (t & detail::kLinkHeadFlag) {
        f(link_buf_t(static_cast<uint32_t>(i), t & ~detail::kLinkHeadFlag));
      }
    }
    return true;
  }

  struct HealthStat {
    size_t total_free_nodes;
    size_t total_link_bufs;
    size_t total_link_buf_bytes;
    size_t leaked_nodes;
    size_t recycled_leaked_nodes;
    size_t bad_linked_link_bufs;
    size_t too_long_link_bufs;
    size_t too_short_link_bufs;
    size_t cleared_link_bufs;
    // shmc additions
    size_t bad_free_list;       // 1 if the free list was broken
    size_t counter_mismatches;  // header counters that disagreed
  };

  // Full scan: checks every chain and the free list. A value whose chain
  // breaks (a node out of range, shared, or with another tag) is
  // bad-linked; one whose chain ends before its length is covered is too
  // short; with auto_fix both are cleared and their nodes go back to the
  // pool. A chain longer than its length needs still reads whole: it is
  // counted as too long and kept, and auto_fix returns the surplus nodes.
  // Nodes neither free nor in a value are leaked (auto_fix recycles them).
  // auto_fix also rebuilds a broken free list and corrects the counters.
  // Writer only when auto_fix is set.
  bool HealthCheck(HealthStat* hs, bool auto_fix);

  // Nodes no value holds: those on the free list and, in a table that
  // grows in steps, those not reserved yet.
  size_t free_nodes() const {
    return hdr_ ? hdr_->free_nodes.load(std::memory_order_relaxed) +
                      (nodes_ - Linked())
                : 0;
  }
  size_t total_nodes() const { return nodes_; }
  // shmc addition: the nodes whose memory the table has reserved (all of
  // them unless it was made with kGrowInSteps), and the bytes they span
  // from the segment's start.
  size_t reserved_nodes() const { return hdr_ ? Linked() : 0; }
  uint64_t reserved_bytes() const {
    return hdr_ ? kNodesOffset + (Linked() + 1) * stride_ : 0;
  }

  // shmc addition (writer): makes sure `n` nodes are on the free list,
  // reserving further steps of a table made with kGrowInSteps. False when
  // the pool lacks them, or (kNoSpace in last_error()) when the system
  // cannot reserve the memory: nothing is changed then.
  bool Reserve(uint64_t n) {
    if (!Writable()) return false;
    if (n <= hdr_->free_nodes.load(std::memory_order_relaxed)) return true;
    return Extend(n);
  }
  size_t link_bufs() const {
    return hdr_ ? hdr_->bufs.load(std::memory_order_relaxed) : 0;
  }
  size_t link_buf_bytes() const {
    return hdr_ ? hdr_->buf_bytes.load(std::memory_order_relaxed) : 0;
  }
  // Data bytes one node holds.
  size_t node_capacity() const { return words_ * 8; }
  const Error& last_error() const { return error_; }
  bool is_initialized() const { return hdr_ != nullptr; }
  bool Sync() { return seg_.Sync(); }

  // Bytes one node of `node_size` data bytes takes in the segment: its
  // head (chain link, tag, length) and its data words.
  static constexpr uint64_t NodeCost(uint64_t node_size) {
    return sizeof(detail::LinkNodeHead) + (node_size + 7) / 8 * 8;
  }

  // Whether `lb` names a live value's head, and its length (false: not a
  // head of this pool, or it changed).
  bool HeadLength(link_buf_t lb, uint32_t* len) const;
  // Nodes a value of `len` bytes takes.
  uint32_t NodesFor(size_t len) const {
    uint64_t cap = words_ * 8;
    uint64_t n = (len + cap - 1) / cap;
    return static_cast<uint32_t>(n == 0 ? 1 : n);
  }

 private:
  // The map-facing write protocol, reached through detail::LinkTableWriter
  // (ShmHashMap and the `shmc` tool), never by applications.
  template <class>
  friend struct detail::LinkTableWriter;
  using SlotResolver = detail::LinkSlotResolver;
  // `repair`: a damaged intent record is discarded (logged) instead of
  // failing the call, for a tool that runs HealthCheck(auto_fix) next.
  bool InitForWriteImpl(const std::string& shm_key, size_t node_size,
                        size_t node_num, const SlotResolver* resolve,
                        bool repair = false);
  // Map write: new value `buf` goes to `slot` (index+1 in `slot_id`),
  // replacing `old` (empty handle: insert). The caller has written the key.
  bool PublishValue(std::atomic<uint64_t>* slot, uint64_t slot_id,
                    link_buf_t old, const void* buf, size_t size);
  // Map erase: clears `slot` (holding `old`), then frees `old`.
  bool EraseValue(std::atomic<uint64_t>* slot, uint64_t slot_id,
                  link_buf_t old);
  // Recovers a half-done operation; map ops need `resolve`. False (and
  // last_error() kCorrupted naming the field) when the intent record holds
  // values out of range: nothing is touched then.
  bool Recover(const SlotResolver* resolve);

 private:
  static constexpr const char* kWordsParam = detail::kLinkParamDataWords;
  static constexpr const char* kNodesParam = detail::kLinkParamNodeNum;
  static constexpr uint64_t kNodesOffset =
      sizeof(detail::SegmentHeader) + sizeof(detail::LinkTableHeader);

  static detail::SegmentSpec Spec(uint64_t words, uint64_t nodes) {
    return detail::SegmentSpec::Geometry(
        detail::ContainerKind::kLinkTable, kLayoutVersion, kNodesOffset,
        kNodesOffset + (nodes + 1) * NodeCost(words * 8),
        {{kWordsParam, words}, {kNodesParam, nodes}});
  }

  void Bind(uint64_t words, uint64_t nodes) {
    words_ = words;
    nodes_ = nodes;
    stride_ = NodeCost(words * 8);
    hdr_ = reinterpret_cast<detail::LinkTableHeader*>(
        seg_.base() + sizeof(detail::SegmentHeader));
    base_ = seg_.base() + kNodesOffset;
    seen_.store(Linked(), std::memory_order_relaxed);
  }

  // The nodes of `stride` the next growth step (kGrowInSteps) links when
  // `linked` are linked: the first step is kFirstStepBytes, each next one
  // as large as the pool linked so far, up to kStepBytes. A small pool
  // (a script cache) holds little; a large one steps 2 MiB at a time
  // after a few doublings.
  static uint64_t StepNodes(uint64_t stride, uint64_t linked) {
    const uint64_t bytes =
        std::min(kStepBytes, std::max(kFirstStepBytes, linked * stride));
    return std::max<uint64_t>(1, bytes / stride);
  }
  static constexpr uint64_t kFirstStepBytes = uint64_t{64} << 10;
  static constexpr uint64_t kStepBytes = uint64_t{2} << 20;

  // Nodes 1 .. Linked() have been linked (and their memory reserved); the
  // count of the others is checked, damage reading as none linked past
  // the first node.
  uint64_t Linked() const {
    uint64_t u = hdr_->unlinked.load(std::memory_order_acquire);
    return u >= nodes_ ? 1 : nodes_ - u;
  }
  // Whether node i is one that may be read: 1 .. Linked(). The linked
  // count only grows, so the last one seen answers most checks; past it,
  // the header is read again.
  bool Linkable(uint64_t i) const {
    if (__builtin_expect(i - 1 < seen_.load(std::memory_order_relaxed), 1)) {
      return true;
    }
    return LinkableSlow(i);
  }
  __attribute__((noinline)) bool LinkableSlow(uint64_t i) const {
    if (i == 0 || hdr_ == nullptr) return false;
    uint64_t l = Linked();
    seen_.store(l, std::memory_order_relaxed);
    return i <= l;
  }

  // Links the pool's next unlinked nodes onto the free list, a step (or
  // what `n` free nodes need) at a time, each reserved first.
  bool Extend(uint64_t n);
  // Links nodes first .. first + count - 1 into a list ahead of `rest`,
  // makes it the free list and counts the nodes linked. Idempotent while
  // no value took one of them (recovery runs it again).
  void LinkStep(uint64_t first, uint64_t count, uint32_t rest);

  bool Writable() const { return hdr_ != nullptr && !seg_.read_only(); }

  bool IntentIsSane(const char* who);

  // Whether the first n nodes of the free list, and the node after them,
  // are nodes of this pool: a write follows those links, so a damaged link
  // must stop it before it writes anywhere (kCorrupted, naming the link).
  bool FreeListHolds(uint32_t n, const char* who) {
    uint64_t i = hdr_->free_head.load(std::memory_order_relaxed);
    const uint64_t linked = Linked();
    for (uint32_t k = 0; k <= n; ++k) {
      bool end_ok = k == n && i == 0;  // the list may end right after them
      if (!end_ok && (i == 0 || i > linked)) {
        return detail::Segment<Alloc>::Fail(
            &error_, ErrorCode::kCorrupted, 0, seg_.key(), who,
            "free list damaged: link %u of it is %llu, not a node of 1..%llu "
            "(`shmc check --fix` rebuilds it)",
            k, static_cast<unsigned long long>(i),
            static_cast<unsigned long long>(linked));
      }
      if (k < n) i = Head(i)->next.load(std::memory_order_relaxed);
    }
    return true;
  }

  detail::LinkNodeHead* Head(uint64_t i) const {
    return reinterpret_cast<detail::LinkNodeHead*>(base_ + i * stride_);
  }
  std::atomic<uint64_t>* Data(uint64_t i) const { return DataOf(Head(i)); }
  // A node's data words start right after its 16-byte head.
  static std::atomic<uint64_t>* DataOf(const detail::LinkNodeHead* h) {
    return reinterpret_cast<std::atomic<uint64_t>*>(
        const_cast<detail::LinkNodeHead*>(h) + 1);
  }

  // Walks a value, calling sink(words, offset, n, len) per node (len: the
  // value's whole length, offset + n <= len); validates every node's tag
  // before and after (seqlock). False on any mismatch.
  // A value of one node (the common case) is read here, inline in the
  // reader: a call and the chain loop around a read of one node cost a map
  // Find 13-14% of its time, and a std::string Find 24-27% (three paired
  // runs, bench/RESULTS.md). Readers' sinks capture by value, so that the
  // inline path holds them in registers.
  // With `limit`, a chain's nodes past its first `limit` bytes are not
  // visited (the first node always is).
  template <class Sink>
  __attribute__((always_inline)) bool Walk(
      link_buf_t lb, uint32_t* len_out, const Sink& sink,
      uint64_t limit = ~uint64_t{0}) const {
    const uint32_t head = lb.head(), tag = lb.tag();
    if (!Linkable(head) || tag == 0 || (tag & detail::kLinkHeadFlag)) {
      return false;
    }
    const uint32_t want = tag | detail::kLinkHeadFlag;
    // The node's address is taken once, before the acquire load: after it
    // the compiler must reload base_ and stride_ (bench/RESULTS.md).
    const detail::LinkNodeHead* h = Head(head);
    // SYNC POINT (acquire): pairs with the release store of the tag in
    // FillAndDetach; the data read after it is the value's.
    if (h->tag.load(std::memory_order_acquire) != want) return false;
    const uint32_t len = h->len.load(std::memory_order_relaxed);
    if (__builtin_expect(len > words_ * 8, 0)) {
      // A copy, so that this sink's address never escapes into the call:
      // the inline path then keeps it, and what it captured, in registers.
      return WalkChain(lb, len, len_out, Sink(sink), limit);
    }
    sink(DataOf(h), 0, len, len);
    // Seqlock check, as WalkChain does for each node.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (h->tag.load(std::memory_order_relaxed) != want) return false;
    *len_out = len;
    return true;
  }

  // Walk for a value longer than one node: `len` was read from the head
  // node after its tag matched (acquire), and is checked again with it.
  template <class Sink>
  __attribute__((noinline)) bool WalkChain(link_buf_t lb, uint32_t len,
                                           uint32_t* len_out,
                                           const Sink& sink,
                                           uint64_t limit) const {
    const uint64_t cap = words_ * 8;
    const uint64_t all = (len + cap - 1) / cap;
    if (all > nodes_) return false;
    // The nodes that hold the first `limit` bytes (at least the head).
    const uint64_t n =
        std::max<uint64_t>(1, std::min(all, limit / cap + (limit % cap != 0)));
    uint64_t i = lb.head();
    uint32_t want = lb.tag() | detail::kLinkHeadFlag;
    uint64_t offset = 0;
    for (uint64_t k = 0; k < n; ++k) {
      if (k % detail::kChainHintBlock == 0 && Linkable(i)) {
        // The block as the writer laid it out (its hints follow that), of
        // which the first n - k nodes are wanted.
        ReadAhead(static_cast<uint32_t>(i),
                  static_cast<uint32_t>(std::min<uint64_t>(
                      all - k, detail::kChainHintBlock)),
                  static_cast<uint32_t>(std::min<uint64_t>(
                      n - k, detail::kChainHintBlock)));
      }
      if (k > 0) {
        if (!Linkable(i) ||
            Head(i)->tag.load(std::memory_order_acquire) != lb.tag()) {
          return false;
        }
        want = lb.tag();
      }
      uint64_t piece = std::min<uint64_t>(cap, len - offset);
      sink(Data(i), offset, piece, len);
      uint32_t next = Head(i)->next.load(std::memory_order_relaxed);
      // Seqlock check: the tag is unchanged after the copy, so the data,
      // the length and the link were the value's (pairs with the release
      // fence in FreeChain).
      std::atomic_thread_fence(std::memory_order_acquire);
      if (Head(i)->tag.load(std::memory_order_relaxed) != want) return false;
      offset += piece;
      i = next;
    }
    *len_out = len;
    return true;
  }

  // Requests the cache lines of the first `need` nodes of a chain block of
  // m nodes that starts at node `first`, learning them by links and hints
  // together: about log2(m) rounds of parallel accesses where the links
  // alone take m in a row. Reads nothing it trusts: the walk that follows
  // checks every link and tag. Every index is checked against the pool
  // before its address is formed.
  void ReadAhead(uint32_t first, uint32_t m, uint32_t need) const {
    if (m < 3 || need < 3) return;  // no hints to follow
    const uint8_t* to = detail::ChainHints().to[m];
    uint32_t index[detail::kChainHintBlock];
    uint8_t queue[detail::kChainHintBlock];
    std::memset(index, 0, m * sizeof(index[0]));
    uint32_t head = 0, tail = 0;
    auto learn = [&](uint32_t p, uint32_t node) {
      if (p < need && index[p] == 0 && Linkable(node)) {
        index[p] = node;
        const char* a = reinterpret_cast<const char*>(Head(node));
        __builtin_prefetch(a);
        __builtin_prefetch(a + stride_ - 1);
        queue[tail++] = static_cast<uint8_t>(p);
      }
    };
    learn(0, first);
    while (head < tail) {
      uint32_t p = queue[head++];
      const detail::LinkNodeHead* h = Head(index[p]);
      learn(p + 1, h->next.load(std::memory_order_relaxed));
      if (to[p] != 0) learn(to[p], h->hint.load(std::memory_order_relaxed));
    }
  }

  uint32_t NextTag() {
    uint32_t t = hdr_->next_tag.load(std::memory_order_relaxed);
    uint32_t next = (t + 1) & ~detail::kLinkHeadFlag;
    if (next == 0) next = 1;
    hdr_->next_tag.store(next, std::memory_order_relaxed);
    return t == 0 ? 1 : t;
  }

  // Records the intent of an operation (everything before `op`, which is
  // stored last with release). `bufs_delta` is +1/0/-1 (as uint64).
  link_buf_t BeginNew(uint32_t op, uint64_t slot, link_buf_t old,
                      uint32_t old_nodes, uint32_t new_nodes, size_t new_len,
                      uint64_t bufs_delta, size_t old_len) {
    link_buf_t lb;
    if (new_nodes > 0) {
      lb = link_buf_t(hdr_->free_head.load(std::memory_order_relaxed),
                      NextTag());
    }
    const uint64_t pf = hdr_->free_nodes.load(std::memory_order_relaxed);
    RecordIntent(op, slot, lb, old, new_nodes, old_nodes, 0,
                 pf - new_nodes + old_nodes, bufs_delta, new_len - old_len);
    SHMC_CRASH_POINT(1);
    return lb;
  }

  // Writes the intent record's fields, then `op` (release). After the
  // operation `free_after` nodes are free, and the value count and bytes
  // move by bufs_delta and bytes_delta (modulo 2^64). New values and
  // growth steps both record through here.
  void RecordIntent(uint32_t op, uint64_t slot, link_buf_t new_lb,
                    link_buf_t old_lb, uint32_t new_nodes, uint32_t old_nodes,
                    uint32_t cut_next, uint64_t free_after,
                    uint64_t bufs_delta, uint64_t bytes_delta) {
    detail::LinkIntent& in = hdr_->intent;
    const auto o = std::memory_order_relaxed;
    const uint64_t pf = hdr_->free_nodes.load(o);
    const uint64_t pb = hdr_->bufs.load(o);
    const uint64_t py = hdr_->buf_bytes.load(o);
    in.slot.store(slot, o);
    in.new_lb.store(new_lb.packed(), o);
    in.old_lb.store(old_lb.packed(), o);
    in.new_nodes.store(new_nodes, o);
    in.old_nodes.store(old_nodes, o);
    in.cut_next.store(cut_next, o);
    in.step.store(detail::kLinkStepFill, o);
    in.pre_free.store(pf, o);
    in.pre_bufs.store(pb, o);
    in.pre_bytes.store(py, o);
    in.post_free.store(free_after, o);
    in.post_bufs.store(pb + bufs_delta, o);
    in.post_bytes.store(py + bytes_delta, o);
    in.op.store(op, std::memory_order_release);
  }

  void Commit() {
    detail::LinkIntent& in = hdr_->intent;
    SetCounters(true);
    SHMC_CRASH_POINT(9);
    in.op.store(detail::kLinkOpNone, std::memory_order_release);
  }

  void SetCounters(bool post) {
    detail::LinkIntent& in = hdr_->intent;
    auto o = std::memory_order_relaxed;
    hdr_->free_nodes.store(post ? in.post_free.load(o) : in.pre_free.load(o), o);
    hdr_->bufs.store(post ? in.post_bufs.load(o) : in.pre_bufs.load(o), o);
    hdr_->buf_bytes.store(post ? in.post_bytes.load(o) : in.pre_bytes.load(o),
                          o);
  }

  // Writes the value into the first n free nodes (chain lb.head()...), then
  // cuts them off the free list. Nodes are written a block at a time: the
  // block's node indexes are gathered first, so that each node can name its
  // read-ahead hint (shmc/detail/link_hints.h) before it is published.
  void FillAndDetach(const void* buf, size_t size, uint32_t n, link_buf_t lb) {
    const char* src = static_cast<const char*>(buf);
    const detail::ChainHintTable& hints = detail::ChainHints();
    uint64_t cap = words_ * 8;
    uint64_t i = lb.head(), tail = 0;
    size_t left = size;
    uint32_t index[detail::kChainHintBlock];
    for (uint32_t k = 0; k < n;) {
      uint32_t m = std::min<uint32_t>(n - k, detail::kChainHintBlock);
      for (uint32_t p = 0; p < m; ++p) {
        index[p] = static_cast<uint32_t>(i);
        i = Head(i)->next.load(std::memory_order_relaxed);
      }
      for (uint32_t p = 0; p < m; ++p, ++k) {
        detail::LinkNodeHead* h = Head(index[p]);
        size_t piece = left < cap ? left : cap;
        if (piece > 0) detail::StoreWords(DataOf(h), src, piece);
        src += piece;
        left -= piece;
        h->len.store(k == 0 ? static_cast<uint32_t>(size) : 0,
                     std::memory_order_relaxed);
        uint8_t to = hints.to[m][p];
        h->hint.store(to == 0 ? 0 : index[to], std::memory_order_relaxed);
        // SYNC POINT (release): publishes this node's data, length and
        // hint to a reader that acquires the tag (Walk).
        h->tag.store(k == 0 ? lb.tag() | detail::kLinkHeadFlag : lb.tag(),
                     std::memory_order_release);
        SHMC_CRASH_POINT(2);
        tail = index[p];
      }
    }
    detail::LinkIntent& in = hdr_->intent;
    in.cut_next.store(static_cast<uint32_t>(i), std::memory_order_relaxed);
    in.step.store(detail::kLinkStepCut, std::memory_order_release);
    SHMC_CRASH_POINT(3);
    hdr_->free_head.store(static_cast<uint32_t>(i), std::memory_order_release);
    SHMC_CRASH_POINT(4);
    Head(tail)->next.store(0, std::memory_order_release);
    in.step.store(detail::kLinkStepDetached, std::memory_order_release);
    SHMC_CRASH_POINT(5);
  }

  // Returns a value's n nodes to the free list. Idempotent, so recovery can
  // run it again over a half-done free.
  void FreeChain(link_buf_t lb, uint32_t n) {
    if (!Linkable(lb.head())) return;  // checked by callers
    uint64_t i = lb.head(), tail = lb.head();
    for (uint32_t k = 0; k < n && Linkable(i); ++k) {
      Head(i)->tag.store(0, std::memory_order_relaxed);
      tail = i;
      i = Head(i)->next.load(std::memory_order_relaxed);
    }
    // SYNC POINT (release fence): the cleared tags are visible before any
    // later write to these nodes (links now, data on reuse); pairs with the
    // acquire fence in Walk.
    std::atomic_thread_fence(std::memory_order_release);
    SHMC_CRASH_POINT(6);
    uint32_t free_head = hdr_->free_head.load(std::memory_order_relaxed);
    if (free_head == lb.head()) return;  // already linked back
    Head(tail)->next.store(free_head, std::memory_order_relaxed);
    SHMC_CRASH_POINT(7);
    hdr_->free_head.store(lb.head(), std::memory_order_release);
    SHMC_CRASH_POINT(8);
  }

  // Undoes a New whose handle was never published.
  void RollbackNew(link_buf_t lb, uint32_t n, uint32_t step,
                   uint32_t cut_next) {
    if (!Linkable(lb.head())) return;  // checked by callers
    uint64_t i = lb.head(), tail = lb.head();
    for (uint32_t k = 0; k < n && Linkable(i); ++k) {
      Head(i)->tag.store(0, std::memory_order_relaxed);
      tail = i;
      if (k + 1 < n) i = Head(i)->next.load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_release);
    if (step >= detail::kLinkStepCut) {
      Head(tail)->next.store(cut_next, std::memory_order_relaxed);
      hdr_->free_head.store(lb.head(), std::memory_order_release);
    }
  }

#ifdef UNIT_TEST
  // Test hooks (only with -DUNIT_TEST), for the reference's test suite,
  // which allocates and frees single nodes and damages nodes through
  // GetNode to check that HealthCheck finds and fixes the damage. NodeHead
  // is the reference's view of a node's first bytes, laid over
  // detail::LinkNodeHead: `next`, `tag` and, at user_node, the head node's
  // 32-bit length. Writes through it land on the real fields. None of this
  // is crash-safe or safe against readers.
  friend class ::ShmLinkTableTest<Alloc>;
  struct NodeHead {
    uint32_t next;
    uint32_t tag;
    char user_node[8];
  };
  static_assert(sizeof(NodeHead) == sizeof(detail::LinkNodeHead) &&
                    offsetof(NodeHead, tag) ==
                        offsetof(detail::LinkNodeHead, tag) &&
                    offsetof(NodeHead, user_node) ==
                        offsetof(detail::LinkNodeHead, len),
                "NodeHead must lie exactly over LinkNodeHead");
  volatile NodeHead* GetNode(size_t index) {
    if (hdr_ == nullptr || index == 0 || index > nodes_) return nullptr;
    return reinterpret_cast<volatile NodeHead*>(Head(index));
  }
  // Takes the first free node (0 when none), as the reference's allocator.
  uint32_t AllocNode() {
    if (!Writable()) return 0;
    uint32_t n = hdr_->free_head.load(std::memory_order_relaxed);
    if (n == 0 || n > nodes_) return 0;
    hdr_->free_head.store(Head(n)->next.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
    hdr_->free_nodes.fetch_sub(1, std::memory_order_relaxed);
    return n;
  }
  void FreeNode(uint32_t n) {
    if (!Writable() || n == 0 || n > nodes_) return;
    Head(n)->tag.store(0, std::memory_order_relaxed);
    Head(n)->next.store(hdr_->free_head.load(std::memory_order_relaxed),
                        std::memory_order_relaxed);
    hdr_->free_head.store(n, std::memory_order_relaxed);
    hdr_->free_nodes.fetch_add(1, std::memory_order_relaxed);
  }
#endif

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::LinkTableHeader* hdr_ = nullptr;
  char* base_ = nullptr;
  uint64_t words_ = 0;
  uint64_t nodes_ = 0;
  uint64_t stride_ = 0;
  // The most nodes this handle has seen linked (Linkable).
  mutable std::atomic<uint64_t> seen_{0};
};

}  // namespace shmc

#include "shmc/detail/link_table_impl.h"
