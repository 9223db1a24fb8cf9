// Pub/sub in one worker process (server/commands/pubsub_hub.h).
#include "server/commands/pubsub_hub.h"

#include <string>

#include "server/commands/command.h"
#include "server/commands/reply.h"

namespace shmkv {

namespace {

std::string Frame(char kind, std::string_view pattern, std::string_view channel,
                  std::string_view message) {
  std::string out;
  if (kind == 'p') {
    ReplyArray(&out, 4);
    ReplyBulk(&out, "pmessage");
    ReplyBulk(&out, pattern);
  } else {
    ReplyArray(&out, 3);
    ReplyBulk(&out, kind == 's' ? "smessage" : "message");
  }
  ReplyBulk(&out, channel);
  ReplyBulk(&out, message);
  return out;
}

// Hands `frame` (a RESP2 array) to each client, as a RESP3 push to those
// that said HELLO 3 (the same bytes but the first).
template <class Clients, class Deliver>
void DeliverTo(const Clients& clients, const std::string& frame,
               const Deliver& deliver, const ClientState* only) {
  std::string push;
  for (ClientState* cl : clients) {
    if (only != nullptr && cl != only) continue;
    if (cl->resp != 3) {
      deliver(cl, frame);
      continue;
    }
    if (push.empty()) {
      push = frame;
      push[0] = '>';
    }
    deliver(cl, push);
  }
}

std::set<std::string>& SetOf(ClientState* cl, char kind) {
  return kind == 'p' ? cl->patterns : kind == 's' ? cl->shards : cl->channels;
}

}  // namespace

bool PubSubHub::Open(std::string* err) {
  if (!shared_.Open(store_->config(), err)) return false;
  ring_pos_ = shared_.Tail();
  open_ = true;
  // A process of this pid that died left its counts: they are not ours.
  auto txn = store_->Begin();
  shared_.Forget(self_);
  shared_.ForgetDead();
  return true;
}

std::unordered_map<std::string, PubSubHub::Clients>& PubSubHub::Of(char kind) {
  return kind == 'p' ? patterns_ : kind == 's' ? shards_ : channels_;
}

bool PubSubHub::Subscribe(ClientState* cl, char kind, std::string_view name) {
  auto& mine = SetOf(cl, kind);
  if (mine.count(std::string(name)) != 0) return true;
  if (open_ && !shared_.Change(kind, name, self_, 1)) return false;
  mine.emplace(name);
  Of(kind)[std::string(name)].insert(cl);
  ++local_;
  if (local_ == 1) ring_pos_ = shared_.Tail();  // nothing older is ours
  return true;
}

bool PubSubHub::Unsubscribe(ClientState* cl, char kind,
                            std::string_view name) {
  auto& mine = SetOf(cl, kind);
  auto it = mine.find(std::string(name));
  if (it == mine.end()) return false;
  mine.erase(it);
  auto& m = Of(kind);
  auto e = m.find(std::string(name));
  if (e != m.end()) {
    e->second.erase(cl);
    if (e->second.empty()) m.erase(e);
  }
  --local_;
  if (open_) shared_.Change(kind, name, self_, -1);
  return true;
}

void PubSubHub::Drop(ClientState* cl) {
  if (cl->channels.empty() && cl->patterns.empty() && cl->shards.empty()) {
    return;
  }
  auto txn = store_->Begin();
  for (char kind : {'c', 'p', 's'}) {
    std::set<std::string> names = SetOf(cl, kind);
    for (const std::string& n : names) Unsubscribe(cl, kind, n);
  }
}

uint64_t PubSubHub::DeliverLocal(char kind, std::string_view channel,
                                 std::string_view message,
                                 const ClientState* only) {
  uint64_t n = 0;
  auto& exact = kind == 's' ? shards_ : channels_;
  auto it = exact.find(std::string(channel));
  if (it != exact.end()) {
    DeliverTo(it->second, Frame(kind, "", channel, message), deliver_, only);
    n += it->second.size();
  }
  if (kind == 'c') {
    for (const auto& [pattern, clients] : patterns_) {
      if (!GlobMatch(pattern, channel)) continue;
      DeliverTo(clients, Frame('p', pattern, channel, message), deliver_,
                only);
      n += clients.size();
    }
  }
  return n;
}

uint64_t PubSubHub::Publish(char kind, std::string_view channel,
                            std::string_view message) {
  uint64_t local = DeliverLocal(kind, channel, message);
  if (!open_) return local;
  to_wake_.clear();
  holders_.clear();
  shared_.Holders(kind, channel, &holders_);
  if (kind == 'c') {
    pattern_names_.clear();
    shared_.Patterns(&pattern_names_);
    for (const std::string& p : pattern_names_) {
      if (GlobMatch(p, channel)) shared_.Holders('p', p, &holders_);
    }
  }
  uint64_t remote = 0, mine = 0;
  for (const PubSubShared::Holder& h : holders_) {
    if (h.pid == self_) {
      mine += h.count;
      continue;
    }
    remote += h.count;
    to_wake_.insert(h.pid);
  }
  // This worker's registrations count subscribers handed over to it and
  // not adopted yet (a hot restart): they get the message from the ring
  // when adopted, and count now.
  if (mine > local) local = mine;
  // Only what reaches the ring reaches another worker (it always does
  // under kMaxPublish); the count says so either way.
  if ((to_wake_.empty() && !adopting_) ||
      !shared_.Push(self_, kind, channel, message)) {
    return local;
  }
  pending_wakes_.insert(to_wake_.begin(), to_wake_.end());
  return local + remote;
}

bool PubSubHub::HandOver(ClientState* cl, uint32_t to, uint64_t* pos) {
  Poll();  // what is on the ring for it goes with it, in its output
  std::vector<std::pair<char, std::string>> done;
  for (char kind : {'c', 'p', 's'}) {
    for (const std::string& n : SetOf(cl, kind)) {
      if (open_ && !shared_.Change(kind, n, to, 1)) {
        for (const auto& [k, m] : done) shared_.Change(k, m, to, -1);
        return false;
      }
      done.emplace_back(kind, n);
    }
  }
  for (const auto& [kind, n] : done) Unsubscribe(cl, kind, n);
  *pos = open_ ? shared_.Tail() : 0;
  return true;
}

bool PubSubHub::Adopt(ClientState* cl,
                      const std::vector<std::pair<char, std::string>>& subs,
                      uint64_t pos) {
  Poll();  // the others first: what follows is for this client alone
  for (const auto& [kind, n] : subs) {
    auto& mine = SetOf(cl, kind);
    if (!mine.emplace(n).second) continue;
    Of(kind)[n].insert(cl);
    ++local_;
  }
  if (!open_) return true;
  PubSubShared::Message m;
  for (;;) {
    int rc = shared_.Next(&pos, &m);
    if (rc == 0) break;
    if (rc < 0) return false;
    DeliverLocal(m.kind, m.channel, m.message, cl);
  }
  ring_pos_ = shared_.Tail();
  return true;
}

void PubSubHub::SendWakes() {
  for (uint32_t pid : pending_wakes_) wake_(pid);
  pending_wakes_.clear();
}

void PubSubHub::Poll() {
  if (!open_) return;
  if (local_ == 0) {
    ring_pos_ = shared_.Tail();
    return;
  }
  PubSubShared::Message m;
  for (;;) {
    int rc = shared_.Next(&ring_pos_, &m);
    if (rc == 0) return;
    if (rc < 0) {
      ++lost_;
      continue;
    }
    if (m.pid == self_) continue;  // delivered when it was published
    DeliverLocal(m.kind, m.channel, m.message);
  }
}

void PubSubHub::Names(
    char kind, const std::function<void(std::string_view, uint64_t)>& f) const {
  if (open_) {
    shared_.Names(kind, f);
    return;
  }
  const auto& m = kind == 'p' ? patterns_ : kind == 's' ? shards_ : channels_;
  for (const auto& [name, clients] : m) f(name, clients.size());
}

uint64_t PubSubHub::Count(char kind, std::string_view name) const {
  if (!open_) {
    const auto& m = kind == 's' ? shards_ : channels_;
    auto it = m.find(std::string(name));
    return it == m.end() ? 0 : it->second.size();
  }
  std::vector<PubSubShared::Holder> h;
  shared_.Holders(kind, name, &h);
  uint64_t n = 0;
  for (const auto& x : h) n += x.count;
  return n;
}

uint64_t PubSubHub::NumPat() const {
  if (!open_) return patterns_.size();
  std::vector<std::string> p;
  shared_.Patterns(&p);
  return p.size();
}

}  // namespace shmkv
