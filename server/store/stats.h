// Server statistics shared by every process (docs/server.md, "Stats"):
// one slot per worker in a ShmArray, written only by its worker under a
// sequence word (odd while writing) and read by anyone (INFO, /stats). A
// worker publishes its counters and its latency estimators (the
// distribution-free shmc::QuantileEstimator: p50, p99 and p99.9 per
// command) every 100 ms; readers merge all slots. When the master reaps a
// worker, it adds the worker's slot into the retired slot (kRetiredSlot)
// and gives the slot to the next worker: workers gone keep counting
// toward the totals; only live workers' connections are counted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "shmc/percentile.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/quantile_sketch.h"
#include "shmc/shm_array.h"

namespace shmkv {

// Commands with their own statistics (a command's id indexes the tables
// below). The shared segment's table may be shorter: a worker of this
// build publishes into a segment made by an older master (hot upgrade)
// with that master's table length (kLegacyCommands), so ids below it keep
// counting; ids past it count once the master runs this build too.
constexpr size_t kMaxCommands = 256;
constexpr size_t kLegacyCommands = 96;  // the first segment layout's table
constexpr size_t kMaxWorkerSlots = 64;
// The last slot keeps the figures of every worker gone (SharedStats::
// Retire): workers get the others, the lowest one free first, so a store
// whose workers are replaced over and over uses as many slots as it ever
// had workers at once, and its counters never go down.
constexpr size_t kRetiredSlot = kMaxWorkerSlots - 1;
// The retired slot's pid: above any pid_max Linux allows (2^22), so no
// reader, of this build or an older one, counts it as a live worker.
constexpr uint64_t kRetiredPid = 0x7ffffffe;
constexpr double kQuantiles[3] = {0.5, 0.99, 0.999};

struct CommandWords {
  uint64_t calls;
  uint64_t usec;  // total service time
  uint64_t est[3][shmc::QuantileEstimator::kWords];  // per quantile: Save()
};

// The UDP path's counters (--udp-port): requests answered, datagrams
// dropped as malformed or oversized, dropped from non-loopback peers in
// protected mode, reply datagrams the socket had no room for, and the
// recvmmsg calls that returned datagrams (datagrams / batches: how much
// batching there is).
struct UdpStats {
  uint64_t requests, bad, denied, send_drops, batches;
  void Add(const UdpStats& o) {
    requests += o.requests;
    bad += o.bad;
    denied += o.denied;
    send_drops += o.send_drops;
    batches += o.batches;
  }
};

// One worker's figures, as plain words.
struct StatsValues {
  uint64_t pid;
  uint64_t connections;
  uint64_t connections_total;
  uint64_t commands;
  uint64_t errors;
  uint64_t bytes_in, bytes_out;
  uint64_t http_requests;
  uint64_t adopted;  // connections taken over in hot restarts
  uint64_t ops_per_sec;  // commands per second over the last ~1 s
  uint64_t cpu_user_us, cpu_sys_us;  // the worker's CPU time (getrusage)
  // Clients closed for the server-wide buffer bound / for --timeout, and
  // the bytes the worker's clients buffer now (live workers' count).
  uint64_t evicted_clients, timed_out_clients, client_buffers;
  uint64_t rejected_connections;  // refused at the open files limit
  UdpStats udp;
  CommandWords cmd[kMaxCommands];  // a slot holds the first n of these
};
static_assert(std::is_trivially_copyable<StatsValues>::value &&
                  sizeof(StatsValues) % 8 == 0 &&
                  offsetof(StatsValues, cmd) % 8 == 0 &&
                  sizeof(CommandWords) % 8 == 0,
              "StatsValues travels through a slot's words");

// A worker's slot in shared memory for a table of `kCommands` commands:
// StatsValues word by word up to its first kCommands commands, under a
// sequence word (a seqlock: odd while its worker writes; readers retry).
// The segment is a ShmArray of these, so its node size tells one table
// length from another.
template <size_t kCommands>
struct StatsSlotOf {
  static constexpr size_t kWords =
      (offsetof(StatsValues, cmd) + kCommands * sizeof(CommandWords)) / 8;
  std::atomic<uint64_t> seq;
  std::atomic<uint64_t> words[kWords];
};
using StatsSlot = StatsSlotOf<kMaxCommands>;
static_assert(std::is_standard_layout<StatsSlot>::value &&
                  sizeof(StatsSlot) == 8 + sizeof(StatsValues),
              "StatsSlot lives in shared memory: a sequence word, then the "
              "values");

// What a worker accumulates between publications.
struct LocalStats {
  LocalStats();
  uint64_t connections = 0, connections_total = 0, commands = 0, errors = 0;
  uint64_t bytes_in = 0, bytes_out = 0, http_requests = 0, adopted = 0;
  uint64_t ops_per_sec = 0;
  uint64_t cpu_user_us = 0, cpu_sys_us = 0;
  uint64_t evicted_clients = 0, timed_out_clients = 0, client_buffers = 0;
  uint64_t rejected_connections = 0;
  UdpStats udp = {};
  uint64_t calls[kMaxCommands] = {};
  uint64_t usec[kMaxCommands] = {};
  std::vector<shmc::QuantileEstimator> est;  // kMaxCommands * 3
  // Each command's latency in nanoseconds (latency.h), made at its first
  // call. The estimators above stay for workers and masters of older
  // builds that read this worker's slot.
  std::vector<std::unique_ptr<shmc::QuantileSketch>> sketch;
  void Record(size_t cmd, double usec);
};

// The merged view.
struct StatsTotals {
  uint64_t workers_alive = 0;
  uint64_t connections = 0, connections_total = 0, commands = 0, errors = 0;
  uint64_t bytes_in = 0, bytes_out = 0, http_requests = 0, adopted = 0;
  uint64_t ops_per_sec = 0;  // live workers only
  uint64_t cpu_user_us = 0, cpu_sys_us = 0;  // every worker's, dead ones too
  uint64_t evicted_clients = 0, timed_out_clients = 0;
  uint64_t rejected_connections = 0;
  UdpStats udp = {};
  uint64_t client_buffers = 0;  // live workers only
  uint64_t calls[kMaxCommands] = {};
  uint64_t usec[kMaxCommands] = {};
  std::vector<shmc::QuantileEstimator> est;
  StatsTotals();
};

// A reader's wait for a slot its writer holds odd (or changed under the
// copy). A worker preempted while it writes holds its slot for a
// scheduler tick or more, and a reader that gave up on it would leave
// its figures out (a total that falls): the reader spins a little, then
// yields and tries again for up to kWaitNs, and stops at once when the
// writer is dead (a slot it left odd stays so).
class SlotWait {
 public:
  static constexpr uint64_t kWaitNs = 200ULL * 1000 * 1000;
  // False when the reader should stop waiting; `pid`: the slot's writer
  // (0: not known, taken as alive).
  bool Again(uint64_t pid);

