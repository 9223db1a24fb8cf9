// shmkv: a Redis-protocol key-value server on shared memory (docs/server.md).
//
// The master process owns the segments' lifetime and the listening
// sockets; worker processes serve. SIGHUP (or `shmkv --reload`) replaces
// the workers one at a time with a fresh exec of the binary; SIGTERM stops
// everything, leaving the data in its segment for the next start.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "server/commands.h"
#include "server/fdpass.h"
#include "server/pages.h"
#include "server/sockets.h"
#include "server/stats.h"
#include "server/store.h"
#include "server/worker.h"

namespace shmkv {
namespace {

struct Options {
  int port = 6380;
  int http_port = 8080;
  int udp_port = 0;  // 0: no UDP
  int workers = 0;  // 0: one per core
  std::string seg = "/shmkv";
  std::string backend = "posix";
  bool backend_given = false;
  uint64_t capacity = 1000000;
  uint64_t memory = 256ULL << 20;
  uint64_t max_value = 16ULL << 20;
  uint64_t journal = 64ULL << 20;
  uint64_t timeout_s = 0;      // Redis's timeout: 0, never
  uint64_t client_memory = 0;  // 0: the default (ClientMemory())
  bool reload = false;
  bool hugepages = false;  // the map on SysV hugetlb segments
  // Redis 7's defaults: loopback only, protected mode on.
  std::vector<std::string> bind = {"127.0.0.1", "::1"};
  bool bind_given = false;
  bool protected_mode = true;
  std::string password;  // requirepass (never passed on a command line)
  // worker mode (set by the master when it execs a worker)
  int worker_slot = -1;
  std::vector<int> resp_fds, http_fds, udp_fds;
  int ready_fd = -1, ctl_fd = -1, adopt_fd = -1;
  bool worker_protected = false;
  int64_t start_ms = 0;
};

const char kUsage[] =
    "usage: shmkv [options]\n"
    "  --port N          RESP (Redis protocol) port            [6380]\n"
    "  --http-port N     HTTP port (0: none)                   [8080]\n"
    "  --udp-port N      UDP port for GET, SET, DEL and INCR, one\n"
    "                    request per datagram (0: none; not with a\n"
    "                    password)                             [0]\n"
    "  --workers N       worker processes                      [cores]\n"
    "  --name SEG        the map's segment, named as shmc names it:\n"
    "                    posix:/NAME, sysv:KEY or file:PATH [posix:/shmkv]\n"
    "                    (a bare name is posix, or --backend's)\n"
    "  --backend B       posix | sysv | file:PATH (older form)  [posix]\n"
    "  --hugepages       create the map on 2 MiB hugepages (needs a\n"
    "                    sysv: name and a reserved pool:\n"
    "                    /proc/sys/vm/nr_hugepages)             [off]\n"
    "  --capacity KEYS   keys the index holds                  [1000000]\n"
    "  --memory BYTES    size of the key and value store, its\n"
    "                    bookkeeping included (K/M/G ok)        [256M]\n"
    "  --max-value BYTES largest value                         [16M]\n"
    "  --journal-size BYTES  largest multi-key commit (MSET,\n"
    "                    RENAME, MULTI/EXEC), its old values included [64M]\n"
    "  --timeout SECS    close a client idle this long (0: never) [0]\n"
    "  --maxmemory-clients BYTES  bound on all clients' buffered\n"
    "                    requests and replies; above it the client\n"
    "                    holding most is closed [256M, at least\n"
    "                    workers x (2 x 2 x max-value + 5M)]\n"
    "  --bind ADDR...    addresses to listen on     [127.0.0.1 ::1]\n"
    "  --protected-mode yes|no  refuse non-loopback clients when\n"
    "                    no password is set                    [yes]\n"
    "  --requirepass-file FILE  clients must AUTH with the password\n"
    "                    in FILE's first line (or set SHMKV_REQUIREPASS;\n"
    "                    --requirepass PASS works but shows in ps)\n"
    "  --shm-mode MODE   permission bits of new segments       [0600]\n"
    "  --reload          tell the running master to replace its workers\n"
    "  --help\n"
    "The data lives in shared memory: restarting shmkv keeps it (with\n"
    "--backend file:PATH it also survives a reboot). docs/server.md\n";

bool ParseSize(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s) return false;
  uint64_t mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1ULL << 10, ++end;
  else if (*end == 'M' || *end == 'm') mul = 1ULL << 20, ++end;
  else if (*end == 'G' || *end == 'g') mul = 1ULL << 30, ++end;
  if (*end != '\0' || v > UINT64_MAX / mul) return false;
  *out = v * mul;
  return true;
}

std::string ModeText() {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o",
                static_cast<unsigned>(shmc::DefaultSegmentMode()));
  return buf;
}

