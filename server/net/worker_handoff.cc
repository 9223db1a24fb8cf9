// Hot restart, the worker's side (docs/server.md, "Hot restart"): its
// connections handed to the replacement between requests, and those
// adopted from the worker it replaces.

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/net/fdpass.h"
#include "server/net/worker_impl.h"

namespace shmkv {
namespace worker_impl {

void Worker::OnControl() {
  std::string msg;
  int fd = -1;
  ssize_t n = RecvFd(cfg_.ctl_fd, &msg, &fd);
  if (n <= 0) {
    // The master is gone (or closed our control socket): drain.
    epoll_ctl(ep_, EPOLL_CTL_DEL, cfg_.ctl_fd, nullptr);
    close(cfg_.ctl_fd);
    cfg_.ctl_fd = -1;
    StartDrain();
    return;
  }
  if (fd >= 0) {
    handoff_fd_ = fd;
    ReadReplacementHello();
    StartDrain();
    HandOff();
  }
}

namespace {

void Put32(std::string* s, uint32_t v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
bool Take(std::string_view* in, void* out, size_t n) {
  if (in->size() < n) return false;
  std::memcpy(out, in->data(), n);
  in->remove_prefix(n);
  return true;
}

// A subscriber's section of the handoff: the ring position its new worker
// reads on from, its subscriptions (kind, length, name) and the messages
// it had not been sent yet.
struct Subscriber {
  uint64_t pos = 0;
  std::vector<std::pair<char, std::string>> subs;
  std::string unsent;
};

bool DecodeSubscriber(std::string_view* in, Subscriber* s) {
  uint32_t n = 0;
  if (!Take(in, &s->pos, sizeof(s->pos)) || !Take(in, &n, sizeof(n)) ||
      n > in->size()) {
    return false;
  }
  for (uint32_t i = 0; i < n; ++i) {
    char kind = 0;
    uint32_t len = 0;
    if (!Take(in, &kind, 1) || !Take(in, &len, sizeof(len)) ||
        len > in->size() || (kind != 'c' && kind != 'p' && kind != 's')) {
      return false;
    }
    s->subs.emplace_back(kind, std::string(in->substr(0, len)));
    in->remove_prefix(len);
  }
  uint32_t unsent = 0;
  if (!Take(in, &unsent, sizeof(unsent)) || unsent > in->size()) return false;
  s->unsent.assign(in->data(), unsent);
  in->remove_prefix(unsent);
  return true;
}

}  // namespace

// The replacement's first words on the handoff socket: 'A' (it adopts
// subscribers) or 'a' (it does not: pub/sub is off there), its pid (the
// one subscribers' registrations move to), then ",long" when it puts
// long messages back together (SendLong). A replacement of an older
// build says "A<pid>" or nothing: subscribers stay here and close at
// the drain's end, and every message fits in one.
void Worker::ReadReplacementHello() {
  char buf[64];
  ssize_t n = recv(handoff_fd_, buf, sizeof(buf) - 1, MSG_DONTWAIT);
  if (n < 2 || (buf[0] != 'A' && buf[0] != 'a')) return;
  buf[n] = '\0';
  hello_seen_ = true;
  char* end = nullptr;
  auto pid = static_cast<uint32_t>(std::strtoul(buf + 1, &end, 10));
  if (buf[0] == 'A') handoff_pid_ = pid;
  handoff_long_ = std::strcmp(end, ",long") == 0;
}

// The subscriber's section, if it fits in `budget` bytes: then its
// registrations move to the replacement. What the ring holds for it is
// delivered first (under the lock: nothing is published between), so
// the size counted is the size sent.
bool Worker::HandOverSubscriber(Conn* c, size_t budget, std::string* out) {
  auto lock = store_->Begin();
  hub_->Poll();
  std::vector<std::pair<char, std::string>> subs;
  size_t size = sizeof(uint64_t) + 2 * sizeof(uint32_t) + c->pending_out();
  for (char kind : {'c', 'p', 's'}) {
    const auto& names = kind == 'p'   ? c->client.patterns
                        : kind == 's' ? c->client.shards
                                      : c->client.channels;
    for (const std::string& n : names) {
      subs.emplace_back(kind, n);
      size += 1 + sizeof(uint32_t) + n.size();
    }
  }
  if (size > budget) return false;
  uint64_t pos = 0;
  if (!hub_->HandOver(&c->client, handoff_pid_, &pos)) return false;
  out->append(reinterpret_cast<const char*>(&pos), sizeof(pos));
  Put32(out, static_cast<uint32_t>(subs.size()));
  for (const auto& [kind, n] : subs) {
    out->push_back(kind);
    Put32(out, static_cast<uint32_t>(n.size()));
    *out += n;
  }
  // (its unsent output, with what Poll delivered, goes along)
  Put32(out, static_cast<uint32_t>(c->pending_out()));
  out->append(c->out, c->out_off, std::string::npos);
  c->out.resize(c->out_off);
  return true;
}

void Worker::HandOff() {
  if (!hello_seen_) ReadReplacementHello();
  // What one connection's message may hold: one send's worth, or much
  // more in pieces when the replacement reassembles them.
  const size_t limit = handoff_long_ ? kMaxLongMessage : kMaxHandoffBytes;
  std::vector<int> moved;
  for (auto& kv : conns_) {
    Conn* c = kv.second.get();
    // Inside MULTI the queued commands stay here until EXEC or DISCARD
    // (or the drain deadline closes the connection: nothing ran). A
    // subscriber moves with its subscriptions and its unsent messages
    // when the replacement's pid is known.
    bool sub = c->client.subscribed();
    if (sub ? (c->closing || c->client.in_multi || handoff_pid_ == 0 ||
               hub_ == nullptr)
            : !c->movable()) {
      continue;
    }
    size_t partial = c->in.size() - c->in_off;
    if (partial > limit / 2) continue;
    // 'S', the kind, a digit ('0' + 1 if AUTH passed + 2 if the client
    // WATCHes keys: their versions do not travel, so its next EXEC
    // fails and it retries + 4 if it is blocked + 8 if it SELECTed a
    // database other than 0 + 16 if it speaks RESP3 + 32 if it
    // subscribed + 64 if CLIENT REPLY silences it), the client id, its
    // name, its database (a byte, with 8), its reply mode (a byte, with
    // 64: 1 OFF, 2 SKIP the next), a blocked client's command
    // (BlockedCommand::Encode), its subscriptions (HandOverSubscriber,
    // with 32), then the partial request ('H'/'R' + request from older
    // workers).
    const bool silenced = c->client.reply_off || c->client.reply_skip_next;
    std::string msg = "S";
    msg += c->http ? 'H' : 'R';
    msg += static_cast<char>('0' + (c->client.authed ? 1 : 0) +
                             (c->client.watched.empty() && !c->client.watch_lost ? 0 : 2) +
                             (c->blocked ? 4 : 0) +
                             (c->client.db != 0 ? 8 : 0) +
                             (c->client.resp == 3 ? 16 : 0) +
                             (sub ? 32 : 0) + (silenced ? 64 : 0));
    uint64_t id = c->client.id;
    msg.append(reinterpret_cast<const char*>(&id), sizeof(id));
    uint32_t name_len = static_cast<uint32_t>(c->client.name.size());
    msg.append(reinterpret_cast<const char*>(&name_len), sizeof(name_len));
    msg += c->client.name;
    if (c->client.db != 0) msg += static_cast<char>(c->client.db);
    if (silenced) msg += static_cast<char>(c->client.reply_off ? 1 : 2);
    if (c->blocked) c->blocked->Encode(&msg);
    size_t used = msg.size() + partial;
    if (used > limit) continue;  // it finishes here, or closes at the end
    if (sub && !HandOverSubscriber(c, limit - used, &msg)) continue;
    msg.append(c->in, c->in_off, partial);
    if (!SendLong(handoff_fd_, c->fd, msg)) {
      // The replacement is gone: finish the drain by closing instead.
      close(handoff_fd_);
      handoff_fd_ = -1;
      break;
    }
    // A blocked client's rows on the board go with it: the replacement
    // holds them from now on, in the same place in line.
    if (c->blocked) {
      blocked_.Remove(c->blocked->ticket);
      c->blocked.reset();
    }
    moved.push_back(kv.first);
  }
  for (int fd : moved) Close(fd);
}

void Worker::Adopt() {
  for (;;) {
    std::string msg;
    int fd = -1;
    ssize_t n = RecvFd(adopt_fd_, &msg, &fd);
    // An old worker that closes its end without reading our hello (a
    // build before it) makes the next read ECONNRESET, but the
    // connections it sent are still queued behind it: read on.
    if (n < 0 && errno == ECONNRESET) continue;
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (adopt_long_.Abandon()) {
        std::fprintf(stderr, "shmkv worker %zu: the worker replaced ended "
                     "while it handed a connection over: closed\n",
                     cfg_.slot);
      }
      epoll_ctl(ep_, EPOLL_CTL_DEL, adopt_fd_, nullptr);
      close(adopt_fd_);  // the old worker is done
      adopt_fd_ = -1;
      if (hub_ != nullptr) hub_->set_adopting(false);
      return;
    }
    std::string why;
    bool whole = adopt_long_.Feed(&msg, &fd, &why);
    if (!why.empty()) {
      std::fprintf(stderr, "shmkv worker %zu: a connection handed over was "
                   "damaged (%s): closed\n", cfg_.slot, why.c_str());
    }
    if (!whole || fd < 0) continue;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->client.conn = c.get();
    sockaddr_storage peer;
    socklen_t plen = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) == 0) {
      PeerText(peer, &c->client.addr);
    }
    c->client.authed = cfg_.password.empty();
    std::unique_ptr<Subscriber> sub;
    constexpr size_t kStateHead = 3 + sizeof(uint64_t) + sizeof(uint32_t);
    uint32_t name_len = 0;
    if (msg.size() >= kStateHead && msg[0] == 'S') {
      std::memcpy(&name_len, msg.data() + kStateHead - 4, 4);
    }
    if (msg.size() >= kStateHead && msg[0] == 'S' &&
        name_len <= msg.size() - kStateHead) {
      c->http = msg[1] == 'H';
      int flags = static_cast<unsigned char>(msg[2]) - '0';
      c->client.authed = c->client.authed || (flags & 1) != 0;
      c->client.watch_lost = (flags & 2) != 0;
      if ((flags & 16) != 0) c->client.resp = 3;
      std::memcpy(&c->client.id, msg.data() + 3, sizeof(uint64_t));
      c->client.name.assign(msg, kStateHead, name_len);
      std::string_view rest(msg);
      rest.remove_prefix(kStateHead + name_len);
      if ((flags & 8) != 0 && !rest.empty()) {
        c->client.db = static_cast<uint8_t>(rest[0]) % kDatabases;
        rest.remove_prefix(1);
      }
      if ((flags & 64) != 0 && !rest.empty()) {
        c->client.reply_off = rest[0] == 1;
        c->client.reply_skip_next = rest[0] == 2;
        rest.remove_prefix(1);
      }
      if ((flags & 4) != 0) {
        c->blocked = std::make_unique<BlockedCommand>();
        if (!c->blocked->Decode(&rest)) {
          std::fprintf(stderr, "shmkv worker %zu: a blocked client "
                       "handed over with a damaged command: closed\n",
                       cfg_.slot);
          close(fd);
          continue;
        }
      }
      if ((flags & 32) != 0) {
        sub = std::make_unique<Subscriber>();
        if (!DecodeSubscriber(&rest, sub.get())) {
          std::fprintf(stderr, "shmkv worker %zu: a subscriber handed "
                       "over with damaged state: closed\n", cfg_.slot);
          close(fd);
          continue;
        }
      }
      c->in.assign(rest.data(), rest.size());
    } else {  // from a worker of an earlier version
      c->http = !msg.empty() && msg[0] == 'H';
      c->client.id = NewClientId();
      if (msg.size() > 1) c->in.assign(msg, 1, std::string::npos);
    }
    Conn* raw = c.get();
    raw->last_active = MonoUs();
    Add(fd, EPOLLIN | EPOLLRDHUP);
    conns_[fd] = std::move(c);
    ++local_.adopted;
    Account(raw);
    if (sub != nullptr) {
      // Its messages not sent yet, then those the ring got since it was
      // handed over (under the lock: no publish comes between).
      raw->out = std::move(sub->unsent);
      bool kept = false;
      if (hub_ != nullptr) {
        auto lock = store_->Begin();
        kept = hub_->Adopt(&raw->client, sub->subs, sub->pos);
      }
      if (!kept) {
        std::fprintf(stderr, "shmkv worker %zu: a subscriber handed over "
                     "could not be kept (pub/sub is off here, or the ring "
                     "passed its messages): closed\n", cfg_.slot);
        Close(fd);
        continue;
      }
      Update(raw);
    }
    if (raw->blocked) {
      AdoptBlocked(raw);
      continue;
    }
    if (!raw->in.empty()) {
      Process(raw);
      Flush(raw);
    }
  }
}

void Worker::AdoptBlocked(Conn* c) {
  bool kept = false;
  if (ctx_.waits != nullptr) {
    auto lock = store_->Begin();
    kept = waits_.Adopt(c->blocked->ticket, c->blocked->keys);
  }
  if (!kept) {  // no board here, or no room: the timeout answer
    c->blocked.reset();
    Reply timeout(&c->out);
    timeout.SetProtocol(c->client.resp);
    timeout.NullArray();
    resumed_.push_back(c->fd);
    return Resume();
  }
  blocked_.Add(c->fd, *c->blocked);
  woken_.insert(woken_.end(), c->blocked->keys.begin(),
                c->blocked->keys.end());
  ServeWoken();
  Resume();
}

}  // namespace worker_impl
}  // namespace shmkv
