// What pub/sub shares between workers (server/store/pubsub_shared.h).
#include "server/store/pubsub_shared.h"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "server/store/key_hash.h"
#include "shmc/global_options.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_sync_buf.h"

namespace shmkv {

std::string PubSubKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".pubsub";
}
std::string PubSubRingKey(const StoreConfig& cfg) {
  return ControlKey(cfg) + ".pubsub.ring";
}

namespace {

constexpr size_t kNodeBytes = 64;
const std::string_view kDirectory = "\1";

void Put32(std::string* out, uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), 4);
}
bool Get32(std::string_view s, size_t* at, uint32_t* v) {
  if (*at > s.size() || s.size() - *at < 4) return false;
  std::memcpy(v, s.data() + *at, 4);
  *at += 4;
  return true;
}

KeyHash EntryKey(char kind, std::string_view name) {
  std::string k(1, kind);
  k.append(name);
  return HashKey(k);
}

// An entry: its name and holders (false when it does not parse, or is
// another name's).
bool ParseEntry(std::string_view v, std::string_view name,
                std::vector<PubSubShared::Holder>* out) {
  size_t at = 0;
  uint32_t len = 0;
  if (!Get32(v, &at, &len) || len > v.size() - at ||
      v.substr(at, len) != name) {
    return false;
  }
  at += len;
  if ((v.size() - at) % 8 != 0) return false;
  while (at < v.size()) {
    PubSubShared::Holder h;
    Get32(v, &at, &h.pid);
    Get32(v, &at, &h.count);
    out->push_back(h);
  }
  return true;
}

// The names a directory value lists (as many as parse).
void ParseNames(std::string_view v, std::vector<std::string>* out) {
  size_t at = 0;
  uint32_t len = 0;
  while (Get32(v, &at, &len) && len <= v.size() - at) {
    out->emplace_back(v.substr(at, len));
    at += len;
  }
}

}  // namespace

struct PubSubShared::Impl {
  shmc::ShmHashMap<KeyHash, shmc::POSIX> map;
  shmc::ShmSyncBuf<shmc::POSIX> ring;

  bool Read(const KeyHash& k, std::string* v) const { return map.Find(k, v); }

  void Write(const KeyHash& k, const std::string& v) {
    if (v.empty()) {
      map.Erase(k);
    } else {
      map.Replace(k, v);
    }
  }

  // Adds or drops `name` in the pattern directory.
  void Directory(std::string_view name, bool present) {
    KeyHash dk = HashKey(kDirectory);
    std::string v;
    std::vector<std::string> names;
    if (Read(dk, &v)) ParseNames(v, &names);
    std::string out;
    bool found = false;
    for (const std::string& n : names) {
      if (n == name) {
        found = true;
        if (!present) continue;
      }
      Put32(&out, static_cast<uint32_t>(n.size()));
      out += n;
    }
    if (present && !found) {
      Put32(&out, static_cast<uint32_t>(name.size()));
      out.append(name);
    }
    Write(dk, out);
  }
};

PubSubShared::PubSubShared() : impl_(std::make_unique<Impl>()) {}
PubSubShared::~PubSubShared() = default;

bool PubSubShared::Open(const StoreConfig& cfg, std::string* err) {
  int flags = shmc::DefaultCreateFlags();
  // Its value pool reserves memory as entries arrive (kGrowInSteps).
  shmc::SetDefaultCreateFlags(shmc::kSharedWriters | shmc::kCreateIfNotExist |
                              shmc::kGrowInSteps);
  constexpr uint64_t kNodeCost =
      shmc::ShmLinkTable<shmc::POSIX>::NodeCost(kNodeBytes);
  bool ok = impl_->map.InitForWrite(PubSubKey(cfg), kCapacity, kNodeBytes,
                                    kMemory / kNodeCost);
  if (!ok) {
    *err = impl_->map.last_error().message;
  } else if (!impl_->ring.InitForWrite(PubSubRingKey(cfg), kRingBytes)) {
    ok = false;
    *err = impl_->ring.last_error().message;
  }
  shmc::SetDefaultCreateFlags(flags);
  return ok;
}