 private:
  int tries_ = 0;
  uint64_t deadline_ns_ = 0;
};

class SharedStats {
 public:
  // A worker (create false) that finds the segment made by a master of
  // the first layout (kLegacyCommands commands) uses it as it is. One that
  // finds another layout (a newer build's master, which a hot downgrade
  // keeps running) gets false with *other_layout set: it may serve without
  // publishing (Publish and Clear do nothing, Merge counts nothing).
  bool Open(const std::string& key, bool create, std::string* err,
            bool* other_layout = nullptr);
  bool open() const { return slots_ != nullptr; }
  // Commands the segment has room for (kMaxCommands, or kLegacyCommands
  // in a segment an older master made).
  size_t commands() const { return commands_; }
  // Master: clears slot i for a new worker (a slot never written is
  // left alone: it is all zero).
  void Clear(size_t slot);
  // Worker: reserves the memory of its slot (a segment this build makes
  // is sparse). False with *err when the system has no room.
  bool ReserveSlot(size_t slot, std::string* err);
  // Worker: writes its slot, reserved first (nothing is written while it
  // cannot be).
  void Publish(size_t slot, const LocalStats& s);
  StatsTotals Merge() const;
  // Master: adds the slot of a worker that is gone (reaped: it writes no
  // more) into kRetiredSlot and clears it for the next worker. False
  // when the retired slot has no room (a full system): `slot` is then
  // left as it is, still counted, and must not be given again.
  bool Retire(size_t slot, std::string* err);

 private:
  StatsTotals MergeOnce() const;
  // The slot's sequence word and its words.
  std::atomic<uint64_t>* Seq(size_t slot) const;
  std::atomic<uint64_t>* Words(size_t slot) const;

  // The first `bytes` of slot `slot`, in whichever array is open.
  bool ReserveBytes(size_t slot, size_t bytes);
  std::string ReserveError() const;

  shmc::ShmArray<StatsSlot, shmc::POSIX> arr_;
  shmc::ShmArray<StatsSlotOf<kLegacyCommands>, shmc::POSIX> legacy_;
  char* slots_ = nullptr;   // slot 0 of whichever is open
  size_t slot_bytes_ = 0;
  size_t commands_ = 0;
  size_t reserved_slot_ = kMaxWorkerSlots;  // ReserveSlot's, if any
};

}  // namespace shmkv
