// Hot restart, the worker's side (docs/server.md, "Hot restart"): its
// connections handed to the replacement between requests, and those
// adopted from the worker it replaces.

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

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
    StartDrain();
    HandOff();
  }
}

void Worker::HandOff() {
  std::vector<int> moved;
  for (auto& kv : conns_) {
    Conn* c = kv.second.get();
    // Inside MULTI the queued commands stay here until EXEC or DISCARD
    // (or the drain deadline closes the connection: nothing ran).
    if (!c->movable()) continue;
    size_t partial = c->in.size() - c->in_off;
    if (partial > kMaxHandoffBytes) continue;
    // 'S', the kind, a digit ('0' + 1 if AUTH passed + 2 if the client
    // WATCHes keys: their versions do not travel, so its next EXEC
    // fails and it retries + 4 if it is blocked + 8 if it SELECTed a
    // database other than 0 + 16 if it speaks RESP3), the client id, its
    // name, its database (a
    // byte, with 8), a blocked client's command (BlockedCommand::
    // Encode), then the partial request ('H'/'R' + request from older
    // workers).
    std::string msg = "S";
    msg += c->http ? 'H' : 'R';
    msg += static_cast<char>('0' + (c->client.authed ? 1 : 0) +
                             (c->client.watched.empty() && !c->client.watch_lost ? 0 : 2) +
                             (c->blocked ? 4 : 0) +
                             (c->client.db != 0 ? 8 : 0) +
                             (c->client.resp == 3 ? 16 : 0));
    uint64_t id = c->client.id;
    msg.append(reinterpret_cast<const char*>(&id), sizeof(id));
    uint32_t name_len = static_cast<uint32_t>(c->client.name.size());
    msg.append(reinterpret_cast<const char*>(&name_len), sizeof(name_len));
    msg += c->client.name;
    if (c->client.db != 0) msg += static_cast<char>(c->client.db);
    if (c->blocked) c->blocked->Encode(&msg);
    msg.append(c->in, c->in_off, partial);
    if (!SendFd(handoff_fd_, c->fd, msg)) {
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
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      epoll_ctl(ep_, EPOLL_CTL_DEL, adopt_fd_, nullptr);
      close(adopt_fd_);  // the old worker is done
      adopt_fd_ = -1;
      return;
    }
    if (fd < 0) continue;
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
    constexpr size_t kStateHead = 3 + sizeof(uint64_t) + sizeof(uint32_t);
    uint32_t name_len = 0;
    if (msg.size() >= kStateHead && msg[0] == 'S') {
      std::memcpy(&name_len, msg.data() + kStateHead - 4, 4);
    }
    if (msg.size() >= kStateHead && msg[0] == 'S' &&
        name_len <= msg.size() - kStateHead) {
      c->http = msg[1] == 'H';
      int flags = msg[2] - '0';
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
