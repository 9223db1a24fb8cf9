// shmkv's server commands (INFO, CONFIG, COMMAND, TIME, SAVE, ...) and
// the statistics pages INFO and HTTP /stats show; the connection's own
// commands are in connection_family.cc.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/commands/command_util.h"
#include "server/commands/config_family.h"
#include "server/commands/persist_family.h"
#include "server/commands/repl_family.h"
#include "server/commands/latency_family.h"
#include "server/commands/notify.h"
#include "server/commands/pubsub_hub.h"
#include "server/commands/script_lua.h"
#include "server/store/scripts.h"
#include "server/commands/reply.h"

namespace shmkv {

namespace cmd {

namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// A byte count as Redis's *_human fields write it: B, then K, M, G, T, P
// of 1024 with two decimals.
std::string HumanBytes(uint64_t n) {
  const char* units = "KMGTP";
  if (n < 1024) return std::to_string(n) + "B";
  double v = static_cast<double>(n) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < 5) {
    v /= 1024;
    ++u;
  }
  return Fmt("%.2f", v) + units[u];
}

}  // namespace

// INFO [section ...]
void Info(const Args& a, CommandContext* c, Reply* r) {
  r->Verbatim(InfoText(c, std::vector<std::string_view>(a.begin() + 1,
                                                             a.end())));
}

// The row COMMAND INFO gives for a command.
void CommandInfo(const CommandRow& row, Reply* r) {
  r->Array(10);
  r->Bulk(row.name);
  r->Int(row.arity);
  // Redis's names, in Redis's order; a container's are its subcommands'.
  static const std::pair<uint32_t, const char*> kNames[] = {
      {kWrite, "write"}, {kReadOnly, "readonly"}, {kDenyOom, "denyoom"},
      {kAdmin, "admin"}, {kPubSub, "pubsub"}, {kNoScript, "noscript"},
      {kBlocking, "blocking"}, {kLoading, "loading"}, {kStale, "stale"},
      {kSkipMonitor, "skip_monitor"}, {kSkipSlowlog, "skip_slowlog"},
      {kFast, "fast"}, {kNoAuth, "no_auth"},
      {kNoMandatoryKeys, "no_mandatory_keys"},
      {kNoAsyncLoading, "no_async_loading"}, {kNoMulti, "no_multi"},
      {kMovableKeys, "movablekeys"}, {kAllowBusy, "allow_busy"}};
  const uint32_t shown = (row.flags & kContainer) != 0 ? 0 : row.flags;
  size_t n = 0;
  for (const auto& f : kNames) n += (shown & f.first) != 0;
  r->Set(n);
  for (const auto& f : kNames) {
    if ((shown & f.first) != 0) r->Simple(f.second);
  }
  r->Int(row.first_key);
  r->Int(row.last_key);
  r->Int(row.key_step);
  for (int k = 0; k < 4; ++k) r->Set(0);  // acl, tips, keys, subs
}

