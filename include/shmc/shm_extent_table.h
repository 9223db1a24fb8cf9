// ShmExtentTable<Alloc>: a pool of variable-length values for a map (shmc
// addition; docs/layout/extent_table.md), each value whole in one extent:
// a run of 8-byte granules behind a one-word head {tag, size, pad}. Where
// ShmLinkTable chains fixed nodes (a 16-byte head per node, a value
// rounded up to whole nodes), an extent costs its bytes rounded up to 8
// plus 8: a 130-byte value takes 144 bytes, not three 80-byte nodes, and
// a reader copies it in one pass.
//
// One writer (the map's), any number of lock-free readers. Extents tile
// granules 1 .. top-1 at every instant: free ones are on free lists (one
// per exact size up to 4 KiB, one per power of two above), a write takes
// the exact size, else splits the smallest larger free extent, else grows
// the top. A freed extent merges at once with free neighbours on both
// sides (each head marks whether the extent below it is free, and a free
// extent's last word holds its size), and one that reaches the top lowers
// it: free space stays in as few extents as the values between allow.
// Readers check the head's tag before and after their copy (a seqlock per
// value; the neighbour mark is not part of it), and the map checks its
// handle again after that.
//
// Crash safety: each map write records its intent (slot, new tag, old
// handle) before it changes anything; the slot's store is its commit.
// Recovery sees from the slot whether the write took effect, clears the
// tag of the value that lost, and rebuilds the free lists from the
// extents themselves (O(extents), merging neighbouring free extents).
//
// Limits: at most 2^32 - 1 granules (32 GiB) a pool; a value at most
// 1 GiB - 16 bytes. Reserve counts the room above the top only (free
// extents below it are used first, but need not fit a given write).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shmc/common_utils.h"
#include "shmc/detail/extent_layout.h"
#include "shmc/detail/link_layout.h"
#include "shmc/detail/prefetch.h"
#include "shmc/detail/segment.h"
#include "shmc/detail/writer_lease.h"
#include "shmc/shm_link_table.h"

namespace shmc {

template <class Alloc>
class ShmExtentTable;

namespace detail {

// What ShmExtentTable::HealthCheck found.
struct ExtentHealthStat {
  size_t total_free_nodes;  // free granules below the top
  size_t total_link_bufs;   // live values
  size_t total_link_buf_bytes;
  size_t broken_at;         // granule where the tiling breaks, or 0
  size_t bad_free_list;     // 1 if a list held what is not its extent
  size_t counter_mismatches;
  size_t lost_granules;     // given back by a repair of the tiling
};

// The map-facing write protocol of an extent table (as LinkTableWriter is
// a link table's): ShmHashMap<K, Alloc, ShmExtentTable<Alloc>> uses it.
template <class Alloc>
struct ExtentTableWriter {
  using Links = ShmExtentTable<Alloc>;
  // The pool holds node_size * node_num bytes of extents (the map's
  // InitForWrite arguments, read as a byte budget).
  static bool InitForWrite(Links& lt, const std::string& shm_key,
                           size_t node_size, size_t node_num,
                           const LinkSlotResolver* resolve,
                           bool repair = false) {
    uint64_t bytes = static_cast<uint64_t>(node_size) * node_num;
    if (node_size != 0 && bytes / node_size != node_num) bytes = ~0ULL;
    return lt.InitForWriteImpl(shm_key, bytes, resolve, repair);
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
class ShmExtentTable {
 public:
  static constexpr uint32_t kLayoutVersion = detail::kExtentLayoutVersion;
  static constexpr uint64_t kMaxGranules = 0xffffffffULL;
  static constexpr size_t kMaxValueLen =
      (detail::kExtentMaxGranules - 2) * detail::kGranule;

  ShmExtentTable() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmExtentTable);

  // A pool of `bytes` bytes of extents (heads included). Takes the writer
  // lease and recovers a write a crashed writer left half done.
  // Errors: create errors; kWriterBusy; kInvalidArgument for a size out of
  // range; kCorrupted when recovery finds the extents damaged (nothing is
  // changed then: `shmc check --fix` repairs it).
  bool InitForWrite(const std::string& shm_key, uint64_t bytes) {
    return InitForWriteImpl(shm_key, bytes, nullptr);
  }

  // Attaches an existing pool read-only. Errors: attach errors.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmExtentTable::InitForRead";
    if (!seg_.OpenForRead(shm_key, Spec(0), false, who, &error_)) return false;
    uint64_t granules = seg_.param(detail::kExtentParamGranules);
    bool plausible = granules >= 3 && granules <= kMaxGranules;
    if (!seg_.AcceptGeometry(plausible, Spec(granules).total_size,
                             "geometry", who, &error_)) {
      return false;
    }
    Bind(granules);
    return true;
  }

