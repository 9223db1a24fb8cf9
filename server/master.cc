// shmkv's master process (server/master.h): it owns the segments' lifetime and the listening
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
#include <sys/stat.h>
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

#include "server/commands/command.h"
#include "server/commands/notify.h"
#include "server/commands/pubsub_hub.h"
#include "server/load_rdb.h"
#include "server/local_commands.h"
#include "server/replica_link.h"
#include "server/net/fdpass.h"
#include "server/store/pages.h"
#include "server/net/sockets.h"
#include "server/store/latency.h"
#include "server/store/stats.h"
#include "server/store/waits.h"
#include "server/store/store.h"
#include "server/net/worker.h"

#include "server/master.h"

#include "server/store/cow.h"
#include "server/store/repl.h"

namespace shmkv {
namespace {

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
    store_->SetNotifyFlags(o_.notify_events);
    store_->ResetSettings();  // CONFIG SET's lasts while the server runs
    // What a save killed before this start left: its log and its
    // unfinished RDB file (the RDB file itself is untouched).
    ReapSnapshot();
    if (size_t n = RemoveStaleSnapshotFiles(o_.dir)) {
      std::fprintf(stderr, "shmkv: removed %zu temporary file(s) of a save "
                   "that was killed, in %s\n", n, o_.dir.c_str());
    }
    if (!SettleReplication()) return 1;
    if (!LoadAtStart()) return 1;
    std::string why;
    ParseSavePoints(o_.save, &save_points_, &why);  // checked by ParseArgs
    save_base_ = store_->ChangeCount();
    save_last_s_ = NowMs() / 1000;
    save_seen_mtime_ = RdbFileTime();
    OpenExpiryEvents();
    if (!stats_.Open(ControlKey(sc_) + ".stats", true, &err)) {
      std::fprintf(stderr, "shmkv: %s\n", err.c_str());
      return 1;
    }
    // Latency figures are not needed to serve: without them, the
    // retired slot keeps no sketches.
    if (!latency_.Open(ControlKey(sc_) + ".latency", &err)) {
      std::fprintf(stderr, "shmkv: latency of workers gone not kept: %s\n",
                   err.c_str());
    }
    // The workers' wait board for blocking commands (made here, where
    // segments may be created; workers map it).
    if (!waits_.Open(WaitsKey(sc_), &err)) {
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
    bool given_up = false;  // kept dying at start: not restarted
  };

  // Forks and execs a worker for slot i; waits until it serves. A
  // replacement gets `adopt_fd` to receive its predecessor's connections.
  bool Spawn(size_t i, bool first, int adopt_fd = -1) {
    Slot& s = slots_[i];
    size_t stats_slot = TakeStatsSlot();
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
          "--dir", o_.dir, "--dbfilename", o_.dbfilename, "--save", o_.save,
          "--start-ms", std::to_string(start_ms_)};
      if (o_.hugepages) args.push_back("--hugepages");
      args.insert(args.end(),
                  {"--value-pool", o_.extents ? "extents" : "nodes"});
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
      close(ctl[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      ReleaseStatsSlot(stats_slot);
      std::fprintf(stderr, "shmkv: worker %zu failed to start (%s %d)\n", i,
                   WIFSIGNALED(status) ? "killed by signal" : "exit code",
                   WIFSIGNALED(status) ? WTERMSIG(status)
                                       : WEXITSTATUS(status));
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
    stats_of_[pid] = stats_slot;
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
      if (give_up_all_) return Shutdown(1);
      ReapSnapshot();
      SavePoints();
      FollowMaster();
      // Active expiry: a full pass over the index about every second
      // (a key is gone within about 1 s of its time, as Redis's tests
      // expect of its sampling; the master spends about 0.5% of a core
      // on it at the default capacity).
      store_->Sweep(std::max<uint64_t>(2000, sc_.capacity / 8));
    }
  }

  // An empty store (a fresh start, after a reboot) is filled from
  // dir/dbfilename when it exists, as Redis loads its file at start; a
  // file that does not read whole stops the start, as it stops Redis's.
  // A store that holds keys (kept in shared memory) is left as it is.
  bool LoadAtStart() {
    const std::string file = RdbFile();
    if (access(file.c_str(), F_OK) != 0) return true;
    uint64_t held = 0;
    for (uint32_t db = 0; db < kDatabases; ++db) {
      uint64_t expires = 0;
      held += store_->KeysIn(db, &expires, false);
    }
    if (held != 0) {
      std::fprintf(stderr, "shmkv: %s not loaded: the store holds %" PRIu64
                   " keys already\n", file.c_str(), held);
      return true;
    }
    const int64_t began = NowMs();
    LoadCounts n;
    std::string why;
    if (!LoadRdbInto(store_.get(), o_, file, &n, &why)) {
      std::fprintf(stderr, "shmkv: %s: %s; not starting (move the file away "
                   "to start with an empty store)\n", file.c_str(),
                   why.c_str());
      return false;
    }
    std::fprintf(stderr, "shmkv: loaded %" PRIu64 " keys from %s in %" PRId64
                 " ms (%" PRIu64 " already expired, left out)\n", n.loaded,
                 file.c_str(), NowMs() - began, n.expired);
    return true;
  }

