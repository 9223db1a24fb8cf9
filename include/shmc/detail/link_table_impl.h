// Out-of-line members of ShmLinkTable: init with lease and recovery, the
// map-facing publish/erase operations, and HealthCheck.
#pragma once

#include <vector>

#include "shmc/shm_link_table.h"

namespace shmc {

template <class Alloc>
bool ShmLinkTable<Alloc>::InitForWriteImpl(const std::string& shm_key,
                                           size_t node_size, size_t node_num,
                                           const SlotResolver* resolve,
                                           bool repair) {
  error_.Clear();
  const char* who = "ShmLinkTable::InitForWrite";
  if (node_size == 0 || node_size > (8u << 20) || node_num == 0 ||
      node_num > kMaxNodes) {
    return detail::Segment<Alloc>::Fail(
        &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
        "node_size must be 1..8 MiB and node_num 1..%llu (got %zu, %zu)",
        static_cast<unsigned long long>(kMaxNodes), node_size, node_num);
  }
  uint64_t words = (node_size + 7) / 8;
  uint64_t stride = 16 + words * 8;
  int flags = DefaultCreateFlags();
  // A table made to grow in steps links (and reserves) its first step
  // only; the rest stays untouched until values need it (Extend).
  const uint64_t first_step = StepNodes(stride, 0);
  const uint64_t linked = (flags & kGrowInSteps)
                              ? std::min<uint64_t>(node_num, first_step)
                              : node_num;
  auto init = [&](char* base) {
    auto* h = reinterpret_cast<detail::LinkTableHeader*>(
        base + sizeof(detail::SegmentHeader));
    char* nodes = base + kNodesOffset;
    for (uint64_t i = 1; i <= linked; ++i) {
      auto* n = reinterpret_cast<detail::LinkNodeHead*>(nodes + i * stride);
      n->next.store(i == linked ? 0 : static_cast<uint32_t>(i + 1),
                    std::memory_order_relaxed);
    }
    h->free_head.store(1, std::memory_order_relaxed);
    h->next_tag.store(1, std::memory_order_relaxed);
    h->free_nodes.store(linked, std::memory_order_relaxed);
    h->unlinked.store(node_num - linked, std::memory_order_relaxed);
  };
  detail::SegmentSpec spec = Spec(words, node_num);
  if (linked < node_num) {
    spec.reserve_bytes = kNodesOffset + (linked + 1) * stride;
  }
  if (!seg_.OpenForWrite(shm_key, spec, flags, init, who, &error_)) {
    return false;
  }
  detail::LeaseResult lease;
  if (!seg_.TakeWriterLease(flags, who, &error_, &lease)) {
    return false;
  }
  Bind(words, node_num);
  if (hdr_->intent.op.load(std::memory_order_acquire) != detail::kLinkOpNone) {
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
      // For a repair tool that runs HealthCheck(auto_fix) next: drop the
      // record; the scan returns whatever the interrupted write held.
      detail::Log(kWarning, "%s(%s): discarding the damaged intent record "
                  "for repair\n", who, shm_key.c_str());
      hdr_->intent.op.store(detail::kLinkOpNone, std::memory_order_release);
      error_.Clear();
    }
  }
  return true;
}

// A growth step (kGrowInSteps): reserve, record, link, commit.
template <class Alloc>
bool ShmLinkTable<Alloc>::Extend(uint64_t n) {
  const char* who = "ShmLinkTable::Reserve";
  for (;;) {
    const uint64_t free = hdr_->free_nodes.load(std::memory_order_relaxed);
    if (n <= free) return true;
    const uint64_t unlinked = hdr_->unlinked.load(std::memory_order_relaxed);
    if (unlinked >= nodes_) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kCorrupted, 0, seg_.key(), who,
          "the header counts %llu unlinked nodes of %llu (`shmc check "
          "--fix` repairs it)", static_cast<unsigned long long>(unlinked),
          static_cast<unsigned long long>(nodes_));
    }
    if (n - free > unlinked) return false;  // the pool is full
    const uint64_t first = nodes_ - unlinked + 1;
    const uint64_t step = StepNodes(stride_, nodes_ - unlinked);
    const uint64_t count = std::min(unlinked, std::max(n - free, step));
    // The step's nodes were never written: what a failed reservation
    // took of them is given back (fresh).
    if (!seg_.Reserve(kNodesOffset + first * stride_, count * stride_, who,
                      &error_, true)) {
      return false;
    }
    const uint32_t rest = hdr_->free_head.load(std::memory_order_relaxed);
    RecordIntent(detail::kLinkOpExtend, 0,
                 link_buf_t(static_cast<uint32_t>(first), 0), link_buf_t(),
                 static_cast<uint32_t>(count), 0, rest, free + count, 0, 0);
    SHMC_CRASH_POINT(12);
    LinkStep(first, count, rest);
    Commit();
  }
}

