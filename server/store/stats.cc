#include "server/store/stats.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shmc/remove_segment.h"

namespace shmkv {

namespace {

std::vector<shmc::QuantileEstimator> MakeEstimators() {
  std::vector<shmc::QuantileEstimator> v;
  v.reserve(kMaxCommands * 3);
  for (size_t c = 0; c < kMaxCommands; ++c) {
    for (double q : kQuantiles) v.emplace_back(q);
  }
  return v;
}

bool Alive(uint64_t pid) {
  return pid != 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

LocalStats::LocalStats() : est(MakeEstimators()) {}

void LocalStats::Record(size_t cmd, double us) {
  ++calls[cmd];
  usec[cmd] += static_cast<uint64_t>(us);
  for (size_t q = 0; q < 3; ++q) est[cmd * 3 + q].Add(us);
}

StatsTotals::StatsTotals() : est(MakeEstimators()) {}

bool SharedStats::Open(const std::string& key, bool create, std::string* err,
                       bool* other_layout) {
  if (other_layout != nullptr) *other_layout = false;
  if (!arr_.InitForWrite(key, kMaxWorkerSlots)) {
    shmc::ErrorCode code = arr_.last_error().code;
    if (other_layout != nullptr && !create &&
        (code == shmc::ErrorCode::kLayoutMismatch ||
         code == shmc::ErrorCode::kSizeMismatch ||
         code == shmc::ErrorCode::kVersionMismatch)) {
      *other_layout = true;
    }
    // Statistics are not data: the master replaces a segment of another
    // layout (an earlier shmkv with fewer commands) if it is shmc's own.
    if (!create ||
        shmc::RemoveSegment<shmc::POSIX>(key) != shmc::RemoveStatus::kRemoved ||
        !arr_.InitForWrite(key, kMaxWorkerSlots)) {
      *err = arr_.last_error().message;
      return false;
    }
  }
  if (create) {
    for (size_t i = 0; i < kMaxWorkerSlots; ++i) Clear(i);
  }
  return true;
}

namespace {

// The slot's writer: seq goes odd, the words are stored, seq goes even.
void WriteSlot(StatsSlot* s, const StatsValues& v) {
  uint64_t words[StatsSlot::kWords];
  std::memcpy(words, &v, sizeof(words));
  uint64_t seq = s->seq.load(std::memory_order_relaxed);
  s->seq.store(seq | 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < StatsSlot::kWords; ++i) {
    s->words[i].store(words[i], std::memory_order_relaxed);
  }
  s->seq.store((seq | 1) + 1, std::memory_order_release);
}

// A reader: a copy taken while seq stood still and even; false if the
// writer kept it busy.
bool ReadSlot(const StatsSlot* s, StatsValues* v) {
  uint64_t words[StatsSlot::kWords];
  for (int attempt = 0; attempt < 1000; ++attempt) {
    uint64_t seq = s->seq.load(std::memory_order_acquire);
    if (seq & 1) continue;
    for (size_t i = 0; i < StatsSlot::kWords; ++i) {
      words[i] = s->words[i].load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s->seq.load(std::memory_order_relaxed) == seq) {
      std::memcpy(v, words, sizeof(words));
      return true;
    }
  }
  return false;
}

}  // namespace

void SharedStats::Clear(size_t slot) {
  if (!open()) return;
  WriteSlot(const_cast<StatsSlot*>(&arr_[static_cast<int>(slot)]),
            StatsValues{});
}

void SharedStats::Publish(size_t slot, const LocalStats& l) {
  if (!open()) return;
  StatsSlot* s = const_cast<StatsSlot*>(&arr_[static_cast<int>(slot)]);
  StatsValues v;
  // Only this worker writes its slot: start from what it holds (a command
  // with no calls yet keeps its zeros).
  ReadSlot(s, &v);
  v.pid = static_cast<uint64_t>(getpid());
  v.connections = l.connections;
  v.connections_total = l.connections_total;
  v.commands = l.commands;
  v.errors = l.errors;
  v.bytes_in = l.bytes_in;
  v.bytes_out = l.bytes_out;
  v.http_requests = l.http_requests;
  v.adopted = l.adopted;
  v.ops_per_sec = l.ops_per_sec;
  v.cpu_user_us = l.cpu_user_us;
  v.cpu_sys_us = l.cpu_sys_us;
  v.evicted_clients = l.evicted_clients;
  v.timed_out_clients = l.timed_out_clients;
  v.rejected_connections = l.rejected_connections;
  v.udp = l.udp;
  v.client_buffers = l.client_buffers;
  for (size_t c = 0; c < kMaxCommands; ++c) {
    if (l.calls[c] == 0) continue;
    CommandWords& w = v.cmd[c];
    w.calls = l.calls[c];
    w.usec = l.usec[c];
    for (size_t q = 0; q < 3; ++q) l.est[c * 3 + q].Save(w.est[q]);
  }
  WriteSlot(s, v);
}

StatsTotals SharedStats::Merge() const {
  StatsTotals t;
  StatsValues copy;
  for (size_t i = 0; open() && i < kMaxWorkerSlots; ++i) {
    const StatsSlot* s = const_cast<const StatsSlot*>(&arr_[static_cast<int>(i)]);
    bool ok = ReadSlot(s, &copy);
    if (!ok || copy.pid == 0) continue;
    if (Alive(copy.pid)) {
      ++t.workers_alive;
      t.connections += copy.connections;
      t.ops_per_sec += copy.ops_per_sec;
      t.client_buffers += copy.client_buffers;
    }
    t.connections_total += copy.connections_total;
    t.commands += copy.commands;
    t.errors += copy.errors;
    t.bytes_in += copy.bytes_in;
    t.bytes_out += copy.bytes_out;
    t.http_requests += copy.http_requests;
    t.adopted += copy.adopted;
    t.cpu_user_us += copy.cpu_user_us;
    t.cpu_sys_us += copy.cpu_sys_us;
    t.evicted_clients += copy.evicted_clients;
    t.timed_out_clients += copy.timed_out_clients;
    t.rejected_connections += copy.rejected_connections;
    t.udp.Add(copy.udp);
    for (size_t c = 0; c < kMaxCommands; ++c) {
      const CommandWords& w = copy.cmd[c];
      if (w.calls == 0) continue;
      t.calls[c] += w.calls;
      t.usec[c] += w.usec;
      for (size_t q = 0; q < 3; ++q) {
        // A slot's words that do not load (torn beyond the sequence
        // check, or another layout) are left out, not misread.
        shmc::QuantileEstimator e(kQuantiles[q]);
        if (e.Load(w.est[q])) t.est[c * 3 + q].Merge(e);
      }
    }
  }
  return t;
}

}  // namespace shmkv
