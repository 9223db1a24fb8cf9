#include "server/stats.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shmkv {

namespace {

uint64_t Load(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
void Store(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

uint64_t Bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
double Double(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

std::vector<shmc::PercentileEstimator> MakeEstimators() {
  std::vector<shmc::PercentileEstimator> v;
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

bool SharedStats::Open(const std::string& key, bool create, std::string* err) {
  if (!arr_.InitForWrite(key, kMaxWorkerSlots)) {
    // Statistics are not data: the master replaces a segment of another
    // layout (an earlier shmkv with fewer commands) if it is shmc's own.
    shmc::POSIX alloc;
    if (!create || shmc::detail::RemoveOwnSegment(key, &alloc) !=
                       shmc::detail::RemoveResult::kRemoved ||
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

void SharedStats::Clear(size_t slot) {
  StatsSlot* s = const_cast<StatsSlot*>(&arr_[static_cast<int>(slot)]);
  uint64_t seq = Load(&s->seq);
  Store(&s->seq, seq | 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  uint64_t* w = reinterpret_cast<uint64_t*>(s) + 1;
  size_t words = sizeof(StatsSlot) / 8 - 1;
  for (size_t i = 0; i < words; ++i) Store(w + i, 0);
  __atomic_store_n(&s->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
}

void SharedStats::Publish(size_t slot, const LocalStats& l) {
  StatsSlot* s = const_cast<StatsSlot*>(&arr_[static_cast<int>(slot)]);
  uint64_t seq = Load(&s->seq);
  Store(&s->seq, seq | 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  Store(&s->pid, static_cast<uint64_t>(getpid()));
  Store(&s->connections, l.connections);
  Store(&s->connections_total, l.connections_total);
  Store(&s->commands, l.commands);
  Store(&s->errors, l.errors);
  Store(&s->bytes_in, l.bytes_in);
  Store(&s->bytes_out, l.bytes_out);
  Store(&s->http_requests, l.http_requests);
  Store(&s->adopted, l.adopted);
  Store(&s->ops_per_sec, l.ops_per_sec);
  Store(&s->cpu_user_us, l.cpu_user_us);
  Store(&s->cpu_sys_us, l.cpu_sys_us);
  Store(&s->evicted_clients, l.evicted_clients);
  Store(&s->timed_out_clients, l.timed_out_clients);
  Store(&s->client_buffers, l.client_buffers);
  for (size_t c = 0; c < kMaxCommands; ++c) {
    if (l.calls[c] == 0) continue;
    CommandWords& w = s->cmd[c];
    Store(&w.calls, l.calls[c]);
    Store(&w.usec, l.usec[c]);
    for (size_t q = 0; q < 3; ++q) {
      const shmc::PercentileEstimator& e = l.est[c * 3 + q];
      Store(&w.est[q][0], Bits(e.sum_of_maxima()));
      Store(&w.est[q][1], e.count());
      Store(&w.est[q][2], Bits(e.open_group_max()));
    }
  }
  __atomic_store_n(&s->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
}

StatsTotals SharedStats::Merge() const {
  StatsTotals t;
  StatsSlot copy;
  for (size_t i = 0; i < kMaxWorkerSlots; ++i) {
    const StatsSlot* s = const_cast<const StatsSlot*>(&arr_[static_cast<int>(i)]);
    bool ok = false;
    for (int attempt = 0; attempt < 1000 && !ok; ++attempt) {
      uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
      if (seq & 1) continue;
      const uint64_t* src = reinterpret_cast<const uint64_t*>(s);
      uint64_t* dst = reinterpret_cast<uint64_t*>(&copy);
      for (size_t w = 0; w < sizeof(StatsSlot) / 8; ++w) dst[w] = Load(src + w);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      ok = Load(&s->seq) == seq;
    }
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
    for (size_t c = 0; c < kMaxCommands; ++c) {
      const CommandWords& w = copy.cmd[c];
      if (w.calls == 0) continue;
      t.calls[c] += w.calls;
      t.usec[c] += w.usec;
      for (size_t q = 0; q < 3; ++q) {
        shmc::PercentileEstimator e(kQuantiles[q]);
        e.Restore(Double(w.est[q][0]), w.est[q][1], Double(w.est[q][2]));
        t.est[c * 3 + q].Merge(e);
      }
    }
  }
  return t;
}

}  // namespace shmkv