  // Copies the value into buf (at most *size bytes) and sets *size to its
  // full length. False if the handle is stale or invalid.
  bool Read(link_buf_t lb, void* buf, size_t* size) const {
    if (hdr_ == nullptr || size == nullptr) return false;
    size_t cap = buf == nullptr ? 0 : *size;
    char* out = static_cast<char*>(buf);
    uint64_t len = 0;
    bool ok = Walk(lb, &len, [out, cap](const std::atomic<uint64_t>* words,
                                        uint64_t n) {
      if (cap > 0) detail::LoadWords(out, words, std::min<uint64_t>(n, cap));
    });
    if (ok) *size = static_cast<size_t>(len);
    return ok;
  }
  bool Read(link_buf_t lb, std::string* out) const {
    if (hdr_ == nullptr || out == nullptr) return false;
    uint64_t len = 0;
    return Walk(lb, &len, [out](const std::atomic<uint64_t>* words,
                                uint64_t n) {
      out->resize(n);
      if (n > 0) detail::LoadWords(&(*out)[0], words, n);
    });
  }
  // Copy-free read: visit(data, n) sees the value in place (it may change
  // under the visitor; false means it was freed meanwhile).
  bool Visit(link_buf_t lb,
             const std::function<void(const char*, size_t)>& visit) const {
    if (hdr_ == nullptr) return false;
    uint64_t len = 0;
    return Walk(lb, &len, [&](const std::atomic<uint64_t>* words,
                              uint64_t n) {
      visit(reinterpret_cast<const char*>(words), n);
    });
  }

  // Changes n bytes of a live value in place from `offset` (false, with
  // nothing written, when the handle is stale or the range passes the
  // value's end). Readers of this pool cannot tell: only for a writer
  // whose readers check a sequence of their own (ShmHashMap::Overwrite).
  bool Overwrite(link_buf_t lb, size_t offset, const void* data, size_t n) {
    if (!Writable() || n == 0) return n == 0;
    uint32_t len = 0;
    if (!HeadLength(lb, &len) || offset > len || n > len - offset) {
      return false;
    }
    detail::PatchWords(Data(lb.head()), offset, data, n);
    return true;
  }

  // Requests the lines of the value's head and first bytes (at most 256),
  // for batched readers. Never faults: a handle outside the pool is
  // ignored.
  void Prefetch(link_buf_t lb) const {
    if (hdr_ == nullptr || !Placed(lb.head(), 1)) return;
    const char* p = reinterpret_cast<const char*>(Head(lb.head()));
    detail::PrefetchLine(p);
    detail::PrefetchLine(p + detail::kCacheLine);
  }

  bool Dump(link_buf_t lb) const {
    uint32_t len = 0;
    if (hdr_ == nullptr || !HeadLength(lb, &len)) {
      detail::Log(kInfo, "ShmExtentTable::Dump: handle {%u, %u} is not "
                  "live\n", lb.head(), lb.tag());
      return false;
    }
    std::string v;
    bool ok = Read(lb, &v);
    detail::Log(kInfo, "ShmExtentTable::Dump: {%u, %u} len %u%s\n",
                lb.head(), lb.tag(), len, ok ? "" : " (changed)");
    std::string hex;
    for (size_t i = 0; i < v.size() && i < 256; ++i) {
      char b[4];
      std::snprintf(b, sizeof(b), "%02x", static_cast<unsigned char>(v[i]));
      hex += b;
    }
    detail::Log(kInfo, "  %s%s\n", hex.c_str(), v.size() > 256 ? "..." : "");
    return ok;
  }

