// shmkv's scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and
// SCRIPT (docs/server.md, "Scripts"). The Lua side is script_lua.cc;
// the bodies live in the store's shared script cache
// (server/store/scripts.h), each worker compiling a script once, the
// first time it runs it.
//
// A script runs inside one write transaction (Store::Txn): it holds the
// write lock from its first command to its last, its reads see its own
// writes, and its writes are committed together at its end, journaled
// like EXEC's. So it is atomic for every client of every worker, and a
// worker killed mid-script leaves none of its writes. As in Redis, a
// script that fails part-way keeps the writes it made before failing.
#include <memory>
#include <string>
#include <unordered_map>

#include "server/commands/command_util.h"
#include "server/commands/notify.h"
#include "server/commands/script_lua.h"
#include "server/store/scripts.h"

namespace shmkv {
namespace cmd {

namespace {

constexpr const char* kNoScriptError =
    "NOSCRIPT No matching script. Please use EVAL.";

// What this process knows of the scripts it compiled: their shebang
// flags (the Lua state keeps the functions).
std::unordered_map<std::string, ScriptFlags>& Compiled() {
  static auto* m = new std::unordered_map<std::string, ScriptFlags>();
  return *m;
}

void ForgetCompiled() {
  LuaScripts::Instance()->Forget();
  Compiled().clear();
}

// Compiles `body` as `sha` in this process unless it is already: false
// with the reply written when it does not compile.
bool EnsureCompiled(const std::string& sha, std::string_view body,
                    Reply* r) {
  if (Compiled().count(sha) != 0) return true;
  ScriptFlags flags;
  std::string err;
  if (!ParseShebang(body, &flags, &err) ||
      !LuaScripts::Instance()->Compile(sha, body.substr(flags.skip), &err)) {
    r->Error(err);
    return false;
  }
  Compiled()[sha] = flags;
  return true;
}

// The shared cache, or the reply saying why there is none.
ScriptCache* Cache(CommandContext* c, Reply* r) {
  std::string err;
  ScriptCache* cache = c->store->Scripts(&err);
  if (cache == nullptr) r->Error("ERR the script cache is unavailable: " + err);
  return cache;
}

// Runs `f` inside the command's transaction: EXEC's when inside one,
// else one of its own, committed after f (whatever f replied: a script
// that failed keeps its writes, as in Redis).
template <class F>
void InTransaction(CommandContext* c, Reply* r, F f) {
  if (c->txn != nullptr) return f();
  auto txn = c->store->Begin();
  c->txn = txn.get();
  // As dispatch: the client's database read again under the lock.
  uint32_t db = txn->Physical(c->client->db);
  c->store->UseDb(db);
  txn->UseDb(db);
  size_t mark = r->Mark();
  f();
  c->txn = nullptr;
  Store::Status st = txn->Commit();
  if (st != Store::Status::kOk) {
    r->Rewind(mark);
    StoreError(st, r);
  } else {
    PublishEvents(c);  // the script's keyspace events, still locked
  }
  c->events.clear();
}

// EVAL script numkeys [key ...] [arg ...] and its three kin.
void EvalGeneric(const Args& a, CommandContext* c, Reply* r, bool by_sha,
                 bool read_only) {
  ScriptCache* cache = Cache(c, r);
  if (cache == nullptr) return;
  std::string sha = by_sha ? Lower(a[1]) : Sha1Hex(a[1]);
  // As Redis: an unknown script is told before the arguments are read.
  if (by_sha && !cache->Has(sha)) return r->Error(kNoScriptError);
  int64_t numkeys = 0;
  if (!ToInt(a[2], &numkeys)) return NotInt(r);
  if (numkeys > static_cast<int64_t>(a.size()) - 3) {
    return r->Error("ERR Number of keys can't be greater than number of "
                    "args");
  }
  if (numkeys < 0) return r->Error("ERR Number of keys can't be negative");
  Args keys(a.begin() + 3, a.begin() + 3 + numkeys);
  Args argv(a.begin() + 3 + numkeys, a.end());
  InTransaction(c, r, [&] {
    if (by_sha) {
      // Under the lock, again: a SCRIPT FLUSH (through any worker) may
      // have come since; the body is read only when not compiled here.
      std::string body;
      bool compiled = Compiled().count(sha) != 0;
      if (compiled ? !cache->Has(sha) : !cache->Get(sha, &body)) {
        // What this process compiled is stale too.
        if (!Compiled().empty()) ForgetCompiled();
        return r->Error(kNoScriptError);
      }
      if (!compiled && !EnsureCompiled(sha, body, r)) return;
    } else {
      if (!EnsureCompiled(sha, a[1], r)) return;
      // A full cache does not stop EVAL: the script runs uncached (an
      // EVALSHA of it answers NOSCRIPT, and clients send EVAL again).
      std::string err;
      cache->Put(sha, a[1], &err);
    }
    bool ro = read_only || Compiled()[sha].no_writes;
    ClientState* cl = c->client;
    uint32_t db = cl->db;
    bool deny = c->deny_blocking;
    c->deny_blocking = true;  // as in EXEC: a blocking command answers at once
    bool wrote = false;
    LuaScripts::Instance()->Run(sha, keys, argv, ro, c, r, &wrote, a);
    c->deny_blocking = deny;
    cl->db = db;  // a SELECT inside the script was the script's own
  });
  // Bounded: scripts compiled here and flushed since are dropped.
  if (Compiled().size() > 2 * cache->Count() + 1024) ForgetCompiled();
}

void Eval(const Args& a, CommandContext* c, Reply* r) {
  EvalGeneric(a, c, r, false, false);
}
void EvalSha(const Args& a, CommandContext* c, Reply* r) {
  EvalGeneric(a, c, r, true, false);
}
void EvalRo(const Args& a, CommandContext* c, Reply* r) {
  EvalGeneric(a, c, r, false, true);
}
void EvalShaRo(const Args& a, CommandContext* c, Reply* r) {
  EvalGeneric(a, c, r, true, true);
}

// SCRIPT LOAD script | EXISTS sha [sha ...] | FLUSH [ASYNC|SYNC] | KILL
// | HELP
void Script(const Args& a, CommandContext* c, Reply* r) {
  auto arity = [&](const char* sub) {
    r->Error(std::string("ERR wrong number of arguments for 'script|") +
             sub + "' command");
  };
  if (Eq(a[1], "help")) {
    if (a.size() != 2) return arity("help");
    HelpReply(r, "SCRIPT", {
        "EXISTS <sha1> [<sha1> ...]",
        "    For each script, 1 if the script cache holds it, else 0.",
        "FLUSH [ASYNC|SYNC]",
        "    Empties the script cache (of every worker).",
        "KILL",
        "    Stops the script that runs too long, if it wrote nothing.",
        "LOAD <script>",
        "    Adds a script to the cache and answers its SHA1 digest."});
    return;
  }
  ScriptCache* cache = nullptr;
  if (Eq(a[1], "load")) {
    if (a.size() != 3) return arity("load");
    if ((cache = Cache(c, r)) == nullptr) return;
    std::string sha = Sha1Hex(a[2]);
    InTransaction(c, r, [&] {
      if (!EnsureCompiled(sha, a[2], r)) return;
      std::string err;
      if (!cache->Put(sha, a[2], &err)) return r->Error(err);
      r->Bulk(sha);
    });
  } else if (Eq(a[1], "exists")) {
    if (a.size() < 3) return arity("exists");
    if ((cache = Cache(c, r)) == nullptr) return;
    r->Array(a.size() - 2);
    for (size_t i = 2; i < a.size(); ++i) {
      r->Int(cache->Has(Lower(a[i])) ? 1 : 0);
    }
  } else if (Eq(a[1], "flush")) {
    if (a.size() > 3 ||
        (a.size() == 3 && !Eq(a[2], "async") && !Eq(a[2], "sync"))) {
      return r->Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    if ((cache = Cache(c, r)) == nullptr) return;
    InTransaction(c, r, [&] {
      cache->Flush();
      ForgetCompiled();
      r->Simple("OK");
    });
  } else if (Eq(a[1], "kill")) {
    if (a.size() != 2) return arity("kill");
    ReplyKill(c->store, true, r);
  } else {
    r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
             "'. Try SCRIPT HELP.");
  }
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kScriptRows[] = {
    {"eval", 159, -3, kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kMovableKeys | kMayReplicate, 0, 0, 0, Eval},
    {"evalsha", 160, -3, kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kMovableKeys | kMayReplicate, 0, 0, 0,
     EvalSha},
    {"eval_ro", 161, -3, kReadOnly | kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kMovableKeys, 0, 0, 0, EvalRo},
    {"evalsha_ro", 162, -3, kReadOnly | kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kMovableKeys, 0, 0, 0,
     EvalShaRo},
    {"script", 163, -2, kNoScript | kContainer, 0, 0, 0, Script},
};

}  // namespace

void RegisterScriptFamily(Registry* r) { r->Add(kScriptRows, "script"); }

}  // namespace cmd
}  // namespace shmkv
