// shmkv's UDP path against its TCP path (same server, same keys) and
// against a baseline written here: a plain one-socket recvfrom/sendto
// server that answers each request datagram with the datagrams shmkv would
// send, doing nothing else. GETs of 5-, 512- and 1,400-byte values (the
// last spans two reply datagrams), 32 requests in flight from one client
// process; shmkv runs one worker, and two for the SO_REUSEPORT way. Ways
// run in rotating rounds; each reports requests/s and the server's CPU
// time per request (its processes' utime + stime from /proc; on loopback
// a sender's CPU also pays for delivering its datagrams).
//
//   udp_bench [--rounds N] [--seconds S] [--shmkv PATH]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "server/net/udp.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/remove_segment.h"

namespace {

constexpr int kWindow = 32;
constexpr int kKeys = 1000;

double Now() { return shmc_bench::NowNs() / 1e9; }

std::string Resp(const std::vector<std::string>& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) {
    s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  return s;
}

sockaddr_in Loopback(int port) {
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sa;
}

int FreePort(int type) {
  int fd = socket(AF_INET, type, 0);
  sockaddr_in sa = Loopback(0);
  bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  return ntohs(sa.sin_port);
}

// CPU seconds (utime + stime) of `pid` and its children, from /proc.
double CpuSeconds(pid_t pid) {
  double ticks = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    std::getline(in, line);
    size_t rp = line.rfind(')');
    if (rp == std::string::npos) continue;
    std::istringstream rest(line.substr(rp + 2));
    std::string f[13];
    for (std::string& x : f) rest >> x;  // state .. cstime's predecessors
    long ppid = std::atol(f[1].c_str());
    if (std::atol(name.c_str()) != pid && ppid != pid) continue;
    ticks += std::atof(f[11].c_str()) + std::atof(f[12].c_str());
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct Result {
  double rps = 0, cpu_us = 0, lost = 0;
  double batch = 0;  // shmkv UDP: datagrams per recvmmsg that got any
};

// A number from shmkv's INFO (over TCP); 0 if absent. Workers publish
// their counters every 100 ms: read it after 150.
double InfoNumber(int port, const std::string& field) {
  usleep(150000);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to = Loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return 0;
  }
  std::string req = Resp({"INFO", "stats"}), text;
  (void)!send(fd, req.data(), req.size(), 0);
  char buf[4096];
  size_t want = 0;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    size_t eol = text.find("\r\n");
    if (want == 0 && eol != std::string::npos && text[0] == '$') {
      want = eol + 2 + std::stoul(text.substr(1, eol - 1)) + 2;
    }
    if (want != 0 && text.size() >= want) break;
  }
  close(fd);
  size_t at = text.find(field + ":");
  return at == std::string::npos
             ? 0
             : std::atof(text.c_str() + at + field.size() + 1);
}

