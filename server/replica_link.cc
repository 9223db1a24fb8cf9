// The replication link (server/replica_link.h).
#include "server/replica_link.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/command_util.h"
#include "server/commands/pubsub_hub.h"
#include "server/commands/sync_conn.h"
#include "server/load_rdb.h"
#include "server/local_commands.h"
#include "server/net/resp.h"
#include "server/store/repl.h"

namespace shmkv {

namespace {

volatile sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

constexpr int kIoTimeoutMs = 60000;  // Redis's repl-timeout
// How long a stop that comes between the master's MULTI and its EXEC waits
// for the EXEC (the master sends both together: it is normally read
// already). Stopped there, the offset would not describe the data and the
// next link would sync in full.
constexpr int kStopInTransactionMs = 1500;  // (under promotion's 2 s)
constexpr uint64_t kMaxRdbBytes = uint64_t{1} << 40;

// (appended piece by piece: g++ 12 -O3 warns spuriously on "$" + a
// temporary)
std::string Encode(const std::vector<std::string>& args) {
  std::string s(1, '*');
  s += std::to_string(args.size());
  s += "\r\n";
  for (const std::string& a : args) {
    s += '$';
    s += std::to_string(a.size());
    s += "\r\n";
    s += a;
    s += "\r\n";
  }
  return s;
}

void SleepMs(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

class Link {
 public:
  Link(const Options& o, Store* store, SharedRepl* repl)
      : o_(o), store_(store), repl_(repl), b_(repl->block()),
        local_(store, ServerInfoFrom(o, store->config())) {}

  int Run() {
    uint64_t port = 0;
    repl_->Target(&host_, &port, &gen_);
    port_ = std::to_string(port);
    b_->link_pid.store(static_cast<uint64_t>(getpid()));
    OpenPubSub();
    std::fprintf(stderr, "shmkv replica link (pid %d): following %s:%s\n",
                 getpid(), host_.c_str(), port_.c_str());
    std::string last_why;
    while (!Stopped()) {
      repl_->SetState(LinkState::kConnecting);
      int delay_ms = 1000;
      if (!Session(&delay_ms) && !Stopped()) {
        if (why_ != last_why) {
          std::fprintf(stderr, "shmkv replica link: %s; trying again\n",
                       why_.c_str());
          last_why = why_;
        }
      }
      GoDown();
      for (int waited = 0; waited < delay_ms && !Stopped(); waited += 50) {
        SleepMs(50);
      }
    }
    GoDown();
    // Said before the pid is given up: REPLICAOF NO ONE waits for that,
    // so its own line comes after this one.
    std::fprintf(stderr, "shmkv replica link (pid %d): stopped at offset "
                 "%" PRIu64 "\n", getpid(), offset_);
    uint64_t self = static_cast<uint64_t>(getpid());
    b_->link_pid.compare_exchange_strong(self, 0);
    return 0;
  }

 private:
  bool Stopped() const {
    if (g_stop != 0 || repl_->Generation() != gen_) return true;
    ReplMode m = repl_->Mode();
    return m != ReplMode::kReplica && m != ReplMode::kLoading;
  }

  void GoDown() {
    repl_->SetState(LinkState::kDown);
    uint64_t zero = 0;
    b_->down_since_ms.compare_exchange_strong(
        zero, static_cast<uint64_t>(NowMs()));
  }

  void Io() { b_->last_io_ms.store(static_cast<uint64_t>(NowMs())); }

  // Messages the master propagates (PUBLISH) reach the workers'
  // subscribers through the shared ring, as the master's expiry events
  // do (read there at least every 100 ms).
  void OpenPubSub() {
    hub_ = std::make_unique<PubSubHub>(
        store_, static_cast<uint32_t>(getpid()),
        [](ClientState*, std::string_view) {}, [](uint32_t) {});
    std::string err;
    if (!hub_->Open(&err)) {
      std::fprintf(stderr, "shmkv replica link: the master's PUBLISHes "
                   "reach no subscriber here: %s\n", err.c_str());
      hub_.reset();
      return;
    }
    local_.context()->pubsub = hub_.get();
  }

  bool Call(cmd::SyncConn* c, const std::vector<std::string>& args,
            std::string* reply) {
    if (!c->Write(Encode(args), 5000) || !c->ReadLine(reply, 5000)) {
      why_ = "no reply from " + host_ + ":" + port_ + " to " + args[0];
      return false;
    }
    Io();
    return true;
  }

  // One connection to the master: false (why_) when it ends otherwise
  // than by a stop; *delay_ms is how long to wait before the next.
  bool Session(int* delay_ms) {
    cmd::SyncConn c;
    if (!c.Connect(host_, port_, 5000)) {
      why_ = "cannot connect to " + host_ + ":" + port_;
      return false;
    }
    std::string reply;
    if (!Call(&c, {"PING"}, &reply)) return false;
    if (reply[0] == '-') {
      why_ = "the master answered PING with " + reply +
             " (shmkv has no masterauth)";
      *delay_ms = 5000;
      return false;
    }
    // As Redis's replica: a master that does not know these is followed
    // all the same.
    if (!Call(&c, {"REPLCONF", "listening-port", std::to_string(o_.port)},
              &reply) ||
        !Call(&c, {"REPLCONF", "capa", "psync2"}, &reply)) {
      return false;
    }
    const bool resume = b_->resumable.load() != 0 && !repl_->ReplId().empty();
    offset_ = b_->offset.load();
    if (!Call(&c, {"PSYNC", resume ? repl_->ReplId() : "?",
                   resume ? std::to_string(offset_ + 1) : "-1"},
              &reply)) {
      return false;
    }
    if (reply.rfind("+FULLRESYNC ", 0) == 0) {
      char id[41] = {};
      uint64_t off = 0;
      if (std::sscanf(reply.c_str() + 12, "%40s %" SCNu64, id, &off) != 2 ||
          std::strlen(id) != 40) {
        why_ = "a FULLRESYNC reply shmkv does not read: " + reply;
        return false;
      }
      // A full sync that fails waits longer before the next: each costs
      // the master a BGSAVE.
      *delay_ms = 5000;
      if (!FullSync(&c, id, off, delay_ms)) return false;
      *delay_ms = 1000;
    } else if (reply.rfind("+CONTINUE", 0) == 0) {
      if (reply.size() >= 10 + 40) repl_->SetReplId(reply.substr(10, 40));
      b_->partial_syncs.fetch_add(1);
      local_.Run({"SELECT", std::to_string(b_->stream_db.load() % 16)});
      std::fprintf(stderr, "shmkv replica link: continuing %s:%s's stream "
                   "at offset %" PRIu64 "\n", host_.c_str(), port_.c_str(),
                   offset_);
    } else {
      why_ = "the master answered PSYNC with " + reply;
      return false;
    }
    return Stream(&c);
  }

  // The master's RDB, into a temporary file of --dir, then loaded in
  // place of the store's data.
  bool FullSync(cmd::SyncConn* c, const std::string& id, uint64_t off,
                int* delay_ms) {
    repl_->SetState(LinkState::kTransfer);
    b_->sync_total.store(0);
    b_->sync_read.store(0);
    std::string line;
    // The master sends newlines while it makes the file.
    for (;;) {
      if (Stopped()) return false;
      if (!c->ReadLine(&line, kIoTimeoutMs)) {
        why_ = "no RDB from the master";
        return false;
      }
      Io();
      line.erase(0, line.find_first_not_of('\n'));
      if (!line.empty()) break;
    }
    uint64_t len = 0;
    char* end = nullptr;
    if (line[0] == '$') len = std::strtoull(line.c_str() + 1, &end, 10);
    if (line[0] != '$' || end == line.c_str() + 1 || *end != '\0' ||
        len > kMaxRdbBytes) {
      why_ = "the master's RDB came as " + line.substr(0, 64) +
             ", which shmkv does not read";
      return false;
    }
    b_->sync_total.store(len);
    const std::string file =
        o_.dir + "/temp-shmkv-" + std::to_string(getpid()) + ".rdb";
    int fd = open(file.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
      why_ = "cannot write " + file + ": " + std::strerror(errno);
      return false;
    }
    std::vector<char> buf(1 << 20);
    uint64_t got = 0;
    int64_t last = NowMs();
    while (got < len) {
      if (Stopped()) break;
      ssize_t n = c->Read(buf.data(), std::min<uint64_t>(buf.size(), len - got),
                          100);
      if (n < 0 || (n == 0 && NowMs() - last > kIoTimeoutMs)) {
        why_ = "the master's RDB ended after " + std::to_string(got) + " of " +
               std::to_string(len) + " bytes";
        break;
      }
      if (n == 0) continue;
      last = NowMs();
      Io();
      for (ssize_t done = 0; done < n;) {
        ssize_t w = write(fd, buf.data() + done, static_cast<size_t>(n - done));
        if (w <= 0) {
          if (w < 0 && errno == EINTR) continue;
          why_ = "cannot write " + file + ": " + std::strerror(errno);
          n = -1;
          break;
        }
        done += w;
      }
      if (n < 0) break;
      got += static_cast<uint64_t>(n);
      b_->sync_read.store(got);
    }
    close(fd);
    const bool ok = got == len && Load(file, id, off, delay_ms);
    unlink(file.c_str());
    return ok;
  }

  bool Load(const std::string& file, const std::string& id, uint64_t off,
            int* delay_ms) {
    {
      auto lock = store_->Begin();
      if (Stopped()) return false;
      repl_->SetMode(ReplMode::kLoading);
    }
    repl_->SetState(LinkState::kLoading);
    b_->resumable.store(0);
    const int64_t began = NowMs();
    std::string out = local_.Run({"FLUSHALL"});
    LoadCounts n;
    std::string why;
    bool ok = out == "+OK\r\n" &&
              LoadRdbInto(store_, o_, file, &n, &why);
    {
      auto lock = store_->Begin();
      if (repl_->Mode() == ReplMode::kLoading) {
        repl_->SetMode(ReplMode::kReplica);
      }
    }
    if (!ok) {
      why_ = "the master's dataset did not load: " +
             (why.empty() ? out.substr(0, out.find('\r')) : why);
      *delay_ms = 10000;
      return false;
    }
    repl_->SetReplId(id);
    offset_ = off;
    b_->offset.store(off);
    b_->stream_db.store(0);
    b_->full_syncs.fetch_add(1);
    local_.Run({"SELECT", "0"});
    std::fprintf(stderr, "shmkv replica link: full sync from %s:%s: %" PRIu64
                 " keys in %" PRId64 " ms\n", host_.c_str(), port_.c_str(),
                 n.loaded, NowMs() - began);
    return true;
  }

  bool Ack(cmd::SyncConn* c) {
    return c->Write(Encode({"REPLCONF", "ACK", std::to_string(offset_)}),
                    5000);
  }

  // The command stream, each command applied as it completes.
  bool Stream(cmd::SyncConn* c) {
    repl_->SetState(LinkState::kUp);
    b_->down_since_ms.store(0);
    b_->resumable.store(local_.client()->in_multi ? 0 : 1);
    std::string in;
    size_t pos = 0;
    RespLimits limits;
    RespCursor cursor;
    std::vector<std::string_view> args;
    std::string inline_store, err;
    std::vector<char> buf(256 << 10);
    int64_t last_ack = 0, last_io = NowMs(), stop_seen = 0;
    for (;;) {
      if (Stopped()) {
        if (!local_.client()->in_multi) return true;
        if (stop_seen == 0) stop_seen = NowMs();
        if (NowMs() - stop_seen > kStopInTransactionMs) return true;
      }
      const int64_t now = NowMs();
      if (now - last_ack >= 1000) {
        if (!Ack(c)) {
          why_ = "the link to the master broke";
          return false;
        }
        last_ack = now;
      }
      ssize_t n = c->Read(buf.data(), buf.size(), 100);
      if (n < 0) {
        why_ = "the master closed the link";
        return false;
      }
      if (n == 0) {
        if (NowMs() - last_io > kIoTimeoutMs) {
          why_ = "nothing from the master for 60 s";
          return false;
        }
        continue;
      }
      last_io = NowMs();
      Io();
      in.append(buf.data(), static_cast<size_t>(n));
      for (;;) {
        size_t used = 0;
        ParseResult pr = ParseCommand(in.data() + pos, in.size() - pos, limits,
                                      &cursor, &args, &used, &inline_store,
                                      &err);
        if (pr == ParseResult::kIncomplete) break;
        if (pr == ParseResult::kError) {
          why_ = "the master's stream does not parse: " + err;
          return false;
        }
        if (!Apply(c, args, used)) return false;
        pos += used;
        if (Stopped() && !local_.client()->in_multi) return true;
      }
      if (pos == in.size()) {
        in.clear();
        pos = 0;
      } else if (pos > (1 << 20)) {
        in.erase(0, pos);
        pos = 0;
      }
    }
  }

  // One command of the stream, then the offset past its bytes. PING and
  // REPLCONF are the link's own (GETACK answered); the rest run here.
  bool Apply(cmd::SyncConn* c, const std::vector<std::string_view>& args,
             size_t used) {
    const bool replconf = !args.empty() && cmd::Eq(args[0], "replconf");
    const bool own = args.empty() || replconf || cmd::Eq(args[0], "ping");
    if (replconf && args.size() > 1 && cmd::Eq(args[1], "getack") &&
        !Ack(c)) {
      why_ = "the link to the master broke";
      return false;
    }
    if (!own) {
      // Inside a command (or a MULTI not executed yet) the offset does
      // not describe the data: a link killed there leaves a full sync.
      b_->resumable.store(0);
      const std::string out = local_.Run(args);
      if (!out.empty() && out[0] == '-' &&
          b_->stream_errors.fetch_add(1) < 20) {
        std::fprintf(stderr, "shmkv replica link: the master's %.*s failed "
                     "here: %.*s\n", static_cast<int>(args[0].size()),
                     args[0].data(), static_cast<int>(out.find('\r')),
                     out.c_str());
      }
    }
    offset_ += used;
    b_->offset.store(offset_);
    if (!own) {
      b_->stream_db.store(local_.client()->db);
      b_->resumable.store(local_.client()->in_multi ? 0 : 1);
    }
    return true;
  }

  const Options& o_;
  Store* store_;
  SharedRepl* repl_;
  ReplBlock* b_;
  LocalCommands local_;
  std::unique_ptr<PubSubHub> hub_;
  std::string host_, port_;
  uint64_t gen_ = 0;
  uint64_t offset_ = 0;
  std::string why_;
};

}  // namespace

int RunReplicaLink(const Options& o, const StoreConfig& sc) {
  struct sigaction sa = {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::string err;
  std::unique_ptr<Store> store = Store::Open(sc, false, &err);
  SharedRepl* repl = store ? store->Repl(&err) : nullptr;
  if (repl == nullptr) {
    std::fprintf(stderr, "shmkv replica link: %s\n", err.c_str());
    return 1;
  }
  Link link(o, store.get(), repl);
  return link.Run();
}

}  // namespace shmkv
