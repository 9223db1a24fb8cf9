// shmkv started as a real server (master and workers, in a process group
// of their own, on free ports and a name unique to the test) and a RESP
// client on one connection: what the tests that speak to shmkv over
// sockets share. SHMKV_BIN names the server's binary.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/store/store.h"
#include "tests/support/test_protocol.h"
#include "tests/support/value_pool.h"

namespace shmkv_test {

using namespace std::chrono_literals;

// Whether a socket of `family` and `type` can bind `addr`:port right now (no
// SO_REUSEADDR: a port some connection still holds in TIME_WAIT is not free).
inline bool CanBind(int family, int type, const void* addr, int port) {
  int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return family == AF_INET6;  // no IPv6 here: nothing to collide
  bool ok;
  if (family == AF_INET) {
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    std::memcpy(&sa.sin_addr, addr, sizeof(sa.sin_addr));
    ok = bind(fd, reinterpret_cast<struct sockaddr*>(&sa), sizeof(sa)) == 0;
  } else {
    struct sockaddr_in6 sa = {};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<uint16_t>(port));
    std::memcpy(&sa.sin6_addr, addr, sizeof(sa.sin6_addr));
    ok = bind(fd, reinterpret_cast<struct sockaddr*>(&sa), sizeof(sa)) == 0 ||
         errno == EADDRNOTAVAIL;  // no ::1 on this host
  }
  close(fd);
  return ok;
}

// A loopback port (TCP, or UDP for SOCK_DGRAM) for a server of this test,
// one no other test is given. Drawn below the kernel's ephemeral range, so
// no connect() and no bind to port 0 anywhere on the machine is handed it
// while the server starts; free on 127.0.0.1 and ::1 when drawn (shmkv
// listens on both); and claimed for the life of this process by an
// abstract socket named after it, so tests running at once never draw the
// same port (the claim is gone with the process and leaves nothing on
// disk). Same scheme as tests/support/ports.py.
inline int FreePort(int type = SOCK_STREAM) {
  int low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  const int hi = std::max(low, 2048), lo = std::max(1024, hi - 16384);
  static std::mt19937 rng(std::random_device{}() ^ getpid());
  const int start = std::uniform_int_distribution<int>(lo, hi - 1)(rng);
  const struct in_addr v4 = {htonl(INADDR_LOOPBACK)};
  for (int i = 0; i < hi - lo; ++i) {
    const int port = lo + (start - lo + i) % (hi - lo);
    int claim = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un un = {};
    un.sun_family = AF_UNIX;
    const std::string tag = "shmc-test-port-" + std::to_string(port);
    std::memcpy(un.sun_path + 1, tag.data(), tag.size());  // abstract name
    const socklen_t len = static_cast<socklen_t>(
        offsetof(struct sockaddr_un, sun_path) + 1 + tag.size());
    if (claim < 0 ||
        bind(claim, reinterpret_cast<struct sockaddr*>(&un), len) != 0) {
      if (claim >= 0) close(claim);
      continue;  // another test's
    }
    if (CanBind(AF_INET, type, &v4, port) &&
        CanBind(AF_INET6, type, &in6addr_loopback, port)) {
      return port;  // the claim stays open until this process exits
    }
    close(claim);
  }
  ADD_FAILURE() << "no free port in [" << lo << ", " << hi << ")";
  return 0;
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// A RESP client on one connection (RESP3 after HELLO 3 when the tests
// speak it: TestProtocol()).
class Client {
 public:
  explicit Client(int port) : fd_(Connect(port)) {
    if (fd_ >= 0 && TestProtocol() == 3) Call({"HELLO", "3"});
  }
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  static std::string Encode(const std::vector<std::string>& args) {
    std::string s = "*" + std::to_string(args.size()) + "\r\n";
    for (const std::string& a : args) {
      s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    }
    return s;
  }
  bool SendRaw(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // One reply, in its RESP text; "" on EOF or timeout.
  std::string Reply() {
    std::string out;
    return ReadReply(&out) ? out : std::string();
  }
  std::string Call(const std::vector<std::string>& args) {
    if (!SendRaw(Encode(args))) return "";
    return Reply();
  }
  // True if a reply (or EOF) starts to arrive within `ms` milliseconds:
  // false says the server is still holding the request (a blocked
  // command).
  bool Answered(int ms) {
    if (pos_ < buf_.size()) return true;
    struct pollfd p = {fd_, POLLIN, 0};
    return poll(&p, 1, ms) > 0;
  }
  int fd() const { return fd_; }
  // True if the server closed the connection (EOF) within the timeout.
  bool Closed() {
    char c;
    for (;;) {
      if (pos_ < buf_.size()) return false;
      struct pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) return false;
      ssize_t n = recv(fd_, &c, 1, 0);
      if (n <= 0) return true;
      buf_.push_back(c);
    }
  }

 private:
  bool Fill(size_t need) {
    while (buf_.size() - pos_ < need) {
      struct pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, 10000) <= 0) return false;
      char tmp[65536];
      ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) return false;
      buf_.append(tmp, static_cast<size_t>(n));
    }
    return true;
  }
  bool Line(std::string* line) {
    for (;;) {
      size_t e = buf_.find("\r\n", pos_);
      if (e != std::string::npos) {
        *line = buf_.substr(pos_, e - pos_);
        pos_ = e + 2;
        return true;
      }
      if (!Fill(buf_.size() - pos_ + 1)) return false;
    }
  }
  bool ReadReply(std::string* out) {
    std::string line;
    if (!Line(&line) || line.empty()) return false;
    *out += line + "\r\n";
    char kind = line[0];
    if (kind == '$' || kind == '=' || kind == '!') {  // bulk, verbatim, error
      long n = std::stol(line.substr(1));
      if (n < 0) return true;
      if (!Fill(static_cast<size_t>(n) + 2)) return false;
      *out += buf_.substr(pos_, static_cast<size_t>(n) + 2);
      pos_ += static_cast<size_t>(n) + 2;
    } else if (kind == '*' || kind == '~' || kind == '>' || kind == '%' ||
               kind == '|') {  // array, set, push, map, attribute
      long n = std::stol(line.substr(1));
      if (kind == '%' || kind == '|') n *= 2;
      if (kind == '|') ++n;  // the reply the attribute goes with
      for (long i = 0; i < n; ++i) {
        if (!ReadReply(out)) return false;
      }
    }
    if (pos_ > (1 << 20)) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    return true;
  }

  int fd_;
  std::string buf_;
  size_t pos_ = 0;
};