// Requests over UDP to `port`, kWindow in flight over `nsock` client
// sockets (slot i on socket i % nsock, so SO_REUSEPORT can spread them
// over the workers), for `seconds`. The requests a batch of replies frees
// go out together with sendmmsg when `batch_send`, else one send() each.
// A slot whose reply is incomplete after 200 ms counts as lost and moves
// on.
Result RunUdp(int port, pid_t server, double seconds, int nsock,
              bool batch_send) {
  std::vector<int> fds(static_cast<size_t>(nsock));
  for (int& fd : fds) {
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in to = Loopback(port);
    connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  }
  struct Slot {
    uint16_t gen = 0;
    int got = 0, want = -1;
    double sent = 0;
    std::string d;
  } slots[kWindow];
  uint64_t key = 0, done = 0, lost = 0;
  std::vector<std::vector<int>> ready(fds.size());  // slots to send, per socket
  auto prepare = [&](int i) {
    Slot& s = slots[i];
    s.gen = static_cast<uint16_t>((s.gen + 1) & 0x3ff);
    s.got = 0;
    s.want = -1;
    s.sent = Now();
    s.d.assign(shmkv::kUdpHeaderBytes, '\0');
    shmkv::EncodeUdpFrame({static_cast<uint16_t>(s.gen << 6 | i), 0, 1, 0},
                          &s.d[0]);
    s.d += Resp({"GET", "k" + std::to_string(key++ % kKeys)});
    ready[static_cast<size_t>(i) % fds.size()].push_back(i);
  };
  auto flush = [&] {
    for (size_t f = 0; f < fds.size(); ++f) {
      std::vector<int>& r = ready[f];
      if (batch_send) {
        mmsghdr msgs[kWindow];
        iovec iov[kWindow];
        for (size_t k = 0; k < r.size(); ++k) {
          iov[k] = {slots[r[k]].d.data(), slots[r[k]].d.size()};
          msgs[k] = {};
          msgs[k].msg_hdr.msg_iov = &iov[k];
          msgs[k].msg_hdr.msg_iovlen = 1;
        }
        if (!r.empty()) sendmmsg(fds[f], msgs, static_cast<unsigned>(r.size()), 0);
      } else {
        for (int i : r) send(fds[f], slots[i].d.data(), slots[i].d.size(), 0);
      }
      r.clear();
    }
  };
  double cpu0 = CpuSeconds(server), t0 = Now(), end = t0 + seconds;
  for (int i = 0; i < kWindow; ++i) prepare(i);
  flush();
  std::vector<char> buf(64 * 2048);
  std::vector<pollfd> polls;
  for (int fd : fds) polls.push_back({fd, POLLIN, 0});
  while (Now() < end) {
    if (poll(polls.data(), polls.size(), 50) > 0) {
      for (int fd : fds) {
        mmsghdr msgs[64];
        iovec iov[64];
        for (int i = 0; i < 64; ++i) {
          iov[i] = {buf.data() + i * 2048, 2048};
          msgs[i] = {};
          msgs[i].msg_hdr.msg_iov = &iov[i];
          msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int n = recvmmsg(fd, msgs, 64, MSG_DONTWAIT, nullptr);
        for (int m = 0; m < n; ++m) {
          shmkv::UdpFrame f;
          if (!shmkv::DecodeUdpFrame(buf.data() + m * 2048, msgs[m].msg_len,
                                     &f)) {
            continue;
          }
          Slot& s = slots[f.id & 63];
          if ((f.id >> 6) != s.gen) continue;  // a reply given up on
          s.want = f.count;
          if (++s.got == s.want) {
            ++done;
            prepare(f.id & 63);
          }
        }
      }
    }
    double now = Now();
    for (int i = 0; i < kWindow; ++i) {
      if (now - slots[i].sent > 0.2) {
        ++lost;
        prepare(i);
      }
    }
    flush();
  }
  double elapsed = Now() - t0;
  Result r;
  r.rps = done / elapsed;
  r.cpu_us = (CpuSeconds(server) - cpu0) * 1e6 / std::max<uint64_t>(done, 1);
  r.lost = static_cast<double>(lost);
  for (int fd : fds) close(fd);
  return r;
}

// The same GETs over TCP, kWindow in flight: pipelined on one connection
// (`conns` 1), or one at a time on each of `conns` connections.
Result RunTcp(int port, pid_t server, size_t value, double seconds,
              int conns) {
  std::vector<pollfd> polls;
  for (int c = 0; c < conns; ++c) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to = Loopback(port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      return Result();
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    polls.push_back({fd, POLLIN, 0});
  }
  const size_t reply = std::to_string(value).size() + 3 + value + 2;
  const int depth = kWindow / conns;
  uint64_t key = 0, done = 0;
  std::vector<uint64_t> bytes(polls.size(), 0);
  auto send_some = [&](int fd, uint64_t n) {
    std::string batch;
    for (uint64_t i = 0; i < n; ++i) {
      batch += Resp({"GET", "k" + std::to_string(key++ % kKeys)});
    }
    (void)!send(fd, batch.data(), batch.size(), 0);
  };
  double cpu0 = CpuSeconds(server), t0 = Now(), end = t0 + seconds;
  for (const pollfd& p : polls) send_some(p.fd, static_cast<uint64_t>(depth));
  std::vector<char> buf(1 << 16);
  while (Now() < end) {
    if (poll(polls.data(), polls.size(), 50) <= 0) continue;
    for (size_t c = 0; c < polls.size(); ++c) {
      if ((polls[c].revents & POLLIN) == 0) continue;
      ssize_t n = recv(polls[c].fd, buf.data(), buf.size(), 0);
      if (n <= 0) return Result();
      bytes[c] += static_cast<uint64_t>(n);
      uint64_t complete = bytes[c] / reply;
      bytes[c] %= reply;
      done += complete;
      if (complete > 0) send_some(polls[c].fd, complete);
    }
  }
  double elapsed = Now() - t0;
  Result r;
  r.rps = done / elapsed;
  r.cpu_us = (CpuSeconds(server) - cpu0) * 1e6 / std::max<uint64_t>(done, 1);
  for (const pollfd& p : polls) close(p.fd);
  return r;
}

// The baseline: recvfrom, then sendto the reply's datagrams, nothing else.
pid_t StartEcho(int port, size_t value) {
  std::string reply = "$" + std::to_string(value) + "\r\n" +
                      std::string(value, 'v') + "\r\n";
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in me = Loopback(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof(me)) != 0) _exit(1);
  size_t count = (reply.size() + shmkv::kUdpReplyPayload - 1) /
                 shmkv::kUdpReplyPayload;
  char in[2048], out[2048];
  for (;;) {
    sockaddr_storage peer;
    socklen_t plen = sizeof(peer);
    ssize_t n = recvfrom(fd, in, sizeof(in), 0,
                         reinterpret_cast<sockaddr*>(&peer), &plen);
    shmkv::UdpFrame f;
    if (n < 0 || !shmkv::DecodeUdpFrame(in, static_cast<size_t>(n), &f)) {
      continue;
    }
    for (size_t seq = 0; seq < count; ++seq) {
      size_t off = seq * shmkv::kUdpReplyPayload;
      size_t len = std::min(shmkv::kUdpReplyPayload, reply.size() - off);
      shmkv::EncodeUdpFrame({f.id, static_cast<uint16_t>(seq),
                             static_cast<uint16_t>(count), 0},
                            out);
      std::memcpy(out + shmkv::kUdpHeaderBytes, reply.data() + off, len);
      sendto(fd, out, shmkv::kUdpHeaderBytes + len, 0,
             reinterpret_cast<sockaddr*>(&peer), plen);
    }
  }
}

