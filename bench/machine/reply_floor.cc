// How little CPU can a server spend per request on this machine's loopback
// TCP, by each way of talking to the kernel? The floor under shmkv_bench's
// "server CPU per request", run by `bench/shmkv_bench.sh --floor` next to
// shmkv and redis-server with the same client (redis-benchmark -c 50).
//
// One thread, one process. It does no command work: each request's reply
// is "+OK\r\n", and requests are counted, not parsed: redis-benchmark's
// GET and SET requests are RESP arrays whose keys and values hold no '*',
// so each '*' received starts one request. What is left is what any
// server on this kernel pays to move a request in and a reply out:
//   epoll   epoll_wait for readiness, then one recv and one send per
//           readable connection: the calls redis-server and shmkv make
//           (bench/results/<machine>/shmkv_syscalls.txt);
//   uring   io_uring: every connection keeps one receive queued; replies
//           are queued as sends; one io_uring_enter per loop submits all
//           of them and waits for the next completions. No kernel polling
//           thread (no SQPOLL): all the work stays in this process's CPU
//           time, where the bench counts it.
//
// Build: cmake -DSHMC_BUILD_PROBES=ON (needs liburing-dev), target
// probe_reply_floor. Run: reply_floor --port P --mode epoll|uring
// (127.0.0.1 only; SIGTERM or SIGINT stops it).
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <liburing.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

namespace {

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

constexpr size_t kBuf = 16 << 10;
const char kReply[] = "+OK\r\n";
constexpr size_t kReplyLen = sizeof(kReply) - 1;

int Listen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(fd, 511) != 0) {
    std::perror("reply_floor: bind/listen");
    std::exit(1);
  }
  return fd;
}

// Requests that start in these bytes.
size_t Requests(const char* p, size_t n) {
  size_t k = 0;
  for (const char* e = p + n; (p = static_cast<const char*>(
                                   std::memchr(p, '*', e - p))) != nullptr;
       ++p) {
    ++k;
  }
  return k;
}

void AppendReplies(std::string* out, size_t k) {
  for (size_t i = 0; i < k; ++i) out->append(kReply, kReplyLen);
}

int RunEpoll(int lfd) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::unordered_map<int, std::string> pending;  // unsent output per fd
  epoll_event events[256];
  char buf[kBuf];
  std::string out;
  while (!g_stop) {
    int n = epoll_wait(ep, events, 256, 100);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == lfd) {
        int c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) continue;
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = c;
        epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
        continue;
      }
      ssize_t r = recv(fd, buf, sizeof(buf), 0);
      if (r <= 0) {
        if (r < 0 && errno == EAGAIN) continue;
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
        close(fd);
        pending.erase(fd);
        continue;
      }
      out.clear();
      auto it = pending.find(fd);
      if (it != pending.end()) out.swap(it->second);
      AppendReplies(&out, Requests(buf, static_cast<size_t>(r)));
      ssize_t w = send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      size_t sent = w > 0 ? static_cast<size_t>(w) : 0;
      // A full socket buffer does not happen at -c 50 without pipelining;
      // keep the rest for the next readable event rather than spin.
      if (sent < out.size()) pending[fd].assign(out, sent, std::string::npos);
    }
  }
  close(ep);
  return 0;
}

// One connection's state in uring mode; freed when it is closed and no
// operation on it is in flight.
struct UConn {
  int fd = -1;
  char in[kBuf];
  std::string out;      // replies queued behind the send in flight
  std::string sending;  // the bytes of the send in flight
  bool send_busy = false;
  bool recv_busy = false;
  bool closed = false;
};

enum Op : uintptr_t { kAccept = 0, kRecv = 1, kSend = 2 };

class Uring {
 public:
  explicit Uring(int lfd) : lfd_(lfd) {}

  int Run() {
    io_uring_params p = {};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int rc = io_uring_queue_init_params(4096, &ring_, &p);
    if (rc < 0) {
      p = {};
      rc = io_uring_queue_init_params(4096, &ring_, &p);
    }
    if (rc < 0) {
      std::fprintf(stderr, "reply_floor: io_uring: %s\n", std::strerror(-rc));
      return 1;
    }
    QueueAccept();
    __kernel_timespec tick = {0, 100 * 1000 * 1000};
    while (!g_stop) {
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &tick, nullptr);
      if (rc < 0 && rc != -ETIME && rc != -EINTR) {
        std::fprintf(stderr, "reply_floor: %s\n", std::strerror(-rc));
        return 1;
      }
      unsigned head, seen = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        OnCompletion(cqe->user_data, cqe->res);
      }
      io_uring_cq_advance(&ring_, seen);
    }
    io_uring_queue_exit(&ring_);
    return 0;
  }

 private:
  io_uring_sqe* Sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (s == nullptr) {  // full: hand what is queued to the kernel first
      io_uring_submit(&ring_);
      s = io_uring_get_sqe(&ring_);
    }
    return s;
  }

  void QueueAccept() {
    io_uring_sqe* s = Sqe();
    io_uring_prep_accept(s, lfd_, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, kAccept);
  }

  void QueueRecv(UConn* c) {
    io_uring_sqe* s = Sqe();
    io_uring_prep_recv(s, c->fd, c->in, sizeof(c->in), 0);
    io_uring_sqe_set_data64(s, reinterpret_cast<uintptr_t>(c) | kRecv);
    c->recv_busy = true;
  }

  void QueueSend(UConn* c) {
    c->sending.clear();
    c->sending.swap(c->out);
    io_uring_sqe* s = Sqe();
    io_uring_prep_send(s, c->fd, c->sending.data(), c->sending.size(),
                       MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, reinterpret_cast<uintptr_t>(c) | kSend);
    c->send_busy = true;
  }

  void Close(UConn* c) {
    if (!c->closed) {
      c->closed = true;
      close(c->fd);  // pending operations hold their own reference
    }
    if (!c->send_busy && !c->recv_busy) delete c;
  }

  void OnCompletion(uint64_t data, int res) {
    Op op = static_cast<Op>(data & 3);
    if (op == kAccept) {
      if (res >= 0) {
        int one = 1;
        setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        auto* c = new UConn;
        c->fd = res;
        QueueRecv(c);
      }
      QueueAccept();
      return;
    }
    auto* c = reinterpret_cast<UConn*>(data & ~uintptr_t{3});
    if (op == kRecv) {
      c->recv_busy = false;
      if (res <= 0 || c->closed) return Close(c);
      AppendReplies(&c->out, Requests(c->in, static_cast<size_t>(res)));
      if (!c->send_busy) QueueSend(c);
      QueueRecv(c);
      return;
    }
    c->send_busy = false;
    if (res < 0 || c->closed) return Close(c);
    size_t sent = static_cast<size_t>(res);
    if (sent < c->sending.size()) {  // the rest goes before newer replies
      c->out.insert(0, c->sending, sent, std::string::npos);
    }
    if (!c->out.empty()) QueueSend(c);
  }

  int lfd_;
  io_uring ring_;
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string mode;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--mode") == 0) mode = argv[i + 1];
  }
  if (port <= 0 || (mode != "epoll" && mode != "uring")) {
    std::fprintf(stderr, "usage: %s --port P --mode epoll|uring\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  int lfd = Listen(port);
  if (mode == "epoll") return RunEpoll(lfd);
  Uring u(lfd);
  return u.Run();
}
