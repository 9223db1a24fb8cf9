#include "server/store/stats.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>

#include "shmc/detail/process.h"
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

// The counters every worker's figures add to, live or gone: into the
// merged view (StatsTotals) and into the retired slot (StatsValues).
template <class T>
void AddCounters(T* t, const StatsValues& v) {
  t->connections_total += v.connections_total;
  t->commands += v.commands;
  t->errors += v.errors;
  t->bytes_in += v.bytes_in;
  t->bytes_out += v.bytes_out;
  t->http_requests += v.http_requests;
  t->adopted += v.adopted;
  t->cpu_user_us += v.cpu_user_us;
  t->cpu_sys_us += v.cpu_sys_us;
  t->evicted_clients += v.evicted_clients;
  t->timed_out_clients += v.timed_out_clients;
  t->rejected_connections += v.rejected_connections;
  t->udp.Add(v.udp);
}

}  // namespace

bool SlotWait::Again(uint64_t pid) {
  if (++tries_ <= 64) return true;  // a writer on another core: a moment
  if (pid != 0 && !Alive(pid)) return false;
  const uint64_t now = shmc::detail::MonotonicNs();
  if (deadline_ns_ == 0) deadline_ns_ = now + kWaitNs;
  if (now > deadline_ns_) return false;
  sched_yield();
  return true;
}

LocalStats::LocalStats() : est(MakeEstimators()), sketch(kMaxCommands) {}

void LocalStats::Record(size_t cmd, double us) {
  ++calls[cmd];
  usec[cmd] += static_cast<uint64_t>(us);
  for (size_t q = 0; q < 3; ++q) est[cmd * 3 + q].Add(us);
  if (sketch[cmd] == nullptr) {
    sketch[cmd] = std::make_unique<shmc::QuantileSketch>();
  }
  sketch[cmd]->Add(us > 0 ? static_cast<uint64_t>(us * 1000 + 0.5) : 0);
}

StatsTotals::StatsTotals() : est(MakeEstimators()) {}

bool SharedStats::Open(const std::string& key, bool create, std::string* err,
                       bool* other_layout) {
  if (other_layout != nullptr) *other_layout = false;
  slots_ = nullptr;
  if (arr_.InitForWrite(key, kMaxWorkerSlots, 0)) {
    slots_ = reinterpret_cast<char*>(const_cast<StatsSlot*>(&arr_[0]));
    slot_bytes_ = sizeof(StatsSlot);
    commands_ = kMaxCommands;
  } else if (!create) {
    shmc::ErrorCode code = arr_.last_error().code;
    bool layout = code == shmc::ErrorCode::kLayoutMismatch ||
                  code == shmc::ErrorCode::kSizeMismatch ||
                  code == shmc::ErrorCode::kVersionMismatch;
    // The master that made it may be of the first layout: its table is
    // shorter, and its ids are ours.
    if (layout && legacy_.InitForWrite(key, kMaxWorkerSlots)) {
      using Legacy = StatsSlotOf<kLegacyCommands>;
      slots_ = reinterpret_cast<char*>(const_cast<Legacy*>(&legacy_[0]));
      slot_bytes_ = sizeof(Legacy);
      commands_ = kLegacyCommands;
      return true;
    }
    if (layout && other_layout != nullptr) *other_layout = true;
    *err = arr_.last_error().message;
    return false;
  } else {
    // Statistics are not data: the master replaces a segment of another
    // layout (an earlier shmkv with fewer commands) if it is shmc's own.
    if (shmc::RemoveSegment<shmc::POSIX>(key) != shmc::RemoveStatus::kRemoved ||
        !arr_.InitForWrite(key, kMaxWorkerSlots, 0)) {
      *err = arr_.last_error().message;
      return false;
    }
    slots_ = reinterpret_cast<char*>(const_cast<StatsSlot*>(&arr_[0]));
    slot_bytes_ = sizeof(StatsSlot);
    commands_ = kMaxCommands;
  }
  // Every slot's head is read by Merge: reserved by each process that
  // opens the segment (a segment this build makes is sparse); the rest of
  // a slot by its worker (ReserveSlot).
  for (size_t i = 0; i < kMaxWorkerSlots; ++i) {
    if (!ReserveBytes(i, 8 + offsetof(StatsValues, cmd))) {
      *err = ReserveError();
      slots_ = nullptr;
      return false;
    }
  }
  if (create) {
    for (size_t i = 0; i < kMaxWorkerSlots; ++i) Clear(i);
  }
  return true;
}

bool SharedStats::ReserveBytes(size_t slot, size_t bytes) {
  return commands_ == kLegacyCommands ? legacy_.Reserve(slot, 0, bytes)
                                      : arr_.Reserve(slot, 0, bytes);
}