pid_t StartShmkv(const std::string& bin, const std::string& name, int port,
                 int udp, int workers) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* log = std::fopen("/dev/null", "w");
    dup2(fileno(log), 2);
    execl(bin.c_str(), bin.c_str(), "--name", name.c_str(), "--port",
          std::to_string(port).c_str(), "--http-port", "0", "--udp-port",
          std::to_string(udp).c_str(), "--workers",
          std::to_string(workers).c_str(), "--capacity",
          "10000", "--memory", "64M", static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 300; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to = Loopback(port);
    bool up = connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0;
    close(fd);
    if (up) return pid;
    usleep(10000);
  }
  std::fprintf(stderr, "udp_bench: %s did not start\n", bin.c_str());
  std::exit(1);
}

bool SetValues(int port, size_t value) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to = Loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    return false;
  }
  std::string v(value, 'v'), all;
  for (int k = 0; k < kKeys; ++k) {
    all += Resp({"SET", "k" + std::to_string(k), v});
  }
  (void)!send(fd, all.data(), all.size(), 0);
  size_t want = 5 * kKeys, got = 0;
  char buf[4096];
  while (got < want) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  return got == want;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  double seconds = 2;
  std::string bin = SHMKV_BIN;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--shmkv") == 0) bin = argv[i + 1];
  }
  std::printf("# udp_bench: GET over shmkv's UDP and TCP paths and a plain "
              "recvfrom/sendto server; %d in flight, %d rounds of %.0f s\n\n",
              kWindow, rounds, seconds);
  std::printf("| value | way | requests/s (median) | server CPU us/request "
              "| vs plain UDP server | datagrams per receive | lost |\n"
              "|---:|---|---:|---:|---:|---:|---:|\n");
  std::string name = "/shmc_udp_bench_" + std::to_string(getpid());
  std::string name2 = name + "_2w";
  for (size_t value : {size_t{5}, size_t{512}, size_t{1400}}) {
    int port = FreePort(SOCK_STREAM), udp = FreePort(SOCK_DGRAM);
    int port2 = FreePort(SOCK_STREAM), udp2 = FreePort(SOCK_DGRAM);
    int echo_port = FreePort(SOCK_DGRAM);
    pid_t kv = StartShmkv(bin, name, port, udp, 1);
    pid_t kv2 = StartShmkv(bin, name2, port2, udp2, 2);
    pid_t echo = StartEcho(echo_port, value);
    if (!SetValues(port, value) || !SetValues(port2, value)) {
      std::fprintf(stderr, "udp_bench: SET failed\n");
      return 1;
    }
    const char* names[] = {
        "plain recvfrom/sendto server (baseline)",
        "shmkv UDP, 1 worker (recvmmsg/sendmmsg)",
        "shmkv UDP, 1 worker, client sends one by one",
        "shmkv TCP, 1 worker (32 pipelined)",
        "shmkv TCP, 1 worker, 32 connections, 1 request each",
        "shmkv UDP, 2 workers, 4 client sockets (SO_REUSEPORT)"};
    // shmkv's UDP path, with its datagrams per receive batch in the run.
    auto shmkv_udp = [&](int udp_port, int tcp_port, pid_t pid, int nsock,
                         bool batch_send) {
      double q0 = InfoNumber(tcp_port, "udp_requests");
      double b0 = InfoNumber(tcp_port, "udp_receive_batches");
      Result r = RunUdp(udp_port, pid, seconds, nsock, batch_send);
      double q = InfoNumber(tcp_port, "udp_requests") - q0;
      double b = InfoNumber(tcp_port, "udp_receive_batches") - b0;
      r.batch = b > 0 ? q / b : 0;
      return r;
    };
    constexpr size_t kWays = 6;
    std::vector<std::vector<Result>> got(kWays);
    shmc_bench::RotatingRounds(rounds, kWays, [&](size_t w) {
      Result r = w == 0   ? RunUdp(echo_port, echo, seconds, 1, true)
                 : w == 1 ? shmkv_udp(udp, port, kv, 1, true)
                 : w == 2 ? shmkv_udp(udp, port, kv, 1, false)
                 : w == 3 ? RunTcp(port, kv, value, seconds, 1)
                 : w == 4 ? RunTcp(port, kv, value, seconds, kWindow)
                          : shmkv_udp(udp2, port2, kv2, 4, true);
      got[w].push_back(r);
      return r.rps;
    });
    auto med = [&](size_t w, double Result::*f) {
      std::vector<double> v;
      for (const Result& r : got[w]) v.push_back(r.*f);
      return shmc_bench::Median(v);
    };
    for (size_t w = 0; w < kWays; ++w) {
      std::vector<double> ratio;
      for (int r = 0; r < rounds; ++r) {
        ratio.push_back(got[w][r].rps / got[0][r].rps);
      }
      double lost = 0;
      for (const Result& r : got[w]) lost += r.lost;
      double batch = med(w, &Result::batch);
      std::printf("| %zu B | %s | %.0f | %.2f | %.2fx | %s | %.0f |\n",
                  value, names[w], med(w, &Result::rps),
                  med(w, &Result::cpu_us), shmc_bench::Median(ratio),
                  batch > 0 ? std::to_string(batch).substr(0, 4).c_str()
                            : "-",
                  lost);
    }
    kill(echo, SIGKILL);
    waitpid(echo, nullptr, 0);
    for (pid_t p : {kv, kv2}) {
      kill(p, SIGTERM);
      waitpid(p, nullptr, 0);
    }
  }
  // The store's segments: this run's name only, and only if shmc's.
  for (const std::string& n : {name, name2}) {
    for (const char* suffix : {"0", "1", ".ctl", ".ctl.journal", ".ctl.stats"}) {
      shmc::RemoveSegment<shmc::POSIX>(n + suffix);
    }
  }
  return 0;
}
