// The wait board (docs/server.md, "Blocking commands"): every client
// blocked in BLPOP, BLMOVE, BZPOPMIN and the others, whichever worker
// holds it, in one segment every worker maps. A blocked client has one row
// per key it waits on, all with its ticket: its place in line, given from
// one counter, so the client that blocked first has the lowest ticket on
// every key it shares with later ones, and is served first.
//
// Rows change only under the store's write lock (Store::Begin), so a
// command that finds its keys empty and takes its rows does both in one
// step no write can come between. A row is published by its ticket word,
// written last, and freed by zeroing it first: a worker killed halfway
// leaves a row that is free or whole. A whole row of a dead worker (its
// pid gone, or reused: the start time differs) counts for nothing and is
// freed by the next writer that meets it.
//
// The segment is made sparse: the head and the rows up to rows_used are
// reserved (a chunk at a time, before a row past them is taken), and no
// row past rows_used is ever read, so the board holds what blocked clients
// use. Nothing read here indexes memory: rows_used is clamped to the table and
// a row's pid is only compared and probed (shmc::detail::ProcessAlive
// refuses pids outside the kernel's range), so a damaged board can delay
// or reorder wakes, never crash a worker.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"

namespace shmkv {

struct WaitRow {
  std::atomic<uint64_t> ticket;  // 0: free
  std::atomic<uint64_t> key;     // the key's hash (HashKey(key).a)
  std::atomic<uint64_t> pid;     // the worker holding the client
  std::atomic<uint64_t> start;   // that worker's start time
};

constexpr size_t kWaitRows = 1 << 16;  // blocked clients times their keys

struct WaitBoardBlock {
  std::atomic<uint64_t> next_ticket;
  std::atomic<uint64_t> rows_used;  // rows past this one are all free
  // Bumped when a wake could not be delivered (a worker's socket full):
  // every worker then retries all its blocked clients.
  std::atomic<uint64_t> resync;
  std::atomic<uint64_t> reserved;
  WaitRow rows[kWaitRows];
};
static_assert(std::is_standard_layout<WaitBoardBlock>::value &&
                  offsetof(WaitBoardBlock, rows) == 32 &&
                  sizeof(WaitRow) == 32 &&
                  sizeof(WaitBoardBlock) == 32 + 32 * kWaitRows,
              "the wait board lives in shared memory: its layout is fixed "
              "(its segment's node size tells another one apart)");

class Waits {
 public:
  // Maps the board `key` (created, zero-filled, when missing).
  bool Open(const std::string& key, std::string* err);
  bool open() const { return b_ != nullptr; }

  // Whether any row may be taken: a writer with nothing to wake looks no
  // further.
  bool any() const {
    return b_ != nullptr && b_->rows_used.load(std::memory_order_acquire) != 0;
  }

  // Under the store's write lock. A new ticket for a client of this
  // process waiting on the keys `keys` (hashes), its rows taken; 0 when
  // the board has no room.
  uint64_t Register(const std::vector<uint64_t>& keys);
  // Under the store's write lock: the rows of `ticket` on `keys`, held by
  // this process from now on (a client moved here by a hot restart keeps
  // its place in line). False when the board has no room.
  bool Adopt(uint64_t ticket, const std::vector<uint64_t>& keys);
  // Under the store's write lock: frees the rows of `ticket`.
  void Remove(uint64_t ticket);
  // Under the store's write lock: true when a live client with a ticket
  // below `ticket` waits on `key`. Rows of dead workers it meets are freed.
  bool Older(uint64_t key, uint64_t ticket);

  // Any time: the pids holding clients that wait on `key`.
  void Holders(uint64_t key, std::vector<uint64_t>* pids) const;
  // Any time: the pids holding clients that wait on any key.
  void AllHolders(std::vector<uint64_t>* pids) const;
  // Any time: the tickets of live rows this process holds (for the
  // sweep that frees rows of clients it no longer has).
  void Mine(std::vector<uint64_t>* tickets) const;
  // Blocked clients (distinct live tickets) on the whole board.
  uint64_t Clients() const;

  uint64_t resync() const {
    return b_ == nullptr ? 0 : b_->resync.load(std::memory_order_acquire);
  }
  void BumpResync() {
    if (b_ != nullptr) b_->resync.fetch_add(1, std::memory_order_acq_rel);
  }

 private:
  size_t Used() const;
  void HoldersOf(uint64_t key, bool every, std::vector<uint64_t>* pids) const;
  bool Alive(uint64_t pid, uint64_t start);
  void Take(size_t i, uint64_t ticket, uint64_t key);
  bool TakeRows(uint64_t ticket, const std::vector<uint64_t>& keys);
  size_t FreeRow(size_t from);
  void Trim();

  // Reserves the head and the first `rows` rows (the segment is sparse):
  // false when the system has no room.
  bool Room(size_t rows);

  shmc::ShmArray<WaitBoardBlock, shmc::POSIX> arr_;
  size_t reserved_rows_ = 0;  // rows this process knows are reserved
  WaitBoardBlock* b_ = nullptr;
  uint64_t pid_ = 0, start_ = 0;  // this process
  // Liveness of other workers, remembered briefly: one probe per worker
  // per pass, not per row.
  struct Seen {
    uint64_t pid, start;
    bool alive;
    uint64_t at_ns;
  };
  std::vector<Seen> seen_;
};

}  // namespace shmkv