std::string SharedStats::ReserveError() const {
  return commands_ == kLegacyCommands ? legacy_.last_error().message
                                      : arr_.last_error().message;
}

bool SharedStats::ReserveSlot(size_t slot, std::string* err) {
  reserved_slot_ = kMaxWorkerSlots;
  if (!open() || slot >= kMaxWorkerSlots) return false;
  if (!ReserveBytes(slot, slot_bytes_)) {
    *err = ReserveError();
    return false;
  }
  reserved_slot_ = slot;
  return true;
}

std::atomic<uint64_t>* SharedStats::Seq(size_t slot) const {
  return reinterpret_cast<std::atomic<uint64_t>*>(slots_ + slot * slot_bytes_);
}

std::atomic<uint64_t>* SharedStats::Words(size_t slot) const {
  return Seq(slot) + 1;
}

namespace {

constexpr size_t kHeadWords = offsetof(StatsValues, cmd) / 8;
constexpr size_t kCommandWords = sizeof(CommandWords) / 8;

size_t SlotWords(size_t commands) {
  return kHeadWords + commands * kCommandWords;
}

// Copies words [from, from + n) of `v` into the slot's words.
void StoreWords(std::atomic<uint64_t>* words, const StatsValues& v,
                size_t from, size_t n) {
  const char* src = reinterpret_cast<const char*>(&v);
  for (size_t i = from; i < from + n; ++i) {
    uint64_t w;
    std::memcpy(&w, src + i * 8, 8);
    words[i].store(w, std::memory_order_relaxed);
  }
}

void LoadWords(const std::atomic<uint64_t>* words, StatsValues* v,
               size_t from, size_t n) {
  char* dst = reinterpret_cast<char*>(v);
  for (size_t i = from; i < from + n; ++i) {
    uint64_t w = words[i].load(std::memory_order_relaxed);
    std::memcpy(dst + i * 8, &w, 8);
  }
}

// The slot's writer: seq goes odd, the head and the listed commands' words
// are stored (every other word keeps what it holds), `also` runs (if
// any), seq goes even.
void WriteSlot(std::atomic<uint64_t>* seq_word, std::atomic<uint64_t>* words,
               const StatsValues& v, const std::vector<size_t>& commands,
               const std::function<void()>& also = nullptr) {
  uint64_t seq = seq_word->load(std::memory_order_relaxed);
  seq_word->store(seq | 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  StoreWords(words, v, 0, kHeadWords);
  for (size_t c : commands) {
    StoreWords(words, v, kHeadWords + c * kCommandWords, kCommandWords);
  }
  if (also) also();
  seq_word->store((seq | 1) + 1, std::memory_order_release);
}

// A reader: the head and every command with calls (a command without has
// calls 0 in *v, the rest of its words unset), copied while seq stood
// still and even; false if the writer kept it busy.
// With `writer_gone` (its worker reaped), a slot left odd by a worker
// killed while it wrote is read as it stands: each word is one it wrote.
bool ReadSlot(const std::atomic<uint64_t>* seq_word,
              const std::atomic<uint64_t>* words, size_t commands,
              StatsValues* v, bool writer_gone = false) {
  SlotWait wait;
  for (;;) {
    uint64_t seq = seq_word->load(std::memory_order_acquire);
    // Never written: nothing to read, and past its head maybe not
    // reserved (a sparse segment): not a byte of it is touched.
    if (seq == 0) return false;
    if (!(seq & 1) || writer_gone) {
      LoadWords(words, v, 0, kHeadWords);
      for (size_t c = 0; c < commands; ++c) {
        size_t at = kHeadWords + c * kCommandWords;
        v->cmd[c].calls = words[at].load(std::memory_order_relaxed);
        if (v->cmd[c].calls != 0) LoadWords(words, v, at, kCommandWords);
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      if (seq_word->load(std::memory_order_relaxed) == seq) return true;
    }
    // (The head's first word is the writer's pid.)
    if (!wait.Again(words[0].load(std::memory_order_relaxed))) return false;
  }
}

}  // namespace

void SharedStats::Clear(size_t slot) {
  if (!open()) return;
  std::atomic<uint64_t>* seq_word = Seq(slot);
  std::atomic<uint64_t>* words = Words(slot);
  uint64_t seq = seq_word->load(std::memory_order_relaxed);
  // Never written: all zero already, and maybe not reserved (a sparse
  // segment) — only a worker that reserved it writes a slot first.
  if (seq == 0) return;
  seq_word->store(seq | 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < SlotWords(commands_); ++i) {
    words[i].store(0, std::memory_order_relaxed);
  }
  seq_word->store((seq | 1) + 1, std::memory_order_release);
}

void SharedStats::Publish(size_t slot, const LocalStats& l) {
  if (!open()) return;
  std::string no_room;
  if (slot != reserved_slot_ && !ReserveSlot(slot, &no_room)) return;
  // Only this worker writes its slot, which the master cleared for it: a
  // command with no calls yet keeps its zeros, and only the head and the
  // commands called are written.
  auto values = std::make_unique<StatsValues>();
  StatsValues& v = *values;
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
  std::vector<size_t> called;
  for (size_t c = 0; c < commands_; ++c) {
    if (l.calls[c] == 0) continue;
    CommandWords& w = v.cmd[c];
    w.calls = l.calls[c];
    w.usec = l.usec[c];
    for (size_t q = 0; q < 3; ++q) l.est[c * 3 + q].Save(w.est[q]);
    called.push_back(c);
  }
  WriteSlot(Seq(slot), Words(slot), v, called);
}

// A worker's figures move into the retired slot (Retire) while that
// slot's sequence is odd: a merge that began and ended with it even and
// unchanged saw them in one place, never in both or neither; else it is
// made again (for up to SlotWait::kWaitNs, then taken as it is).
StatsTotals SharedStats::Merge() const {
  if (!open()) return MergeOnce();
  const std::atomic<uint64_t>* retired = Seq(kRetiredSlot);
  SlotWait wait;  // the retired slot's writer is the master
  for (;;) {
    uint64_t before = retired->load(std::memory_order_acquire);
    if ((before & 1) && wait.Again(0)) continue;
    StatsTotals t = MergeOnce();
    std::atomic_thread_fence(std::memory_order_acquire);
    if (retired->load(std::memory_order_relaxed) == before ||
        !wait.Again(0)) {
      return t;
    }
  }
}

StatsTotals SharedStats::MergeOnce() const {
  StatsTotals t;
  auto slot_copy = std::make_unique<StatsValues>();
  StatsValues& copy = *slot_copy;
  for (size_t i = 0; open() && i < kMaxWorkerSlots; ++i) {
    bool ok = ReadSlot(Seq(i), Words(i), commands_, &copy);
    if (!ok || copy.pid == 0) continue;
    if (Alive(copy.pid)) {
      ++t.workers_alive;
      t.connections += copy.connections;
      t.ops_per_sec += copy.ops_per_sec;
      t.client_buffers += copy.client_buffers;
    }
    AddCounters(&t, copy);
    for (size_t c = 0; c < commands_; ++c) {
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

bool SharedStats::Retire(size_t slot, std::string* err) {
  if (!open() || slot >= kRetiredSlot) return false;
  auto gone = std::make_unique<StatsValues>();
  if (!ReadSlot(Seq(slot), Words(slot), commands_, gone.get(), true) ||
      gone->pid == 0) {
    Clear(slot);  // never published: nothing to keep
    return true;
  }
  if (!ReserveBytes(kRetiredSlot, slot_bytes_)) {
    *err = ReserveError();
    return false;
  }
  auto sum = std::make_unique<StatsValues>();
  std::memset(sum.get(), 0, sizeof(StatsValues));
  if (!ReadSlot(Seq(kRetiredSlot), Words(kRetiredSlot), commands_, sum.get(),
                true)) {
    std::memset(sum.get(), 0, sizeof(StatsValues));  // none gone before
  }
  AddCounters(sum.get(), *gone);
  sum->pid = kRetiredPid;
  sum->connections = sum->ops_per_sec = sum->client_buffers = 0;
  std::vector<size_t> called;
  for (size_t c = 0; c < commands_; ++c) {
    CommandWords& to = sum->cmd[c];
    const CommandWords& from = gone->cmd[c];
    if (from.calls != 0) {
      for (size_t q = 0; q < 3; ++q) {
        // Words that do not load (torn, or damage) are left out.
        shmc::QuantileEstimator a(kQuantiles[q]), b(kQuantiles[q]);
        bool had = to.calls != 0 && a.Load(to.est[q]);
        if (b.Load(from.est[q])) {
          if (had) {
            a.Merge(b);
            a.Save(to.est[q]);
          } else {
            b.Save(to.est[q]);
          }
        }
      }
      to.calls += from.calls;
      to.usec += from.usec;
    }
    if (to.calls != 0) called.push_back(c);
  }
  // The worker's slot is emptied while the retired slot's sequence is
  // odd: a reader that saw either change sees both (Merge).
  WriteSlot(Seq(kRetiredSlot), Words(kRetiredSlot), *sum, called,
            [&] { Clear(slot); });
  return true;
}

}  // namespace shmkv
