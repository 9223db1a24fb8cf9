// Dispatch: a command's row found by name, arity and AUTH checked, MULTI
// queueing, and a write transaction per write command.
#include <string>
#include <string_view>

#include "server/commands/command_util.h"
#include "server/commands/notify.h"
#include "server/commands/script_lua.h"
#include "server/store/repl.h"

namespace shmkv {

namespace cmd {
void DiscardTransaction(ClientState* cl);  // transaction_family.cc
}  // namespace cmd

using namespace cmd;  // NOLINT: the command layer's own helpers

const char* CommandName(size_t id) { return Commands().NameOfId(id); }

size_t CommandId(std::string_view name) {
  const CommandRow* row = Commands().Find(name);
  return row == nullptr ? 0 : row->id;
}

namespace {

bool AllowedSubscribed(std::string_view name) {
  for (const char* n : {"subscribe", "unsubscribe", "psubscribe",
                        "punsubscribe", "ssubscribe", "sunsubscribe", "ping",
                        "quit", "reset"}) {
    if (name == n) return true;
  }
  return false;
}

// Commands Redis names with their subcommand ("pubsub|channels").
bool HasSubcommands(std::string_view name) {
  for (const char* n : {"pubsub", "client", "config", "command", "object",
                        "script", "memory", "function", "acl", "xinfo",
                        "xgroup", "cluster", "module"}) {
    if (name == n) return true;
  }
  return false;
}

}  // namespace

namespace {
size_t Run(const Args& args, CommandContext* ctx, Reply* r);
// Commands run inside another (EXEC's, a script's): their replies are
// parts of the outer one, which CLIENT REPLY drops or keeps whole.
thread_local int nesting = 0;
}  // namespace

namespace {
// A command's time (NowMs) from its start to its end, unless its caller
// froze it already (a worker does, from the clock read it takes anyway):
// the commands of an EXEC or a script run inside it, at its time.
class CommandClock {
 public:
  CommandClock() : was_(NowFrozen() ? -1 : FreezeNowMs(WallMs())) {}
  ~CommandClock() {
    if (was_ >= 0) FreezeNowMs(was_);
  }
  CommandClock(const CommandClock&) = delete;
  CommandClock& operator=(const CommandClock&) = delete;