int Usage(const char* why) {
  std::fprintf(stderr, "shmkv: %s\n%s", why, kUsage);
  return 2;
}

int ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char** v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    const char* v = nullptr;
    uint64_t n = 0;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--reload") {
      o->reload = true;
    } else if (a == "--hugepages") {
      o->hugepages = true;
    } else if (a == "--bind") {
      // One or more addresses, up to the next option.
      o->bind.clear();
      o->bind_given = true;
      while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
        o->bind.push_back(argv[++i]);
      }
      if (o->bind.empty()) return Usage("--bind needs an address");
    } else if (!next(&v)) {
      return Usage(("unknown option or missing value: " + a).c_str());
    } else if (a == "--port" || a == "--http-port" || a == "--udp-port" ||
               a == "--workers") {
      if (!ParseSize(v, &n) || n > 65535 ||
          (a == "--port" && n == 0) || (a == "--workers" && (n == 0 || n > 32))) {
        return Usage((a + ": bad value " + v).c_str());
      }
      (a == "--port"        ? o->port
       : a == "--http-port" ? o->http_port
       : a == "--udp-port"  ? o->udp_port
                            : o->workers) = static_cast<int>(n);
    } else if (a == "--name") {
      o->seg = v;
    } else if (a == "--backend") {
      o->backend = v;
      o->backend_given = true;
    } else if (a == "--timeout") {
      if (!ParseSize(v, &n) || n > INT32_MAX) {
        return Usage(("--timeout: bad number of seconds " + std::string(v)).c_str());
      }
      o->timeout_s = n;
    } else if (a == "--maxmemory-clients") {
      if (!ParseSize(v, &n) || n == 0) {
        return Usage(("--maxmemory-clients: bad size " + std::string(v)).c_str());
      }
      o->client_memory = n;
    } else if (a == "--capacity" || a == "--memory" || a == "--max-value" ||
               a == "--journal-size") {
      if (!ParseSize(v, &n) || n == 0) {
        return Usage((a + ": bad size " + v).c_str());
      }
      (a == "--capacity"       ? o->capacity
       : a == "--memory"       ? o->memory
       : a == "--journal-size" ? o->journal
                               : o->max_value) = n;
    } else if (a == "--protected-mode") {
      std::string m = v;
      if (m != "yes" && m != "no") return Usage("--protected-mode: yes or no");
      o->protected_mode = m == "yes";
    } else if (a == "--requirepass") {
      o->password = v;
    } else if (a == "--requirepass-file") {
      FILE* f = std::fopen(v, "re");
      if (f == nullptr) {
        return Usage(("--requirepass-file: " + std::string(v) + ": " +
                      std::strerror(errno)).c_str());
      }
      char line[4096];
      o->password = std::fgets(line, sizeof(line), f) ? line : "";
      std::fclose(f);
      while (!o->password.empty() && (o->password.back() == '\n' ||
                                      o->password.back() == '\r')) {
        o->password.pop_back();
      }
      if (o->password.empty()) return Usage("--requirepass-file is empty");
    } else if (a == "--shm-mode") {
      char* end = nullptr;
      unsigned long m = std::strtoul(v, &end, 8);
      if (*v == '\0' || *end != '\0' || m > 0777) {
        return Usage("--shm-mode: octal permission bits, e.g. 0640");
      }
      shmc::SetDefaultSegmentMode(static_cast<mode_t>(m));
    } else if (a == "--worker-protected") {
      o->worker_protected = std::string(v) == "yes";
    } else if (a == "--worker-slot") {
      o->worker_slot = std::atoi(v);
    } else if (a == "--resp-fd" || a == "--http-fd" || a == "--udp-fd") {
      std::vector<int>& fds = a == "--resp-fd"   ? o->resp_fds
                              : a == "--http-fd" ? o->http_fds
                                                 : o->udp_fds;
      for (const char* p = v; *p != '\0';) {
        char* end = nullptr;
        long fd = std::strtol(p, &end, 10);
        if (end == p) break;
        if (fd >= 0) fds.push_back(static_cast<int>(fd));
        p = *end == ',' ? end + 1 : end;
      }
    } else if (a == "--ready-fd") {
      o->ready_fd = std::atoi(v);
    } else if (a == "--ctl-fd") {
      o->ctl_fd = std::atoi(v);
    } else if (a == "--adopt-fd") {
      o->adopt_fd = std::atoi(v);
    } else if (a == "--start-ms") {
      o->start_ms = std::atoll(v);
    } else {
      return Usage(("unknown option: " + a).c_str());
    }
  }
  return -1;  // go on
}