namespace {

// The arguments of `a` (a command and its arguments) that are keys, as
// COMMAND GETKEYS gives them: the row's first / last / step, or, for the
// commands whose keys move with their arguments, read as Redis reads
// them. False when the arguments name none (*none_ok: an empty answer
// is right, for the scripts' commands).
bool KeyArgs(const CommandRow& row, const Args& a,
             std::vector<std::string_view>* keys, bool* none_ok) {
  const std::string_view name = row.name;
  *none_ok = false;
  // numkeys at `at`, the keys after it; `before`: keys ahead of it
  auto counted = [&](size_t at, size_t before) {
    for (size_t i = 1; i <= before; ++i) keys->push_back(a[i]);
    int64_t n = 0;
    if (at >= a.size() || !ToInt(a[at], &n) || n < 0 ||
        n > static_cast<int64_t>(a.size() - at - 1)) {
      return false;
    }
    for (int64_t i = 0; i < n; ++i) keys->push_back(a[at + 1 + i]);
    return !keys->empty();
  };
  if (name == "eval" || name == "evalsha" || name == "eval_ro" ||
      name == "evalsha_ro" || name == "fcall" || name == "fcall_ro") {
    *none_ok = true;
    return counted(2, 0);
  }
  if (name == "zunionstore" || name == "zinterstore" || name == "zdiffstore") {
    return counted(2, 1);
  }
  if (name == "zunion" || name == "zinter" || name == "zdiff" ||
      name == "zintercard" || name == "sintercard" || name == "lmpop" ||
      name == "zmpop") {
    return counted(1, 0);
  }
  if (name == "blmpop" || name == "bzmpop") return counted(2, 0);
  if (name == "xread" || name == "xreadgroup") {
    // The first half of what follows STREAMS.
    for (size_t i = 1; i < a.size(); ++i) {
      if (!Eq(a[i], "streams")) continue;
      // An odd count: its last word is an ID without a key, as Redis's
      // key specification reads it.
      const size_t n = (a.size() - i - 1) / 2;
      if (n == 0) return false;
      for (size_t k = 0; k < n; ++k) keys->push_back(a[i + 1 + k]);
      return true;
    }
    return false;
  }
  if (name == "georadius" || name == "georadiusbymember") {
    // As Redis 7's key specifications: the source, then the key after
    // the first STORE and the one after the first STOREDIST, each looked
    // for from the word after the unit on.
    keys->push_back(a[1]);
    const size_t from = name == "georadius" ? 6 : 5;
    for (const char* word : {"store", "storedist"}) {
      for (size_t i = from; i < a.size(); ++i) {
        if (!Eq(a[i], word)) continue;
        if (i + 1 < a.size()) keys->push_back(a[i + 1]);
        break;
      }
    }
    return true;
  }
  if (name == "sort") {
    // As Redis's scan: the last STORE's key is the one, and the word
    // after STORE is read as an option too.
    keys->push_back(a[1]);
    std::string_view store;
    bool stored = false;
    for (size_t i = 2; i < a.size(); ++i) {
      if (Eq(a[i], "limit")) {
        i += 2;
      } else if (Eq(a[i], "get") || Eq(a[i], "by")) {
        i += 1;
      } else if (Eq(a[i], "store") && i + 1 < a.size()) {
        store = a[i + 1];
        stored = true;
      }
    }
    if (stored) keys->push_back(store);
    return true;
  }
  if (name == "migrate") {
    if (a.size() > 3 && a[3].empty()) {
      for (size_t i = 6; i < a.size(); ++i) {
        if (Eq(a[i], "keys")) {
          for (size_t k = i + 1; k < a.size(); ++k) keys->push_back(a[k]);
          return !keys->empty();
        }
      }
      return false;
    }
  }
  ForEachKeyIndex(row, a.size(), [&](size_t i) { keys->push_back(a[i]); });
  return !keys->empty();
}

// COMMAND GETKEYS command [arg ...]
void GetKeys(const Args& a, Reply* r) {
  const CommandRow* row = Commands().Find(a[2]);
  if (row == nullptr) return r->Error("ERR Invalid command specified");
  const Args cmd(a.begin() + 2, a.end());
  const std::string_view n = row->name;
  const bool movable =
      n == "eval" || n == "evalsha" || n == "eval_ro" || n == "evalsha_ro" ||
      n == "fcall" || n == "fcall_ro" || n == "zunion" || n == "zinter" ||
      n == "zdiff" || n == "zintercard" || n == "sintercard" ||
      n == "lmpop" || n == "zmpop" || n == "blmpop" || n == "bzmpop" ||
      n == "xread" || n == "xreadgroup" || n == "georadius" ||
      n == "georadiusbymember";
  if (row->first_key <= 0 && !movable) {
    return r->Error("ERR The command has no key arguments");
  }
  const int64_t argc = static_cast<int64_t>(cmd.size());
  if ((row->arity > 0 && row->arity != argc) ||
      (row->arity < 0 && argc < -row->arity)) {
    return r->Error("ERR Invalid number of arguments specified for command");
  }
  std::vector<std::string_view> keys;
  bool none_ok = false;
  if (!KeyArgs(*row, cmd, &keys, &none_ok)) {
    if (none_ok) return r->Array(0);
    return r->Error("ERR Invalid arguments specified for command");
  }
  r->Array(keys.size());
  for (std::string_view k : keys) r->Bulk(k);
}
}  // namespace

// COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | GETKEYS cmd ...]
// What clients ask on connect (redis-cli's hints come from DOCS; shmkv
// gives no documentation text).
void Command(const Args& a, CommandContext*, Reply* r) {
  const auto& rows = Commands().rows();
  std::string sub = a.size() > 1 ? Lower(a[1]) : "";
  if (a.size() == 1 || ((sub == "info" || sub == "docs") && a.size() == 2)) {
    sub == "docs" ? r->Map(rows.size()) : r->Array(rows.size());
    for (const CommandRow* row : rows) {
      if (sub == "docs") {
        r->Bulk(row->name);
        r->Map(0);
      } else {
        CommandInfo(*row, r);
      }
    }
  } else if (sub == "count" && a.size() == 2) {
    r->Int(static_cast<int64_t>(rows.size()));
  } else if (sub == "help" && a.size() == 2) {
    HelpReply(r, "COMMAND",
              {"(no subcommand)",
               "    Return details about every command shmkv serves.",
               "COUNT", "    Return the number of commands shmkv serves.",
               "DOCS [<command-name> ...]",
               "    Return the named commands' documentation (none is kept:",
               "    an empty map each), or every command's.",
               "GETKEYS <full-command>",
               "    Return the keys a whole command names.",
               "INFO [<command-name> ...]",
               "    Return details about the named commands, or every one."});
  } else if (sub == "info" || sub == "docs") {
    std::vector<const CommandRow*> found;
    for (size_t j = 2; j < a.size(); ++j) {
      found.push_back(Commands().Find(a[j]));
    }
    if (sub == "info") {
      r->Array(found.size());
      for (const CommandRow* row : found) {
        row == nullptr ? r->Null() : CommandInfo(*row, r);
      }
    } else {
      size_t n = 0;
      for (const CommandRow* row : found) n += row != nullptr;
      r->Map(n);
      for (const CommandRow* row : found) {
        if (row == nullptr) continue;
        r->Bulk(row->name);
        r->Map(0);
      }
    }
  } else if (sub == "getkeys") {
    if (a.size() < 4) {  // as Redis 7.0: a command and one argument
      return SubcommandArityError("command", "getkeys", r);
    }
    GetKeys(a, r);
  } else if (sub == "count" || sub == "help") {
    SubcommandArityError("command", sub, r);
  } else {
    r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
             "'. Try COMMAND HELP.");
  }
}

// SWAPDB index1 index2
void SwapDb(const Args& a, CommandContext* c, Reply* r) {
  int64_t x = 0, y = 0;
  if (!ToInt(a[1], &x) || x < INT32_MIN || x > INT32_MAX) {
    return r->Error("ERR invalid first DB index");
  }
  if (!ToInt(a[2], &y) || y < INT32_MIN || y > INT32_MAX) {
    return r->Error("ERR invalid second DB index");
  }
  int64_t n = static_cast<int64_t>(kDatabases);
  if (x < 0 || x >= n || y < 0 || y >= n) {
    return r->Error("ERR DB index is out of range");
  }
  c->txn->SwapDb(static_cast<uint32_t>(x), static_cast<uint32_t>(y));
  r->Simple("OK");
}

// TIME
void Time(const Args&, CommandContext*, Reply* r) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r->Array(2);
  r->Bulk(std::to_string(ts.tv_sec));
  r->Bulk(std::to_string(ts.tv_nsec / 1000));
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kServerRows[] = {
    {"time", 57, 1, kLoading | kStale | kFast, 0, 0, 0, Time},
    {"info", 58, -1, kLoading | kStale, 0, 0, 0, Info},
    {"command", 59, -1, kLoading | kStale, 0, 0, 0, Command},
    {"config", 60, -2, kAdmin | kNoScript | kLoading | kStale | kContainer, 0, 0, 0, Config},
    {"swapdb", 157, 3, kWrite | kFast, 0, 0, 0, SwapDb},
    {"latency", 174, -2, kAdmin | kNoScript | kLoading | kStale | kContainer, 0, 0, 0, Latency},
    {"save", 177, 1, kAdmin | kNoScript | kNoAsyncLoading | kNoMulti | kNotQueued | kLocked, 0, 0, 0, Save},
    {"lastsave", 178, 1, kLoading | kStale | kFast, 0, 0, 0, LastSave},
    {"bgsave", 179, -1, kAdmin | kNoScript | kNoAsyncLoading, 0, 0, 0, BgSave},
    // Not allow_busy, as Redis's is: it saves under the write lock a busy
    // script holds (COMMAND INFO shows the difference).
    {"shutdown", 180, -1,
     kAdmin | kNoScript | kLoading | kStale | kNoMulti | kNotQueued | kLocked,
     0, 0, 0, Shutdown},
    {"replicaof", 182, 3, kAdmin | kNoScript | kStale | kNoAsyncLoading, 0, 0, 0, ReplicaOf},
    {"slaveof", 183, 3, kAdmin | kNoScript | kStale | kNoAsyncLoading, 0, 0, 0, ReplicaOf},
    {"role", 184, 1, kNoScript | kLoading | kStale | kFast, 0, 0, 0, Role},
};

