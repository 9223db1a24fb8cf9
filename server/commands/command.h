// shmkv's commands: the Redis string commands over a Store, plus the
// introspection redis-cli and redis-benchmark need (docs/server.md).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/reply.h"
#include "server/store/latency.h"
#include "server/store/stats.h"
#include "server/store/store.h"
#include "server/store/waits.h"

namespace shmkv {

class PubSubHub;  // server/commands/pubsub_hub.h

constexpr const char* kVersion = "0.1.0";

struct ServerInfo {
  uint64_t resp_port = 0, http_port = 0, udp_port = 0;
  uint64_t workers = 0;
  int64_t start_ms = 0;
  std::string name;  // the segment, as given on the command line
  // The settings CONFIG GET shows (fixed at start).
  std::string bind;  // addresses, space-separated
  bool protected_mode = false;
  uint64_t max_value = 0, memory = 0, capacity = 0, journal = 0;
  uint64_t timeout_s = 0;      // close clients idle this long; 0: never
  uint64_t client_memory = 0;  // bound on all clients' buffers, all workers
  uint64_t max_request = 0;    // bound on one request's bytes
  // Where SAVE writes its RDB file (Redis's dir and dbfilename): an
  // absolute directory, a file name in it.
  std::string dir = ".";
  std::string dbfilename = "dump.rdb";
  // Redis's save points ("SECS CHANGES ...", "" none), which the master
  // keeps (server/master.cc) and SHUTDOWN honours.
  std::string save;
};

// What a connection carries between its commands.
struct ClientState {
  uint64_t id = 0;      // CLIENT ID: unique per connection
  std::string name;     // CLIENT SETNAME
  std::string addr;     // peer "ip:port"
  bool authed = false;  // AUTH passed (or no password is set)
  uint32_t db = 0;      // SELECT: the logical database (0 .. 15)
  int resp = 2;         // HELLO: the protocol version, 2 or 3
  // MULTI ... EXEC: the queued commands, and whether one was refused
  // (EXEC then answers EXECABORT).
  bool in_multi = false;
  bool multi_failed = false;
  std::vector<std::vector<std::string>> queued;
  // WATCH: each key with what it was; watch_lost when the watches could
  // not follow the connection (a hot restart): EXEC then fails.
  std::vector<std::pair<std::string, WatchStamp>> watched;
  bool watch_lost = false;
  // Pub/sub (server/commands/pubsub_hub.h): the channels, patterns and
  // shard channels it subscribed to; while it holds any, RESP2 allows it
  // only the subscription commands, PING and QUIT.
  std::set<std::string> channels, patterns, shards;
  bool subscribed() const {
    return !channels.empty() || !patterns.empty() || !shards.empty();
  }
  // CLIENT REPLY OFF: no command's reply is sent; SKIP: the next
  // command's is not (Execute drops them; the subscription commands'
  // confirmations and messages are pushes, sent either way, as Redis 7
  // sends them).
  bool reply_off = false;
  bool reply_skip_next = false;
  // The connection that carries it, for the worker's delivery.
  void* conn = nullptr;
  // Whether the connection must stay with its worker (a hot restart hands
  // it over only between transactions, and keeps subscribers).
  bool in_transaction() const { return in_multi || subscribed(); }
};

namespace cmd {
struct CommandRow;
}

struct CommandContext {
  Store* store = nullptr;
  // The row of the command about to run, when its caller found it already
  // (a worker that parsed ahead), for the command whose name's bytes
  // start at row_for: dispatch takes it instead of finding the name again,
  // and clears it either way.
  const cmd::CommandRow* row_hint = nullptr;
  const char* row_for = nullptr;
  SharedStats* stats = nullptr;  // null: no statistics (all zero)
  SharedLatency* latency = nullptr;  // null: none (the estimators' figures)
  // Publishes this worker's own figures (connections, counts, latency)
  // into the shared ones, so a merge that answers a client (INFO, /stats,
  // LATENCY) counts what this worker has now, not at its last 100 ms
  // publication: the asking client among them. Null: nothing to publish.
  std::function<void()> publish_stats;
  // SHUTDOWN: asks the server (its master) to stop. Null: it cannot be
  // stopped from here (SHUTDOWN answers an error).
  std::function<void()> shutdown;
  // CLIENT UNBLOCK: ends the wait of this worker's client `id` if it is
  // blocked (as its timeout would, or with the UNBLOCKED error when
  // `error`): true when it was. Null: no client can be unblocked.
  std::function<bool(uint64_t id, bool error)> unblock_client;
  const ServerInfo* info = nullptr;
  bool quit = false;  // QUIT: reply, then close
  ClientState* client = nullptr;  // the command's connection: must be set
  Store::Txn* txn = nullptr;  // the transaction a command runs in, if any
  const std::string* password = nullptr;  // requirepass; null or empty: none
  uint64_t http_requests = 0;
  // Blocking commands (BLPOP and the others: docs/server.md, "Blocking
  // commands"). With no board, or may_block false (a caller that cannot
  // hold a client), they answer at once as their timeout would; with
  // deny_blocking (inside EXEC, as Redis's CLIENT_DENY_BLOCKING), as
  // their non-blocking forms would on empty keys.
  Waits* waits = nullptr;
  // This worker's pub/sub (null: PUBLISH reaches nobody, SUBSCRIBE is
  // refused).
  PubSubHub* pubsub = nullptr;
  bool may_block = false;
  bool deny_blocking = false;
  // The server's own commands (server/local_commands.h: the replication
  // link's, a file loaded): a replica runs them while it refuses clients'
  // writes.
  bool from_master = false;
  // Nonzero while a script's command runs: the protocol it replies in
  // (redis.setresp), whatever the client's.
  int script_resp = 0;
  // Keyspace events of the write that runs (server/commands/notify.h),
  // published once its transaction commits, dropped if it does not.
  struct Event {
    uint32_t cls;
    const char* name;
    uint32_t db;
    std::string key;
  };
  std::vector<Event> events;
  // Where the running command's events begin: a "new" event goes there,
  // before the command's own (Redis adds the key first).
  size_t events_mark = 0;
  // In: nonzero when the command is a blocked one tried again, its place
  // in line. Out: `blocked.ticket` nonzero when the command blocked (no
  // reply written): the caller holds the client until a key it waits on
  // is written (blocked.keys) or blocked.deadline_ns passes (0: never).
  uint64_t ticket = 0;
  struct Blocked {
    uint64_t ticket = 0;
    uint64_t deadline_ns = 0;  // CLOCK_MONOTONIC
    std::vector<uint64_t> keys;
    // The command to try again, when not the one given (XREAD's "$"
    // replaced by the ID it stood for); empty: the one given.
    std::vector<std::string> args;
  } blocked;
};

// Runs one command (args[0] is its name, any case) and writes its reply
// (r->error() tells whether it failed). Returns the command's statistics
// id (its row's; 0 for an unknown command).
size_t Execute(const std::vector<std::string_view>& args,
               CommandContext* ctx, Reply* r);

// The command of statistics id `id` ("" if unused).
const char* CommandName(size_t id);
// The statistics id of the command `name` (any case); 0 when unknown.
size_t CommandId(std::string_view name);

// The INFO text of the named sections (none: all of them).
std::string InfoText(CommandContext* ctx,
                     const std::vector<std::string_view>& sections);
std::string StatsJson(CommandContext* ctx);

// Redis glob matching (*, ?, [abc], [^a-z], \x).
bool GlobMatch(std::string_view pattern, std::string_view s);

}  // namespace shmkv
