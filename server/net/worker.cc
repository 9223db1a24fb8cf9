#include "server/net/worker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "server/net/blocked.h"
#include "server/net/fdpass.h"
#include "server/net/http.h"
#include "server/commands/reply.h"
#include "server/net/resp.h"
#include "server/store/stats.h"
#include "server/net/udp.h"
#include "server/net/waker.h"
#include "shmc/detail/process.h"

namespace shmkv {

namespace {

constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kMaxPendingOut = 32 << 20;  // stop reading above this
// A buffer left larger than this once empty goes back to the allocator, so
// an idle connection holds no memory from its last large request.
constexpr size_t kKeepBuffer = 128 << 10;


// Arguments up to twice the largest value are read and refused with an
// error reply; beyond that the request is a protocol error.
size_t MaxBulk(const StoreConfig& store) {
  return 2 * std::max<size_t>(store.max_value, store.max_key);
}

}  // namespace

size_t MaxRequestBytes(const StoreConfig& store) {
  return MaxBulk(store) * 2 + (1 << 20);
}

size_t MinClientMemoryPerWorker(const StoreConfig& store) {
  return MaxRequestBytes(store) + (4 << 20);
}

namespace {

double MonoUs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + ts.tv_nsec / 1e3;
}

struct Conn {
  int fd = -1;
  bool http = false;
  ClientState client;
  std::string in;
  size_t in_off = 0;
  RespCursor cursor;  // how far the request at in_off is parsed
  std::string out;
  size_t out_off = 0;
  bool closing = false;   // close once the output is flushed
  bool reading = true;    // EPOLLIN registered
  bool writing = false;   // EPOLLOUT registered
  double last_active = 0;  // last byte read or written (--timeout)
  size_t held = 0;         // buffer bytes counted in the worker's total
  // Set while the client waits in a blocking command (BLPOP ...): its
  // input waits too, as in Redis.
  std::unique_ptr<BlockedCommand> blocked;
  size_t pending_out() const { return out.size() - out_off; }
  size_t buffers() const { return in.capacity() + out.capacity(); }
  bool idle() const { return in_off == in.size() && pending_out() == 0; }
  // Between requests, with nothing to send: a hot restart may move it.
  bool movable() const {
    return !closing && pending_out() == 0 && !client.in_transaction();
  }
};

bool IsListener(const std::vector<int>& fds, int fd) {
  return std::find(fds.begin(), fds.end(), fd) != fds.end();
}

// "ip:port" of a peer; true when it is a loopback address.
bool PeerText(const sockaddr_storage& ss, std::string* out) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  bool loopback = false;
  if (ss.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof(ip));
    port = ntohs(v4->sin_port);
    loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  } else if (ss.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof(ip));
    port = ntohs(v6->sin6_port);
    loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
  } else {
    loopback = true;  // not an IP peer (a Unix socket)
  }
  *out = std::string(ip) + ":" + std::to_string(port);
  return loopback;
}

class Worker {
 public:
  explicit Worker(const WorkerConfig& cfg) : cfg_(cfg) {}