template <class Alloc>
void ShmLinkTable<Alloc>::LinkStep(uint64_t first, uint64_t count,
                                   uint32_t rest) {
  const uint64_t last = first + count - 1;
  for (uint64_t i = first; i <= last; ++i) {
    detail::LinkNodeHead* h = Head(i);
    h->tag.store(0, std::memory_order_relaxed);
    h->len.store(0, std::memory_order_relaxed);
    h->hint.store(0, std::memory_order_relaxed);
    h->next.store(i == last ? rest : static_cast<uint32_t>(i + 1),
                  std::memory_order_relaxed);
  }
  SHMC_CRASH_POINT(13);
  hdr_->free_head.store(static_cast<uint32_t>(first),
                        std::memory_order_release);
  SHMC_CRASH_POINT(14);
  // SYNC POINT (release): a reader that sees a handle into the new nodes
  // (published after this) sees them counted as linked (Linkable).
  hdr_->unlinked.store(nodes_ - last, std::memory_order_release);
  seen_.store(last, std::memory_order_relaxed);
}

template <class Alloc>
bool ShmLinkTable<Alloc>::HeadLength(link_buf_t lb, uint32_t* len) const {
  if (!Linkable(lb.head()) || lb.tag() == 0 ||
      (lb.tag() & detail::kLinkHeadFlag)) {
    return false;
  }
  uint32_t want = lb.tag() | detail::kLinkHeadFlag;
  detail::LinkNodeHead* h = Head(lb.head());
  if (h->tag.load(std::memory_order_acquire) != want) return false;
  uint32_t l = h->len.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (h->tag.load(std::memory_order_relaxed) != want) return false;
  // A length no chain in this pool can hold is damage, not a value: never
  // let it size an allocation or a walk.
  if ((uint64_t{l} + words_ * 8 - 1) / (words_ * 8) > nodes_) return false;
  *len = l;
  return true;
}

template <class Alloc>
bool ShmLinkTable<Alloc>::PublishValue(std::atomic<uint64_t>* slot,
                                       uint64_t slot_id, link_buf_t old,
                                       const void* buf, size_t size) {
  if (!Writable() || size > kMaxValueLen || (size > 0 && buf == nullptr)) {
    return false;
  }
  uint32_t old_len = 0;
  if (old && !HeadLength(old, &old_len)) return false;
  uint32_t n_old = old ? NodesFor(old_len) : 0;
  uint32_t n_new = NodesFor(size);
  // The new value is complete before the old one goes: room for both.
  if (!Reserve(n_new)) return false;
  if (!FreeListHolds(n_new, "ShmLinkTable::PublishValue")) return false;
  uint32_t op = old ? detail::kLinkOpReplace : detail::kLinkOpInsert;
  link_buf_t lb = BeginNew(op, slot_id, old, n_old, n_new, size, old ? 0 : 1,
                           old_len);
  FillAndDetach(buf, size, n_new, lb);
  // SYNC POINT (release): the commit. Publishes the new value (and, for an
  // insert, the key written before) to readers acquiring the slot.
  slot->store(lb.packed(), std::memory_order_release);
  hdr_->intent.step.store(detail::kLinkStepPublished,
                          std::memory_order_relaxed);
  SHMC_CRASH_POINT(10);
  if (old) FreeChain(old, n_old);
  Commit();
  return true;
}

