#include "server/store/waits.h"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "server/store/sparse.h"
#include "shmc/detail/process.h"
#include "shmc/global_options.h"

namespace shmkv {

namespace {

constexpr uint64_t kSeenForNs = 50 * 1000 * 1000;  // liveness kept 50 ms

}  // namespace

bool Waits::Open(const std::string& key, std::string* err) {
  b_ = nullptr;
  // Every worker writes the board (under the store's lock), whatever the
  // process's default flags say.
  const int flags = shmc::DefaultCreateFlags();
  shmc::SetDefaultCreateFlags(flags | shmc::kSharedWriters);
  // Made sparse: the head and the rows in use are reserved, a chunk at a
  // time as rows_used grows (Room); nothing reads past rows_used.
  bool ok = arr_.InitForWrite(key, 1, 0);
  shmc::SetDefaultCreateFlags(flags);
  reserved_rows_ = 0;
  ok = ok && Room(1);
  if (!ok) {
    *err = arr_.last_error().message;
    return false;
  }
  b_ = const_cast<WaitBoardBlock*>(&arr_[0]);
  pid_ = static_cast<uint64_t>(getpid());
  start_ = shmc::detail::ProcessStartTime(pid_);
  return true;
}

size_t Waits::Used() const {
  uint64_t n = b_->rows_used.load(std::memory_order_acquire);
  return static_cast<size_t>(std::min<uint64_t>(n, kWaitRows));
}

bool Waits::Alive(uint64_t pid, uint64_t start) {
  if (pid == pid_) return start == start_;
  uint64_t now = shmc::detail::MonotonicNs();
  for (Seen& s : seen_) {
    if (s.pid == pid && s.start == start && now - s.at_ns < kSeenForNs) {
      return s.alive;
    }
  }
  bool alive = shmc::detail::ProcessAlive(pid) &&
               shmc::detail::ProcessStartTime(pid) == start;
  seen_.erase(std::remove_if(seen_.begin(), seen_.end(),
                             [&](const Seen& s) {
                               return s.pid == pid ||
                                      now - s.at_ns >= kSeenForNs;
                             }),
              seen_.end());
  seen_.push_back(Seen{pid, start, alive, now});
  return alive;
}

void Waits::Take(size_t i, uint64_t ticket, uint64_t key) {
  WaitRow& w = b_->rows[i];
  w.key.store(key, std::memory_order_relaxed);
  w.pid.store(pid_, std::memory_order_relaxed);
  w.start.store(start_, std::memory_order_relaxed);
  w.ticket.store(ticket, std::memory_order_release);
  if (i >= b_->rows_used.load(std::memory_order_relaxed)) {
    b_->rows_used.store(i + 1, std::memory_order_release);
  }
}

bool Waits::Room(size_t rows) {
  return ReserveGrowing(&arr_, 0, offsetof(WaitBoardBlock, rows),
                        sizeof(WaitRow), rows, 128, kWaitRows,
                        &reserved_rows_);
}

// The first free row from `from` on (kWaitRows when there is none).
size_t Waits::FreeRow(size_t from) {
  // Rows past rows_used are free, and maybe not reserved yet: not read.
  const size_t used = Used();
  for (size_t i = from; i < kWaitRows; ++i) {
    if (i >= used) return i;
    if (b_->rows[i].ticket.load(std::memory_order_acquire) == 0) return i;
  }
  return kWaitRows;
}

uint64_t Waits::Register(const std::vector<uint64_t>& keys) {
  if (b_ == nullptr) return 0;
  uint64_t ticket = b_->next_ticket.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (ticket == 0) ticket = b_->next_ticket.fetch_add(1) + 1;  // 2^64 wraps
  return TakeRows(ticket, keys) ? ticket : 0;
}

bool Waits::Adopt(uint64_t ticket, const std::vector<uint64_t>& keys) {
  if (b_ == nullptr || ticket == 0) return false;
  Remove(ticket);
  return TakeRows(ticket, keys);
}

// Rows for `ticket`, one per key: all taken, or none (false: no room).
bool Waits::TakeRows(uint64_t ticket, const std::vector<uint64_t>& keys) {
  size_t row = 0;
  std::vector<size_t> taken;
  for (uint64_t k : keys) {
    row = FreeRow(row);
    // (A row is reserved before it is written: a sparse board on a full
    // tmpfs has no room, as a full one.)
    if (row == kWaitRows || !Room(row + 1)) {  // give back what was taken
      for (size_t i : taken) b_->rows[i].ticket.store(0);
      return false;
    }
    Take(row, ticket, k);
    taken.push_back(row++);
  }
  return true;
}

void Waits::Remove(uint64_t ticket) {
  if (b_ == nullptr || ticket == 0) return;
  size_t used = Used();
  for (size_t i = 0; i < used; ++i) {
    if (b_->rows[i].ticket.load(std::memory_order_acquire) == ticket) {
      b_->rows[i].ticket.store(0, std::memory_order_release);
    }
  }
  Trim();
}

// Free rows at the end no longer count (under the lock: no row is being
// taken past them).
void Waits::Trim() {
  size_t used = Used();
  while (used > 0 &&
         b_->rows[used - 1].ticket.load(std::memory_order_acquire) == 0) {
    --used;
  }
  b_->rows_used.store(used, std::memory_order_release);
}

bool Waits::Older(uint64_t key, uint64_t ticket) {
  if (b_ == nullptr) return false;
  size_t used = Used();
  bool freed = false;
  bool older = false;
  for (size_t i = 0; i < used && !older; ++i) {
    WaitRow& w = b_->rows[i];
    uint64_t t = w.ticket.load(std::memory_order_acquire);
    if (t == 0 || t >= ticket || w.key.load(std::memory_order_relaxed) != key) {
      continue;
    }
    if (Alive(w.pid.load(std::memory_order_relaxed),
              w.start.load(std::memory_order_relaxed))) {
      older = true;
    } else {
      w.ticket.store(0, std::memory_order_release);
      freed = true;
    }
  }
  if (freed) Trim();
  return older;
}

void Waits::Holders(uint64_t key, std::vector<uint64_t>* pids) const {
  HoldersOf(key, false, pids);
}

void Waits::AllHolders(std::vector<uint64_t>* pids) const {
  HoldersOf(0, true, pids);
}

void Waits::HoldersOf(uint64_t key, bool every,
                      std::vector<uint64_t>* pids) const {
  pids->clear();
  if (b_ == nullptr) return;
  size_t used = Used();
  for (size_t i = 0; i < used; ++i) {
    const WaitRow& w = b_->rows[i];
    if (w.ticket.load(std::memory_order_acquire) == 0 ||
        (!every && w.key.load(std::memory_order_relaxed) != key)) {
      continue;
    }
    uint64_t pid = w.pid.load(std::memory_order_relaxed);
    if (std::find(pids->begin(), pids->end(), pid) == pids->end()) {
      pids->push_back(pid);
    }
  }
}

void Waits::Mine(std::vector<uint64_t>* tickets) const {
  tickets->clear();
  if (b_ == nullptr) return;
  size_t used = Used();
  for (size_t i = 0; i < used; ++i) {
    const WaitRow& w = b_->rows[i];
    uint64_t t = w.ticket.load(std::memory_order_acquire);
    if (t != 0 && w.pid.load(std::memory_order_relaxed) == pid_ &&
        w.start.load(std::memory_order_relaxed) == start_) {
      tickets->push_back(t);
    }
  }
}

uint64_t Waits::Clients() const {
  if (b_ == nullptr) return 0;
  std::vector<uint64_t> t;
  std::vector<std::pair<uint64_t, bool>> alive;  // one probe per worker
  size_t used = Used();
  for (size_t i = 0; i < used; ++i) {
    const WaitRow& w = b_->rows[i];
    uint64_t ticket = w.ticket.load(std::memory_order_acquire);
    if (ticket == 0) continue;
    uint64_t pid = w.pid.load(std::memory_order_relaxed);
    auto it = std::find_if(alive.begin(), alive.end(),
                           [&](const auto& a) { return a.first == pid; });
    bool live = false;
    if (it != alive.end()) {
      live = it->second;
    } else {
      live = shmc::detail::ProcessAlive(pid);
      // Workers are few; a board with many pids is damaged: no cache.
      if (alive.size() < 64) alive.emplace_back(pid, live);
    }
    if (live) t.push_back(ticket);
  }
  std::sort(t.begin(), t.end());
  return static_cast<uint64_t>(std::unique(t.begin(), t.end()) - t.begin());
}

}  // namespace shmkv
