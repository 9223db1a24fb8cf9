// shmkv's command table and dispatch: arity, AUTH, MULTI queueing, a
// write transaction per write command, and the transaction commands.
#include "server/commands.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/command_util.h"
#include "server/resp.h"

namespace shmkv {

namespace {

using namespace cmd;  // NOLINT: the command layer's own helpers

// Flags of a command.
enum : uint32_t {
  kWrite = 1,      // runs in a write transaction
  kNotQueued = 2,  // runs at once inside MULTI (EXEC, DISCARD, ...)
};

struct Spec {
  const char* name;
  int arity;  // > 0: exactly; < 0: at least -arity (name included)
  Handler run;
  uint32_t flags;
};

// --- transactions --------------------------------------------------------

void ClearTransaction(ClientState* cl) {
  cl->in_multi = false;
  cl->multi_failed = false;
  cl->queued.clear();
  cl->watched.clear();
  cl->watch_lost = false;
}

void Multi(const Args&, CommandContext* c, std::string* o, bool* e) {
  if (c->client->in_multi) return Err(o, e, "ERR MULTI calls can not be nested");
  c->client->in_multi = true;
  ReplySimple(o, "OK");
}

void Discard(const Args&, CommandContext* c, std::string* o, bool* e) {
  if (!c->client->in_multi) return Err(o, e, "ERR DISCARD without MULTI");
  ClearTransaction(c->client);
  ReplySimple(o, "OK");
}

void Watch(const Args& a, CommandContext* c, std::string* o, bool* e) {
  if (c->client->in_multi) {
    return Err(o, e, "ERR WATCH inside MULTI is not allowed");
  }
  for (size_t i = 1; i < a.size(); ++i) {
    c->client->watched.emplace_back(std::string(a[i]), c->store->Watch(a[i]));
  }
  ReplySimple(o, "OK");
}

void Unwatch(const Args&, CommandContext* c, std::string* o, bool*) {
  c->client->watched.clear();
  c->client->watch_lost = false;
  ReplySimple(o, "OK");
}

// Runs the queued commands in one write transaction: the watches are
// checked under its lock, every command sees the ones before it, and the
// commit applies all of their writes or none (Store::Txn).
void Exec(const Args&, CommandContext* c, std::string* o, bool* e) {
  ClientState* cl = c->client;
  if (!cl->in_multi) return Err(o, e, "ERR EXEC without MULTI");
  if (cl->multi_failed) {
    ClearTransaction(cl);
    return Err(o, e, "EXECABORT Transaction discarded because of previous "
                     "errors.");
  }
  std::vector<std::vector<std::string>> queued;
  queued.swap(cl->queued);
  auto watched = std::move(cl->watched);
  bool lost = cl->watch_lost;
  ClearTransaction(cl);
  auto txn = c->store->Begin();
  bool unchanged = !lost;
  for (const auto& w : watched) {
    if (unchanged) unchanged = txn->Unchanged(w.first, w.second);
  }
  if (!unchanged) {
    o->append("*-1\r\n");  // a watched key changed: nothing ran
    return;
  }
  size_t mark = o->size();
  ReplyArray(o, queued.size());
  c->txn = txn.get();
  Args args;
  for (const auto& cmd : queued) {
    args.assign(cmd.begin(), cmd.end());
    bool err = false;
    Execute(args, c, o, &err);
  }
  c->txn = nullptr;
  Store::Status st = txn->Commit();
  if (st != Store::Status::kOk) {
    o->resize(mark);
    StoreError(st, o, e);
  }
}

// COMMAND answers from the table below.
void Command(const Args& a, CommandContext* c, std::string* o, bool* e);

// Index 0 collects unknown commands.
const Spec kSpecs[] = {
    {"(other)", 0, nullptr, 0},
    {"ping", -1, Ping, 0},
    {"echo", 2, Echo, 0},
    {"get", 2, Get, 0},
    {"set", -3, Set, kWrite},
    {"getex", -2, GetEx, kWrite},
    {"getset", 3, GetSet, kWrite},
    {"getdel", 2, GetDel, kWrite},
    {"setnx", 3, SetNx, kWrite},
    {"setex", 4, SetEx, kWrite},
    {"psetex", 4, PSetEx, kWrite},
    {"mget", -2, MGet, 0},
    {"mset", -3, MSet, kWrite},
    {"msetnx", -3, MSetNx, kWrite},
    {"incr", 2, Incr, kWrite},
    {"incrby", 3, IncrBy, kWrite},
    {"decr", 2, Decr, kWrite},
    {"decrby", 3, DecrBy, kWrite},
    {"incrbyfloat", 3, IncrByFloat, kWrite},
    {"append", 3, Append, kWrite},
    {"strlen", 2, Strlen, 0},
    {"setrange", 4, SetRange, kWrite},
    {"getrange", 4, GetRange, 0},
    {"substr", 4, GetRange, 0},
    {"setbit", 4, SetBit, kWrite},
    {"getbit", 3, GetBit, 0},
    {"bitcount", -2, BitCount, 0},
    {"bitpos", -3, BitPos, 0},
    {"lcs", -3, Lcs, 0},
    {"del", -2, Del, kWrite},
    {"unlink", -2, Del, kWrite},
    {"exists", -2, Exists, 0},
    {"touch", -2, Touch, 0},
    {"type", 2, Type, 0},
    {"rename", 3, Rename, kWrite},
    {"renamenx", 3, RenameNx, kWrite},
    {"copy", -3, Copy, kWrite},
    {"randomkey", 1, RandomKey, 0},
    {"expire", -3, Expire, kWrite},
    {"pexpire", -3, PExpire, kWrite},
    {"expireat", -3, ExpireAt, kWrite},
    {"pexpireat", -3, PExpireAt, kWrite},
    {"ttl", 2, Ttl, 0},
    {"pttl", 2, PTtl, 0},
    {"expiretime", 2, ExpireTime, 0},
    {"pexpiretime", 2, PExpireTime, 0},
    {"persist", 2, Persist, kWrite},
    {"dbsize", 1, DbSize, 0},
    {"flushall", -1, FlushAll, 0},
    {"flushdb", -1, FlushAll, 0},
    {"keys", 2, Keys, 0},
    {"scan", -2, Scan, 0},
    {"multi", 1, Multi, kNotQueued},
    {"exec", 1, Exec, kNotQueued},
    {"discard", 1, Discard, kNotQueued},
    {"watch", -2, Watch, kNotQueued},
    {"unwatch", 1, Unwatch, 0},
    {"time", 1, Time, 0},
    {"info", -1, Info, 0},
    {"command", -1, Command, 0},
    {"config", -2, Config, 0},
    {"quit", -1, Quit, kNotQueued},
    {"select", 2, Select, 0},
    {"client", -2, Client, 0},
    {"auth", -2, Auth, 0},
    {"hello", -1, Hello, 0},
};
constexpr size_t kNumSpecs = sizeof(kSpecs) / sizeof(kSpecs[0]);
static_assert(kNumSpecs <= kMaxCommands, "raise kMaxCommands");

const std::unordered_map<std::string, size_t>& Index() {
  static const auto* index = [] {
    auto* m = new std::unordered_map<std::string, size_t>();
    for (size_t i = 1; i < kNumSpecs; ++i) (*m)[kSpecs[i].name] = i;
    return m;
  }();
  return *index;
}

// Key positions of a command for COMMAND INFO: first, last, step.
void KeyPositions(const std::string& name, int64_t* first, int64_t* last,
                  int64_t* step) {
  static const char* const kNoKeys[] = {
      "ping", "echo", "dbsize", "flushall", "flushdb", "keys", "scan",
      "multi", "exec", "discard", "unwatch", "time", "info", "command",
      "config", "quit", "select", "client", "auth", "hello", "randomkey"};
  static const char* const kAllKeys[] = {"del", "unlink", "exists", "touch",
                                         "mget", "watch"};
  static const char* const kTwoKeys[] = {"rename", "renamenx", "copy", "lcs"};
  *first = 1;
  *last = 1;
  *step = 1;
  for (const char* n : kNoKeys) {
    if (name == n) *first = *last = *step = 0;
  }
  for (const char* n : kAllKeys) {
    if (name == n) *last = -1;
  }
  for (const char* n : kTwoKeys) {
    if (name == n) *last = 2;
  }
  if (name == "mset" || name == "msetnx") {
    *last = -1;
    *step = 2;
  }
}

void CommandInfo(size_t i, std::string* o) {
  const Spec& s = kSpecs[i];
  int64_t first, last, step;
  KeyPositions(s.name, &first, &last, &step);
  ReplyArray(o, 10);
  ReplyBulk(o, s.name);
  ReplyInt(o, s.arity);
  ReplyArray(o, 1);
  ReplySimple(o, (s.flags & kWrite) != 0 ? "write" : "readonly");
  ReplyInt(o, first);
  ReplyInt(o, last);
  ReplyInt(o, step);
  for (int k = 0; k < 4; ++k) ReplyArray(o, 0);  // acl, tips, keys, subs
}

// COMMAND, COMMAND COUNT, COMMAND INFO [name...], COMMAND DOCS [name...]:
// what clients ask on connect (redis-cli's hints come from DOCS; shmkv
// gives no documentation text).
void Command(const Args& a, CommandContext*, std::string* o, bool* e) {
  std::string sub = a.size() > 1 ? Lower(a[1]) : "";
  if (a.size() == 1 || ((sub == "info" || sub == "docs") && a.size() == 2)) {
    ReplyArray(o, (kNumSpecs - 1) * (sub == "docs" ? 2 : 1));
    for (size_t i = 1; i < kNumSpecs; ++i) {
      if (sub == "docs") {
        ReplyBulk(o, kSpecs[i].name);
        ReplyArray(o, 0);
      } else {
        CommandInfo(i, o);
      }
    }
  } else if (sub == "count" && a.size() == 2) {
    ReplyInt(o, static_cast<int64_t>(kNumSpecs - 1));
  } else if (sub == "info" || sub == "docs") {
    std::vector<size_t> found;
    for (size_t j = 2; j < a.size(); ++j) {
      auto it = Index().find(Lower(a[j]));
      found.push_back(it == Index().end() ? 0 : it->second);
    }
    if (sub == "info") {
      ReplyArray(o, found.size());
      for (size_t i : found) i == 0 ? ReplyNull(o) : CommandInfo(i, o);
    } else {
      size_t n = 0;
      for (size_t i : found) n += i != 0;
      ReplyArray(o, n * 2);
      for (size_t i : found) {
        if (i == 0) continue;
        ReplyBulk(o, kSpecs[i].name);
        ReplyArray(o, 0);
      }
    }
  } else if (sub == "count") {
    Err(o, e, "ERR wrong number of arguments for 'command|count' command");
  } else {
    Err(o, e, "ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
                  "'. Try COMMAND HELP.");
  }
}

}  // namespace

const char* CommandName(size_t i) { return i < kNumSpecs ? kSpecs[i].name : ""; }

size_t Execute(const Args& args, CommandContext* ctx, std::string* out,
               bool* error) {
  *error = false;
  ClientState* cl = ctx->client;
  std::string name = Lower(args[0]);
  auto it = Index().find(name);
  // A command refused before it runs also dooms the transaction it was
  // meant for (EXEC answers EXECABORT), as in Redis.
  auto refuse = [&](std::string_view msg) {
    Err(out, error, msg);
    if (cl->in_multi) cl->multi_failed = true;
  };
  // As Redis: an unknown command is reported as such, a known one needs
  // AUTH first (except AUTH, HELLO and QUIT themselves).
  if (it != Index().end() && PasswordSet(ctx) && !cl->authed &&
      name != "auth" && name != "hello" && name != "quit") {
    refuse("NOAUTH Authentication required.");
    return it->second;
  }
  if (it == Index().end()) {
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
  const Spec& s = kSpecs[it->second];
  int n = static_cast<int>(args.size());
  if ((s.arity > 0 && n != s.arity) || (s.arity < 0 && n < -s.arity)) {
    std::string msg = "wrong number of arguments for '" + name + "' command";
    if (name == "exec") {
      // As Redis (execCommandAbort): a refused EXEC discards the
      // transaction, in MULTI or not, and says why.
      ClearTransaction(cl);
      Err(out, error, "EXECABORT Transaction discarded because of: " + msg);
      return it->second;
    }
    refuse("ERR " + msg);
    return it->second;
  }
  if (cl->in_multi && (s.flags & kNotQueued) == 0) {
    cl->queued.emplace_back(args.begin(), args.end());
    ReplySimple(out, "QUEUED");
    return it->second;
  }
  if ((s.flags & kWrite) == 0 || ctx->txn != nullptr) {
    s.run(args, ctx, out, error);
    return it->second;
  }
  // A write command outside EXEC: a transaction of its own, committed
  // unless the command refused its arguments.
  auto txn = ctx->store->Begin();
  ctx->txn = txn.get();
  size_t mark = out->size();
  s.run(args, ctx, out, error);
  ctx->txn = nullptr;
  if (!*error) {
    Store::Status st = txn->Commit();
    if (st != Store::Status::kOk) {
      out->resize(mark);
      StoreError(st, out, error);
    }
  }
  return it->second;
}

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