  // Calls f for every live value, walking the extents in order. False
  // when the walk meets a head that cannot be one (damage) before the top.
  bool Travel(const std::function<void(link_buf_t)>& f) const {
    if (hdr_ == nullptr) return false;
    return WalkExtents([&](uint64_t g, uint64_t h) {
      if (detail::ExtentTag(h) != 0) {
        f(link_buf_t(static_cast<uint32_t>(g), detail::ExtentTag(h)));
      }
    });
  }

  using HealthStat = detail::ExtentHealthStat;

  // Full scan of the extents and the free lists. With auto_fix (writer
  // only) the free lists and counters are rebuilt from the extents; when
  // the tiling breaks, the granules from the break to the next live value
  // the map names (`keep`, sorted by granule; without it: to the top)
  // become free.
  bool HealthCheck(HealthStat* hs, bool auto_fix,
                   const std::vector<link_buf_t>* keep = nullptr);

  // Granules no value holds: free extents and those above the top.
  size_t free_nodes() const {
    return hdr_ ? hdr_->free_granules.load(std::memory_order_relaxed) +
                      (granules_ - Top())
                : 0;
  }
  size_t total_nodes() const { return granules_ ? granules_ - 1 : 0; }
  size_t link_bufs() const {
    return hdr_ ? hdr_->bufs.load(std::memory_order_relaxed) : 0;
  }
  size_t link_buf_bytes() const {
    return hdr_ ? hdr_->buf_bytes.load(std::memory_order_relaxed) : 0;
  }
  // Granules (heads included) below the top, and the bytes reserved.
  size_t used_nodes() const { return hdr_ ? Top() - 1 : 0; }
  uint64_t reserved_bytes() const {
    return hdr_ ? kDataOffset + Reserved() * detail::kGranule : 0;
  }
  // Writer: makes sure `n` more granules fit above the top, their pages
  // reserved: writes of values taking n granules in all then cannot fail
  // for room. False when the pool lacks them, or (kNoSpace) when the
  // system cannot reserve the memory; nothing is changed then.
  bool Reserve(uint64_t n) {
    if (!Writable()) return false;
    return Room(n);
  }
  // Writer: returns a value no map names to the pool (a repair's leak).
  bool Free(link_buf_t lb);
  // Granules a value of `len` bytes takes, its head included.
  static uint64_t NodesFor(size_t len) {
    return 1 + (static_cast<uint64_t>(len) + 7) / 8;
  }
  static constexpr uint64_t kNodeCost = detail::kGranule;

  // Whether lb names a live value, and its length.
  bool HeadLength(link_buf_t lb, uint32_t* len) const {
    if (hdr_ == nullptr || lb.tag() == 0 || !Placed(lb.head(), 1)) {
      return false;
    }
    uint64_t h = Head(lb.head())->load(std::memory_order_acquire);
    int64_t l = detail::ExtentLength(h);
    if (detail::ExtentTag(h) != lb.tag() || l < 0 ||
        !Placed(lb.head(), detail::ExtentSize(h))) {
      return false;
    }
    *len = static_cast<uint32_t>(l);
    return true;
  }

  const Error& last_error() const { return error_; }
  bool is_initialized() const { return hdr_ != nullptr; }
  bool Sync() { return seg_.Sync(); }

 private:
  template <class>
  friend struct detail::ExtentTableWriter;
  using SlotResolver = detail::LinkSlotResolver;

 public:
  // The map-facing protocol (through detail::ExtentTableWriter).
  bool InitForWriteImpl(const std::string& shm_key, uint64_t bytes,
                        const SlotResolver* resolve, bool repair = false);
  bool PublishValue(std::atomic<uint64_t>* slot, uint64_t slot_id,
                    link_buf_t old, const void* buf, size_t size);
  bool EraseValue(std::atomic<uint64_t>* slot, uint64_t slot_id,
                  link_buf_t old);
  bool Recover(const SlotResolver* resolve);