// The map's backend and key from --name (or the older --backend).
bool MakeStoreName(const Options& o, StoreConfig* c, std::string* err) {
  if (shmc::SegmentName::HasBackend(o.seg)) {
    // The shmc tool's syntax: the name says its backend.
    shmc::SegmentName n;
    if (!shmc::SegmentName::Parse(o.seg, &n, err)) return false;
    if (o.backend_given) {
      *err = "--name " + o.seg + " names its backend: drop --backend";
      return false;
    }
    c->backend = n.backend;
    c->name = n.key;
    return true;
  }
  if (o.backend == "posix") {
    c->backend = Backend::kPosix;
  } else if (o.backend == "sysv") {
    c->backend = Backend::kSysv;
    if (c->name == "/shmkv") c->name = "53670";  // a decimal default key
  } else if (o.backend.compare(0, 5, "file:") == 0 && o.backend.size() > 5) {
    c->backend = Backend::kFile;
    c->name = o.backend.substr(5);
  } else {
    *err = "--backend must be posix, sysv or file:PATH";
    return false;
  }
  return true;
}

bool MakeStoreConfig(const Options& o, StoreConfig* c, std::string* err) {
  c->capacity = o.capacity;
  c->memory = o.memory;
  c->max_value = o.max_value;
  c->journal = o.journal;
  c->name = o.seg;
  c->hugepages = o.hugepages;
  if (!MakeStoreName(o, c, err)) return false;
  if (c->hugepages && c->backend != Backend::kSysv) {
    *err = "--hugepages puts the map on System V hugetlb segments: name it "
           "sysv:KEY";
    return false;
  }
  return true;
}

class Master {
 public:
  Master(const Options& o, const StoreConfig& sc) : o_(o), sc_(sc) {}