bool PubSubShared::Change(char kind, std::string_view name, uint32_t pid,
                          int64_t delta) {
  impl_->map.Recover();
  KeyHash k = EntryKey(kind, name);
  std::string v;
  std::vector<Holder> holders;
  if (impl_->Read(k, &v)) ParseEntry(v, name, &holders);
  bool found = false;
  for (Holder& h : holders) {
    if (h.pid != pid) continue;
    found = true;
    int64_t n = static_cast<int64_t>(h.count) + delta;
    h.count = n < 0 ? 0 : static_cast<uint32_t>(n);
  }
  if (!found && delta > 0) {
    holders.push_back(Holder{pid, static_cast<uint32_t>(delta)});
  }
  std::string out;
  Put32(&out, static_cast<uint32_t>(name.size()));
  out.append(name);
  size_t bare = out.size();
  for (const Holder& h : holders) {
    if (h.count == 0) continue;
    Put32(&out, h.pid);
    Put32(&out, h.count);
  }
  bool empty = out.size() == bare;
  if (empty) {
    impl_->map.Erase(k);
  } else if (!impl_->map.Replace(k, out)) {
    return false;
  }
  if (kind == 'p') impl_->Directory(name, !empty);
  return true;
}

void PubSubShared::Holders(char kind, std::string_view name,
                           std::vector<Holder>* out) const {
  std::string v;
  if (impl_->Read(EntryKey(kind, name), &v)) ParseEntry(v, name, out);
}

void PubSubShared::Patterns(std::vector<std::string>* out) const {
  std::string v;
  if (impl_->Read(HashKey(kDirectory), &v)) ParseNames(v, out);
}

void PubSubShared::Names(
    char kind, const std::function<void(std::string_view, uint64_t)>& f) const {
  impl_->map.Travel([&](const KeyHash& k, const std::string& v) {
    size_t at = 0;
    uint32_t len = 0;
    if (!Get32(v, &at, &len) || len > v.size() - at) return;
    std::string_view name(v.data() + at, len);
    std::vector<Holder> holders;
    // The kind is in the key only: an entry of this kind hashes to it.
    if (!(k == EntryKey(kind, name)) || !ParseEntry(v, name, &holders)) {
      return;
    }
    uint64_t total = 0;
    for (const Holder& h : holders) total += h.count;
    if (total > 0) f(name, total);
  });
}

void PubSubShared::Forget(uint32_t pid) {
  impl_->map.Recover();
  struct Drop {
    char kind;
    std::string name;
    int64_t count;
  };
  std::vector<Drop> drops;
  for (char kind : {'c', 'p', 's'}) {
    Names(kind, [&](std::string_view name, uint64_t) {
      std::vector<Holder> holders;
      Holders(kind, name, &holders);
      for (const Holder& h : holders) {
        if (h.pid == pid) drops.push_back({kind, std::string(name), h.count});
      }
    });
  }
  for (const Drop& d : drops) Change(d.kind, d.name, pid, -d.count);
}

void PubSubShared::ForgetDead() {
  std::vector<uint32_t> dead;
  for (char kind : {'c', 'p', 's'}) {
    Names(kind, [&](std::string_view name, uint64_t) {
      std::vector<Holder> holders;
      Holders(kind, name, &holders);
      for (const Holder& h : holders) {
        if (kill(static_cast<pid_t>(h.pid), 0) != 0 && errno == ESRCH) {
          dead.push_back(h.pid);
        }
      }
    });
  }
  for (uint32_t pid : dead) Forget(pid);
}

bool PubSubShared::Push(uint32_t pid, char kind, std::string_view channel,
                        std::string_view message) {
  std::string rec;
  rec.reserve(9 + channel.size() + message.size());
  Put32(&rec, pid);
  rec.push_back(kind);
  Put32(&rec, static_cast<uint32_t>(channel.size()));
  rec.append(channel);
  rec.append(message);
  return impl_->ring.Push(rec);
}

uint64_t PubSubShared::Tail() const { return impl_->ring.Tail().pos; }

int PubSubShared::Next(uint64_t* pos, Message* m) const {
  shmc::SyncIter it{*pos};
  std::string rec;
  for (;;) {
    int rc = impl_->ring.Read(it, nullptr, &rec);
    if (rc < 0) {
      *pos = impl_->ring.Head().pos;
      return -1;
    }
    if (rc == 0) return 0;
    if (!impl_->ring.Next(&it)) {
      *pos = impl_->ring.Head().pos;
      return -1;
    }
    *pos = it.pos;
    size_t at = 0;
    uint32_t len = 0;
    if (!Get32(rec, &at, &m->pid) || at >= rec.size()) continue;  // damage
    m->kind = rec[at++];
    if (!Get32(rec, &at, &len) || len > rec.size() - at) continue;
    m->channel.assign(rec, at, len);
    m->message.assign(rec, at + len, std::string::npos);
    return 1;
  }
}

}  // namespace shmkv