void RegisterServerFamily(Registry* r) {
  r->Add(kServerRows, "server");
}

}  // namespace cmd

using namespace cmd;  // NOLINT: the command layer's own helpers

namespace {

// A figure INFO and GET /stats both may report: its INFO section and name
// (nullptr: not in INFO), its /stats name (nullptr: INFO only), and its
// value; `text` values are quoted in JSON. One list, so the two cannot
// disagree.
struct Figure {
  const char* section;
  const char* info;
  const char* json;
  std::string value;
  bool text = false;
};

std::vector<Figure> Figures(CommandContext* c, const StatsTotals& t) {
  ControlBlock* ctl = c->store->control();
  auto n = [](uint64_t v) { return std::to_string(v); };
  auto relaxed = [](const std::atomic<uint64_t>& w) {
    return std::to_string(w.load(std::memory_order_relaxed));
  };
  uint64_t used = c->store->MemoryUsed(), total = c->store->MemoryTotal();
  Store::JournalStats js = c->store->journal_stats();
  const Store::SnapshotState snap = c->store->Snapshot();
  std::string err;
  ScriptCache* scripts = c->store->Scripts(&err);
  return {
      {"server", "redis_version", nullptr, "7.0.0"},
      {"server", "shmkv_version", "version", kVersion, true},
      {"server", "process_id", nullptr, n(getpid())},
      {"server", "master_pid", nullptr, n(ctl->master.Holder())},
      {"server", "tcp_port", nullptr, n(c->info->resp_port)},
      {"server", "http_port", nullptr, n(c->info->http_port)},
      {"server", "udp_port", nullptr, n(c->info->udp_port)},
      {"server", "workers", "workers", n(c->info->workers)},
      {"server", "segment", nullptr, c->info->name},
      {"server", "uptime_in_seconds", "uptime_s",
       n((NowMs() - c->info->start_ms) / 1000)},
      {"server", "reloads", nullptr, relaxed(ctl->reloads)},
      {"clients", "connected_clients", "connections", n(t.connections)},
      {"clients", "workers_alive", "workers_alive", n(t.workers_alive)},
      {"clients", "maxmemory_clients", nullptr, n(c->info->client_memory)},
      {"clients", "client_buffers", nullptr, n(t.client_buffers)},
      {"clients", "blocked_clients", "blocked_clients",
       n(c->waits != nullptr ? c->waits->Clients() : 0)},
      {"memory", "used_memory", "memory_used", n(used)},
      {"memory", "used_memory_human", nullptr, HumanBytes(used)},
      {"memory", "maxmemory", "memory_total", n(total)},
      {"memory", "maxmemory_human", nullptr, HumanBytes(total)},
      // A full store refuses writes (-OOM) and evicts nothing.
      {"memory", "maxmemory_policy", nullptr, "noeviction"},
      {"memory", "keys_capacity", "keys_capacity", n(c->store->Capacity())},
      {"memory", "value_pool", nullptr, c->store->ValuePool()},
      {"memory", "value_pool_reserved", nullptr,
       n(c->store->PoolReservedBytes())},
      {"memory", "value_pool_top", nullptr, n(c->store->PoolTopBytes())},
      {"memory", "memory_fill_pct", nullptr,
       Fmt("%.2f", total ? 100.0 * used / total : 0)},
      // The index holds keys and the parts of large collections alike.
      {"memory", "key_fill_pct", nullptr,
       Fmt("%.2f", 100.0 * (c->store->Keys() + c->store->Parts()) /
                       c->store->Capacity())},
      {"memory", "collection_parts", "collection_parts",
       n(c->store->Parts())},
      // This worker's Lua state; the script cache every worker shares.
      {"memory", "used_memory_lua", nullptr, n(LuaScripts::MemoryInUse())},
      // UNLINK, FLUSHALL ASYNC and the others free at once: nothing is
      // ever left for a background thread (Redis's test suite and
      // monitors wait on these).
      {"memory", "lazyfree_pending_objects", nullptr, "0"},
      {"memory", "used_memory_scripts", nullptr,
       n(scripts != nullptr ? scripts->MemoryUsed() : 0)},
      {"memory", "number_of_cached_scripts", nullptr,
       n(scripts != nullptr ? scripts->Count() : 0)},
      // What Redis's persistence section says that shmkv has: the RDB
      // file's time, the background save in progress and the last one's
      // outcome; no AOF. The copy-on-write size is the save's log of
      // blobs changed while it ran (server/store/cow.h), on disk. Loading:
      // a replica loading its master's dataset (server/replica_link.h).
      {"persistence", "loading", nullptr, ReplicaLoading(c) ? "1" : "0"},
      {"persistence", "async_loading", nullptr, "0"},
      {"persistence", "rdb_bgsave_in_progress", nullptr,
       snap.pid != 0 ? "1" : "0"},
      {"persistence", "rdb_last_save_time", "last_save_time",
       std::to_string(LastSaveTime(c))},
      {"persistence", "rdb_last_bgsave_status", nullptr,
       snap.last_failed ? "err" : "ok"},
      {"persistence", "rdb_current_bgsave_time_sec", nullptr,
       snap.pid != 0 ? std::to_string(std::max<int64_t>(
                           0, NowMs() / 1000 - snap.started_s))
                     : "-1"},
      {"persistence", "rdb_last_cow_size", "last_cow_size",
       n(snap.log_bytes)},
      {"persistence", "aof_enabled", nullptr, "0"},
      {"persistence", "aof_rewrite_in_progress", nullptr, "0"},
      {"stats", "total_connections_received", "connections_total",
       n(t.connections_total)},
      {"stats", "total_commands_processed", "commands", n(t.commands)},
      {"stats", "instantaneous_ops_per_sec", "ops_per_sec", n(t.ops_per_sec)},
      {"stats", "total_error_replies", "errors", n(t.errors)},
      {"stats", "total_net_input_bytes", nullptr, n(t.bytes_in)},
      {"stats", "total_net_output_bytes", nullptr, n(t.bytes_out)},
      {"stats", "lazyfreed_objects", nullptr, "0"},
      {"stats", "http_requests", "http_requests", n(t.http_requests)},
      {"stats", "connections_handed_over", nullptr, n(t.adopted)},
      {"stats", "evicted_clients", nullptr, n(t.evicted_clients)},
      {"stats", "timed_out_clients", nullptr, n(t.timed_out_clients)},
      {"stats", "rejected_connections", "rejected_connections",
       n(t.rejected_connections)},
      {"stats", "udp_requests", "udp_requests", n(t.udp.requests)},
      {"stats", "udp_bad_datagrams", "udp_bad_datagrams", n(t.udp.bad)},
      {"stats", "udp_denied_datagrams", "udp_denied_datagrams",
       n(t.udp.denied)},
      {"stats", "udp_reply_drops", "udp_reply_drops", n(t.udp.send_drops)},
      {"stats", "udp_receive_batches", "udp_receive_batches",
       n(t.udp.batches)},
      {"stats", "expired_keys", nullptr, relaxed(ctl->expired_keys)},
      // MIGRATE opens a connection per call and keeps none
      {"stats", "migrate_cached_sockets", nullptr, "0"},
      {"stats", "write_lock_recoveries", nullptr,
       relaxed(ctl->lock_recoveries)},
      {"stats", "journal_commits_recovered", nullptr, n(js.recovered)},
      {"stats", "journal_commits_undone", nullptr, n(js.undone)},
      {"stats", "journal_commits_dropped", nullptr, n(js.dropped)},
      {nullptr, nullptr, "keys", n(c->store->Keys())},
  };
}

}  // namespace