template <class Alloc>
bool ShmLinkTable<Alloc>::EraseValue(std::atomic<uint64_t>* slot,
                                     uint64_t slot_id, link_buf_t old) {
  uint32_t old_len = 0;
  if (!Writable() || !HeadLength(old, &old_len)) return false;
  uint32_t n_old = NodesFor(old_len);
  BeginNew(detail::kLinkOpErase, slot_id, old, n_old, 0, 0,
           static_cast<uint64_t>(-1), old_len);
  slot->store(0, std::memory_order_release);  // the commit
  SHMC_CRASH_POINT(11);
  FreeChain(old, n_old);
  Commit();
  return true;
}

template <class Alloc>
bool ShmLinkTable<Alloc>::IntentIsSane(const char* who) {
  detail::LinkIntent& in = hdr_->intent;
  auto o = std::memory_order_relaxed;
  uint32_t op = in.op.load(std::memory_order_acquire);
  link_buf_t nlb = link_buf_t::Unpack(in.new_lb.load(o));
  link_buf_t olb = link_buf_t::Unpack(in.old_lb.load(o));
  bool has_new = op == detail::kLinkOpNew || op == detail::kLinkOpInsert ||
                 op == detail::kLinkOpReplace;
  bool frees_old = op == detail::kLinkOpFree || op == detail::kLinkOpErase ||
                   op == detail::kLinkOpReplace;
  uint32_t step = in.step.load(o);
  const char* bad = nullptr;
  const uint64_t first = nlb.head(), count = in.new_nodes.load(o);
  if (op == detail::kLinkOpExtend) {
    // The step linked nodes first .. first + count - 1, the pool's lowest
    // unlinked ones, onto the free list that began at cut_next.
    const uint64_t now = hdr_->unlinked.load(o);
    if (first == 0 || first > nodes_ || count == 0 ||
        count > nodes_ - first + 1) {
      bad = "new_lb.head";
    } else if (now != nodes_ - first + 1 &&
               now != nodes_ - (first + count - 1)) {
      bad = "unlinked";  // the step is not at the pool's unlinked top
    } else if (in.cut_next.load(o) > nodes_) {
      bad = "cut_next";
    }
  } else if (op < detail::kLinkOpNew || op > detail::kLinkOpErase) {
    bad = "op";
  } else if (step < detail::kLinkStepFill || step > detail::kLinkStepPublished) {
    bad = "step";
  } else if (has_new && (nlb.head() == 0 || nlb.head() > nodes_)) {
    bad = "new_lb.head";
  } else if (has_new && (in.new_nodes.load(o) == 0 ||
                         in.new_nodes.load(o) > nodes_)) {
    bad = "new_nodes";
  } else if (frees_old && (olb.head() == 0 || olb.head() > nodes_)) {
    bad = "old_lb.head";
  } else if (frees_old && (in.old_nodes.load(o) == 0 ||
                           in.old_nodes.load(o) > nodes_)) {
    bad = "old_nodes";
  } else if (in.cut_next.load(o) > nodes_) {
    bad = "cut_next";
  }
  if (bad == nullptr) return true;
  return detail::Segment<Alloc>::Fail(
      &error_, ErrorCode::kCorrupted, 0, seg_.key(), who,
      "the intent record of an interrupted write is damaged (%s out of "
      "range); nothing was recovered: `shmc check --fix` rebuilds the pool",
      bad);
}