 private:
  static constexpr uint64_t kDataOffset =
      (sizeof(detail::SegmentHeader) + sizeof(detail::ExtentTableHeader) +
       detail::kCacheLine - 1) /
      detail::kCacheLine * detail::kCacheLine;
  static constexpr uint64_t kFirstStepBytes = uint64_t{64} << 10;
  static constexpr uint64_t kStepBytes = uint64_t{2} << 20;

  static detail::SegmentSpec Spec(uint64_t granules) {
    return detail::SegmentSpec::Geometry(
        detail::ContainerKind::kExtentTable, kLayoutVersion, kDataOffset,
        kDataOffset + granules * detail::kGranule,
        {{detail::kExtentParamGranules, granules}});
  }
  void Bind(uint64_t granules) {
    granules_ = granules;
    hdr_ = reinterpret_cast<detail::ExtentTableHeader*>(
        seg_.base() + sizeof(detail::SegmentHeader));
    base_ = seg_.base() + kDataOffset;
    seen_top_.store(Top(), std::memory_order_relaxed);
  }
  bool Writable() const { return hdr_ != nullptr && !seg_.read_only(); }

  // The top, checked: damage reads as an empty pool.
  uint64_t Top() const {
    uint64_t t = hdr_->top.load(std::memory_order_acquire);
    return t == 0 || t > granules_ ? 1 : t;
  }
  uint64_t Reserved() const {
    uint64_t r = hdr_->reserved.load(std::memory_order_relaxed);
    return r > granules_ ? granules_ : r;
  }
  // Whether granules g .. g+n-1 lie below the top (which only grows: the
  // last top seen answers most checks).
  bool Placed(uint64_t g, uint64_t n) const {
    if (g == 0 || n > granules_) return false;
    uint64_t t = seen_top_.load(std::memory_order_relaxed);
    if (__builtin_expect(g + n <= t, 1)) return true;
    t = Top();
    seen_top_.store(t, std::memory_order_relaxed);
    return g + n <= t;
  }

  std::atomic<uint64_t>* Head(uint64_t g) const {
    return reinterpret_cast<std::atomic<uint64_t>*>(base_ + g * 8);
  }
  std::atomic<uint64_t>* Data(uint64_t g) const { return Head(g) + 1; }

  // Reads a value: sink(words, len) once, between two loads of its head
  // that must agree (the seqlock; pairs with the release fence of a free
  // and the release store of the head).
  template <class Sink>
  __attribute__((always_inline)) bool Walk(link_buf_t lb, uint64_t* len_out,
                                           const Sink& sink) const {
    const uint32_t g = lb.head(), tag = lb.tag();
    if (tag == 0 || !Placed(g, 1)) return false;
    const std::atomic<uint64_t>* head = Head(g);
    // SYNC POINT (acquire): pairs with the head's release store in
    // PublishValue; the data read after it is the value's.
    const uint64_t h = head->load(std::memory_order_acquire);
    const int64_t len = detail::ExtentLength(h);
    if (detail::ExtentTag(h) != tag || len < 0 ||
        !Placed(g, detail::ExtentSize(h))) {
      return false;
    }
    sink(head + 1, static_cast<uint64_t>(len));
    std::atomic_thread_fence(std::memory_order_acquire);
    // (The writer marks a live head when the extent below it frees: not a
    // change of the value.)
    if (((head->load(std::memory_order_relaxed) ^ h) &
         ~detail::kExtentPrevMask) != 0) {
      return false;
    }
    *len_out = static_cast<uint64_t>(len);
    return true;
  }