  int Run() {
    std::string err;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
      std::perror("shmkv: /proc/self/exe");
      return 1;
    }
    self_.assign(self, static_cast<size_t>(n));
    // Ports first: a start that cannot listen leaves no segments behind.
    std::vector<std::string> addrs;
    for (const std::string& a : o_.bind) {
      bool skip = false;
      for (auto [port, type] : {std::pair{o_.port, SOCK_STREAM},
                                std::pair{o_.http_port, SOCK_STREAM},
                                std::pair{o_.udp_port, SOCK_DGRAM}}) {
        if (port == 0 || skip) continue;
        if (!PortFree(a, port, type, !o_.bind_given, &skip, &err)) {
          std::fprintf(stderr, "shmkv: %s\n", err.c_str());
          return 1;
        }
        if (skip) {
          std::fprintf(stderr, "shmkv: not listening on %s: %s\n",
                       a.c_str(), err.c_str());
        }
      }
      if (!skip) addrs.push_back(a);
    }
    if (addrs.empty()) {
      std::fprintf(stderr, "shmkv: no address to listen on\n");
      return 1;
    }
    bound_ = addrs;
    store_ = Store::Open(sc_, true, &err);
    if (!store_) {
      std::fprintf(stderr, "shmkv: %s\n", err.c_str());
      return 1;
    }
    for (const std::string& w : SmallPageWarnings(sc_)) {
      std::fprintf(stderr, "shmkv: %s\n", w.c_str());
    }
    ControlBlock* ctl = store_->control();
    uint64_t other = 0;
    if (ctl->master.Acquire(&other) == shmc::ProcessLease::Result::kBusy) {
      std::fprintf(stderr, "shmkv: already running on %s (master pid %" PRIu64
                   ")\n", SegName(sc_).c_str(), other);
      return 1;
    }
    if (!stats_.Open(ControlKey(sc_) + ".stats", true, &err)) {
      std::fprintf(stderr, "shmkv: %s\n", err.c_str());
      return 1;
    }
    int workers = o_.workers > 0 ? o_.workers
                                 : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    if (workers < 1) workers = 1;
    for (int i = 0; i < workers; ++i) {
      Slot s;
      for (const std::string& a : bound_) {
        int r = Listen(a, o_.port, &err);
        int h = o_.http_port != 0 ? Listen(a, o_.http_port, &err) : -2;
        if (r < 0 || h == -1) {
          std::fprintf(stderr, "shmkv: %s\n", err.c_str());
          return 1;
        }
        s.resp_fds.push_back(r);
        if (h >= 0) s.http_fds.push_back(h);
        if (o_.udp_port != 0) {
          int u = BindUdp(a, o_.udp_port, &err);
          if (u < 0) {
            std::fprintf(stderr, "shmkv: UDP %s\n", err.c_str());
            return 1;
          }
          s.udp_fds.push_back(u);
        }
      }
      slots_.push_back(s);
    }
    ctl->workers.store(static_cast<uint64_t>(workers),
                       std::memory_order_relaxed);
    start_ms_ = NowMs();

    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGCHLD, SIGHUP, SIGTERM, SIGINT}) sigaddset(&mask, sig);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    sig_fd_ = signalfd(-1, &mask, SFD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);

    for (size_t i = 0; i < slots_.size(); ++i) {
      if (!Spawn(i, true)) return Shutdown(1);
    }
    std::string udp = o_.udp_port != 0
                          ? ", UDP port " + std::to_string(o_.udp_port)
                          : std::string();
    std::fprintf(stderr, "shmkv %s: %zu workers, RESP port %d, HTTP port %d%s, "
                 "segment %s%s (%" PRIu64 " keys stored)\n", kVersion,
                 slots_.size(), o_.port, o_.http_port, udp.c_str(),
                 SegName(sc_).c_str(), sc_.hugepages ? " on hugepages" : "",
                 store_->Keys());
    return Loop();
  }

 private:
  struct Slot {
    std::vector<int> resp_fds, http_fds, udp_fds;
    pid_t pid = 0;
    int ctl_fd = -1;  // master's end of the worker's control socket
    size_t stats_slot = 0;
    int quick_deaths = 0;
    int64_t started_ms = 0;
  };

  // Forks and execs a worker for slot i; waits until it serves. A
  // replacement gets `adopt_fd` to receive its predecessor's connections.
  bool Spawn(size_t i, bool first, int adopt_fd = -1) {
    Slot& s = slots_[i];
    size_t stats_slot = next_stats_slot_++ % kMaxWorkerSlots;
    stats_.Clear(stats_slot);
    int ready[2], ctl[2];
    if (pipe2(ready, O_CLOEXEC) != 0) return false;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0) {
      close(ready[0]);
      close(ready[1]);
      return false;
    }
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("shmkv: fork");
      return false;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      // Keep only this slot's sockets and the ready pipe across exec.
      for (size_t j = 0; j < slots_.size(); ++j) {
        if (j == i) continue;
        for (int fd : slots_[j].resp_fds) close(fd);
        for (int fd : slots_[j].http_fds) close(fd);
        for (int fd : slots_[j].udp_fds) close(fd);
      }
      for (int fd : s.resp_fds) fcntl(fd, F_SETFD, 0);
      for (int fd : s.http_fds) fcntl(fd, F_SETFD, 0);
      for (int fd : s.udp_fds) fcntl(fd, F_SETFD, 0);
      // The password goes by the environment, never by argv (ps shows it).
      if (!o_.password.empty()) setenv("SHMKV_REQUIREPASS", o_.password.c_str(), 1);
      auto join = [](const std::vector<int>& fds) {
        std::string j;
        for (int fd : fds) {
          if (!j.empty()) j += ',';
          j += std::to_string(fd);
        }
        return j.empty() ? std::string("-1") : j;
      };
      bool beyond_loopback = false;
      for (const std::string& a : bound_) beyond_loopback |= !IsLoopback(a);
      bool protect = o_.protected_mode && o_.password.empty() &&
                     beyond_loopback;
      fcntl(ready[1], F_SETFD, 0);
      fcntl(ctl[1], F_SETFD, 0);
      if (adopt_fd >= 0) fcntl(adopt_fd, F_SETFD, 0);
      std::vector<std::string> args = {
          self_, "--worker-slot", std::to_string(stats_slot),
          "--resp-fd", join(s.resp_fds),
          "--http-fd", join(s.http_fds),
          "--udp-fd", join(s.udp_fds),
          "--worker-protected", protect ? "yes" : "no",
          "--shm-mode", ModeText(),
          "--ready-fd", std::to_string(ready[1]),
          "--ctl-fd", std::to_string(ctl[1]),
          "--adopt-fd", std::to_string(adopt_fd),
          "--port", std::to_string(o_.port),
          "--http-port", std::to_string(o_.http_port),
          "--udp-port", std::to_string(o_.udp_port),
          "--workers", std::to_string(slots_.size()),
          "--name", SegName(sc_),
          "--capacity", std::to_string(o_.capacity),
          "--memory", std::to_string(o_.memory),
          "--max-value", std::to_string(o_.max_value),
          "--journal-size", std::to_string(o_.journal),
          "--timeout", std::to_string(o_.timeout_s),
          "--maxmemory-clients", std::to_string(o_.client_memory),
          "--start-ms", std::to_string(start_ms_)};
      if (o_.hugepages) args.push_back("--hugepages");
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(&a[0]);
      argv.push_back(nullptr);
      execv(self_.c_str(), argv.data());
      std::fprintf(stderr, "shmkv: exec %s: %s\n", self_.c_str(),
                   std::strerror(errno));
      _exit(127);
    }
    close(ready[1]);
    close(ctl[1]);
    char c = 0;
    ssize_t r;
    do {
      r = read(ready[0], &c, 1);  // EOF if the worker failed
    } while (r < 0 && errno == EINTR);
    close(ready[0]);
    if (r != 1) {
      std::fprintf(stderr, "shmkv: worker %zu failed to start\n", i);
      close(ctl[0]);
      waitpid(pid, nullptr, 0);
      return false;
    }
    if (!first && s.pid > 0) {
      // The replaced worker is still draining; track both.
      draining_[s.pid] = s.ctl_fd;
    } else if (s.ctl_fd >= 0) {
      close(s.ctl_fd);
    }
    s.ctl_fd = ctl[0];
    s.pid = pid;
    s.stats_slot = stats_slot;
    s.started_ms = NowMs();
    return true;
  }

  int Loop() {
    for (;;) {
      fd_set rd;
      FD_ZERO(&rd);
      FD_SET(sig_fd_, &rd);
      struct timeval tv = {0, 100000};
      int n = select(sig_fd_ + 1, &rd, nullptr, nullptr, &tv);
      if (n > 0) {
        struct signalfd_siginfo si;
        if (read(sig_fd_, &si, sizeof(si)) == sizeof(si)) {
          if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            return Shutdown(0);
          }
          if (si.ssi_signo == SIGHUP) Reload();
          if (si.ssi_signo == SIGCHLD) Reap();
        }
      }
      // Active expiry: a full pass over the index about every 2 s.
      store_->Sweep(std::max<uint64_t>(2000, sc_.capacity / 16));
    }
  }

  void Reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      auto d = draining_.find(pid);
      if (d != draining_.end()) {  // a replaced worker finished
        if (d->second >= 0) close(d->second);
        draining_.erase(d);
        continue;
      }
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].pid != pid) continue;
        slots_[i].pid = 0;
        bool quick = NowMs() - slots_[i].started_ms < 1000;
        slots_[i].quick_deaths = quick ? slots_[i].quick_deaths + 1 : 0;
        std::fprintf(stderr, "shmkv: worker %zu (pid %d) %s %d; restarting\n",
                     i, pid, WIFSIGNALED(status) ? "killed by signal" : "exited",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        if (slots_[i].quick_deaths > 5) {
          std::fprintf(stderr, "shmkv: worker %zu keeps dying; giving up\n", i);
          continue;
        }
        Spawn(i, true);
      }
    }
  }

  // Replaces every worker, one at a time: the new one serves before the
  // old one is told to hand its open connections over to it and exit.
  void Reload() {
    std::fprintf(stderr, "shmkv: reloading %zu workers from %s\n",
                 slots_.size(), self_.c_str());
    for (size_t i = 0; i < slots_.size(); ++i) {
      int old_ctl = slots_[i].ctl_fd;
      pid_t old = slots_[i].pid;
      int h[2];
      if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, h) != 0) {
        std::perror("shmkv: reload: socketpair");
        return;
      }
      if (!Spawn(i, false, h[1])) {
        std::fprintf(stderr, "shmkv: reload stopped: worker %zu kept\n", i);
        close(h[0]);
        close(h[1]);
        return;
      }
      close(h[1]);
      if (old > 0 && (old_ctl < 0 || !SendFd(old_ctl, h[0], "H"))) {
        kill(old, SIGTERM);  // no control socket: drain by closing
      }
      close(h[0]);
    }
    store_->control()->reloads.fetch_add(1, std::memory_order_relaxed);
  }

  int Shutdown(int rc) {
    for (Slot& s : slots_) {
      if (s.pid > 0) kill(s.pid, SIGTERM);
    }
    for (auto& kv : draining_) kill(kv.first, SIGTERM);
    while (waitpid(-1, nullptr, 0) > 0) {
    }
    store_->control()->master.Release();
    std::fprintf(stderr, "shmkv: stopped; %" PRIu64 " keys stay in %s\n",
                 store_->Keys(), SegName(sc_).c_str());
    return rc;
  }

  Options o_;
  StoreConfig sc_;
  std::string self_;
  std::unique_ptr<Store> store_;
  SharedStats stats_;
  std::vector<Slot> slots_;
  std::vector<std::string> bound_;  // addresses listened on
  std::map<pid_t, int> draining_;  // replaced workers -> their ctl fd
  size_t next_stats_slot_ = 0;
  int sig_fd_ = -1;
  int64_t start_ms_ = 0;
};

