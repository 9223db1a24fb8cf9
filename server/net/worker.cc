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
#include <sys/wait.h>
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
#include "server/net/worker_impl.h"
#include "server/net/fdpass.h"
#include "server/net/http.h"
#include "server/commands/bucket_hints.h"
#include "server/commands/registry.h"
#include "server/commands/reply.h"
#include "server/net/resp.h"
#include "server/commands/script_lua.h"
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

namespace worker_impl {

namespace {

bool IsListener(const std::vector<int>& fds, int fd) {
  return std::find(fds.begin(), fds.end(), fd) != fds.end();
}

}  // namespace

int Worker::Run() {
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
  } else if (!stats_.ReserveSlot(cfg_.slot, &err)) {
    std::fprintf(stderr, "shmkv worker %zu: serving without publishing "
                 "statistics: no memory for its slot: %s\n", cfg_.slot,
                 err.c_str());
  }
  if (latency_.Open(ControlKey(cfg_.store) + ".latency", &err)) {
    latency_.Clear(cfg_.slot);
  } else {
    std::fprintf(stderr, "shmkv worker %zu: serving without latency "
                 "statistics: %s\n", cfg_.slot, err.c_str());
  }
  adopt_fd_ = cfg_.adopt_fd;
  if (adopt_fd_ >= 0) {
    fcntl(adopt_fd_, F_SETFL, fcntl(adopt_fd_, F_GETFL) | O_NONBLOCK);
  }
  OpenBlocking();
  ctx_.store = store_.get();
  OpenPubSub();
  if (adopt_fd_ >= 0) {
    // Tells the worker it replaces whether it adopts subscribers, its
    // pid, and that it reassembles long messages (worker_handoff.cc,
    // ReadReplacementHello).
    if (hub_ != nullptr) hub_->set_adopting(true);
    // (appended, not "A" + temporary: g++ 12 -O3 warns on that spuriously)
    std::string hello(1, hub_ != nullptr ? 'A' : 'a');
    hello += std::to_string(getpid());
    hello += ",long";
    send(adopt_fd_, hello.data(), hello.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  ctx_.stats = &stats_;
  ctx_.publish_stats = [this] { Publish(); };
  ctx_.unblock_client = [this](uint64_t id, bool error) {
    return UnblockClient(id, error);
  };
  // SHUTDOWN stops the server: its master, which stops every worker. A
  // worker whose master is gone (another parent now) stops nobody else.
  ctx_.shutdown = [master = getppid()] {
    if (master > 1 && getppid() == master) kill(master, SIGTERM);
  };
  if (latency_.open()) ctx_.latency = &latency_;
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
  latency_.Publish(cfg_.slot, local_);
  if (cfg_.ready_fd >= 0) {
    (void)!write(cfg_.ready_fd, "R", 1);
    close(cfg_.ready_fd);
  }
  return Loop();
}

std::vector<int> Worker::Listeners() const {
  std::vector<int> all = cfg_.resp_fds;
  all.insert(all.end(), cfg_.http_fds.begin(), cfg_.http_fds.end());
  return all;
}

uint64_t Worker::NewClientId() {
  return (static_cast<uint64_t>(cfg_.slot) << 40) | ++next_id_;
}

void Worker::Add(int fd, uint32_t events) {
  struct epoll_event ev = {};
  ev.events = events;
  ev.data.fd = fd;
  epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
}

void Worker::Update(Conn* c) {
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

int Worker::Loop() {
  master_pid_ = getppid();
  cmd::LuaScripts::SetBusyServe(
      [this](bool function) { ServeWhileBusy(function); });
  std::vector<struct epoll_event> events(256);
  double last_publish = MonoUs();
  for (;;) {
    int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()),
                       blocked_.WaitMs(shmc::detail::MonotonicNs(), 100));
    if (n < 0 && errno != EINTR) {
      std::perror("shmkv: epoll_wait");
      return 1;
    }
    wall_offset_us_ = WallUs() - MonoUs();
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
        // The ring's wake is not a key: it only says "read the ring",
        // which every pass of the loop does.
        woken_.erase(std::remove(woken_.begin(), woken_.end(), kPubSubWake),
                     woken_.end());
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
    PollPubSub();
    double now = MonoUs();
    if (now - last_publish >= 100000) {
      // A background save this worker forked (BGSAVE) that has ended.
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
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
        for (auto& [fd, c] : conns_) {
          if (hub_ != nullptr) hub_->Drop(&c->client);
        }
        return 0;
      }
    }
  }
}

