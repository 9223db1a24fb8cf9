// Out-of-line members of ShmExtentTable: init and recovery, allocation,
// the map-facing writes, the rebuild of the free lists, HealthCheck.
#pragma once

#include <algorithm>
#include <vector>

#include "shmc/shm_extent_table.h"

namespace shmc {

template <class Alloc>
bool ShmExtentTable<Alloc>::InitForWriteImpl(const std::string& shm_key,
                                             uint64_t bytes,
                                             const SlotResolver* resolve,
                                             bool repair) {
  error_.Clear();
  const char* who = "ShmExtentTable::InitForWrite";
  if (bytes < 2 * detail::kGranule || bytes / detail::kGranule >= kMaxGranules) {
    return detail::Segment<Alloc>::Fail(
        &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
        "the pool must hold 16 bytes .. 32 GiB (got %llu bytes)",
        static_cast<unsigned long long>(bytes));
  }
  const uint64_t granules = bytes / detail::kGranule + 1;
  const int flags = DefaultCreateFlags();
  // A pool made to grow in steps reserves its first step's pages only.
  const uint64_t first = (flags & kGrowInSteps)
                             ? std::min(granules, StepGranules(0))
                             : granules;
  auto init = [&](char* base) {
    auto* h = reinterpret_cast<detail::ExtentTableHeader*>(
        base + sizeof(detail::SegmentHeader));
    h->top.store(1, std::memory_order_relaxed);
    h->reserved.store(first, std::memory_order_relaxed);
    h->next_tag.store(1, std::memory_order_relaxed);
  };
  detail::SegmentSpec spec = Spec(granules);
  if (first < granules) {
    spec.reserve_bytes = kDataOffset + first * detail::kGranule;
  }
  if (!seg_.OpenForWrite(shm_key, spec, flags, init, who, &error_)) {
    return false;
  }
  detail::LeaseResult lease;
  if (!seg_.TakeWriterLease(flags, who, &error_, &lease)) return false;
  Bind(granules);
  if (hdr_->intent.op.load(std::memory_order_acquire) !=
      detail::kExtentOpNone) {
    if (lease == detail::LeaseResult::kShared) {
      detail::Log(kWarning, "%s(%s): an operation may be in flight in "
                  "another live writer; not recovering\n", who,
                  shm_key.c_str());
    } else if (!Recover(resolve)) {
      if (!repair) {
        hdr_ = nullptr;
        seg_.Reset();
        return false;
      }
      detail::Log(kWarning, "%s(%s): discarding the damaged intent record "
                  "for repair\n", who, shm_key.c_str());
      Commit();
      error_.Clear();
    }
  }
  return true;
}

template <class Alloc>
bool ShmExtentTable<Alloc>::Room(uint64_t n) {
  const uint64_t top = Top();
  if (n > granules_ - top) return false;  // the pool is full
  const uint64_t reserved = Reserved();
  if (top + n <= reserved) return true;
  const uint64_t want = std::min(
      granules_, std::max(top + n, reserved + StepGranules(reserved)));
  // Pages above `reserved` never held data: a failed reservation gives
  // back what it took.
  if (!seg_.Reserve(kDataOffset + reserved * detail::kGranule,
                    (want - reserved) * detail::kGranule,
                    "ShmExtentTable::Reserve", &error_, true)) {
    return false;
  }
  hdr_->reserved.store(want, std::memory_order_relaxed);
  return true;
}

template <class Alloc>
bool ShmExtentTable<Alloc>::FreeHead(uint64_t g, uint64_t list,
                                     uint64_t* size) const {
  if (!Placed(g, 1)) return false;
  const uint64_t h = Head(g)->load(std::memory_order_relaxed);
  const uint64_t s = detail::ExtentSize(h);
  if (detail::ExtentTag(h) != 0 || s < detail::kExtentMinGranules ||
      !Placed(g, s) || detail::ExtentList(s) != list) {
    return false;
  }
  *size = s;
  return true;
}

template <class Alloc>
bool ShmExtentTable<Alloc>::Unlink(uint64_t g, uint64_t size) {
  const uint64_t list = detail::ExtentList(size);
  const uint64_t links = Data(g)[0].load(std::memory_order_relaxed);
  const uint64_t next = detail::ExtentLinkNext(links);
  const uint64_t prev = detail::ExtentLinkPrev(links);
  uint64_t s = 0, prev_links = 0, next_links = 0;
  // Both neighbours must name g back: a damaged link changes nothing.
  if (prev != 0) {
    if (!FreeHead(prev, list, &s)) return damaged_ = true, false;
    prev_links = Data(prev)[0].load(std::memory_order_relaxed);
    if (detail::ExtentLinkNext(prev_links) != g) return damaged_ = true, false;
  } else if (hdr_->list[list].load(std::memory_order_relaxed) != g) {
    return damaged_ = true, false;
  }
  if (next != 0) {
    if (!FreeHead(next, list, &s)) return damaged_ = true, false;
    next_links = Data(next)[0].load(std::memory_order_relaxed);
    if (detail::ExtentLinkPrev(next_links) != g) return damaged_ = true, false;
  }
  if (prev != 0) {
    Data(prev)[0].store(
        detail::ExtentLinks(next, detail::ExtentLinkPrev(prev_links)),
        std::memory_order_relaxed);
  } else {
    hdr_->list[list].store(static_cast<uint32_t>(next),
                           std::memory_order_relaxed);
    if (next == 0) {
      hdr_->nonempty[list / 64].fetch_and(~(uint64_t{1} << (list % 64)),
                                          std::memory_order_relaxed);
    }
  }
  if (next != 0) {
    Data(next)[0].store(
        detail::ExtentLinks(detail::ExtentLinkNext(next_links), prev),
        std::memory_order_relaxed);
  }
  return true;
}

template <class Alloc>
uint64_t ShmExtentTable<Alloc>::Take(uint64_t list, uint64_t need) {
  // Exact lists hold one size (the first extent fits); a class's list is
  // searched first-fit a few steps (a larger class's first one fits).
  uint64_t g = hdr_->list[list].load(std::memory_order_relaxed);
  if (g == 0) {
    // An empty list whose bit was left set.
    hdr_->nonempty[list / 64].fetch_and(~(uint64_t{1} << (list % 64)),
                                        std::memory_order_relaxed);
    return 0;
  }
  for (int steps = 0; g != 0 && steps < 32; ++steps) {
    uint64_t size = 0;
    if (!FreeHead(g, list, &size)) {
      damaged_ = true;
      return 0;
    }
    if (size >= need) {
      if (!Unlink(g, size)) return 0;
      hdr_->free_granules.fetch_sub(need, std::memory_order_relaxed);
      if (size > need) {
        Split(g, size, need);
      } else {
        MarkPrev(g + size, 0);
      }
      return g;
    }
    g = detail::ExtentLinkNext(Data(g)[0].load(std::memory_order_relaxed));
  }
  return 0;
}

template <class Alloc>
void ShmExtentTable<Alloc>::Split(uint64_t g, uint64_t size, uint64_t need) {
  const uint64_t rest = g + need;
  Head(rest)->store(detail::ExtentHead(0, size - need, 0),
                    std::memory_order_relaxed);
  // SYNC POINT (release, for a kill): the rest's head is in place before
  // the extent shrinks to uncover it, so a walk always finds extents.
  const uint64_t mark =
      detail::ExtentPrev(Head(g)->load(std::memory_order_relaxed));
  Head(g)->store(detail::ExtentHead(0, need, 0, mark),
                 std::memory_order_release);
  Settle(rest, size - need);
}

template <class Alloc>
void ShmExtentTable<Alloc>::Push(uint64_t g, uint64_t size) {
  const uint64_t list = detail::ExtentList(size);
  const uint64_t first = hdr_->list[list].load(std::memory_order_relaxed);
  Data(g)[0].store(detail::ExtentLinks(first, 0), std::memory_order_relaxed);
  if (first != 0 && Placed(first, 2)) {
    const uint64_t links = Data(first)[0].load(std::memory_order_relaxed);
    Data(first)[0].store(
        detail::ExtentLinks(detail::ExtentLinkNext(links), g),
        std::memory_order_relaxed);
  }
  hdr_->list[list].store(static_cast<uint32_t>(g), std::memory_order_release);
  hdr_->nonempty[list / 64].fetch_or(uint64_t{1} << (list % 64),
                                     std::memory_order_relaxed);
}

template <class Alloc>
void ShmExtentTable<Alloc>::MarkPrev(uint64_t g, uint64_t mark) {
  if (g >= Top()) return;
  const uint64_t h = Head(g)->load(std::memory_order_relaxed);
  // SYNC POINT (release): a live head stays a publication of its value's
  // bytes for a reader that acquires it after the mark changed.
  if (detail::ExtentPrev(h) != mark) {
    Head(g)->store(detail::ExtentWithPrev(h, mark), std::memory_order_release);
  }
}

template <class Alloc>
void ShmExtentTable<Alloc>::Settle(uint64_t g, uint64_t size) {
  if (size >= detail::kExtentMinGranules) Push(g, size);
  SHMC_CRASH_POINT(39);
  if (size >= 3) {
    Head(g + size - 1)->store(detail::ExtentHead(0, size, 0),
                              std::memory_order_relaxed);
  }
  MarkPrev(g + size, detail::ExtentPrevMark(size));
}

template <class Alloc>
uint64_t ShmExtentTable<Alloc>::FreeBelow(uint64_t g, uint64_t head) const {
  const uint64_t mark = detail::ExtentPrev(head);
  if (mark == 0 || g < 2) return 0;
  uint64_t size = mark;
  if (mark == 3) {
    const uint64_t foot = Head(g - 1)->load(std::memory_order_relaxed);
    size = detail::ExtentSize(foot);
    if (size < 3 || foot != detail::ExtentHead(0, size, 0)) return 0;
  }
  if (size >= g) return 0;
  const uint64_t h = Head(g - size)->load(std::memory_order_relaxed);
  if (detail::ExtentTag(h) != 0 || detail::ExtentSize(h) != size) return 0;
  return g - size;
}

template <class Alloc>
uint64_t ShmExtentTable<Alloc>::NextList(uint64_t from) const {
  for (uint64_t w = from / 64; w < detail::kExtentListWords; ++w) {
    uint64_t bits = hdr_->nonempty[w].load(std::memory_order_relaxed);
    if (w == from / 64) bits &= ~uint64_t{0} << (from % 64);
    if (bits != 0) {
      const uint64_t l = w * 64 + static_cast<uint64_t>(__builtin_ctzll(bits));
      return l < detail::kExtentLists ? l : detail::kExtentLists;
    }
  }
  return detail::kExtentLists;
}

template <class Alloc>
uint64_t ShmExtentTable<Alloc>::Allocate(uint64_t need) {
  for (int round = 0; round < 2; ++round) {
    damaged_ = false;
    // The exact size, else the smallest larger extent (split), else the
    // top: a free extent is used before the pool grows.
    uint64_t from = need <= detail::kExtentExactMax ? need
                                                     : detail::ExtentList(need);
    if (from < detail::kExtentMinGranules) from = detail::kExtentMinGranules;
    for (uint64_t l = NextList(from); l < detail::kExtentLists;
         l = NextList(l + 1)) {
      const uint64_t g = Take(l, need);
      if (g != 0) return g;
      if (damaged_) break;
    }
    if (!damaged_) break;
    // A list held something that is not a free extent of its size: the
    // lists are rebuilt from the extents, and the search runs again.
    detail::Log(kWarning, "ShmExtentTable(%s): a free list is damaged; "
                "rebuilding the lists\n", seg_.key().c_str());
    if (!Rebuild("ShmExtentTable::Allocate")) return 0;
  }
  if (!Room(need)) return 0;
  const uint64_t top = Top();
  // The extent below the top is never free (a free one there lowers the
  // top): the new extent's mark is 0.
  Head(top)->store(detail::ExtentHead(0, need, 0), std::memory_order_relaxed);
  // SYNC POINT (release): the new extent's head is in place before the
  // top covers it (walks, and readers bounding a handle by the top).
  hdr_->top.store(top + need, std::memory_order_release);
  return top;
}

template <class Alloc>
void ShmExtentTable<Alloc>::FreeExtent(uint64_t g) {
  damaged_ = false;
  uint64_t h = Head(g)->load(std::memory_order_relaxed);
  uint64_t size = detail::ExtentSize(h);
  h = detail::ExtentHead(0, size, 0, detail::ExtentPrev(h));
  Head(g)->store(h, std::memory_order_relaxed);
  // SYNC POINT (release fence): the tag is cleared before any later write
  // reuses the extent's bytes; a reader that copied those bytes sees the
  // cleared tag on its second load (its acquire fence).
  std::atomic_thread_fence(std::memory_order_release);
  hdr_->free_granules.fetch_add(size, std::memory_order_relaxed);
  const uint64_t top = Top();
  // The free extent above absorbed (its head is then a word inside this
  // one: a stale handle's tag check fails on it, the map's second check
  // on whatever overwrites it).
  const uint64_t above = g + size;
  if (above < top) {
    const uint64_t ha = Head(above)->load(std::memory_order_relaxed);
    const uint64_t sa = detail::ExtentSize(ha);
    if (detail::ExtentTag(ha) == 0 && sa >= 1 && sa <= top - above &&
        size + sa <= detail::kExtentMaxGranules &&
        (sa < detail::kExtentMinGranules || Unlink(above, sa))) {
      SHMC_CRASH_POINT(36);
      size += sa;
      h = detail::ExtentHead(0, size, 0, detail::ExtentPrev(h));
      Head(g)->store(h, std::memory_order_release);
    }
  }
  // The free extent below absorbs this one.
  const uint64_t below = FreeBelow(g, h);
  if (below != 0) {
    const uint64_t hb = Head(below)->load(std::memory_order_relaxed);
    const uint64_t sb = detail::ExtentSize(hb);
    if (size + sb <= detail::kExtentMaxGranules &&
        (sb < detail::kExtentMinGranules || Unlink(below, sb))) {
      SHMC_CRASH_POINT(37);
      g = below;
      size += sb;
      h = detail::ExtentHead(0, size, 0, detail::ExtentPrev(hb));
      Head(g)->store(h, std::memory_order_release);
    }
  }
  if (g + size == top) {
    // Free space at the end goes back above the top (and the free extent
    // below, if a merge was refused for its size, after it).
    for (;;) {
      hdr_->top.store(g, std::memory_order_release);
      seen_top_.store(g, std::memory_order_relaxed);
      SHMC_CRASH_POINT(38);
      hdr_->free_granules.fetch_sub(size, std::memory_order_relaxed);
      const uint64_t b = FreeBelow(g, h);
      if (b == 0) break;
      h = Head(b)->load(std::memory_order_relaxed);
      size = detail::ExtentSize(h);
      if (size >= detail::kExtentMinGranules && !Unlink(b, size)) break;
      g = b;
    }
  } else {
    Settle(g, size);
  }
  if (damaged_) {
    detail::Log(kWarning, "ShmExtentTable(%s): a free list is damaged; "
                "rebuilding the lists\n", seg_.key().c_str());
    Rebuild("ShmExtentTable::Free");
  }
}

template <class Alloc>
bool ShmExtentTable<Alloc>::ClearIfTagged(link_buf_t lb) {
  if (lb.tag() == 0 || !Placed(lb.head(), 1)) return false;
  std::atomic<uint64_t>* head = Head(lb.head());
  const uint64_t h = head->load(std::memory_order_relaxed);
  if (detail::ExtentTag(h) != lb.tag()) return false;
  head->store(detail::ExtentHead(0, detail::ExtentSize(h), 0,
                                 detail::ExtentPrev(h)),
              std::memory_order_release);
  return true;
}

template <class Alloc>
bool ShmExtentTable<Alloc>::PublishValue(std::atomic<uint64_t>* slot,
                                         uint64_t slot_id, link_buf_t old,
                                         const void* buf, size_t size) {
  if (!Writable() || size > kMaxValueLen || (size > 0 && buf == nullptr)) {
    return false;
  }
  uint32_t old_len = 0;
  if (old && !HeadLength(old, &old_len)) return false;
  const uint64_t need = NodesFor(size);
  const uint32_t tag = NextTag();
  RecordIntent(old ? detail::kExtentOpReplace : detail::kExtentOpInsert,
               slot_id, link_buf_t(0, tag), old);
  SHMC_CRASH_POINT(30);
  const uint64_t g = Allocate(need);
  if (g == 0) {
    Commit();  // nothing was taken
    return false;
  }
  const link_buf_t lb(static_cast<uint32_t>(g), tag);
  hdr_->intent.new_lb.store(lb.packed(), std::memory_order_relaxed);
  SHMC_CRASH_POINT(31);
  const uint64_t free_head = Head(g)->load(std::memory_order_relaxed);
  const uint64_t got = detail::ExtentSize(free_head);
  if (size > 0) detail::StoreWords(Data(g), buf, size);
  // SYNC POINT (release): the value's bytes are in place before its tag.
  Head(g)->store(detail::ExtentHead(tag, got,
                                    (got - 1) * detail::kGranule - size,
                                    detail::ExtentPrev(free_head)),
                 std::memory_order_release);
  SHMC_CRASH_POINT(32);
  // SYNC POINT (release): the commit. Publishes the value (and, for an
  // insert, the key written before) to readers acquiring the slot.
  slot->store(lb.packed(), std::memory_order_release);
  SHMC_CRASH_POINT(33);
  hdr_->bufs.fetch_add(1, std::memory_order_relaxed);
  hdr_->buf_bytes.fetch_add(size, std::memory_order_relaxed);
  if (old) {
    FreeExtent(old.head());
    hdr_->bufs.fetch_sub(1, std::memory_order_relaxed);
    hdr_->buf_bytes.fetch_sub(old_len, std::memory_order_relaxed);
  }
  SHMC_CRASH_POINT(34);
  Commit();
  return true;
}

template <class Alloc>
bool ShmExtentTable<Alloc>::EraseValue(std::atomic<uint64_t>* slot,
                                       uint64_t slot_id, link_buf_t old) {
  uint32_t old_len = 0;
  if (!Writable() || !HeadLength(old, &old_len)) return false;
  RecordIntent(detail::kExtentOpErase, slot_id, link_buf_t(), old);
  slot->store(0, std::memory_order_release);  // the commit
  SHMC_CRASH_POINT(35);
  FreeExtent(old.head());
  hdr_->bufs.fetch_sub(1, std::memory_order_relaxed);
  hdr_->buf_bytes.fetch_sub(old_len, std::memory_order_relaxed);
  Commit();
  return true;
}

template <class Alloc>
bool ShmExtentTable<Alloc>::Free(link_buf_t lb) {
  uint32_t len = 0;
  if (!Writable() || !HeadLength(lb, &len)) return false;
  RecordIntent(detail::kExtentOpFree, 0, link_buf_t(), lb);
  FreeExtent(lb.head());
  hdr_->bufs.fetch_sub(1, std::memory_order_relaxed);
  hdr_->buf_bytes.fetch_sub(len, std::memory_order_relaxed);
  Commit();
  return true;
}

template <class Alloc>
bool ShmExtentTable<Alloc>::Recover(const SlotResolver* resolve) {
  const char* who = "ShmExtentTable::Recover";
  if (!Writable()) return false;
  const detail::ExtentIntent& in = hdr_->intent;
  const uint32_t op = in.op.load(std::memory_order_acquire);
  if (op == detail::kExtentOpNone) return true;
  const link_buf_t nl = link_buf_t::Unpack(in.new_lb.load(std::memory_order_relaxed));
  const link_buf_t ol = link_buf_t::Unpack(in.old_lb.load(std::memory_order_relaxed));
  bool took = true;  // kExtentOpFree: the old value goes
  if (op != detail::kExtentOpFree) {
    if (op != detail::kExtentOpInsert && op != detail::kExtentOpReplace &&
        op != detail::kExtentOpErase) {
      return Fail(ErrorCode::kCorrupted, who,
                  "the intent record names no operation (`shmc check --fix` "
                  "repairs it)");
    }
    std::atomic<uint64_t>* word =
        resolve != nullptr && *resolve
            ? (*resolve)(in.slot.load(std::memory_order_relaxed))
            : nullptr;
    if (word == nullptr) {
      return Fail(ErrorCode::kCorrupted, who,
                  "the intent record's slot is not one of the map's "
                  "(`shmc check --fix` repairs it)");
    }
    const uint64_t cur = word->load(std::memory_order_acquire);
    took = op == detail::kExtentOpErase
               ? cur != ol.packed()
               : nl.head() != 0 && cur == nl.packed();
  }
  // The value that lost is no value: its extent is free again.
  if (took) {
    if (ol) ClearIfTagged(ol);
  } else if (nl.head() != 0) {
    ClearIfTagged(nl);
  }
  if (!Rebuild(who)) return false;
  Commit();
  return true;
}

template <class Alloc>
void ShmExtentTable<Alloc>::ResetLists() {
  for (auto& w : hdr_->nonempty) w.store(0, std::memory_order_relaxed);
  for (auto& l : hdr_->list) l.store(0, std::memory_order_relaxed);
  hdr_->free_granules.store(0, std::memory_order_relaxed);
}

template <class Alloc>
bool ShmExtentTable<Alloc>::Rebuild(const char* who) {
  ResetLists();
  uint64_t bufs = 0, bytes = 0, free = 0;
  uint64_t run = 0, run_size = 0, run_mark = 0;  // free extents in a row
  uint64_t mark = 0;  // the mark the next extent's head should bear
  // Free runs since the last value: at the top's end they go above it.
  std::vector<std::pair<uint64_t, uint64_t>> tail;
  auto close = [&] {
    if (run == 0) return;
    const uint64_t want = detail::ExtentHead(0, run_size, 0, run_mark);
    if (Head(run)->load(std::memory_order_relaxed) != want) {
      Head(run)->store(want, std::memory_order_release);
    }
    if (run_size >= detail::kExtentMinGranules) Push(run, run_size);
    if (run_size >= 3) {
      Head(run + run_size - 1)->store(detail::ExtentHead(0, run_size, 0),
                                      std::memory_order_relaxed);
    }
    free += run_size;
    mark = detail::ExtentPrevMark(run_size);
    tail.push_back({run, run_size});
    run = 0;
  };
  uint64_t broken = 0;
  const bool whole = WalkExtents(
      [&](uint64_t g, uint64_t h) {
        const uint64_t size = detail::ExtentSize(h);
        if (detail::ExtentTag(h) == 0) {
          if (run != 0 && run_size + size <= detail::kExtentMaxGranules) {
            run_size += size;
          } else {
            close();
            run = g;
            run_size = size;
            run_mark = mark;
          }
        } else {
          close();
          if (detail::ExtentPrev(h) != mark) {
            Head(g)->store(detail::ExtentWithPrev(h, mark),
                           std::memory_order_release);
          }
          mark = 0;
          tail.clear();
          ++bufs;
          bytes += static_cast<uint64_t>(detail::ExtentLength(h));
        }
      },
      &broken);
  close();
  if (whole) {
    while (!tail.empty()) {
      const auto t = tail.back();
      tail.pop_back();
      if (t.second >= detail::kExtentMinGranules && !Unlink(t.first, t.second)) {
        break;
      }
      hdr_->top.store(t.first, std::memory_order_release);
      seen_top_.store(t.first, std::memory_order_relaxed);
      free -= t.second;
    }
  }
  hdr_->free_granules.store(free, std::memory_order_relaxed);
  hdr_->bufs.store(bufs, std::memory_order_relaxed);
  hdr_->buf_bytes.store(bytes, std::memory_order_relaxed);
  if (whole) return true;
  return detail::Segment<Alloc>::Fail(
      &error_, ErrorCode::kCorrupted, 0, seg_.key(), who,
      "extent head at granule %llu is damaged (`shmc check --fix` repairs "
      "it)", static_cast<unsigned long long>(broken));
}

template <class Alloc>
bool ShmExtentTable<Alloc>::HealthCheck(HealthStat* hs, bool auto_fix,
                                        const std::vector<link_buf_t>* keep) {
  if (hs == nullptr || hdr_ == nullptr) return false;
  std::memset(hs, 0, sizeof(*hs));
  if (auto_fix && !Writable()) return false;
  // The extents, in order: the free ones' granules kept for the lists.
  // Each head's mark must say what lies below it, each free extent of
  // three granules or more end in its footer, no two free extents that
  // fit one be neighbours, and the last extent be a value.
  std::vector<uint64_t> free_heads;
  uint64_t free = 0, bufs = 0, bytes = 0, broken = 0;
  uint64_t mark = 0, below_free = 0, last_free = 0;
  WalkExtents(
      [&](uint64_t g, uint64_t h) {
        const uint64_t size = detail::ExtentSize(h);
        if (detail::ExtentPrev(h) != mark) hs->bad_free_list = 1;
        if (detail::ExtentTag(h) == 0) {
          if (size >= detail::kExtentMinGranules) free_heads.push_back(g);
          if (size >= 3 && Head(g + size - 1)->load(
                               std::memory_order_relaxed) !=
                               detail::ExtentHead(0, size, 0)) {
            hs->bad_free_list = 1;
          }
          if (below_free != 0 &&
              below_free + size <= detail::kExtentMaxGranules) {
            hs->bad_free_list = 1;  // not merged
          }
          free += size;
          mark = detail::ExtentPrevMark(size);
          below_free = size;
        } else {
          ++bufs;
          bytes += static_cast<uint64_t>(detail::ExtentLength(h));
          mark = 0;
          below_free = 0;
        }
        last_free = below_free;
      },
      &broken);
  hs->broken_at = broken;
  if (broken == 0 && last_free != 0) hs->bad_free_list = 1;  // not trimmed
  // Each list: free extents of its sizes, each listed once, every free
  // extent on one (walks bounded by the extents there are).
  std::vector<uint8_t> listed(free_heads.size(), 0);
  size_t seen = 0;
  for (uint64_t l = 0; l < detail::kExtentLists && !hs->bad_free_list; ++l) {
    uint64_t g = hdr_->list[l].load(std::memory_order_relaxed);
    const bool bit =
        (hdr_->nonempty[l / 64].load(std::memory_order_relaxed) >> (l % 64)) & 1;
    if (g != 0 && !bit) hs->bad_free_list = 1;
    for (uint64_t steps = 0, before = 0; g != 0; ++steps) {
      uint64_t size = 0;
      auto it = std::lower_bound(free_heads.begin(), free_heads.end(), g);
      if (steps > free_heads.size() || it == free_heads.end() || *it != g ||
          listed[it - free_heads.begin()] || !FreeHead(g, l, &size)) {
        hs->bad_free_list = 1;
        break;
      }
      const uint64_t links = Data(g)[0].load(std::memory_order_relaxed);
      if (detail::ExtentLinkPrev(links) != before) {
        hs->bad_free_list = 1;
        break;
      }
      listed[it - free_heads.begin()] = 1;
      ++seen;
      before = g;
      g = detail::ExtentLinkNext(links);
    }
  }
  if (seen != free_heads.size()) hs->bad_free_list = 1;
  hs->counter_mismatches =
      (free != hdr_->free_granules.load(std::memory_order_relaxed)) +
      (bufs != hdr_->bufs.load(std::memory_order_relaxed)) +
      (bytes != hdr_->buf_bytes.load(std::memory_order_relaxed));
  hs->total_free_nodes = free;
  hs->total_link_bufs = bufs;
  hs->total_link_buf_bytes = bytes;
  if (!auto_fix) return true;
  if (broken != 0) {
    // The extents from the break on are found again from the values the
    // map names there; what lies between them becomes free.
    std::vector<std::pair<uint64_t, uint64_t>> live;  // granule, size
    if (keep != nullptr) {
      for (link_buf_t lb : *keep) {
        uint32_t len = 0;
        if (lb.head() >= broken && HeadLength(lb, &len)) {
          live.push_back({lb.head(), NodesFor(len)});
        }
      }
    }
    std::sort(live.begin(), live.end());
    auto fill = [&](uint64_t from, uint64_t to) {
      while (from < to) {
        const uint64_t n = std::min(to - from, detail::kExtentMaxGranules);
        Head(from)->store(detail::ExtentHead(0, n, 0),
                          std::memory_order_relaxed);
        hs->lost_granules += n;
        from += n;
      }
    };
    uint64_t at = broken;
    for (const auto& v : live) {
      if (v.first < at) continue;  // inside one kept already: not a value
      // Its size as its head says (HeadLength checked it is in the pool).
      const uint64_t size =
          detail::ExtentSize(Head(v.first)->load(std::memory_order_relaxed));
      fill(at, v.first);
      at = v.first + size;
    }
    fill(at, Top());
  }
  // Recorded in the intent so that a repair killed midway is finished by
  // the next writer's recovery.
  RecordIntent(detail::kExtentOpFree, 0, link_buf_t(), link_buf_t());
  const bool ok = Rebuild("ShmExtentTable::HealthCheck");
  Commit();
  return ok;
}

}  // namespace shmc
