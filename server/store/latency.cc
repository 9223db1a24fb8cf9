#include "server/store/latency.h"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "server/store/sparse.h"

namespace shmkv {

bool SharedLatency::Open(const std::string& key, std::string* err) {
  int flags = shmc::DefaultCreateFlags();
  // Every worker writes its own slot.
  shmc::SetDefaultCreateFlags(flags | shmc::kCreateIfNotExist |
                              shmc::kSharedWriters);
  // Made sparse: each slot's head is reserved here (readers look at every
  // slot's pid), its records by their worker as they grow (Publish).
  bool ok = arr_.InitForWrite(key, kMaxWorkerSlots, 0);
  shmc::SetDefaultCreateFlags(flags);
  for (size_t i = 0; ok && i < kMaxWorkerSlots; ++i) {
    ok = arr_.Reserve(i, 0, offsetof(LatencySlot, words));
  }
  if (!ok) {
    *err = arr_.last_error().message;
    return false;
  }
  slots_ = const_cast<LatencySlot*>(&arr_[0]);
  return true;
}

bool SharedLatency::Room(size_t slot, size_t words) {
  return ReserveGrowing(&arr_, slot, offsetof(LatencySlot, words), 8, words,
                        512, kLatencyWords, &reserved_words_);
}

void SharedLatency::Clear(size_t slot) {
  if (!open() || slot >= kMaxWorkerSlots) return;
  LatencySlot& s = slots_[slot];
  uint64_t seq = s.seq.load(std::memory_order_relaxed);
  s.seq.store(seq | 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.used.store(0, std::memory_order_relaxed);
  s.pid.store(static_cast<uint64_t>(getpid()), std::memory_order_relaxed);
  s.seq.store((seq | 1) + 1, std::memory_order_release);
  published_ = 0;
  reserved_words_ = 0;
}

void SharedLatency::Publish(size_t slot, const LocalStats& l) {
  if (!open() || slot >= kMaxWorkerSlots) return;
  uint64_t timed = 0;
  for (size_t c = 0; c < kMaxCommands; ++c) timed += l.calls[c];
  if (timed == published_) return;
  published_ = timed;
  WriteRecords(slot, l.sketch, nullptr);
}

void SharedLatency::WriteRecords(
    size_t slot,
    const std::vector<std::unique_ptr<shmc::QuantileSketch>>& sketches,
    const std::function<void()>& also) {
  out_.clear();
  for (size_t c = 0; c < kMaxCommands && c < sketches.size(); ++c) {
    const shmc::QuantileSketch* k = sketches[c].get();
    if (k == nullptr || k->Count() == 0) continue;
    size_t n = k->CompactWords();
    if (out_.size() + 2 + n > kLatencyWords) continue;  // no room: left out
    out_.push_back(c);
    out_.push_back(n);
    out_.resize(out_.size() + n);
    k->SaveCompact(&out_[out_.size() - n]);
  }
  if (!Room(slot, out_.size())) {
    // No memory for them all (a full tmpfs): the records that fit in
    // what is reserved are published, the rest left out as above.
    size_t at = 0;
    while (out_.size() - at >= 2 && at + 2 + out_[at + 1] <= reserved_words_) {
      at += 2 + static_cast<size_t>(out_[at + 1]);
    }
    out_.resize(at);
  }
  LatencySlot& s = slots_[slot];
  uint64_t seq = s.seq.load(std::memory_order_relaxed);
  s.seq.store(seq | 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < out_.size(); ++i) {
    s.words[i].store(out_[i], std::memory_order_relaxed);
  }
  s.used.store(out_.size(), std::memory_order_relaxed);
  if (also) also();
  s.seq.store((seq | 1) + 1, std::memory_order_release);
}

bool SharedLatency::ReadRecords(size_t slot, LatencyTotals* t,
                                bool writer_gone) const {
  const LatencySlot& s = slots_[slot];
  const uint64_t pid = s.pid.load(std::memory_order_relaxed);
  if (pid == 0) return false;
  // The slot's records, copied while its sequence stood still and even.
  // A slot whose worker died writing it stays odd: left out, unless the
  // caller knows the writer is gone (then each word is one it wrote).
  std::vector<uint64_t> w;
  bool copied = false;
  SlotWait wait;
  while (!copied) {
    uint64_t seq = s.seq.load(std::memory_order_acquire);
    if (!(seq & 1) || writer_gone) {
      uint64_t used = s.used.load(std::memory_order_relaxed);
      w.resize(used <= kLatencyWords ? used : 0);  // damage: nothing
      for (size_t k = 0; k < w.size(); ++k) {
        w[k] = s.words[k].load(std::memory_order_relaxed);
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      copied = writer_gone || s.seq.load(std::memory_order_relaxed) == seq;
    }
    if (!copied && !wait.Again(pid)) return false;
  }
  // Every id and length is checked before use; a record that does not
  // load ends the slot's (what follows it cannot be trusted).
  size_t at = 0;
  while (w.size() - at >= 2) {
    uint64_t c = w[at], n = w[at + 1];
    at += 2;
    shmc::QuantileSketch one;
    size_t took = 0;
    if (c >= kMaxCommands || n > w.size() - at ||
        !one.LoadCompact(&w[at], static_cast<size_t>(n), &took) ||
        took != n) {
      break;
    }
    at += static_cast<size_t>(n);
    if ((*t)[c] == nullptr) (*t)[c] = std::make_unique<shmc::QuantileSketch>();
    (*t)[c]->Merge(one);
  }
  return true;
}

// As SharedStats::Merge: made again when a worker's sketches moved into
// the retired slot meanwhile (its sequence odd or changed).
LatencyTotals SharedLatency::Merge() const {
  if (!open()) return LatencyTotals(kMaxCommands);
  const std::atomic<uint64_t>& retired = slots_[kRetiredSlot].seq;
  SlotWait wait;  // the retired slot's writer is the master
  for (;;) {
    uint64_t before = retired.load(std::memory_order_acquire);
    if ((before & 1) && wait.Again(0)) continue;
    LatencyTotals t(kMaxCommands);
    for (size_t i = 0; i < kMaxWorkerSlots; ++i) ReadRecords(i, &t, false);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (retired.load(std::memory_order_relaxed) == before || !wait.Again(0)) {
      return t;
    }
  }
}

void SharedLatency::Retire(size_t slot) {
  if (!open() || slot >= kRetiredSlot) return;
  // The worker's slot is emptied while the retired slot's sequence is
  // odd, so a reader sees its sketches in one place (Merge).
  auto empty = [this, slot] {
    LatencySlot& s = slots_[slot];
    uint64_t seq = s.seq.load(std::memory_order_relaxed);
    s.seq.store(seq | 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.used.store(0, std::memory_order_relaxed);
    s.pid.store(0, std::memory_order_relaxed);
    s.seq.store((seq | 1) + 1, std::memory_order_release);
  };
  LatencyTotals t(kMaxCommands);
  if (!ReadRecords(slot, &t, true)) {
    empty();
    return;
  }
  ReadRecords(kRetiredSlot, &t, false);
  // The retired slot's writer is this master: readers that find it odd
  // wait for it rather than leave it out.
  slots_[kRetiredSlot].pid.store(static_cast<uint64_t>(getpid()),
                                 std::memory_order_relaxed);
  WriteRecords(kRetiredSlot, t, empty);
}

}  // namespace shmkv