  std::string RdbFile() const { return o_.dir + "/" + o_.dbfilename; }
  int64_t RdbFileTime() const {
    struct stat st;
    return stat(RdbFile().c_str(), &st) == 0 ? st.st_mtime : 0;
  }

  // Redis's save points (--save): a BGSAVE once a point's seconds have
  // passed since the last save and its count of changes was made. Any
  // save (a client's SAVE or BGSAVE too) is seen by the file's time
  // changing, and starts the count again. After a failed save the next
  // try waits 5 s, as Redis's does.
  void SavePoints() {
    // CONFIG SET save's points, once given, hold over --save's.
    std::vector<SavePoint> given;
    const std::vector<SavePoint>& points =
        store_->GetSavePoints(&given) ? given : save_points_;
    if (points.empty()) return;
    const int64_t mtime = RdbFileTime();
    if (mtime != save_seen_mtime_) {
      save_seen_mtime_ = mtime;
      save_base_ = store_->ChangeCount();
      save_last_s_ = mtime;
    }
    const Store::SnapshotState snap = store_->Snapshot();
    const int64_t now_ms = NowMs();
    if (snap.pid != 0 || (snap.last_failed && now_ms - save_try_ms_ < 5000)) {
      return;
    }
    const uint64_t changes = store_->ChangeCount() - save_base_;
    const int64_t elapsed = now_ms / 1000 - save_last_s_;
    for (const SavePoint& p : points) {
      if (changes < static_cast<uint64_t>(p.changes) || elapsed <= p.secs) {
        continue;
      }
      std::fprintf(stderr, "shmkv: %" PRIu64 " changes in %" PRId64
                   " seconds: saving\n", changes, elapsed);
      save_try_ms_ = now_ms;
      LocalCommands local(store_.get(), ServerInfoFrom(o_, sc_));
      const std::string out = local.Run({"BGSAVE"});
      if (out.empty() || out[0] == '-') {
        std::fprintf(stderr, "shmkv: the save point's BGSAVE: %s\n",
                     out.c_str());
      }
      return;
    }
  }

  // Replication (server/replica_link.h). At start: a link a killed
  // master left running is stopped first (two would apply the stream
  // twice), a load it did not finish leaves the store a replica that
  // syncs again, and a promotion it did not finish is finished.
  bool SettleReplication() {
    std::string err;
    SharedRepl* repl = store_->Repl(&err);
    if (repl == nullptr) {
      std::fprintf(stderr, "shmkv: %s\n", err.c_str());
      return false;
    }
    ReplBlock* b = repl->block();
    if (const pid_t old = RunningLink(b)) {
      kill(old, SIGTERM);
      for (int i = 0; i < 500 && RunningLink(b) != 0; ++i) usleep(10000);
      if (RunningLink(b) != 0) kill(old, SIGKILL);
      for (int i = 0; i < 500 && RunningLink(b) != 0; ++i) usleep(10000);
    }
    b->link_pid.store(0);
    auto lock = store_->Begin();
    switch (repl->Mode()) {
      case ReplMode::kLoading:
        repl->SetMode(ReplMode::kReplica);
        break;
      case ReplMode::kPromoting:
        repl->Promote();
        repl->SetMode(ReplMode::kMaster);
        break;
      default:
        break;
    }
    repl->SetState(LinkState::kDown);
    return true;
  }