std::string Bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

// A shmkv server (master + workers) in its own process group.
class Server {
 public:
  // own: the segments are this test's to remove (a second server on a
  // running server's segment does not own them).
  explicit Server(const std::string& tag, bool own = true) : own_(own) {
    name_ = "/shmkv_test_" + std::to_string(getpid()) + "_" + tag;
    port_ = FreePort();
    http_port_ = FreePort();
    if (own_) Cleanup();
  }
  ~Server() {
    Stop();
    if (own_) Cleanup();
    unlink(LogPath().c_str());  // shown by the failing assertions already
  }
  int port() const { return port_; }
  int http_port() const { return http_port_; }
  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  std::string log() const {
    std::ifstream in(LogPath());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Whether this machine lets a process mount a tmpfs over /dev/shm in a
  // mount namespace of its own (root, or a user namespace allowing it).
  static bool CanMountOwnShm() {
    pid_t p = fork();
    if (p == 0) _exit(MountOwnShm("size=1m") ? 0 : 1);
    int status = 0;
    return p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
  }

  bool Start(std::vector<std::string> extra = {}) {
    const std::string shm_opts = "size=" + shm_size_ + ",mode=1777";
    std::vector<std::string> args = {
        SHMKV_BIN, "--port", std::to_string(port_), "--http-port",
        std::to_string(http_port_), "--name", name_, "--workers",
        std::to_string(workers_), "--capacity", "100000", "--memory", "64M"};
    // (Before the test's own options: a test that names a pool gets it.)
    if (!shmc_test::TestValuePoolExtents()) {
      args.insert(args.end(), {"--value-pool", "nodes"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      if (!shm_size_.empty() && !MountOwnShm(shm_opts.c_str())) _exit(126);
      if (fd_limit_ > 0) {
        struct rlimit rl = {fd_limit_, fd_limit_};
        setrlimit(RLIMIT_NOFILE, &rl);
      }
      FILE* f = std::fopen(LogPath().c_str(), "a");
      dup2(fileno(f), 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(&a[0]);
      argv.push_back(nullptr);
      execv(SHMKV_BIN, argv.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
    for (int i = 0; i < 500; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pid_ = 0;
        return false;
      }
      Client c(port_);
      std::string pong = c.ok() ? c.Call({"PING"}) : "";
      if (pong == "+PONG\r\n" || pong.rfind("-NOAUTH", 0) == 0) {
        WaitForWorkers(args);
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  int exit_code() const { return exit_code_; }
  // The first worker answers while the master still starts the others
  // (one after the other): a test that counts, kills or changes what the
  // workers attach to waits for all of them (the last --workers given) to
  // be serving, up to a few seconds.
  void WaitForWorkers(const std::vector<std::string>& args);
  // The server's open files limit (soft and hard), from the next Start.
  void set_fd_limit(rlim_t n) { fd_limit_ = n; }
  // Worker processes, from the next Start (2 unless set).
  void set_workers(int n) { workers_ = n; }
  // From the next Start, the server runs in a mount namespace of its own
  // whose /dev/shm is a fresh tmpfs of `size` (its POSIX segments all
  // there, gone with it; this process sees them under shm_dir()).
  void set_own_shm(const std::string& size) { shm_size_ = size; }
  std::string shm_dir() const {
    return "/proc/" + std::to_string(pid_) + "/root/dev/shm";
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }
  // kill -9 of the master and every worker at once.
  void KillAll() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
    std::this_thread::sleep_for(100ms);  // workers die with the group
  }
  void Signal(int sig) { kill(pid_, sig); }

  void Cleanup() {
    shmkv::StoreConfig cfg;
    cfg.name = name_;
    std::string err;
    EXPECT_TRUE(shmkv::RemoveStore(cfg, &err)) << err;
  }

 private:
  std::string LogPath() const { return "/tmp" + name_ + ".log"; }
  // In a child: a mount namespace of its own, /dev/shm a new tmpfs.
  static bool MountOwnShm(const char* opts) {
    return unshare(CLONE_NEWNS) == 0 &&
           mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
           mount("shmkv_test_shm", "/dev/shm", "tmpfs", 0, opts) == 0;
  }
  std::string shm_size_;  // set_own_shm's
  std::string name_;
  int port_ = 0, http_port_ = 0, workers_ = 2;
  rlim_t fd_limit_ = 0;  // 0: inherited
  bool own_ = true;
  pid_t pid_ = 0;
  int exit_code_ = -1;
};

// The master's worker processes (its children), by /proc.
std::vector<pid_t> WorkerPids(pid_t master) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    char state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == master) out.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return out;
}

// A field of INFO's reply ("" if absent).
std::string InfoField(Client* c, const std::string& field) {
  std::string r = c->Call({"INFO"});
  size_t p = r.find(field + ":");
  if (p == std::string::npos) return "";
  size_t e = r.find("\r\n", p);
  return r.substr(p + field.size() + 1, e - p - field.size() - 1);
}

inline void Server::WaitForWorkers(const std::vector<std::string>& args) {
  size_t want = 0;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--workers") {
      want = std::strtoul(args[i + 1].c_str(), nullptr, 10);
    }
  }
  for (int i = 0; i < 500 && WorkerPids(pid_).size() < want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A worker is forked before it has attached the store and its statistics
  // slot; it shows in INFO's workers_alive once it has, just before it
  // tells the master it is ready. (No count without statistics or without
  // the password: then the processes are all there is to wait for.)
  for (int i = 0; i < 500; ++i) {
    Client c(port_);
    std::string alive = c.ok() ? InfoField(&c, "workers_alive") : "";
    if (alive.empty() || std::strtoul(alive.c_str(), nullptr, 10) >= want) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The anonymous memory (heap and buffers, not the shared segments) of the
// master's worker processes, in bytes.
uint64_t WorkersAnonRss(pid_t master) {
  uint64_t total = 0;
  for (pid_t pid : WorkerPids(master)) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("RssAnon:", 0) == 0) {
        total += std::stoull(line.substr(8)) * 1024;  // kB
      }
    }
  }
  return total;
}


// Connections until `per` of them sit on each of `workers` worker
// processes: one group per worker (INFO's process_id tells them apart).
std::vector<std::vector<std::unique_ptr<Client>>> OnEachWorker(
    int port, size_t workers, size_t per) {
  std::map<std::string, std::vector<std::unique_ptr<Client>>> by_pid;
  for (int tries = 0; tries < 400; ++tries) {
    auto c = std::make_unique<Client>(port);
    std::string pid = InfoField(c.get(), "process_id");
    auto& group = by_pid[pid];
    if (group.size() < per) group.push_back(std::move(c));
    size_t full = 0;
    for (const auto& kv : by_pid) full += kv.second.size() == per;
    if (full == workers) break;
  }
  std::vector<std::vector<std::unique_ptr<Client>>> out;
  for (auto& kv : by_pid) {
    if (kv.second.size() == per) out.push_back(std::move(kv.second));
  }
  return out;
}

// The first IPv4 address of this machine that is not a loopback one ("" if
// none).
std::string NonLoopbackIPv4() {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string out;
  for (struct ifaddrs* i = list; i != nullptr && out.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    out = buf;
  }
  freeifaddrs(list);
  return out;
}

}  // namespace shmkv_test