 private:
  int64_t was_;
};
}  // namespace

size_t Execute(const Args& args, CommandContext* ctx, Reply* r) {
  ClientState* cl = ctx->client;
  CommandClock clock;
  if (nesting > 0 || (!cl->reply_off && !cl->reply_skip_next)) {
    ++nesting;
    size_t id = Run(args, ctx, r);
    --nesting;
    return id;
  }
  // CLIENT REPLY OFF or SKIP: the reply is written, then dropped, except
  // the subscription commands' (pushes Redis 7 sends either way).
  bool skip = cl->reply_skip_next;
  cl->reply_skip_next = false;
  size_t mark = r->Mark();
  ++nesting;
  size_t id = Run(args, ctx, r);
  --nesting;
  std::string_view name = CommandName(id);
  bool push = name == "subscribe" || name == "psubscribe" ||
              name == "ssubscribe" || name == "unsubscribe" ||
              name == "punsubscribe" || name == "sunsubscribe";
  // CLIENT REPLY ON clears SKIP before it answers: its OK is sent.
  if (skip && name == "client" && args.size() == 3 &&
      Eq(args[1], "reply") && Eq(args[2], "on")) {
    skip = false;
  }
  if ((cl->reply_off || skip) && !push) r->Rewind(mark);
  return id;
}

namespace {

// Whether any command queued in `cl`'s MULTI has `flag` (kDenyOom: may use
// more memory; kWrite), or, with `all`, whether every one does (kStale).
bool QueuedFlag(const ClientState* cl, uint32_t flag, bool all = false) {
  for (const auto& q : cl->queued) {
    if (q.empty()) continue;
    const CommandRow* row = Commands().Find(q[0]);
    const bool has = row != nullptr && (row->flags & flag) != 0;
    if (has != all) return has;
  }
  return all;
}

// Whether a replica whose link is down runs the command under
// replica-serve-stale-data no: its row's stale flag, or, for the
// containers whose subcommands differ in Redis, the subcommand's (SCRIPT
// LOAD and the HELPs are allowed).
bool StaleAllowed(const CommandRow& row, const Args& args) {
  if ((row.flags & kStale) != 0) return true;
  if (args.size() < 2) return false;
  const std::string_view name = row.name;
  if (name == "script" && Eq(args[1], "load")) return true;
  return Eq(args[1], "help") &&
         (name == "script" || name == "function" || name == "object" ||
          name == "memory" || name == "xinfo" || name == "xgroup");
}

size_t Run(const Args& args, CommandContext* ctx, Reply* r) {
  ClientState* cl = ctx->client;
  r->SetProtocol(ctx->script_resp != 0 ? ctx->script_resp : cl->resp);
  const CommandRow* row = ctx->row_hint != nullptr &&
                                  ctx->row_for == args[0].data()
                              ? ctx->row_hint
                              : Commands().Find(args[0]);
  ctx->row_hint = nullptr;
  ctx->row_for = nullptr;
  // A command refused before it runs also dooms the transaction it was
  // meant for (EXEC answers EXECABORT), as in Redis; a refused EXEC
  // itself discards the transaction and says why (execCommandAbort).
  auto refuse = [&](std::string_view msg) {
    if (row != nullptr && std::string_view(row->name) == "exec") {
      DiscardTransaction(cl);
      r->Error("EXECABORT Transaction discarded because of: " +
               std::string(msg));
      return;
    }
    r->Error(msg);
    if (cl->in_multi) cl->multi_failed = true;
  };
  if (row == nullptr) {
    std::string msg = "ERR unknown command '" +
                      std::string(args[0].substr(0, 128)) +
                      "', with args beginning with: ";
    for (size_t i = 1; i < args.size() && i < 4; ++i) {
      msg += '\'';
      msg += args[i].substr(0, 64);
      msg += "' ";
    }
    refuse(msg);
    return 0;
  }
  // As Redis: an unknown command is reported as such, a known one needs
  // AUTH first (except AUTH, HELLO and QUIT themselves).
  if (PasswordSet(ctx) && !cl->authed && (row->flags & kNoAuth) == 0) {
    refuse("NOAUTH Authentication required.");
    return row->id;
  }
  int n = static_cast<int>(args.size());
  if ((row->arity > 0 && n != row->arity) ||
      (row->arity < 0 && n < -row->arity)) {
    std::string msg = std::string("wrong number of arguments for '") +
                      row->name + "' command";
    if (std::string_view(row->name) == "exec") {
      // As Redis (execCommandAbort): a refused EXEC discards the
      // transaction, in MULTI or not, and says why.
      DiscardTransaction(cl);
      r->Error("EXECABORT Transaction discarded because of: " + msg);
      return row->id;
    }
    refuse("ERR " + msg);
    return row->id;
  }
  // A subscribed client may only change its subscriptions, PING and QUIT
  // in RESP2, as in Redis (RESP3 tells messages from replies by their
  // type, so it may run anything).
  std::string_view name = row->name;
  if (cl->subscribed() && cl->resp == 2 && !AllowedSubscribed(name)) {
    std::string shown(name);
    if (args.size() > 1 && HasSubcommands(name)) {
      shown.push_back('|');
      shown.append(Lower(args[1]));
    }
    refuse("ERR Can't execute '" + shown + "': only (P|S)SUBSCRIBE / "
           "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
           "context");
    return row->id;
  }
  // A script of another worker past the busy threshold: as Redis, every
  // command but those allowed while busy (kAllowBusy, SCRIPT KILL,
  // FUNCTION KILL and FUNCTION STATS) waits for it (docs/server.md,
  // "Scripts"); refused inside MULTI, it dooms the transaction, and a
  // refused EXEC discards it. (The word is read first: the threshold
  // only while a script runs.)
  ControlBlock* ctl = ctx->store->control();
  if (ctl->script_busy.load(std::memory_order_relaxed) != 0 &&
      (row->flags & kAllowBusy) == 0 &&
      ScriptBusyElsewhere(
          ctl, ctx->store->GetSetting(Setting::kBusyReplyThreshold)) &&
      !(name == "script" && args.size() == 2 && Eq(args[1], "kill")) &&
      !(name == "function" && args.size() == 2 &&
        (Eq(args[1], "kill") || Eq(args[1], "stats")))) {
    RunningScript running;
    refuse(BusyText(ReadRunning(ctx->store, &running) && running.function));
    return row->id;
  }
  // A replica (docs/server.md, "Replicating from Redis"): clients' writes
  // are refused, and while it loads its master's dataset, everything but
  // the commands Redis allows then.
  if (!ctx->from_master) {
    if (SharedRepl* repl = ctx->store->Repl()) {
      ReplMode mode = repl->Mode();
      if (mode != ReplMode::kMaster && (row->flags & kWrite) != 0 &&
          (row->flags & kAdmin) == 0) {
        refuse("READONLY You can't write against a read only replica.");
        return row->id;
      }
      // replica-serve-stale-data no: while the link is not up, only the
      // commands flagged stale run (an EXEC only when each command it
      // holds is one), as Redis.
      if (mode != ReplMode::kMaster && repl->State() != LinkState::kUp &&
          (!StaleAllowed(*row, args) ||
           (name == "exec" && cl->in_multi && !QueuedFlag(cl, kStale, /*all=*/true))) &&
          ctx->store->GetSetting(Setting::kServeStaleData) == 0) {
        refuse("MASTERDOWN Link with MASTER is down and "
               "replica-serve-stale-data is set to 'no'.");
        return row->id;
      }
      if (mode == ReplMode::kLoading && (row->flags & kLoading) == 0) {
        refuse("LOADING Redis is loading the dataset in memory");
        return row->id;
      }
    }
  }
  // Past maxmemory (CONFIG SET lowered it under what the store holds),
  // as Redis: a command that may use more memory is refused before it
  // runs, so is any command queued in MULTI (it dooms the transaction),
  // and an EXEC holding such a command. Without maxmemory set, --memory
  // is the limit and the store refuses a commit that does not fit (-OOM
  // the store is full), as a Redis without maxmemory checks nothing
  // first: the setting is read first, the memory figures only then.
  if (!ctx->from_master && ctx->txn == nullptr &&
      ((row->flags & kDenyOom) != 0 ||
       (cl->in_multi && (row->flags & kNotQueued) == 0) ||
       (name == "exec" && cl->in_multi) ||
       (name == "function" && args.size() > 1 &&
        (Eq(args[1], "load") || Eq(args[1], "restore")))) &&
      ctx->store->GetSetting(Setting::kMaxMemory) > 0 &&
      ctx->store->MemoryUsed() > ctx->store->MemoryTotal() &&
      (name != "exec" || QueuedFlag(cl, kDenyOom))) {
    refuse("OOM command not allowed when used memory > 'maxmemory'.");
    return row->id;
  }
  // min-replicas-to-write: a master with fewer good replicas refuses
  // writes (queued in MULTI too, and an EXEC holding one), as Redis. A
  // shmkv store serves no replicas, so any value above 0 refuses them.
  if (!ctx->from_master && ctx->txn == nullptr &&
      ((row->flags & kWrite) != 0 ||
       (name == "exec" && cl->in_multi && QueuedFlag(cl, kWrite))) &&
      ctx->store->GetSetting(Setting::kMinReplicas) > 0) {
    refuse("NOREPLICAS Not enough good replicas to write.");
    return row->id;
  }
  if (cl->in_multi && (row->flags & kNotQueued) == 0) {
    cl->queued.emplace_back(args.begin(), args.end());
    r->Simple("QUEUED");
    return row->id;
  }
  // The client's database, as SWAPDB left it (in EXEC, with the
  // transaction's own SWAPDBs).
  uint32_t db = ctx->txn != nullptr ? ctx->txn->Physical(cl->db)
                                    : ctx->store->Physical(cl->db);
  ctx->store->UseDb(db);
  if (ctx->txn != nullptr) ctx->txn->UseDb(db);
  if ((row->flags & (kWrite | kLocked)) == 0 ||
      (row->flags & kOwnCommit) != 0 || ctx->txn != nullptr) {
    // Inside EXEC or a script: a command that failed keeps no events.
    size_t events = ctx->events.size();
    ctx->events_mark = events;
    row->run(args, ctx, r);
    if (r->error()) ctx->events.resize(events);
    return row->id;
  }
  // A write command outside EXEC: a transaction of its own, committed
  // unless the command refused its arguments.
  auto txn = ctx->store->Begin();
  ctx->txn = txn.get();
  // Read again under the lock: a SWAPDB that committed since the read
  // above moved the client's database.
  db = txn->Physical(cl->db);
  ctx->store->UseDb(db);
  txn->UseDb(db);
  size_t mark = r->Mark();
  ctx->events_mark = ctx->events.size();
  row->run(args, ctx, r);
  ctx->txn = nullptr;
  if (!r->error()) {
    Store::Status st = txn->Commit();
    if (st != Store::Status::kOk) {
      r->Rewind(mark);
      StoreError(st, r);
    } else if (!ctx->events.empty()) {
      PublishEvents(ctx);  // still under the lock
    }
  }
  ctx->events.clear();
  return row->id;
}

}  // namespace

bool GlobMatch(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0;
  size_t star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size()) {
      char pc = p[pi];
      if (pc == '*') {
        star_p = pi++;
        star_s = si;
        continue;
      }
      if (pc == '?') {
        ++pi;
        ++si;
        continue;
      }
      if (pc == '[') {
        size_t j = pi + 1;
        bool neg = j < p.size() && p[j] == '^';
        if (neg) ++j;
        bool hit = false;
        while (j < p.size() && p[j] != ']') {
          if (p[j] == '\\' && j + 1 < p.size()) {
            hit |= p[j + 1] == s[si];
            j += 2;
          } else if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            char lo = p[j], hi = p[j + 2];
            if (lo > hi) std::swap(lo, hi);
            hit |= s[si] >= lo && s[si] <= hi;
            j += 3;
          } else {
            hit |= p[j] == s[si];
            ++j;
          }
        }
        if (j < p.size() && hit != neg) {
          pi = j + 1;
          ++si;
          continue;
        }
      } else {
        if (pc == '\\' && pi + 1 < p.size()) pc = p[++pi];
        if (pc == s[si]) {
          ++pi;
          ++si;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p + 1;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace shmkv