  // Each tick: a link while the store is a replica, none otherwise, and
  // a new one when REPLICAOF names another master.
  void FollowMaster() {
    SharedRepl* repl = store_->Repl();
    if (repl == nullptr) return;
    const ReplMode m = repl->Mode();
    const bool want = m == ReplMode::kReplica || m == ReplMode::kLoading;
    const int64_t now = NowMs();
    if (link_pid_ > 0) {
      if (!want || repl->Generation() != link_gen_) {
        if (link_term_ms_ == 0) {
          kill(link_pid_, SIGTERM);
          link_term_ms_ = now;
        } else if (now - link_term_ms_ > 10000) {
          kill(link_pid_, SIGKILL);
        }
      }
      return;
    }
    if (!want || now < link_next_ms_) return;
    std::string host;
    uint64_t port = 0;
    repl->Target(&host, &port, &link_gen_);
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("shmkv: fork (replica link)");
      link_next_ms_ = now + 1000;
      return;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      // Nothing of the master's but the store: not its listening sockets
      // (a port must close when the server stops), nor its signals.
      for (Slot& sl : slots_) {
        for (auto* fds : {&sl.resp_fds, &sl.http_fds, &sl.udp_fds}) {
          for (int fd : *fds) {
            if (fd >= 0) close(fd);
          }
        }
        if (sl.ctl_fd >= 0) close(sl.ctl_fd);
      }
      for (auto& kv : draining_) {
        if (kv.second >= 0) close(kv.second);
      }
      close(sig_fd_);
      _exit(RunReplicaLink(o_, sc_));
    }
    link_pid_ = pid;
    link_term_ms_ = 0;
    repl->block()->link_started_s.store(static_cast<uint64_t>(now / 1000));
    repl->block()->link_pid.store(static_cast<uint64_t>(pid));
  }