std::string InfoText(CommandContext* c,
                     const std::vector<std::string_view>& sections) {
  // As Redis 7: no section is "default"; "all", "everything" and
  // "default" name every section here (the statistics ones included);
  // several may be given; an unknown one adds nothing.
  bool all = sections.empty();
  std::vector<std::string> secs;
  for (std::string_view v : sections) {
    secs.push_back(Lower(v));
    all = all || secs.back() == "all" || secs.back() == "everything" ||
          secs.back() == "default";
  }
  StatsTotals t = MergedStats(c);
  std::string s;
  auto want = [&](const char* name) {
    return all || std::find(secs.begin(), secs.end(), name) != secs.end();
  };
  auto line = [&](const std::string& k, const std::string& v) {
    s += k + ":" + v + "\r\n";
  };
  std::vector<Figure> figures = Figures(c, t);
  const std::pair<const char*, const char*> kSections[] = {
      {"server", "# Server"}, {"clients", "# Clients"},
      {"memory", "# Memory"}, {"persistence", "# Persistence"},
      {"stats", "# Stats"}};
  for (const auto& sec : kSections) {
    if (!want(sec.first)) continue;
    s += sec.second;
    s += "\r\n";
    for (const Figure& f : figures) {
      if (f.section != nullptr && std::strcmp(f.section, sec.first) == 0) {
        line(f.info, f.value);
      }
    }
    s += "\r\n";
  }
  if (want("replication")) {
    s += "# Replication\r\n";
    s += ReplicationInfo(c);
    s += "\r\n";
  }
  if (want("cpu")) {
    s += "# CPU\r\n";
    // Every worker's CPU time (this instance's, past workers included).
    line("used_cpu_sys", Fmt("%.6f", t.cpu_sys_us / 1e6));
    line("used_cpu_user", Fmt("%.6f", t.cpu_user_us / 1e6));
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    line("used_cpu_sys_children", Fmt("%.6f", ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6));
    line("used_cpu_user_children", Fmt("%.6f", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6));
    s += "\r\n";
  }
  if (want("commandstats")) {
    s += "# Commandstats\r\n";
    for (size_t i = 0; i < kMaxCommands; ++i) {
      if (t.calls[i] == 0) continue;
      line(std::string("cmdstat_") + CommandName(i),
           "calls=" + std::to_string(t.calls[i]) + ",usec=" +
               std::to_string(t.usec[i]) + ",usec_per_call=" +
               Fmt("%.2f", static_cast<double>(t.usec[i]) / t.calls[i]));
    }
    s += "\r\n";
  }
  if (want("latencystats")) {
    s += "# Latencystats\r\n";
    LatencyTotals lat = MergedLatency(c);
    for (size_t i = 0; i < kMaxCommands; ++i) {
      if (t.calls[i] == 0) continue;
      std::string v;
      const char* names[3] = {"p50", "p99", "p99.9"};
      for (size_t q = 0; q < 3; ++q) {
        if (q) v += ",";
        v += std::string(names[q]) + "=" + Fmt("%.3f", LatencyUs(t, lat, i, q));
      }
      line(std::string("latency_percentiles_usec_") + CommandName(i), v);
    }
    s += "\r\n";
  }
  if (want("keyspace")) {
    s += "# Keyspace\r\n";
    // Each database that holds keys, by the number clients SELECT.
    for (uint32_t db = 0; db < kDatabases; ++db) {
      uint64_t expires = 0;
      uint64_t keys = c->store->KeysIn(c->store->Physical(db), &expires,
                                       c->txn != nullptr);
      if (keys == 0) continue;
      int64_t ttl =
          expires == 0 ? 0 : c->store->AverageTtl(c->store->Physical(db));
      line("db" + std::to_string(db), "keys=" + std::to_string(keys) +
                                          ",expires=" +
                                          std::to_string(expires) +
                                          ",avg_ttl=" + std::to_string(ttl));
    }
  }
  return s;
}

