#include "server/store/repl.h"

#include <limits.h>
#include <sched.h>
#include <unistd.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string_view>

#include "server/store/cow.h"
#include "server/store/store.h"

namespace shmkv {

void PutText(std::atomic<uint64_t>* words, size_t n, const std::string& s) {
  for (size_t w = 0; w < n; ++w) {
    uint64_t v = 0;
    size_t at = w * 8;
    if (at < s.size()) {
      std::memcpy(&v, s.data() + at, std::min<size_t>(8, s.size() - at));
    }
    words[w].store(v, std::memory_order_relaxed);
  }
}

std::string GetText(const std::atomic<uint64_t>* words, size_t n) {
  std::string s(n * 8, '\0');
  for (size_t w = 0; w < n; ++w) {
    uint64_t v = words[w].load(std::memory_order_relaxed);
    std::memcpy(&s[w * 8], &v, 8);
  }
  s.resize(std::strlen(s.c_str()));  // up to the first NUL, if any
  return s;
}

pid_t RunningLink(const ReplBlock* b) {
  const uint64_t pid = b->link_pid.load(std::memory_order_acquire);
  if (pid <= 1 || pid > static_cast<uint64_t>(INT_MAX)) return 0;
  // The same program: its path, or that path's file replaced since (an
  // upgrade in place: " (deleted)" after the old one's name).
  char self[PATH_MAX], other[PATH_MAX];
  const std::string path = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t a = readlink("/proc/self/exe", self, sizeof(self));
  const ssize_t o = readlink(path.c_str(), other, sizeof(other));
  if (a <= 0 || o <= 0) return 0;
  std::string_view mine(self, static_cast<size_t>(a));
  std::string_view theirs(other, static_cast<size_t>(o));
  constexpr std::string_view kDeleted = " (deleted)";
  if (theirs.size() > kDeleted.size() &&
      theirs.substr(theirs.size() - kDeleted.size()) == kDeleted) {
    theirs.remove_suffix(kDeleted.size());
  }
  if (mine != theirs) return 0;
  const auto started = static_cast<int64_t>(
      b->link_started_s.load(std::memory_order_relaxed));
  if (started <= 0) return 0;
  return ProcessRuns(static_cast<pid_t>(pid), started)
             ? static_cast<pid_t>(pid)
             : 0;
}

std::string NewReplId() {
  unsigned char raw[20];
  if (getrandom(raw, sizeof(raw), 0) != static_cast<ssize_t>(sizeof(raw))) {
    std::random_device rd;
    for (unsigned char& c : raw) c = static_cast<unsigned char>(rd());
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char c : raw) {
    id += kHex[c >> 4];
    id += kHex[c & 15];
  }
  return id;
}

bool SharedRepl::Open(const std::string& key, std::string* err) {
  int flags = shmc::DefaultCreateFlags();
  shmc::SetDefaultCreateFlags(flags | shmc::kCreateIfNotExist |
                              shmc::kSharedWriters);
  bool ok = arr_.InitForWrite(key, 1);
  shmc::SetDefaultCreateFlags(flags);
  if (!ok) {
    *err = arr_.last_error().message;
    return false;
  }
  b_ = const_cast<ReplBlock*>(&arr_[0]);
  // The process that makes it writes its id before the magic; another
  // that finds the magic still being written waits for it.
  uint64_t magic = 0;
  constexpr uint64_t kMaking = 1;
  if (b_->magic.compare_exchange_strong(magic, kMaking,
                                        std::memory_order_acq_rel)) {
    PutText(b_->own_replid, kReplIdWords, NewReplId());
    b_->magic.store(kReplMagic, std::memory_order_release);
  }
  for (int i = 0; i < 1000 && b_->magic.load(std::memory_order_acquire) ==
                                  kMaking; ++i) {
    sched_yield();
  }
  if (b_->magic.load(std::memory_order_acquire) == kMaking) {
    // Its maker died half way: the id is all it had to write.
    PutText(b_->own_replid, kReplIdWords, NewReplId());
    b_->magic.store(kReplMagic, std::memory_order_release);
  }
  if (b_->magic.load(std::memory_order_acquire) != kReplMagic) {
    *err = "segment " + key + " holds no shmkv replication state (made by "
           "another version?): stop that server, then remove its segments "
           "(docs/server.md)";
    b_ = nullptr;
    return false;
  }
  return true;
}

void SharedRepl::SetTarget(const std::string& host, uint64_t port) {
  uint64_t seq = b_->seq.load(std::memory_order_relaxed);
  b_->seq.store(seq | 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  PutText(b_->host, kReplHostWords, host.substr(0, kReplHostWords * 8 - 1));
  b_->port.store(port, std::memory_order_relaxed);
  b_->generation.fetch_add(1, std::memory_order_relaxed);
  b_->seq.store((seq | 1) + 1, std::memory_order_release);
}

void SharedRepl::Target(std::string* host, uint64_t* port,
                        uint64_t* generation) const {
  for (int tries = 0;; ++tries) {
    uint64_t seq = b_->seq.load(std::memory_order_acquire);
    if ((seq & 1) != 0 && tries < 200) {
      sched_yield();
      continue;
    }
    *host = GetText(b_->host, kReplHostWords);
    *port = b_->port.load(std::memory_order_relaxed);
    *generation = b_->generation.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    // (a writer that died half way leaves seq odd: its words are read as
    // they are)
    if (b_->seq.load(std::memory_order_relaxed) == seq || tries >= 200) {
      return;
    }
  }
}

ReplView SharedRepl::View() const {
  ReplView v;
  auto get = [](const std::atomic<uint64_t>& w) {
    return w.load(std::memory_order_relaxed);
  };
  v.mode = Mode();
  Target(&v.host, &v.port, &v.generation);
  v.link_pid = get(b_->link_pid);
  v.state = static_cast<LinkState>(get(b_->state));
  v.last_io_ms = static_cast<int64_t>(get(b_->last_io_ms));
  v.down_since_ms = static_cast<int64_t>(get(b_->down_since_ms));
  v.sync_total = get(b_->sync_total);
  v.sync_read = get(b_->sync_read);
  v.offset = get(b_->offset);
  v.replid = GetText(b_->replid, kReplIdWords);
  v.resumable = get(b_->resumable) != 0;
  v.full_syncs = get(b_->full_syncs);
  v.partial_syncs = get(b_->partial_syncs);
  v.stream_errors = get(b_->stream_errors);
  v.own_replid = GetText(b_->own_replid, kReplIdWords);
  v.replid2 = GetText(b_->replid2, kReplIdWords);
  v.second_offset = get(b_->second_offset);
  return v;
}

void SharedRepl::SetState(LinkState s) {
  b_->state.store(static_cast<uint64_t>(s), std::memory_order_release);
}

void SharedRepl::SetReplId(const std::string& id) {
  PutText(b_->replid, kReplIdWords, id.substr(0, 40));
}

std::string SharedRepl::ReplId() const {
  return GetText(b_->replid, kReplIdWords);
}

void SharedRepl::Promote() {
  std::string master = ReplId();
  if (!master.empty()) {
    PutText(b_->replid2, kReplIdWords, master);
    b_->second_offset.store(b_->offset.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
  }
  PutText(b_->own_replid, kReplIdWords, NewReplId());
  b_->resumable.store(0, std::memory_order_relaxed);
}

SharedRepl* Store::Repl(std::string* err) {
  if (repl_ == nullptr) {
    auto r = std::make_shared<SharedRepl>();
    std::string why;
    if (!r->Open(ReplKey(cfg_), &why)) {
      if (err != nullptr) *err = why;
      return nullptr;
    }
    repl_ = std::move(r);
  }
  return repl_.get();
}

}  // namespace shmkv