  int Run() {
    std::string err;
    store_ = Store::Open(cfg_.store, false, &err);
    if (!store_) {
      std::fprintf(stderr, "shmkv worker %zu: %s\n", cfg_.slot, err.c_str());
      return 1;
    }
    bool other_layout = false;
    if (!stats_.Open(ControlKey(cfg_.store) + ".stats", false, &err,
                     &other_layout)) {
      if (!other_layout) {
        std::fprintf(stderr, "shmkv worker %zu: %s\n", cfg_.slot, err.c_str());
        return 1;
      }
      // A hot upgrade across a change of the statistics' layout: serving
      // matters more than counting. A full restart brings them back.
      std::fprintf(stderr, "shmkv worker %zu: serving without statistics: "
                   "the running master's statistics segment has another "
                   "layout (%s); restart the master to count again\n",
                   cfg_.slot, err.c_str());
    }
    adopt_fd_ = cfg_.adopt_fd;
    if (adopt_fd_ >= 0) {
      fcntl(adopt_fd_, F_SETFL, fcntl(adopt_fd_, F_GETFL) | O_NONBLOCK);
    }
    OpenBlocking();
    ctx_.store = store_.get();
    ctx_.stats = &stats_;
    ctx_.info = &cfg_.info;
    ctx_.password = &cfg_.password;
    limits_.max_bulk = MaxBulk(cfg_.store);
    max_request_ = MaxRequestBytes(cfg_.store);
    budget_ = std::max<uint64_t>(
        cfg_.client_memory / std::max<size_t>(cfg_.workers, 1),
        MinClientMemoryPerWorker(cfg_.store));
    // Buffers of large requests are mapped on their own and unmapped when
    // freed, so the memory a closed client held goes back to the kernel
    // (glibc would otherwise raise this threshold as such buffers come and
    // go, and keep up to 32 MiB blocks in its heap).
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);  // see Refuse
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    sig_fd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);
    Add(sig_fd_, EPOLLIN);
    for (int fd : Listeners()) {
      if (fd < 0) continue;
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      fcntl(fd, F_SETFD, FD_CLOEXEC);
      Add(fd, EPOLLIN);
    }
    if (cfg_.ctl_fd >= 0) Add(cfg_.ctl_fd, EPOLLIN);
    if (waker_.fd() >= 0) Add(waker_.fd(), EPOLLIN);
    if (cfg_.adopt_fd >= 0) Add(cfg_.adopt_fd, EPOLLIN);
    udp_client_.id = NewClientId();
    udp_client_.addr = "udp";
    udp_client_.authed = true;  // no UDP with a password (main.cc)
    for (int fd : cfg_.udp_fds) {
      if (fd < 0) continue;
      fcntl(fd, F_SETFD, FD_CLOEXEC);
      udp_.push_back(std::make_unique<UdpServer>(fd, cfg_.protected_mode,
                                                 limits_));
      Add(fd, EPOLLIN);
    }
    stats_.Publish(cfg_.slot, local_);
    if (cfg_.ready_fd >= 0) {
      (void)!write(cfg_.ready_fd, "R", 1);
      close(cfg_.ready_fd);
    }
    return Loop();
  }

 private:
  // Every listening socket: RESP ones, then HTTP ones.
  std::vector<int> Listeners() const {
    std::vector<int> all = cfg_.resp_fds;
    all.insert(all.end(), cfg_.http_fds.begin(), cfg_.http_fds.end());
    return all;
  }

  // Unique among this worker's connections; the slot keeps workers apart.
  uint64_t NewClientId() {
    return (static_cast<uint64_t>(cfg_.slot) << 40) | ++next_id_;
  }

  void Add(int fd, uint32_t events) {
    struct epoll_event ev = {};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
  }

  void Update(Conn* c) {
    bool want_read = !c->closing && c->pending_out() < kMaxPendingOut;
    bool want_write = c->pending_out() > 0;
    if (want_read == c->reading && want_write == c->writing) return;
    struct epoll_event ev = {};
    ev.events = (want_read ? uint32_t{EPOLLIN} : 0u) |
                (want_write ? uint32_t{EPOLLOUT} : 0u) |
                EPOLLRDHUP;
    ev.data.fd = c->fd;
    epoll_ctl(ep_, EPOLL_CTL_MOD, c->fd, &ev);
    c->reading = want_read;
    c->writing = want_write;
  }

  int Loop() {
    std::vector<struct epoll_event> events(256);
    double last_publish = MonoUs();
    for (;;) {
      int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()),
                         blocked_.WaitMs(shmc::detail::MonotonicNs(), 100));
      if (n < 0 && errno != EINTR) {
        std::perror("shmkv: epoll_wait");
        return 1;
      }
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        uint32_t ev = events[i].events;
        if (fd == sig_fd_) {
          struct signalfd_siginfo si;
          while (read(sig_fd_, &si, sizeof(si)) == sizeof(si)) StartDrain();
        } else if (IsListener(cfg_.resp_fds, fd) ||
                   IsListener(cfg_.http_fds, fd)) {
          Accept(fd, IsListener(cfg_.http_fds, fd));
        } else if (fd == cfg_.ctl_fd) {
          OnControl();
        } else if (fd == adopt_fd_) {
          Adopt();
        } else if (fd == waker_.fd()) {
          waker_.Drain(&woken_);
          ServeWoken();
        } else if (UdpServer* u = FindUdp(fd)) {
          u->OnReadable(
              [this](const std::vector<std::string_view>& args,
                     std::string* reply) { Run(&udp_client_, args, reply); },
              &local_.udp);
        } else {
          auto it = conns_.find(fd);
          if (it == conns_.end()) continue;
          Conn* c = it->second.get();
          if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) OnReadable(c);
          if (conns_.count(fd) && (ev & EPOLLOUT)) Flush(c);
        }
      }
      ExpireBlocked();
      Resume();
      double now = MonoUs();
      if (now - last_publish >= 100000) {
        Publish();
        CheckBlocked(now);
        last_publish = now;
      }
      if (cfg_.timeout_s > 0 && now - last_timeout_scan_ >= 1e6) {
        CloseTimedOut(now);
        last_timeout_scan_ = now;
      }
      if (draining_) {
        if (handoff_fd_ >= 0) HandOff();
        CloseIdle();
        if (conns_.empty() || now >= drain_deadline_ + 1e6) {
          Publish();
          return 0;
        }
      }
    }
  }

  void Publish() {
    double now = MonoUs();
    if (now - rate_start_ >= 1e6) {  // commands per second, ~1 s window
      local_.ops_per_sec = static_cast<uint64_t>(
          static_cast<double>(local_.commands + ctx_.http_requests -
                              rate_ops_) * 1e6 / (now - rate_start_));
      rate_ops_ = local_.commands + ctx_.http_requests;
      rate_start_ = now;
    }
    local_.connections = conns_.size();
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
      local_.cpu_user_us = static_cast<uint64_t>(ru.ru_utime.tv_sec) * 1000000 +
                           static_cast<uint64_t>(ru.ru_utime.tv_usec);
      local_.cpu_sys_us = static_cast<uint64_t>(ru.ru_stime.tv_sec) * 1000000 +
                          static_cast<uint64_t>(ru.ru_stime.tv_usec);
    }
    local_.http_requests = ctx_.http_requests;
    local_.client_buffers = total_held_;
    stats_.Publish(cfg_.slot, local_);
  }

  void StartDrain() {
    if (draining_) return;
    draining_ = true;
    drain_deadline_ = MonoUs() + cfg_.drain_ms * 1000.0;
    // The master keeps the listening sockets: connections still queued
    // there are accepted by the replacement worker.
    for (int fd : Listeners()) {
      if (fd < 0) continue;
      epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
      close(fd);
    }
    // Datagrams wait in the master's UDP sockets for the replacement.
    for (const auto& u : udp_) {
      epoll_ctl(ep_, EPOLL_CTL_DEL, u->fd(), nullptr);
      close(u->fd());
    }
    udp_.clear();
  }

  UdpServer* FindUdp(int fd) const {
    for (const auto& u : udp_) {
      if (u->fd() == fd) return u.get();
    }
    return nullptr;
  }

  // Runs one command for a client and records it. True when it blocked
  // (ctx_.blocked says on what); it is counted once it is answered.
  // `ticket`: a blocked command tried again.
  template <class ArgList>
  bool Run(ClientState* client, const ArgList& args, std::string* out,
           bool may_block = false, uint64_t ticket = 0) {
    double t0 = MonoUs();
    ctx_.client = client;
    ctx_.may_block = may_block && ctx_.waits != nullptr;
    ctx_.ticket = ticket;
    ctx_.blocked.ticket = 0;
    Reply reply(out);
    size_t id = 0;
    if constexpr (std::is_same_v<ArgList, std::vector<std::string_view>>) {
      id = Execute(args, &ctx_, &reply);
    } else {
      retry_args_.assign(args.begin(), args.end());
      id = Execute(retry_args_, &ctx_, &reply);
    }
    ctx_.may_block = false;
    ctx_.ticket = 0;
    SendWakes();
    if (ctx_.blocked.ticket != 0) return true;
    local_.Record(id, MonoUs() - t0);
    ++local_.commands;
    local_.errors += reply.error();
    return false;
  }

  // ---- Blocking commands (docs/server.md, "Blocking commands") ----

  void OpenBlocking() {
    std::string err;
    if (!waits_.Open(WaitsKey(cfg_.store), &err) ||
        !waker_.Open(ControlKey(cfg_.store), &err)) {
      // Without the board or a way to be woken a client could wait
      // forever: blocking commands answer at once instead.
      std::fprintf(stderr, "shmkv worker %zu: blocking commands will not "
                   "block: %s\n", cfg_.slot, err.c_str());
      return;
    }
    ctx_.waits = &waits_;
    store_->set_commit_observer(
        [](void* w, uint64_t key) {
          auto* self = static_cast<Worker*>(w);
          if (self->waits_.any()) self->written_.push_back(key);
        },
        this);
  }

  // After a commit: tells the workers holding clients blocked on the keys
  // it wrote (this one through woken_).
  void SendWakes() {
    if (written_.empty()) return;
    const uint64_t self = static_cast<uint64_t>(getpid());
    for (uint64_t key : written_) {
      waits_.Holders(key, &holders_);
      for (uint64_t pid : holders_) {
        if (pid == self) {
          woken_.push_back(key);
        } else if (!waker_.Send(pid, key)) {
          waits_.BumpResync();
        }
      }
    }
    written_.clear();
  }

  // The command c just ran blocked: hold c until it is served.
  void Block(Conn* c) {
    auto b = std::make_unique<BlockedCommand>();
    b->args.assign(args_.begin(), args_.end());
    b->ticket = ctx_.blocked.ticket;
    b->deadline_ns = ctx_.blocked.deadline_ns;
    b->keys = std::move(ctx_.blocked.keys);
    ctx_.blocked = CommandContext::Blocked();
    blocked_.Add(c->fd, *b);
    c->blocked = std::move(b);
  }

  // c's wait is over (answered, timed out, or gone): frees its rows when
  // `board`, and wakes the others waiting on its keys, which may now be
  // first in line.
  void Unblock(Conn* c, bool board) {
    std::unique_ptr<BlockedCommand> b = std::move(c->blocked);
    blocked_.Remove(b->ticket);
    if (board) {
      auto lock = store_->Begin();  // the board changes under the lock
      waits_.Remove(b->ticket);
    }
    written_ = b->keys;
    SendWakes();
    resumed_.push_back(c->fd);
  }

  // Tries again the clients blocked on keys written since (woken_), first
  // blocked first. The ones served go on with their input in Resume.
  void ServeWoken() {
    if (serving_ || (woken_.empty() && !retry_all_)) return;
    serving_ = true;
    while (!woken_.empty() || retry_all_) {
      std::vector<uint64_t> tickets =
          retry_all_ ? blocked_.All() : blocked_.Waiting(woken_);
      woken_.clear();
      retry_all_ = false;
      for (uint64_t t : tickets) {
        auto it = conns_.find(blocked_.Fd(t));
        if (it == conns_.end() || !it->second->blocked) continue;
        Conn* c = it->second.get();
        if (Run(&c->client, c->blocked->args, &c->out, true, t)) {
          ctx_.blocked = CommandContext::Blocked();  // still waiting
          continue;
        }
        // Answered; the command freed its rows under its lock.
        Unblock(c, false);
      }
    }
    serving_ = false;
  }

  // Sends what the clients let go have, and goes on with their input.
  void Resume() {
    while (!resumed_.empty()) {
      std::vector<int> fds;
      fds.swap(resumed_);
      for (int fd : fds) {
        auto it = conns_.find(fd);
        if (it == conns_.end()) continue;
        Conn* c = it->second.get();
        Process(c);
        Flush(c);
      }
      ServeWoken();
    }
  }

  // Answers the clients whose timeout passed: Redis's null reply.
  void ExpireBlocked() {
    if (blocked_.empty()) return;
    for (uint64_t t : blocked_.Expired(shmc::detail::MonotonicNs())) {
      auto it = conns_.find(blocked_.Fd(t));
      if (it == conns_.end() || !it->second->blocked) {
        blocked_.Remove(t);
        continue;
      }
      Conn* c = it->second.get();
      Reply(&c->out).NullArray();
      ++local_.commands;
      Unblock(c, true);
    }
  }

  // Every 100 ms: a wake some worker could not deliver (its socket was
  // full) makes every worker try all its clients again; once a second,
  // all are tried anyway, and rows of this worker's that no client owns
  // any more are freed.
  void CheckBlocked(double now) {
    uint64_t resync = waits_.resync();
    if (resync != resync_seen_ || now - last_check_ >= 1e6) {
      resync_seen_ = resync;
      retry_all_ = !blocked_.empty();
    }
    if (now - last_check_ >= 1e6 && !draining_ && waits_.open()) {
      last_check_ = now;
      std::vector<uint64_t> mine;
      waits_.Mine(&mine);
      std::vector<uint64_t> stray;
      for (uint64_t t : mine) {
        if (!blocked_.Has(t)) stray.push_back(t);
      }
      if (!stray.empty()) {
        auto lock = store_->Begin();
        for (uint64_t t : stray) waits_.Remove(t);
      }
    }
    ServeWoken();
    Resume();
  }

  // The master names our replacement: a socket to hand connections to.
  void OnControl() {
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

  // Passes every connection that is between requests (its reply sent) to
  // the replacement, with the bytes of a request it has only partly
  // received; bytes still in the kernel socket travel with the socket.
  void HandOff() {
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
      // fails and it retries + 4 if it is blocked), the client id, its
      // name, a blocked client's command (BlockedCommand::Encode), then
      // the partial request ('H'/'R' + request from older workers).
      std::string msg = "S";
      msg += c->http ? 'H' : 'R';
      msg += static_cast<char>('0' + (c->client.authed ? 1 : 0) +
                               (c->client.watched.empty() && !c->client.watch_lost ? 0 : 2) +
                               (c->blocked ? 4 : 0));
      uint64_t id = c->client.id;
      msg.append(reinterpret_cast<const char*>(&id), sizeof(id));
      uint32_t name_len = static_cast<uint32_t>(c->client.name.size());
      msg.append(reinterpret_cast<const char*>(&name_len), sizeof(name_len));
      msg += c->client.name;
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

  // A connection handed over by the worker this one replaces.
  void Adopt() {
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
        std::memcpy(&c->client.id, msg.data() + 3, sizeof(uint64_t));
        c->client.name.assign(msg, kStateHead, name_len);
        std::string_view rest(msg);
        rest.remove_prefix(kStateHead + name_len);
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

  // A client that was blocked on the worker this one replaces: its rows
  // on the board become this worker's, in the same place in line, and it
  // is tried again at once (a write may have come while it moved).
  void AdoptBlocked(Conn* c) {
    bool kept = false;
    if (ctx_.waits != nullptr) {
      auto lock = store_->Begin();
      kept = waits_.Adopt(c->blocked->ticket, c->blocked->keys);
    }
    if (!kept) {  // no board here, or no room: the timeout answer
      c->blocked.reset();
      Reply(&c->out).NullArray();
      resumed_.push_back(c->fd);
      return Resume();
    }
    blocked_.Add(c->fd, *c->blocked);
    woken_.insert(woken_.end(), c->blocked->keys.begin(),
                  c->blocked->keys.end());
    ServeWoken();
    Resume();
  }

  // Redis's timeout: a client that sent or received nothing for longer
  // than timeout_s seconds is closed (one in MULTI too, as Redis does).
  void CloseTimedOut(double now) {
    std::vector<int> late;
    double limit = static_cast<double>(cfg_.timeout_s) * 1e6;
    for (auto& kv : conns_) {
      if (now - kv.second->last_active > limit) late.push_back(kv.first);
    }
    for (int fd : late) Close(fd);
    local_.timed_out_clients += late.size();
  }

  // Counts c's buffers in the worker's total.
  void Account(Conn* c) {
    size_t now = c->in.size() + c->out.size();
    total_held_ = total_held_ - c->held + now;
    c->held = now;
  }

  // The server-wide bound on client buffers (this worker's share): while
  // above it, the client holding the most is told and closed, as Redis's
  // client eviction does. True if `keep` is still open.
  bool Evict(const Conn* keep) {
    bool kept = true;
    while (total_held_ > budget_ && !conns_.empty()) {
      Conn* big = nullptr;
      for (auto& kv : conns_) {
        if (big == nullptr || kv.second->held > big->held) {
          big = kv.second.get();
        }
      }
      static const char kEvicted[] =
          "-ERR client closed: all clients' buffers reached "
          "maxmemory-clients\r\n";
      (void)!send(big->fd, kEvicted, sizeof(kEvicted) - 1,
                  MSG_NOSIGNAL | MSG_DONTWAIT);
      std::fprintf(stderr,
                   "shmkv: closed client %s holding %zu buffered bytes: "
                   "client buffers above maxmemory-clients\n",
                   big->client.addr.c_str(), big->held);
      kept = kept && big != keep;
      ++local_.evicted_clients;
      Close(big->fd);
    }
    return kept;
  }

  void CloseIdle() {
    std::vector<int> idle;
    for (auto& kv : conns_) {
      // A client inside MULTI keeps its queue until EXEC or DISCARD (then
      // HandOff moves it), or until the drain deadline.
      if (kv.second->idle() && !kv.second->client.in_transaction()) {
        idle.push_back(kv.first);
      }
    }
    for (int fd : idle) Close(fd);
  }

  void Accept(int lfd, bool http) {
    for (int i = 0; i < 64; ++i) {
      sockaddr_storage peer;
      socklen_t plen = sizeof(peer);
      int fd = accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &plen,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if ((errno == EMFILE || errno == ENFILE) && Refuse(lfd, http)) {
          continue;
        }
        return;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::string addr;
      bool loopback = PeerText(peer, &addr);
      if (cfg_.protected_mode && !loopback) {
        // Redis's answer, word for word, then the connection is closed.
        static const char kDenied[] =
            "-DENIED Redis is running in protected mode because protected "
            "mode is enabled and no password is set for the default user. "
            "In this mode connections are only accepted from the loopback "
            "interface. If you want to connect from external computers to "
            "Redis you may adopt one of the following solutions: 1) Just "
            "disable protected mode sending the command 'CONFIG SET "
            "protected-mode no' from the loopback interface by connecting "
            "to Redis from the same host the server is running, however "
            "MAKE SURE Redis is not publicly accessible from internet if "
            "you do so. Use CONFIG REWRITE to make this change permanent. "
            "2) Alternatively you can just disable the protected mode by "
            "editing the Redis configuration file, and setting the protected "
            "mode option to 'no', and then restarting the server. 3) If you "
            "started the server manually just for testing, restart it with "
            "the '--protected-mode no' option. 4) Set up an authentication "
            "password for the default user. NOTE: You only need to do one "
            "of the above things in order for the server to start accepting "
            "connections from the outside.\r\n";
        if (!http) (void)!send(fd, kDenied, sizeof(kDenied) - 1, MSG_NOSIGNAL);
        close(fd);
        continue;
      }
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->http = http;
      c->client.id = NewClientId();
      c->client.addr = addr;
      c->client.authed = cfg_.password.empty();
      c->last_active = MonoUs();
      Add(fd, EPOLLIN | EPOLLRDHUP);
      conns_[fd] = std::move(c);
      ++local_.connections_total;
    }
  }

  // Out of file descriptors: the connection waiting in the backlog would
  // keep the listening socket readable, and a worker that only logged
  // would spin on it. So, as Redis does beyond maxclients: give up the
  // spare descriptor, accept the connection, tell it why
  // ("-ERR max number of clients reached", or HTTP 503), close it, take the
  // spare back. Logged at most once a second, with the count. False when
  // no connection was taken (the spare could not be freed or none waits).
  bool Refuse(int lfd, bool http) {
    if (spare_fd_ < 0) return false;
    int err = errno;
    close(spare_fd_);
    spare_fd_ = -1;
    int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      static const char kResp[] = "-ERR max number of clients reached\r\n";
      static const char kHttp[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n";
      if (http) {
        (void)!send(fd, kHttp, sizeof(kHttp) - 1, MSG_NOSIGNAL);
      } else {
        (void)!send(fd, kResp, sizeof(kResp) - 1, MSG_NOSIGNAL);
      }
      close(fd);
      ++local_.rejected_connections;
    }
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    double now = MonoUs();
    if (fd >= 0 && now - refused_logged_us_ >= 1e6) {
      refused_logged_us_ = now;
      struct rlimit rl;
      getrlimit(RLIMIT_NOFILE, &rl);
      std::fprintf(stderr, "shmkv worker %zu: %s at %zu connections (open "
                   "files limit %llu): new connections are refused, %llu so "
                   "far; raise ulimit -n (docs/server.md)\n", cfg_.slot,
                   std::strerror(err), conns_.size(),
                   static_cast<unsigned long long>(rl.rlim_cur),
                   static_cast<unsigned long long>(
                       local_.rejected_connections));
    }
    return fd >= 0;
  }

  void Close(int fd) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    if (it->second->blocked) Unblock(it->second.get(), true);
    total_held_ -= it->second->held;
    conns_.erase(it);
  }

  void OnReadable(Conn* c) {
    bool eof = false;
    char buf[kReadChunk];
    for (int round = 0; round < 16 && c->reading; ++round) {
      ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
      if (n > 0) {
        c->in.append(buf, static_cast<size_t>(n));
        local_.bytes_in += static_cast<uint64_t>(n);
        c->last_active = MonoUs();
        Account(c);
        if (static_cast<size_t>(n) < sizeof(buf)) break;
        if (total_held_ > budget_) break;  // settle the bound first
        continue;
      }
      if (n == 0) {
        eof = true;
        break;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Close(c->fd);  // reset by peer
      return;
    }
    if (total_held_ > budget_ && !Evict(c)) return;
    int fd = c->fd;
    Process(c);
    if (eof) c->closing = true;
    Flush(c);
    if (total_held_ > budget_) {
      auto it = conns_.find(fd);
      Evict(it == conns_.end() ? nullptr : it->second.get());
    }
  }

  void Process(Conn* c) {
    while (!c->closing && !c->blocked && c->in_off < c->in.size() &&
           c->pending_out() < kMaxPendingOut) {
      const char* p = c->in.data() + c->in_off;
      size_t avail = c->in.size() - c->in_off;
      size_t used = 0;
      if (c->http) {
        ctx_.client = &c->client;
        HttpResult r = HandleHttp(p, avail, cfg_.store.max_value, &ctx_,
                                  &c->out, &used);
        SendWakes();
        ServeWoken();
        if (r == HttpResult::kIncomplete) break;
        if (r == HttpResult::kClose) {
          c->closing = true;
          break;
        }
        c->in_off += used;
        continue;
      }
      std::string err;
      ParseResult r = ParseCommand(p, avail, limits_, &c->cursor, &args_,
                                   &used, &inline_, &err);
      if (r == ParseResult::kIncomplete) break;
      if (r == ParseResult::kError) {
        ReplyError(&c->out, "ERR " + err);
        ++local_.errors;
        c->closing = true;
        break;
      }
      c->in_off += used;
      if (args_.empty()) continue;  // an empty inline line
      if (Run(&c->client, args_, &c->out, true)) {
        Block(c);
        break;
      }
      if (ctx_.quit) {
        ctx_.quit = false;
        c->closing = true;
      }
      // As Redis: clients blocked on what this command wrote are served
      // before the next command runs.
      ServeWoken();
    }
    if (c->in_off == c->in.size()) {
      if (c->in.capacity() > kKeepBuffer) {
        std::string().swap(c->in);
      } else {
        c->in.clear();
      }
      c->in_off = 0;
    } else if (c->in_off > (1 << 20) || c->in_off * 2 > c->in.size()) {
      c->in.erase(0, c->in_off);
      c->in_off = 0;
    }
    if (!c->closing && c->in.size() > max_request_) {
      ReplyError(&c->out, "ERR request too large");
      c->closing = true;
    }
    Account(c);
  }

  void Flush(Conn* c) {
    while (c->pending_out() > 0) {
      ssize_t n = send(c->fd, c->out.data() + c->out_off, c->pending_out(),
                       MSG_NOSIGNAL);
      if (n > 0) {
        c->out_off += static_cast<size_t>(n);
        local_.bytes_out += static_cast<uint64_t>(n);
        c->last_active = MonoUs();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      Close(c->fd);
      return;
    }
    if (c->pending_out() == 0) {
      if (c->out.capacity() > kKeepBuffer) {
        std::string().swap(c->out);
      } else {
        c->out.clear();
      }
      c->out_off = 0;
      Account(c);
      if (c->closing) {
        Close(c->fd);
        return;
      }
      // Output drained below the limit: go on with buffered input.
      if (c->in_off < c->in.size() && !c->reading) {
        Process(c);
        if (c->pending_out() > 0) return Flush(c);
      }
    }
    Update(c);
  }

  WorkerConfig cfg_;
  std::unique_ptr<Store> store_;
  SharedStats stats_;
  LocalStats local_;
  CommandContext ctx_;
  RespLimits limits_;
  size_t max_request_ = 0;
  uint64_t budget_ = 0;      // this worker's share of client_memory
  uint64_t total_held_ = 0;  // bytes its clients' buffers hold now
  double last_timeout_scan_ = 0;
  int ep_ = -1, sig_fd_ = -1;
  int spare_fd_ = -1;  // given up to refuse a connection (Refuse)
  double refused_logged_us_ = -1e6;  // the last "limit reached" line
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  std::vector<std::string_view> args_;
  std::string inline_;  // an inline command's words, unquoted
  std::vector<std::unique_ptr<UdpServer>> udp_;  // --udp-port
  ClientState udp_client_;  // what every UDP request runs as
  bool draining_ = false;
  double drain_deadline_ = 0;
  int handoff_fd_ = -1;
  int adopt_fd_ = -1;
  uint64_t next_id_ = 0;
  // Blocking commands: the shared board, this worker's wake socket, its
  // blocked clients, keys written by its commits with clients waiting
  // (written_), keys to serve (woken_), clients let go (resumed_).
  Waits waits_;
  Waker waker_;
  BlockedClients blocked_;
  std::vector<uint64_t> written_, woken_, holders_;
  std::vector<int> resumed_;
  std::vector<std::string_view> retry_args_;
  bool serving_ = false, retry_all_ = false;
  uint64_t resync_seen_ = 0;
  double last_check_ = 0;
  double rate_start_ = MonoUs();
  uint64_t rate_ops_ = 0;
};

}  // namespace

int RunWorker(const WorkerConfig& cfg) {
  Worker w(cfg);
  return w.Run();
}

}  // namespace shmkv