std::string StatsJson(CommandContext* c) {
  using Json = nlohmann::ordered_json;
  StatsTotals t = MergedStats(c);
  LatencyTotals lat = MergedLatency(c);
  Json j = Json::object();
  for (const Figure& f : Figures(c, t)) {
    if (f.json == nullptr) continue;
    // The figures /stats shows are counts, but for the version.
    if (f.text) {
      j[f.json] = f.value;
    } else {
      j[f.json] = static_cast<uint64_t>(std::strtoull(f.value.c_str(),
                                                      nullptr, 10));
    }
  }
  Json& commands = j["commands_stats"] = Json::object();
  for (size_t i = 0; i < kMaxCommands; ++i) {
    if (t.calls[i] == 0) continue;
    Json one = Json::object();
    one["calls"] = t.calls[i];
    const char* names[3] = {"p50_us", "p99_us", "p999_us"};
    for (size_t q = 0; q < 3; ++q) {
      double e = LatencyUs(t, lat, i, q);
      // Microseconds to the nanosecond, as INFO prints them.
      one[names[q]] = std::isfinite(e) ? Json(std::round(e * 1000) / 1000)
                                       : Json();
    }
    commands[CommandName(i)] = std::move(one);
  }
  return j.dump();
}

}  // namespace shmkv