void Worker::Publish() {
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
  latency_.Publish(cfg_.slot, local_);
}

void Worker::StartDrain() {
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

UdpServer* Worker::FindUdp(int fd) const {
  for (const auto& u : udp_) {
    if (u->fd() == fd) return u.get();
  }
  return nullptr;
}

void Worker::CloseTimedOut(double now) {
  std::vector<int> late;
  double limit = static_cast<double>(cfg_.timeout_s) * 1e6;
  for (auto& kv : conns_) {
    // A client waiting in a blocking command is not idle (Redis exempts
    // it too): its own timeout ends the wait.
    if (kv.second->blocked) continue;
    if (now - kv.second->last_active > limit) late.push_back(kv.first);
  }
  for (int fd : late) Close(fd);
  local_.timed_out_clients += late.size();
}

void Worker::Account(Conn* c) {
  size_t now = c->in.size() + c->out.size();
  total_held_ = total_held_ - c->held + now;
  c->held = now;
}

bool Worker::Evict(const Conn* keep) {
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

void Worker::CloseIdle() {
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

void Worker::Accept(int lfd, bool http) {
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
    c->client.conn = c.get();
    c->last_active = MonoUs();
    Add(fd, EPOLLIN | EPOLLRDHUP);
    conns_[fd] = std::move(c);
    ++local_.connections_total;
  }
}

bool Worker::Refuse(int lfd, bool http) {
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

void Worker::Close(int fd) {
  epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (it->second->blocked) Unblock(it->second.get(), true);
  if (hub_ != nullptr) hub_->Drop(&it->second->client);
  total_held_ -= it->second->held;
  conns_.erase(it);
}

void Worker::OnReadable(Conn* c) {
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
  if (hub_ != nullptr) hub_->SendWakes();  // before the replies go out
  if (eof) c->closing = true;
  Flush(c);
  if (total_held_ > budget_) {
    auto it = conns_.find(fd);
    Evict(it == conns_.end() ? nullptr : it->second.get());
  }
}

void Worker::Process(Conn* c) {
  // (Process may run inside another's, through ServeWoken and Flush.)
  double* outer_clock = batch_clock_;
  double clock = MonoUs();
  batch_clock_ = &clock;
  // This call's commands parsed ahead (a nested call has its own).
  if (ahead_depth_ == ahead_.size()) ahead_.emplace_back();
  Ahead& ahead = ahead_[ahead_depth_++];  // empty: cleared when left
  while (!c->closing && !c->blocked && c->in_off < c->in.size() &&
         c->pending_out() < kMaxPendingOut) {
    if (c->http) {
      const char* p = c->in.data() + c->in_off;
      size_t avail = c->in.size() - c->in_off;
      size_t used = 0;
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
    if (ahead.next == ahead.commands.size()) {
      std::string err;
      ParseResult r = ParseAhead(c, &ahead, &err);
      if (r == ParseResult::kIncomplete) break;
      if (r == ParseResult::kError) {
        ReplyError(&c->out, "ERR " + err);
        ++local_.errors;
        c->closing = true;
        break;
      }
    }
    const Ahead::Command& cmd = ahead.commands[ahead.next++];
    args_.assign(ahead.args.begin() + cmd.first,
                 ahead.args.begin() + cmd.first + cmd.argc);
    c->in_off += cmd.used;
    if (args_.empty()) continue;  // an empty inline line
    ctx_.row_hint = cmd.row;
    ctx_.row_for = args_[0].data();
    // A subscriber's command comes after every message published before
    // it, on any worker (those closed past the limit go after the loop).
    if (hub_ != nullptr && c->client.subscribed()) hub_->Poll();
    running_fd_ = c->fd;
    const bool blocked = Run(&c->client, args_, &c->out, true);
    running_fd_ = -1;
    if (blocked) {
      Block(c);
      break;
    }
    if (ctx_.quit) {
      ctx_.quit = false;
      c->closing = true;
    }

    // As Redis: clients blocked on what this command wrote (or that it
    // unblocked) are answered before the next command runs.
    EndUnblocked();
    ServeWoken();
  }
  c->out_paused = !c->closing && !c->blocked && c->in_off < c->in.size() &&
                  c->pending_out() >= kMaxPendingOut;
  if (outer_clock != nullptr) *outer_clock = clock;
  batch_clock_ = outer_clock;
  // Commands parsed and not run (the client blocked, closes, or has too
  // much output waiting) are parsed again next time, from in_off: the
  // cursor may describe a request past them.
  if (ahead.next != ahead.commands.size()) c->cursor.Reset();
  ahead.Clear();
  --ahead_depth_;
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

ParseResult Worker::ParseAhead(Conn* c, Ahead* ahead, std::string* err) {
  ahead->Clear();
  size_t off = c->in_off;
  while (ahead->commands.size() < Ahead::kMost && off < c->in.size()) {
    // An inline command's words live in inline_, which the next inline
    // command (of any client, through a nested Process) overwrites: one
    // is parsed only first, and run before anything else is parsed.
    const bool inline_cmd = c->in[off] != '*';
    if (inline_cmd && !ahead->commands.empty()) break;
    size_t used = 0;
    ParseResult r = ParseCommand(c->in.data() + off, c->in.size() - off,
                                 limits_, &c->cursor, &args_, &used,
                                 &inline_, err);
    if (r != ParseResult::kOk) {
      // A request not yet whole, or a bad one, after good ones: those run
      // first, and the next parse meets it again.
      if (ahead->commands.empty()) return r;
      break;
    }
    const cmd::CommandRow* row =
        args_.empty() ? nullptr : cmd::Commands().Find(args_[0]);
    ahead->commands.push_back(
        Ahead::Command{used, ahead->args.size(), args_.size(), row});
    ahead->args.insert(ahead->args.end(), args_.begin(), args_.end());
    off += used;
    if (inline_cmd) break;
  }
  // The store fetches the lines of the keys these commands will look up
  // (where their rows say their keys are), all at once: a pipeline's
  // lookups, and a multi-key command's, then overlap their cache misses
  // instead of waiting for each in turn.
  keys_.clear();
  for (const Ahead::Command& cmd : ahead->commands) {
    if (cmd.row == nullptr) continue;
    cmd::ForEachKeyIndex(*cmd.row, cmd.argc, [&](size_t i) {
      std::string_view key = ahead->args[cmd.first + i];
      // (A pipeline of one key's commands asks for its lines once.)
      if (keys_.size() < Store::kPrefetchMost &&
          (keys_.empty() || keys_.back() != key)) {
        keys_.push_back(key);
      }
    });
  }
  if (store_ == nullptr) return ParseResult::kOk;
  const uint32_t db = store_->Physical(c->client.db);
  if (keys_.size() > 1) {
    store_->UseDb(db);
    store_->Prefetch(keys_.data(), keys_.size());
  }
  // And the buckets their fields are in, where this worker has read the
  // collection before (server/commands/bucket_hints.h).
  parts_.clear();
  for (const Ahead::Command& cmd : ahead->commands) {
    if (cmd.row == nullptr || cmd.argc < 3) continue;
    cmd::BucketHints::ForEachField(*cmd.row, cmd.argc, [&](size_t i) {
      PartKey p;
      if (parts_.size() < Store::kPrefetchMost &&
          cmd::Hints().Part(db, ahead->args[cmd.first + 1],
                            ahead->args[cmd.first + i], &p.id, &p.index)) {
        parts_.push_back(p);
      }
    });
  }
  if (parts_.size() > 1) store_->PrefetchParts(parts_.data(), parts_.size());
  return ParseResult::kOk;
}

void Worker::Flush(Conn* c) {
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
    // Output drained below the limit: go on with buffered input (were the
    // client's socket read again, the commands left would wait for bytes
    // that need not come).
    if (c->in_off < c->in.size() && (c->out_paused || !c->reading)) {
      Process(c);
      if (c->pending_out() > 0) return Flush(c);
    }
  }
  Update(c);
}

}  // namespace worker_impl

int RunWorker(const WorkerConfig& cfg) {
  worker_impl::Worker w(cfg);
  return w.Run();
}

}  // namespace shmkv
