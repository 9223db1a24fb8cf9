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
uint64_t ShmExtentTable<Alloc>::Take(uint64_t list, uint64_t need) {
  // Exact lists hold one size (the first extent fits); a class's list is
  // searched first-fit a few steps (a larger class's first one fits).
  uint64_t prev = 0;
  uint64_t g = hdr_->list[list].load(std::memory_order_relaxed);
  for (int steps = 0; g != 0 && steps < 32; ++steps) {
    uint64_t size = 0;
    if (!FreeHead(g, list, &size)) {
      damaged_ = true;
      return 0;
    }
    const uint64_t next =
        Data(g)[0].load(std::memory_order_relaxed) & 0xffffffffULL;
    if (size >= need) {
      if (prev == 0) {
        hdr_->list[list].store(static_cast<uint32_t>(next),
                               std::memory_order_relaxed);
      } else {
        Data(prev)[0].store(next, std::memory_order_relaxed);
      }
      if (hdr_->list[list].load(std::memory_order_relaxed) == 0) {
        hdr_->nonempty[list / 64].fetch_and(~(uint64_t{1} << (list % 64)),
                                            std::memory_order_relaxed);
      }
      hdr_->free_granules.fetch_sub(size, std::memory_order_relaxed);
      if (size >= need + detail::kExtentMinGranules) Split(g, size, need);
      return g;
    }
    prev = g;
    g = next;
  }
  if (g == 0 && prev == 0) {
    // An empty list whose bit was left set.
    hdr_->nonempty[list / 64].fetch_and(~(uint64_t{1} << (list % 64)),
                                        std::memory_order_relaxed);
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
  Head(g)->store(detail::ExtentHead(0, need, 0), std::memory_order_release);
  Push(rest, size - need);
}

template <class Alloc>
void ShmExtentTable<Alloc>::Push(uint64_t g, uint64_t size) {
  const uint64_t list = detail::ExtentList(size);
  Data(g)[0].store(hdr_->list[list].load(std::memory_order_relaxed),
                   std::memory_order_relaxed);
  hdr_->list[list].store(static_cast<uint32_t>(g), std::memory_order_release);
  hdr_->nonempty[list / 64].fetch_or(uint64_t{1} << (list % 64),
                                     std::memory_order_relaxed);
  hdr_->free_granules.fetch_add(size, std::memory_order_relaxed);
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
  Head(top)->store(detail::ExtentHead(0, need, 0), std::memory_order_relaxed);
  // SYNC POINT (release): the new extent's head is in place before the
  // top covers it (walks, and readers bounding a handle by the top).
  hdr_->top.store(top + need, std::memory_order_release);
  return top;
}

template <class Alloc>
void ShmExtentTable<Alloc>::FreeExtent(uint64_t g) {
  const uint64_t size = detail::ExtentSize(Head(g)->load(std::memory_order_relaxed));
  Head(g)->store(detail::ExtentHead(0, size, 0), std::memory_order_relaxed);
  // SYNC POINT (release fence): the tag is cleared before any later write
  // reuses the extent's bytes; a reader that copied those bytes sees the
  // cleared tag on its second load (its acquire fence).
  std::atomic_thread_fence(std::memory_order_release);
  Push(g, size);
}

template <class Alloc>
bool ShmExtentTable<Alloc>::ClearIfTagged(link_buf_t lb) {
  if (lb.tag() == 0 || !Placed(lb.head(), 1)) return false;
  std::atomic<uint64_t>* head = Head(lb.head());
  const uint64_t h = head->load(std::memory_order_relaxed);
  if (detail::ExtentTag(h) != lb.tag()) return false;
  head->store(detail::ExtentHead(0, detail::ExtentSize(h), 0),
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
  const uint64_t got =
      detail::ExtentSize(Head(g)->load(std::memory_order_relaxed));
  if (size > 0) detail::StoreWords(Data(g), buf, size);
  // SYNC POINT (release): the value's bytes are in place before its tag.
  Head(g)->store(detail::ExtentHead(tag, got, (got - 1) * detail::kGranule -
                                                  size),
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
  uint64_t bufs = 0, bytes = 0;
  uint64_t run = 0, run_size = 0;  // free extents met in a row, merged
  auto close = [&] {
    if (run == 0) return;
    if (run_size == 1) {
      // A lone granule (a repair's filler) stays a filler until a
      // neighbour frees.
      run = 0;
      return;
    }
    if (detail::ExtentSize(Head(run)->load(std::memory_order_relaxed)) !=
        run_size) {
      Head(run)->store(detail::ExtentHead(0, run_size, 0),
                       std::memory_order_release);
    }
    Push(run, run_size);
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
          }
        } else {
          close();
          ++bufs;
          bytes += static_cast<uint64_t>(detail::ExtentLength(h));
        }
      },
      &broken);
  close();
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
  std::vector<uint64_t> free_heads;
  uint64_t free = 0, bufs = 0, bytes = 0, broken = 0;
  WalkExtents(
      [&](uint64_t g, uint64_t h) {
        if (detail::ExtentTag(h) == 0) {
          if (detail::ExtentSize(h) >= detail::kExtentMinGranules) {
            free_heads.push_back(g);
          }
          free += detail::ExtentSize(h);
        } else {
          ++bufs;
          bytes += static_cast<uint64_t>(detail::ExtentLength(h));
        }
      },
      &broken);
  hs->broken_at = broken;
  // Each list: free extents of its sizes, each listed once, every free
  // extent on one (walks bounded by the extents there are).
  std::vector<uint8_t> listed(free_heads.size(), 0);
  size_t seen = 0;
  for (uint64_t l = 0; l < detail::kExtentLists && !hs->bad_free_list; ++l) {
    uint64_t g = hdr_->list[l].load(std::memory_order_relaxed);
    const bool bit =
        (hdr_->nonempty[l / 64].load(std::memory_order_relaxed) >> (l % 64)) & 1;
    if (g != 0 && !bit) hs->bad_free_list = 1;
    for (size_t steps = 0; g != 0; ++steps) {
      uint64_t size = 0;
      auto it = std::lower_bound(free_heads.begin(), free_heads.end(), g);
      if (steps > free_heads.size() || it == free_heads.end() || *it != g ||
          listed[it - free_heads.begin()] || !FreeHead(g, l, &size)) {
        hs->bad_free_list = 1;
        break;
      }
      listed[it - free_heads.begin()] = 1;
      ++seen;
      g = Data(g)[0].load(std::memory_order_relaxed) & 0xffffffffULL;
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