int SendReload(const StoreConfig& sc) {
  shmc::ShmArray<ControlBlock, shmc::POSIX> ctl;
  if (!ctl.InitForRead(ControlKey(sc))) {
    std::fprintf(stderr, "shmkv --reload: no server on %s: %s\n",
                 SegName(sc).c_str(), ctl.last_error().message.c_str());
    return 1;
  }
  uint64_t pid = const_cast<const ControlBlock&>(ctl[0]).master.Holder();
  if (pid == 0 || kill(static_cast<pid_t>(pid), SIGHUP) != 0) {
    std::fprintf(stderr, "shmkv --reload: no live master for %s\n",
                 SegName(sc).c_str());
    return 1;
  }
  std::printf("shmkv: reload signalled to master pid %" PRIu64 "\n", pid);
  return 0;
}

// Settles the worker count and the client-buffer bound: 256 MiB by
// default, and never so small that a worker cannot hold one request of
// the largest size.
bool ResolveClientMemory(const StoreConfig& sc, Options* o, std::string* err) {
  if (o->workers == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->workers = static_cast<int>(std::min<long>(std::max<long>(cores, 1), 32));
  }
  uint64_t least = static_cast<uint64_t>(o->workers) *
                   MinClientMemoryPerWorker(sc);
  if (o->client_memory == 0) {
    o->client_memory = std::max<uint64_t>(256ULL << 20, least);
  } else if (o->client_memory < least) {
    *err = "--maxmemory-clients " + std::to_string(o->client_memory) +
           " is less than " + std::to_string(o->workers) +
           " workers need to each hold one largest request (" +
           std::to_string(least) + "); raise it or lower --max-value";
    return false;
  }
  return true;
}

