// Each worker's latency per command as a shmc::QuantileSketch (every
// quantile within 1% however bursty the latency: docs/percentile.md), in
// a segment of its own next to the statistics (SEG.ctl.latency): one slot
// per worker slot, under a sequence word (odd while its worker writes),
// read and merged by anyone (INFO latencystats, LATENCY HISTOGRAM,
// /stats).
//
// The statistics segment (stats.h) keeps its layout, so a worker of this
// build still publishes its counts into the one an older running master
// made (a hot upgrade); this segment is made by whichever process of the
// store opens it first, and each worker clears its own slot when it
// starts (the master of an older build does not know it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "server/store/stats.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/quantile_sketch.h"
#include "shmc/shm_array.h"

namespace shmkv {

// A slot's sketches, each command's compact form (QuantileSketch::
// SaveCompact: the counts that are not zero) after its id and length:
//   u64 command  u64 words  compact words ...   (until `used`)
// A command's latency spans a few powers of two, so a record is a few
// hundred words; a slot holds kLatencyWords (128 KiB). Commands that do
// not fit are left out of it (INFO reports them from the estimators).
// The segment is made sparse: every slot's head (seq, pid, used) is
// reserved by each process that opens it, a slot's records by its worker
// before it writes them, so the segment holds what workers publish; a
// reader reads no further than `used`.
constexpr size_t kLatencyWords = 16384;
struct LatencySlot {
  std::atomic<uint64_t> seq;
  std::atomic<uint64_t> pid;   // 0: never written
  std::atomic<uint64_t> used;  // words of records
  std::atomic<uint64_t> words[kLatencyWords];
};
static_assert(std::is_standard_layout<LatencySlot>::value &&
                  sizeof(LatencySlot) == 8 * (3 + kLatencyWords),
              "LatencySlot lives in shared memory: its layout is its size "
              "(the segment's node size tells one layout from another)");

// A command's sketches, merged: null for a command no worker timed.
using LatencyTotals = std::vector<std::unique_ptr<shmc::QuantileSketch>>;

class SharedLatency {
 public:
  // Maps the segment `key`, made when missing.
  bool Open(const std::string& key, std::string* err);
  bool open() const { return slots_ != nullptr; }
  // A worker, before it first publishes into `slot`.
  void Clear(size_t slot);
  // A worker: its sketches, when it timed a command since the last time.
  void Publish(size_t slot, const LocalStats& s);
  // Every slot's sketches, merged per command (kMaxCommands entries).
  LatencyTotals Merge() const;
  // Master: merges the slot of a worker that is gone into kRetiredSlot
  // (stats.h) and empties it for the next worker. Sketches the retired
  // slot has no room for are left out, as Publish leaves them.
  void Retire(size_t slot);

 private:
  // Adds slot `slot`'s records into *t; false when the slot is not
  // readable (never written, or left odd by a worker killed while it
  // wrote: `writer_gone` reads it as it stands).
  bool ReadRecords(size_t slot, LatencyTotals* t, bool writer_gone) const;
  // Writes `sketches` (kMaxCommands entries, null: none) as the slot's
  // records, as many as fit in what can be reserved; `also` (if any) runs
  // while the slot's sequence is odd.
  void WriteRecords(size_t slot,
                    const std::vector<std::unique_ptr<shmc::QuantileSketch>>&
                        sketches,
                    const std::function<void()>& also);
  // Reserves the first `words` record words of this worker's slot (the
  // segment is sparse): false when the system has no room.
  bool Room(size_t slot, size_t words);

  shmc::ShmArray<LatencySlot, shmc::POSIX> arr_;
  LatencySlot* slots_ = nullptr;
  uint64_t published_ = 0;  // commands timed at the last Publish
  size_t reserved_words_ = 0;  // record words of our slot reserved
  std::vector<uint64_t> out_;  // the records Publish writes
};

}  // namespace shmkv
