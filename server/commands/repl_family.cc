#include "server/commands/repl_family.h"

#include <signal.h>
#include <strings.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <string>

#include "server/commands/command_util.h"
#include "server/store/repl.h"

namespace shmkv {
namespace cmd {

namespace {

SharedRepl* ReplOrError(CommandContext* c, Reply* r) {
  std::string err;
  SharedRepl* repl = c->store->Repl(&err);
  if (repl == nullptr) r->Error("ERR replication state unavailable: " + err);
  return repl;
}

void SleepMs(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, nullptr);
}

// REPLICAOF NO ONE: writes stay refused (kPromoting) until the link has
// stopped between two commands, so no streamed command lands after the
// reply; a link that does not stop within 2 s is killed (the journal
// makes its last command all or nothing).
void Promote(SharedRepl* repl, CommandContext* c) {
  {
    auto lock = c->store->Begin();
    if (repl->Mode() == ReplMode::kMaster) return;
    repl->SetMode(ReplMode::kPromoting);
  }
  ReplBlock* b = repl->block();
  for (int i = 0; i < 2000 && RunningLink(b) != 0; ++i) SleepMs(1);
  uint64_t pid = b->link_pid.load();
  if (pid_t link = RunningLink(b)) {
    kill(link, SIGKILL);
    for (int i = 0; i < 1000 && RunningLink(b) != 0; ++i) SleepMs(1);
  }
  auto lock = c->store->Begin();
  b->link_pid.compare_exchange_strong(pid, 0);
  repl->Promote();
  repl->SetState(LinkState::kDown);
  repl->SetMode(ReplMode::kMaster);
  std::fprintf(stderr, "shmkv: MASTER MODE enabled (REPLICAOF NO ONE)\n");
}

const char* RoleState(LinkState s) {
  switch (s) {
    case LinkState::kDown: return "connect";
    case LinkState::kConnecting: return "connecting";
    case LinkState::kTransfer:
    case LinkState::kLoading: return "sync";
    case LinkState::kUp: return "connected";
  }
  return "unknown";
}

int64_t SecondsSince(int64_t ms) { return (NowMs() - ms) / 1000; }

}  // namespace

void ReplicaOf(const Args& a, CommandContext* c, Reply* r) {
  SharedRepl* repl = ReplOrError(c, r);
  if (repl == nullptr) return;
  if (Eq(a[1], "no") && Eq(a[2], "one")) {
    Promote(repl, c);
    r->Simple("OK");
    return;
  }
  int64_t port = 0;
  if (!ToInt(a[2], &port) || port < 0 || port > 65535) {
    r->Error("ERR Invalid master port");
    return;
  }
  std::string host(a[1]);
  if (host.size() >= kReplHostWords * 8) {
    r->Error("ERR master host name too long");
    return;
  }
  auto lock = c->store->Begin();
  if (repl->Mode() != ReplMode::kMaster) {
    std::string h;
    uint64_t p = 0, gen = 0;
    repl->Target(&h, &p, &gen);
    if (strcasecmp(h.c_str(), host.c_str()) == 0 &&
        p == static_cast<uint64_t>(port)) {
      r->Simple("OK Already connected to specified master");
      return;
    }
  }
  repl->SetTarget(host, static_cast<uint64_t>(port));
  repl->SetState(LinkState::kDown);
  repl->SetMode(ReplMode::kReplica);
  std::fprintf(stderr, "shmkv: REPLICAOF %s:%" PRId64 " enabled\n",
               host.c_str(), port);
  r->Simple("OK");
}

void Role(const Args&, CommandContext* c, Reply* r) {
  SharedRepl* repl = ReplOrError(c, r);
  if (repl == nullptr) return;
  ReplView v = repl->View();
  if (v.mode == ReplMode::kMaster) {
    r->Array(3);
    r->Bulk("master");
    r->Int(static_cast<int64_t>(v.offset));
    r->Array(0);
    return;
  }
  r->Array(5);
  r->Bulk("slave");
  r->Bulk(v.host);
  r->Int(static_cast<int64_t>(v.port));
  r->Bulk(RoleState(v.state));
  r->Int(v.state == LinkState::kUp ? static_cast<int64_t>(v.offset) : -1);
}

bool ReplicaLoading(CommandContext* c) {
  SharedRepl* repl = c->store->Repl();
  return repl != nullptr && repl->Mode() == ReplMode::kLoading;
}

std::string ReplicationInfo(CommandContext* c) {
  std::string s;
  auto line = [&](const char* k, const std::string& v) {
    s += k;
    s += ':';
    s += v;
    s += "\r\n";
  };
  auto num = [](int64_t n) { return std::to_string(n); };
  SharedRepl* repl = c->store->Repl();
  ReplView v;
  if (repl != nullptr) v = repl->View();
  const bool replica = v.mode != ReplMode::kMaster;
  line("role", replica ? "slave" : "master");
  if (replica) {
    const bool up = v.state == LinkState::kUp;
    line("master_host", v.host);
    line("master_port", num(static_cast<int64_t>(v.port)));
    line("master_link_status", up ? "up" : "down");
    line("master_last_io_seconds_ago",
         v.last_io_ms != 0 && up ? num(SecondsSince(v.last_io_ms)) : "-1");
    line("master_sync_in_progress",
         v.state == LinkState::kTransfer ? "1" : "0");
    line("slave_read_repl_offset", num(static_cast<int64_t>(v.offset)));
    line("slave_repl_offset", num(static_cast<int64_t>(v.offset)));
    if (v.state == LinkState::kTransfer) {
      line("master_sync_total_bytes", num(static_cast<int64_t>(v.sync_total)));
      line("master_sync_read_bytes", num(static_cast<int64_t>(v.sync_read)));
      line("master_sync_left_bytes",
           num(static_cast<int64_t>(v.sync_total - v.sync_read)));
      char perc[32];
      std::snprintf(perc, sizeof(perc), "%.2f",
                    v.sync_total == 0 ? 0.0
                                      : 100.0 * static_cast<double>(v.sync_read) /
                                            static_cast<double>(v.sync_total));
      line("master_sync_perc", perc);
      line("master_sync_last_io_seconds_ago",
           v.last_io_ms != 0 ? num(SecondsSince(v.last_io_ms)) : "-1");
    }
    if (!up) {
      line("master_link_down_since_seconds",
           v.down_since_ms != 0 ? num(SecondsSince(v.down_since_ms)) : "-1");
    }
    line("slave_priority", "100");
    line("slave_read_only", "1");
    line("replica_announced", "1");
  }
  line("connected_slaves", "0");
  line("master_failover_state", "no-failover");
  // As Redis: a replica shows its master's id once synced.
  line("master_replid",
       replica && !v.replid.empty() ? v.replid : v.own_replid);
  line("master_replid2",
       v.replid2.empty() ? std::string(40, '0') : v.replid2);
  line("master_repl_offset", num(static_cast<int64_t>(v.offset)));
  line("second_repl_offset",
       v.second_offset != 0 ? num(static_cast<int64_t>(v.second_offset))
                            : "-1");
  // No backlog: shmkv does not serve replicas of its own.
  line("repl_backlog_active", "0");
  line("repl_backlog_size", "1048576");
  line("repl_backlog_first_byte_offset", "0");
  line("repl_backlog_histlen", "0");
  // shmkv's own: syncs done and streamed commands that failed here.
  line("shmkv_full_syncs", num(static_cast<int64_t>(v.full_syncs)));
  line("shmkv_partial_syncs", num(static_cast<int64_t>(v.partial_syncs)));
  line("shmkv_stream_errors", num(static_cast<int64_t>(v.stream_errors)));
  if (replica) line("shmkv_link_pid", num(static_cast<int64_t>(v.link_pid)));
  return s;
}

}  // namespace cmd
}  // namespace shmkv