void RaiseFdLimit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace
}  // namespace shmkv

int main(int argc, char** argv) {
  using namespace shmkv;
  Options o;
  int rc = ParseArgs(argc, argv, &o);
  if (rc >= 0) return rc;
  StoreConfig sc;
  std::string err;
  if (!MakeStoreConfig(o, &sc, &err)) return Usage(err.c_str());
  if (o.reload) return SendReload(sc);
  if (!ResolveClientMemory(sc, &o, &err)) return Usage(err.c_str());
  RaiseFdLimit();
  if (o.worker_slot >= 0) {
    WorkerConfig wc;
    wc.resp_fds = o.resp_fds;
    wc.http_fds = o.http_fds;
    wc.udp_fds = o.udp_fds;
    wc.protected_mode = o.worker_protected;
    if (const char* p = std::getenv("SHMKV_REQUIREPASS")) wc.password = p;
    unsetenv("SHMKV_REQUIREPASS");
    wc.ready_fd = o.ready_fd;
    wc.ctl_fd = o.ctl_fd;
    wc.adopt_fd = o.adopt_fd;
    wc.slot = static_cast<size_t>(o.worker_slot);
    wc.store = sc;
    wc.info.resp_port = static_cast<uint64_t>(o.port);
    wc.info.http_port = static_cast<uint64_t>(o.http_port);
    wc.info.udp_port = static_cast<uint64_t>(o.udp_port);
    wc.info.workers = static_cast<uint64_t>(o.workers);
    wc.info.start_ms = o.start_ms;
    wc.info.name = SegName(sc);
    for (const std::string& b : o.bind) {
      if (!wc.info.bind.empty()) wc.info.bind += ' ';
      wc.info.bind += b;
    }
    wc.info.protected_mode = o.worker_protected;
    wc.info.max_value = o.max_value;
    wc.info.memory = o.memory;
    wc.info.capacity = o.capacity;
    wc.info.journal = o.journal;
    wc.timeout_s = static_cast<int64_t>(o.timeout_s);
    wc.client_memory = o.client_memory;
    wc.workers = static_cast<size_t>(std::max(o.workers, 1));
    wc.info.timeout_s = o.timeout_s;
    wc.info.client_memory = o.client_memory;
    wc.info.max_request = MaxRequestBytes(sc);
    if (getppid() == 1) return 1;  // the master is already gone
    return RunWorker(wc);
  }
  if (o.password.empty()) {
    if (const char* p = std::getenv("SHMKV_REQUIREPASS")) o.password = p;
  }
  unsetenv("SHMKV_REQUIREPASS");
  if (o.udp_port != 0 && !o.password.empty()) {
    return Usage("--udp-port: a datagram carries no password, so UDP cannot "
                 "serve a server with requirepass");
  }
  Master m(o, sc);
  return m.Run();
}