  // Calls f(granule, head) for each extent from granule 1 to the top;
  // false at a head that cannot be one (its granule in *broken).
  template <class F>
  bool WalkExtents(const F& f, uint64_t* broken = nullptr) const {
    const uint64_t top = Top();
    for (uint64_t g = 1; g < top;) {
      uint64_t h = Head(g)->load(std::memory_order_acquire);
      uint64_t size = detail::ExtentSize(h);
      if (detail::ExtentLength(h) < 0 || size > top - g) {
        if (broken != nullptr) *broken = g;
        return false;
      }
      f(g, h);
      g += size;
    }
    return true;
  }

  // Writer internals.
  uint32_t NextTag() {
    uint32_t t = hdr_->next_tag.load(std::memory_order_relaxed);
    if (t == 0) t = 1;
    hdr_->next_tag.store(t + 1 == 0 ? 1 : t + 1, std::memory_order_relaxed);
    return t;
  }
  void RecordIntent(uint32_t op, uint64_t slot_id, link_buf_t new_lb,
                    link_buf_t old_lb) {
    detail::ExtentIntent& in = hdr_->intent;
    in.slot.store(slot_id, std::memory_order_relaxed);
    in.new_lb.store(new_lb.packed(), std::memory_order_relaxed);
    in.old_lb.store(old_lb.packed(), std::memory_order_relaxed);
    // The record is whole before it is marked in flight.
    in.op.store(op, std::memory_order_release);
  }
  void Commit() {
    hdr_->intent.op.store(detail::kExtentOpNone, std::memory_order_release);
  }
  // Granules the next growth step reserves when `reserved` are: 64 KiB
  // first, then as much as the pool so far, up to 2 MiB a step.
  static uint64_t StepGranules(uint64_t reserved) {
    return std::min(kStepBytes, std::max(kFirstStepBytes,
                                         reserved * detail::kGranule)) /
           detail::kGranule;
  }
  bool Room(uint64_t n);
  // A free extent of at least `need` granules, taken off the lists (its
  // head {0, size}), or 0: the pool is full (or, with error_ kNoSpace,
  // the system could not reserve the step).
  uint64_t Allocate(uint64_t need);
  // From list `list`, the first extent of at least `need` granules
  // (split when larger), or 0; damaged_ on a bad entry.
  uint64_t Take(uint64_t list, uint64_t need);
  // Whether g heads a free extent of list `list` (its size in *size).
  bool FreeHead(uint64_t g, uint64_t list, uint64_t* size) const;
  void Push(uint64_t g, uint64_t size);
  // Takes listed free extent g (of `size` granules) off its list; false
  // (damaged_, nothing changed) when its links are not its list's.
  bool Unlink(uint64_t g, uint64_t size);
  // A free extent [g, g+size) whose head is written joins the pool: its
  // list, its footer, and the mark on the head above it.
  void Settle(uint64_t g, uint64_t size);
  // Sets the prev mark of the extent at g (when below the top).
  void MarkPrev(uint64_t g, uint64_t mark);
  // The free extent just below g, as g's head marks it, or 0 (none, or a
  // mark its neighbour does not bear out).
  uint64_t FreeBelow(uint64_t g, uint64_t head) const;
  void Split(uint64_t g, uint64_t size, uint64_t need);
  uint64_t NextList(uint64_t from) const;
  void FreeExtent(uint64_t g);
  bool ClearIfTagged(link_buf_t lb);
  // Rebuilds the lists, marks and counters from the extents, merging
  // neighbouring free ones and lowering the top over free ones at its
  // end; false (kCorrupted) when the tiling breaks.
  bool Rebuild(const char* who);
  void ResetLists();
  bool Fail(ErrorCode code, const char* who, const char* what) {
    return detail::Segment<Alloc>::Fail(&error_, code, 0, seg_.key(), who,
                                        "%s", what);
  }

  detail::Segment<Alloc> seg_;
  detail::ExtentTableHeader* hdr_ = nullptr;
  char* base_ = nullptr;
  uint64_t granules_ = 0;
  mutable std::atomic<uint64_t> seen_top_{0};
  bool damaged_ = false;
  Error error_;
};

}  // namespace shmc

#include "shmc/detail/extent_table_impl.h"