template <class Alloc>
bool ShmLinkTable<Alloc>::Recover(const SlotResolver* resolve) {
  detail::LinkIntent& in = hdr_->intent;
  auto o = std::memory_order_relaxed;
  uint32_t op = in.op.load(std::memory_order_acquire);
  if (op == detail::kLinkOpNone) return true;
  if (!IntentIsSane("ShmLinkTable::Recover")) return false;
  if (op == detail::kLinkOpExtend) {
    // No value used the step's nodes yet (the record stands until the
    // step is done): linking them again is linking them once.
    LinkStep(link_buf_t::Unpack(in.new_lb.load(o)).head(),
             in.new_nodes.load(o), in.cut_next.load(o));
    SetCounters(true);
    in.op.store(detail::kLinkOpNone, std::memory_order_release);
    detail::Log(kWarning, "ShmLinkTable(%s): recovered an interrupted "
                "growth step (rolled forward)\n", seg_.key().c_str());
    return true;
  }
  link_buf_t nlb = link_buf_t::Unpack(in.new_lb.load(o));
  link_buf_t olb = link_buf_t::Unpack(in.old_lb.load(o));
  uint64_t slot_id = in.slot.load(o);
  bool map_op = op >= detail::kLinkOpInsert && op <= detail::kLinkOpErase;
  std::atomic<uint64_t>* slot =
      map_op && resolve != nullptr ? (*resolve)(slot_id) : nullptr;
  if (op > detail::kLinkOpErase || (map_op && slot == nullptr)) {
    detail::Log(kWarning, "ShmLinkTable(%s): pending map operation %u left "
                "for its ShmHashMap to recover\n", seg_.key().c_str(), op);
    return true;
  }
  bool committed = false;
  switch (op) {
    case detail::kLinkOpNew: committed = false; break;
    case detail::kLinkOpFree: committed = true; break;
    case detail::kLinkOpInsert:
    case detail::kLinkOpReplace:
      committed = slot->load(std::memory_order_acquire) == nlb.packed();
      break;
    case detail::kLinkOpErase:
      committed = slot->load(std::memory_order_acquire) != olb.packed();
      break;
  }
  bool has_new = op == detail::kLinkOpNew || op == detail::kLinkOpInsert ||
                 op == detail::kLinkOpReplace;
  if (has_new && !committed) {
    RollbackNew(nlb, in.new_nodes.load(o), in.step.load(o),
                in.cut_next.load(o));
  }
  bool frees_old = op == detail::kLinkOpFree || op == detail::kLinkOpErase ||
                   op == detail::kLinkOpReplace;
  if (frees_old && committed) FreeChain(olb, in.old_nodes.load(o));
  SetCounters(committed);
  in.op.store(detail::kLinkOpNone, std::memory_order_release);
  detail::Log(kWarning, "ShmLinkTable(%s): recovered an interrupted "
              "operation %u (rolled %s)\n", seg_.key().c_str(), op,
              committed ? "forward" : "back");
  return true;
}