  void ReapLink(int status) {
    SharedRepl* repl = store_->Repl();
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!clean) {
      std::fprintf(stderr, "shmkv: replica link (pid %d) %s %d\n", link_pid_,
                   WIFSIGNALED(status) ? "killed by signal" : "exited",
                   WIFSIGNALED(status) ? WTERMSIG(status)
                                       : WEXITSTATUS(status));
    }
    if (repl != nullptr) {
      uint64_t pid = static_cast<uint64_t>(link_pid_);
      repl->block()->link_pid.compare_exchange_strong(pid, 0);
      auto lock = store_->Begin();
      if (repl->Mode() == ReplMode::kLoading) {
        repl->SetMode(ReplMode::kReplica);
      }
      repl->SetState(LinkState::kDown);
    }
    link_pid_ = 0;
    link_next_ms_ = NowMs() + (clean ? 0 : 1000);
  }

  // A background save whose process is gone without ending it.
  void ReapSnapshot() {
    if (store_->Snapshot().pid == 0) return;
    const pid_t pid = store_->Snapshot().pid;
    if (store_->ReapSnapshot()) {
      std::fprintf(stderr, "shmkv: background save (pid %d) was killed; "
                   "its temporary files are removed\n", pid);
    }
  }

  void Reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      if (pid == link_pid_) {
        ReapLink(status);
        continue;
      }
      auto held = stats_of_.find(pid);
      if (held != stats_of_.end()) {  // a worker, serving or draining
        ReleaseStatsSlot(held->second);
        stats_of_.erase(held);
      }
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
        // A replacement that dies before it serves (killed while it
        // starts) is a quick death too, and is replaced at once: a slot
        // left without a worker would leave the connections its
        // listening sockets queue unanswered.
        while (slots_[i].quick_deaths <= 5 && !Spawn(i, true)) {
          ++slots_[i].quick_deaths;
        }
        if (slots_[i].quick_deaths > 5) GiveUp(i);
      }
    }
  }

  // The statistics (and latency) slot of a new worker: the lowest one no
  // worker holds, so slots are reused as workers are replaced. Past
  // kRetiredSlot workers at once (drains piling up), two share one.
  size_t TakeStatsSlot() {
    for (size_t i = 0; i < kRetiredSlot; ++i) {
      if (stats_held_[i] == 0) {
        stats_held_[i] = 1;
        return i;
      }
    }
    size_t i = next_stats_slot_++ % kRetiredSlot;
    ++stats_held_[i];
    return i;
  }

  // A worker is gone (reaped): once no other holds its slot, the slot's
  // figures move into the retired slot and it is free again. A slot the
  // retired one has no room for stays held (and counted) for good.
  void ReleaseStatsSlot(size_t slot) {
    if (slot >= kRetiredSlot || stats_held_[slot] == 0) return;
    if (--stats_held_[slot] != 0) return;
    std::string err;
    if (!stats_.Retire(slot, &err)) {
      std::fprintf(stderr, "shmkv: statistics slot %zu kept (%s)\n", slot,
                   err.c_str());
      stats_held_[slot] = 1;
      return;
    }
    latency_.Retire(slot);
  }

  // A worker that keeps dying at start is not restarted again. Its
  // listening sockets are closed, so the kernel stops queueing new
  // connections where no worker would accept them (those queued already
  // are reset, not left hanging); with no worker left, the master exits.
  void GiveUp(size_t i) {
    Slot& s = slots_[i];
    for (std::vector<int>* fds : {&s.resp_fds, &s.http_fds, &s.udp_fds}) {
      for (int& fd : *fds) {
        if (fd >= 0) close(fd);
        fd = -1;
      }
    }
    s.given_up = true;
    size_t left = 0;
    for (const Slot& o : slots_) left += o.given_up ? 0 : 1;
    std::fprintf(stderr, "shmkv: worker %zu keeps dying; giving up on it "
                 "(%zu workers left)\n", i, left);
    if (left == 0) {
      std::fprintf(stderr, "shmkv: no worker left: stopping\n");
      give_up_all_ = true;
    }
  }

  // Replaces every worker, one at a time: the new one serves before the
  // old one is told to hand its open connections over to it and exit.
  void Reload() {
    std::fprintf(stderr, "shmkv: reloading %zu workers from %s\n",
                 slots_.size(), self_.c_str());
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].given_up) continue;
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
    if (link_pid_ > 0) kill(link_pid_, SIGTERM);
    while (waitpid(-1, nullptr, 0) > 0) {
    }
    store_->control()->master.Release();
    std::fprintf(stderr, "shmkv: stopped; %" PRIu64 " keys stay in %s\n",
                 store_->Keys(), SegName(sc_).c_str());
    return rc;
  }

  Options o_;
  StoreConfig sc_;
  std::vector<SavePoint> save_points_;
  uint64_t save_base_ = 0;       // ChangeCount() at the last save seen
  int64_t save_last_s_ = 0;      // the last save's time (or the start's)
  int64_t save_seen_mtime_ = 0;  // the RDB file's time when last looked
  int64_t save_try_ms_ = 0;      // the last BGSAVE this master started
  std::string self_;
  // The "expired" events of keys the active expiry removes: published
  // on the shared ring like any worker's (no local subscribers; workers
  // read the ring at least every 100 ms, so no wakes are sent).
  void OpenExpiryEvents() {
    hub_ = std::make_unique<PubSubHub>(
        store_.get(), static_cast<uint32_t>(getpid()),
        [](ClientState*, std::string_view) {}, [](uint32_t) {});
    std::string err;
    if (!hub_->Open(&err)) {
      std::fprintf(stderr, "shmkv: keyspace events of expiry are off: %s\n",
                   err.c_str());
      hub_.reset();
      return;
    }
    PubSubHub* hub = hub_.get();
    Store* store = store_.get();
    store_->SetExpiryListener([store, hub](uint32_t db, std::string_view key) {
      cmd::NotifyIn(store, hub, db, cmd::kNotifyExpired, "expired", key);
    });
  }

  std::unique_ptr<Store> store_;
  std::unique_ptr<PubSubHub> hub_;
  SharedStats stats_;
  SharedLatency latency_;  // the master writes its retired slot only
  size_t stats_held_[kMaxWorkerSlots] = {};  // workers holding each slot
  std::map<pid_t, size_t> stats_of_;        // each worker's slot
  Waits waits_;
  std::vector<Slot> slots_;
  std::vector<std::string> bound_;  // addresses listened on
  std::map<pid_t, int> draining_;  // replaced workers -> their ctl fd
  size_t next_stats_slot_ = 0;
  int sig_fd_ = -1;
  int64_t start_ms_ = 0;
  bool give_up_all_ = false;  // every worker kept dying: stop
  // The replica link (FollowMaster): its pid (0: none), the generation
  // of the target it follows, when it was told to stop, when the next
  // may start.
  pid_t link_pid_ = 0;
  uint64_t link_gen_ = 0;
  int64_t link_term_ms_ = 0;
  int64_t link_next_ms_ = 0;
};

}  // namespace

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

uint64_t MasterRunning(const StoreConfig& sc) {
  shmc::ShmArray<ControlBlock, shmc::POSIX> ctl;
  if (!ctl.InitForRead(ControlKey(sc))) return 0;
  return const_cast<const ControlBlock&>(ctl[0]).master.Holder();
}

int RemoveSegments(const StoreConfig& sc) {
  if (uint64_t pid = MasterRunning(sc)) {
    std::fprintf(stderr, "shmkv --remove: a server is running on %s "
                 "(master pid %" PRIu64 "): stop it first\n",
                 SegName(sc).c_str(), pid);
    return 1;
  }
  std::string err;
  if (!RemoveStore(sc, &err)) {
    std::fprintf(stderr, "shmkv --remove: %s\n", err.c_str());
    return 1;
  }
  std::printf("shmkv: removed the segments of %s\n", SegName(sc).c_str());
  return 0;
}

int RunMaster(const Options& o, const StoreConfig& sc) {
  Master m(o, sc);
  return m.Run();
}

}  // namespace shmkv