template <class Alloc>
bool ShmLinkTable<Alloc>::HealthCheck(HealthStat* hs, bool auto_fix) {
  if (hdr_ == nullptr || hs == nullptr) return false;
  if (auto_fix && !Writable()) return false;
  std::memset(hs, 0, sizeof(*hs));
  enum : uint8_t { kUnknown, kFree, kUsed };
  // Only the linked part of the pool is read: the unlinked top may not be
  // reserved (reading it could raise SIGBUS). A count of unlinked nodes
  // that leaves none linked is damage: auto_fix reserves the whole pool
  // and links all of it.
  uint64_t unlinked = hdr_->unlinked.load(std::memory_order_acquire);
  if (unlinked >= nodes_) {
    ++hs->counter_mismatches;
    if (!auto_fix) return true;
    if (!seg_.Reserve(kNodesOffset, (nodes_ + 1) * stride_,
                      "ShmLinkTable::HealthCheck", &error_)) {
      return false;
    }
    unlinked = 0;
    hdr_->unlinked.store(0, std::memory_order_release);
    seen_.store(nodes_, std::memory_order_relaxed);
  }
  const uint64_t top = nodes_ - unlinked;  // the last linked node
  std::vector<uint8_t> state(top + 1, kUnknown);
  // Free list: must be acyclic, in range, and made of untagged nodes.
  uint64_t free_count = 0;
  for (uint64_t i = hdr_->free_head.load(std::memory_order_acquire); i != 0;
       i = Head(i)->next.load(std::memory_order_relaxed)) {
    if (i > top || state[i] != kUnknown || free_count > top) {
      hs->bad_free_list = 1;
      break;
    }
    state[i] = kFree;
    ++free_count;
  }
  // Values: every head node's chain, followed to its end, must carry the
  // head's tag, and have exactly the nodes the length needs. kGiven: nodes
  // of a cleared value or a chain's surplus, returned to the pool by
  // auto_fix without counting as leaked.
  enum : uint8_t { kGiven = kUsed + 1 };
  uint64_t cap = words_ * 8;
  uint64_t bufs = 0, bytes = 0;
  bool give = false;
  std::vector<uint64_t> chain;
  for (uint64_t h = 1; h <= top; ++h) {
    uint32_t t = Head(h)->tag.load(std::memory_order_acquire);
    if (!(t & detail::kLinkHeadFlag) || state[h] != kUnknown) continue;
    uint32_t tag = t & ~detail::kLinkHeadFlag;
    uint32_t len = Head(h)->len.load(std::memory_order_relaxed);
    uint64_t need = len == 0 ? 1 : (len + cap - 1) / cap;
    chain.assign(1, h);
    state[h] = kUsed;
    bool linked = true;
    // Each node joins at most one chain, so this ends within nodes_ steps.
    for (uint64_t i = Head(h)->next.load(std::memory_order_relaxed); i != 0;
         i = Head(i)->next.load(std::memory_order_relaxed)) {
      if (i > top || state[i] != kUnknown ||
          Head(i)->tag.load(std::memory_order_relaxed) != tag) {
        linked = false;
        break;
      }
      state[i] = kUsed;
      chain.push_back(i);
    }
    bool keep = linked && chain.size() >= need;
    if (!linked) {
      ++hs->bad_linked_link_bufs;
    } else if (chain.size() < need) {
      ++hs->too_short_link_bufs;
    } else if (chain.size() > need) {
      ++hs->too_long_link_bufs;
      if (auto_fix) {
        // Readers stop after `need` nodes, so cutting here is invisible.
        Head(chain[need - 1])->next.store(0, std::memory_order_release);
        for (uint64_t k = need; k < chain.size(); ++k) state[chain[k]] = kGiven;
        give = true;
      }
    }
    if (keep) {
      ++bufs;
      bytes += len;
    } else if (auto_fix) {
      Head(h)->tag.store(0, std::memory_order_release);  // drop the value
      for (uint64_t c : chain) state[c] = kGiven;
      give = true;
      ++hs->cleared_link_bufs;
    }
  }
  for (uint64_t i = 1; i <= top; ++i) {
    if (state[i] == kUnknown) ++hs->leaked_nodes;
  }
  if (auto_fix && (hs->leaked_nodes > 0 || hs->bad_free_list || give)) {
    // Rebuild the free list from every node that holds no valid value.
    uint32_t head = 0;
    free_count = 0;
    for (uint64_t i = top; i >= 1; --i) {
      if (state[i] == kUsed) continue;
      if (state[i] == kUnknown) ++hs->recycled_leaked_nodes;
      Head(i)->tag.store(0, std::memory_order_relaxed);
      Head(i)->next.store(head, std::memory_order_relaxed);
      head = static_cast<uint32_t>(i);
      ++free_count;
    }
    std::atomic_thread_fence(std::memory_order_release);
    hdr_->free_head.store(head, std::memory_order_release);
  }
  if (hdr_->free_nodes.load() != free_count) ++hs->counter_mismatches;
  if (hdr_->bufs.load() != bufs) ++hs->counter_mismatches;
  if (hdr_->buf_bytes.load() != bytes) ++hs->counter_mismatches;
  if (auto_fix) {
    hdr_->free_nodes.store(free_count, std::memory_order_relaxed);
    hdr_->bufs.store(bufs, std::memory_order_relaxed);
    hdr_->buf_bytes.store(bytes, std::memory_order_relaxed);
  }
  hs->total_free_nodes = free_count + unlinked;
  hs->total_link_bufs = bufs;
  hs->total_link_buf_bytes = bytes;
  return true;
}

}  // namespace shmc
