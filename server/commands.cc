#include "server/commands.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "server/command_util.h"
#include "server/resp.h"

namespace shmkv {

namespace cmd {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool Eq(std::string_view a, const char* b) {
  size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

bool ToInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(tmp.c_str(), &end, 10);
  if (errno != 0 || end != tmp.c_str() + tmp.size() ||
      std::isspace(static_cast<unsigned char>(tmp[0]))) {
    return false;
  }
  *out = v;
  return true;
}

void Err(std::string* out, bool* error, std::string_view msg) {
  ReplyError(out, msg);
  *error = true;
}

void NotInt(std::string* out, bool* error) {
  Err(out, error, "ERR value is not an integer or out of range");
}

void StoreError(Store::Status st, std::string* out, bool* error) {
  switch (st) {
    case Store::Status::kNotInteger: NotInt(out, error); return;
    case Store::Status::kFull:
      Err(out, error, "OOM the store is full (raise --capacity or --memory)");
      return;
    case Store::Status::kTooLarge:
      Err(out, error, "ERR key or value exceeds the server's limits "
                      "(--max-value)");
      return;
    case Store::Status::kCollision:
      Err(out, error, "ERR key hash collision with another key");
      return;
    case Store::Status::kTxnTooLarge:
      Err(out, error, "ERR the transaction is larger than the commit "
                      "journal (--journal-size)");
      return;
    default:
      Err(out, error, std::string("ERR ") + StatusText(st));
  }
}

}  // namespace cmd

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

// --- the commands ----------------------------------------------------

void Ping(const Args& a, CommandContext*, std::string* out, bool* error) {
  if (a.size() > 2) {
    Err(out, error, "ERR wrong number of arguments for 'ping' command");
  } else if (a.size() == 2) {
    ReplyBulk(out, a[1]);
  } else {
    ReplySimple(out, "PONG");
  }
}

void Echo(const Args& a, CommandContext*, std::string* out, bool*) {
  ReplyBulk(out, a[1]);
}

void Info(const Args& a, CommandContext* c, std::string* o, bool*) {
  ReplyBulk(o, InfoText(c, std::vector<std::string_view>(a.begin() + 1,
                                                         a.end())));
}

void Command(const Args& a, CommandContext* c, std::string* o, bool* e);

// CONFIG GET pattern...: every setting shmkv has, under Redis's names where
// Redis has one. CONFIG SET: they are fixed at start (workers share them),
// so each is refused as Redis refuses an immutable setting.
std::vector<std::pair<std::string, std::string>> Settings(CommandContext* c) {
  const ServerInfo& i = *c->info;
  return {
      {"port", std::to_string(i.resp_port)},
      {"bind", i.bind},
      {"protected-mode", i.protected_mode ? "yes" : "no"},
      {"requirepass", c->password != nullptr ? *c->password : ""},
      {"timeout", "0"},
      {"databases", "1"},
      {"save", ""},
      {"appendonly", "no"},
      {"maxmemory", std::to_string(i.memory)},
      {"proto-max-bulk-len", std::to_string(i.max_value)},
      {"shmkv-http-port", std::to_string(i.http_port)},
      {"shmkv-workers", std::to_string(i.workers)},
      {"shmkv-name", i.name},
      {"shmkv-capacity", std::to_string(i.capacity)},
      {"shmkv-journal-size", std::to_string(i.journal)},
  };
}

void Config(const Args& a, CommandContext* c, std::string* o, bool* e) {
  std::string sub = Lower(a[1]);
  if (sub == "get") {
    if (a.size() < 3) {
      return Err(o, e, "ERR wrong number of arguments for 'config|get' "
                       "command");
    }
    std::vector<std::pair<std::string, std::string>> kv;
    for (const auto& p : Settings(c)) {
      for (size_t i = 2; i < a.size(); ++i) {
        if (GlobMatch(Lower(a[i]), p.first)) {
          kv.push_back(p);
          break;
        }
      }
    }
    ReplyArray(o, kv.size() * 2);
    for (const auto& p : kv) {
      ReplyBulk(o, p.first);
      ReplyBulk(o, p.second);
    }
  } else if (sub == "set") {
    if (a.size() < 4 || a.size() % 2 != 0) {
      return Err(o, e, "ERR wrong number of arguments for 'config|set' "
                       "command");
    }
    for (size_t i = 2; i < a.size(); i += 2) {
      std::string name = Lower(a[i]);
      bool known = false;
      for (const auto& p : Settings(c)) known = known || p.first == name;
      if (!known) {
        return Err(o, e, "ERR Unknown option or number of arguments for "
                         "CONFIG SET - '" + std::string(a[i]) + "'");
      }
    }
    Err(o, e, "ERR CONFIG SET failed (possibly related to argument '" +
                  std::string(a[2]) + "') - can't set immutable config");
  } else if (sub == "resetstat" || sub == "rewrite") {
    Err(o, e, "ERR CONFIG " + Lower(a[1]) + " is not supported by shmkv");
  } else {
    Err(o, e, "ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
                  "'. Try CONFIG HELP.");
  }
}

void Quit(const Args&, CommandContext* c, std::string* o, bool*) {
  c->quit = true;
  ReplySimple(o, "OK");
}

void Select(const Args& a, CommandContext*, std::string* o, bool* e) {
  if (a[1] != "0") return Err(o, e, "ERR DB index is out of range");
  ReplySimple(o, "OK");
}

bool PasswordSet(const CommandContext* c) {
  return c->password != nullptr && !c->password->empty();
}

// Compares in time that depends on the lengths only.
bool SamePassword(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

constexpr const char kWrongPass[] =
    "WRONGPASS invalid username-password pair or user is disabled.";

// AUTH [username] password, and HELLO's AUTH option: the only user is
// "default", as in a Redis without ACL rules.
bool CheckAuth(std::string_view user, std::string_view pass,
               CommandContext* c) {
  if (user != "default") return false;
  if (!PasswordSet(c)) return true;  // default user has no password
  if (!SamePassword(pass, *c->password)) return false;
  c->client->authed = true;
  return true;
}

void Auth(const Args& a, CommandContext* c, std::string* o, bool* e) {
  if (a.size() > 3) return Err(o, e, "ERR syntax error");
  if (a.size() == 2 && !PasswordSet(c)) {
    return Err(o, e, "ERR AUTH <password> called without any password "
                     "configured for the default user. Are you sure your "
                     "configuration is correct?");
  }
  std::string_view user = a.size() == 3 ? a[1] : std::string_view("default");
  if (!CheckAuth(user, a.back(), c)) return Err(o, e, kWrongPass);
  ReplySimple(o, "OK");
}

// HELLO [protover [AUTH username password] [SETNAME name]]: RESP2 only.
void Hello(const Args& a, CommandContext* c, std::string* o, bool* e) {
  size_t i = 1;
  if (a.size() > 1) {
    int64_t ver = 0;
    if (!ToInt(a[1], &ver)) {
      return Err(o, e, "ERR Protocol version is not an integer or out of "
                       "range");
    }
    if (ver != 2) return Err(o, e, "NOPROTO unsupported protocol version");
    i = 2;
  }
  std::string_view name;
  bool set_name = false;
  for (; i < a.size(); ++i) {
    if (Eq(a[i], "auth") && i + 2 < a.size()) {
      if (!CheckAuth(a[i + 1], a[i + 2], c)) return Err(o, e, kWrongPass);
      i += 2;
    } else if (Eq(a[i], "setname") && i + 1 < a.size()) {
      name = a[++i];
      set_name = true;
    } else {
      return Err(o, e, "ERR Syntax error in HELLO option '" +
                           std::string(a[i].substr(0, 128)) + "'");
    }
  }
  if (PasswordSet(c) && !c->client->authed) {
    return Err(o, e, "NOAUTH HELLO must be called with the client already "
                     "authenticated, otherwise the HELLO AUTH <user> <pass> "
                     "option can be used to authenticate the client and "
                     "select the RESP protocol version at the same time");
  }
  if (set_name) c->client->name = std::string(name);
  ReplyArray(o, 14);
  ReplyBulk(o, "server");
  ReplyBulk(o, "redis");
  ReplyBulk(o, "version");
  ReplyBulk(o, "7.0.0");
  ReplyBulk(o, "proto");
  ReplyInt(o, 2);
  ReplyBulk(o, "id");
  ReplyInt(o, static_cast<int64_t>(c->client->id));
  ReplyBulk(o, "mode");
  ReplyBulk(o, "standalone");
  ReplyBulk(o, "role");
  ReplyBulk(o, "master");
  ReplyBulk(o, "modules");
  ReplyArray(o, 0);
}

// CLIENT ID | SETNAME | GETNAME | SETINFO | INFO | LIST | NO-EVICT | ...:
// the subcommands clients send on connect; anything else is Redis's
// unknown-subcommand error, never a silent OK.
void Client(const Args& a, CommandContext* c, std::string* o, bool* e) {
  std::string sub = Lower(a[1]);
  auto arity = [&](size_t n) {
    if (a.size() == n) return true;
    Err(o, e, "ERR wrong number of arguments for 'client|" + sub +
                  "' command");
    return false;
  };
  if (sub == "id") {
    if (arity(2)) ReplyInt(o, static_cast<int64_t>(c->client->id));
  } else if (sub == "getname") {
    if (!arity(2)) return;
    if (c->client->name.empty()) return ReplyNull(o);
    ReplyBulk(o, c->client->name);
  } else if (sub == "setname") {
    if (!arity(3)) return;
    for (char ch : a[2]) {
      if (ch <= ' ' || ch > '~') {
        return Err(o, e, "ERR Client names cannot contain spaces, newlines "
                         "or special characters.");
      }
    }
    c->client->name = std::string(a[2]);
    ReplySimple(o, "OK");
  } else if (sub == "setinfo") {
    if (!arity(4)) return;
    std::string what = Lower(a[2]);
    if (what != "lib-name" && what != "lib-ver") {
      return Err(o, e, "ERR Unrecognized option '" + std::string(a[2]) +
                           "'");
    }
    ReplySimple(o, "OK");
  } else if (sub == "info" || sub == "list") {
    std::string line = "id=" + std::to_string(c->client->id) +
                       " addr=" + c->client->addr + " name=" +
                       c->client->name + " db=0 cmd=client|" + sub + "\n";
    ReplyBulk(o, line);  // LIST: this connection only (docs/server.md)
  } else {
    Err(o, e, "ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
                  "'. Try CLIENT HELP.");
  }
}

void Time(const Args&, CommandContext*, std::string* o, bool*) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ReplyArray(o, 2);
  ReplyBulk(o, std::to_string(ts.tv_sec));
  ReplyBulk(o, std::to_string(ts.tv_nsec / 1000));
}

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

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
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
      msg += "'" + std::string(args[i].substr(0, 64)) + "' ";
    }
    refuse(msg);
    return 0;
  }
  const Spec& s = kSpecs[it->second];
  int n = static_cast<int>(args.size());
  if ((s.arity > 0 && n != s.arity) || (s.arity < 0 && n < -s.arity)) {
    refuse("ERR wrong number of arguments for '" + name + "' command");
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
  StatsTotals t = c->stats->Merge();
  ControlBlock* ctl = c->store->control();
  std::string s;
  auto want = [&](const char* name) {
    return all || std::find(secs.begin(), secs.end(), name) != secs.end();
  };
  auto line = [&](const std::string& k, const std::string& v) {
    s += k + ":" + v + "\r\n";
  };
  if (want("server")) {
    s += "# Server\r\n";
    line("redis_version", "7.0.0");
    line("shmkv_version", kVersion);
    line("process_id", std::to_string(getpid()));
    line("master_pid", std::to_string(__atomic_load_n(&ctl->master_pid, __ATOMIC_RELAXED)));
    line("tcp_port", std::to_string(c->info->resp_port));
    line("http_port", std::to_string(c->info->http_port));
    line("workers", std::to_string(c->info->workers));
    line("segment", c->info->name);
    line("uptime_in_seconds", std::to_string((NowMs() - c->info->start_ms) / 1000));
    line("reloads", std::to_string(__atomic_load_n(&ctl->reloads, __ATOMIC_RELAXED)));
    s += "\r\n";
  }
  if (want("clients")) {
    s += "# Clients\r\n";
    line("connected_clients", std::to_string(t.connections));
    line("workers_alive", std::to_string(t.workers_alive));
    s += "\r\n";
  }
  if (want("memory")) {
    s += "# Memory\r\n";
    line("used_memory", std::to_string(c->store->MemoryUsed()));
    line("maxmemory", std::to_string(c->store->MemoryTotal()));
    line("keys_capacity", std::to_string(c->store->Capacity()));
    uint64_t total = c->store->MemoryTotal();
    line("memory_fill_pct", Fmt("%.2f", total ? 100.0 * c->store->MemoryUsed() / total : 0));
    line("key_fill_pct", Fmt("%.2f", 100.0 * c->store->Keys() / c->store->Capacity()));
    s += "\r\n";
  }
  if (want("stats")) {
    s += "# Stats\r\n";
    line("total_connections_received", std::to_string(t.connections_total));
    line("total_commands_processed", std::to_string(t.commands));
    line("instantaneous_ops_per_sec", std::to_string(t.ops_per_sec));
    line("total_error_replies", std::to_string(t.errors));
    line("total_net_input_bytes", std::to_string(t.bytes_in));
    line("total_net_output_bytes", std::to_string(t.bytes_out));
    line("http_requests", std::to_string(t.http_requests));
    line("connections_handed_over", std::to_string(t.adopted));
    line("expired_keys", std::to_string(__atomic_load_n(&ctl->expired_keys, __ATOMIC_RELAXED)));
    line("write_lock_recoveries", std::to_string(__atomic_load_n(&ctl->lock_recoveries, __ATOMIC_RELAXED)));
    Store::JournalStats js = c->store->journal_stats();
    line("journal_commits_recovered", std::to_string(js.recovered));
    line("journal_commits_undone", std::to_string(js.undone));
    line("journal_commits_dropped", std::to_string(js.dropped));
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
    for (size_t i = 0; i < kNumSpecs; ++i) {
      if (t.calls[i] == 0) continue;
      line(std::string("cmdstat_") + kSpecs[i].name,
           "calls=" + std::to_string(t.calls[i]) + ",usec=" +
               std::to_string(t.usec[i]) + ",usec_per_call=" +
               Fmt("%.2f", static_cast<double>(t.usec[i]) / t.calls[i]));
    }
    s += "\r\n";
  }
  if (want("latencystats")) {
    s += "# Latencystats\r\n";
    for (size_t i = 0; i < kNumSpecs; ++i) {
      if (t.calls[i] == 0) continue;
      std::string v;
      const char* names[3] = {"p50", "p99", "p99.9"};
      for (size_t q = 0; q < 3; ++q) {
        if (q) v += ",";
        v += std::string(names[q]) + "=" + Fmt("%.3f", t.est[i * 3 + q].Estimate());
      }
      line(std::string("latency_percentiles_usec_") + kSpecs[i].name, v);
    }
    s += "\r\n";
  }
  if (want("keyspace")) {
    s += "# Keyspace\r\n";
    line("db0", "keys=" + std::to_string(c->store->Keys()) + ",expires=0,avg_ttl=0");
  }
  return s;
}

std::string StatsJson(CommandContext* c) {
  StatsTotals t = c->stats->Merge();
  std::string j = "{";
  auto kv = [&](const char* k, const std::string& v, bool comma = true) {
    j += std::string("\"") + k + "\":" + v + (comma ? "," : "");
  };
  kv("version", std::string("\"") + kVersion + "\"");
  kv("uptime_s", std::to_string((NowMs() - c->info->start_ms) / 1000));
  kv("workers", std::to_string(c->info->workers));
  kv("workers_alive", std::to_string(t.workers_alive));
  kv("connections", std::to_string(t.connections));
  kv("connections_total", std::to_string(t.connections_total));
  kv("commands", std::to_string(t.commands));
  kv("ops_per_sec", std::to_string(t.ops_per_sec));
  kv("errors", std::to_string(t.errors));
  kv("http_requests", std::to_string(t.http_requests));
  kv("keys", std::to_string(c->store->Keys()));
  kv("keys_capacity", std::to_string(c->store->Capacity()));
  kv("memory_used", std::to_string(c->store->MemoryUsed()));
  kv("memory_total", std::to_string(c->store->MemoryTotal()));
  j += "\"commands_stats\":{";
  bool first = true;
  for (size_t i = 0; i < kNumSpecs; ++i) {
    if (t.calls[i] == 0) continue;
    if (!first) j += ",";
    first = false;
    j += std::string("\"") + kSpecs[i].name + "\":{\"calls\":" +
         std::to_string(t.calls[i]);
    const char* names[3] = {"p50_us", "p99_us", "p999_us"};
    for (size_t q = 0; q < 3; ++q) {
      double e = t.est[i * 3 + q].Estimate();
      j += std::string(",\"") + names[q] + "\":" +
           (std::isfinite(e) ? Fmt("%.3f", e) : std::string("null"));
    }
    j += "}";
  }
  j += "}}";
  return j;
}

}  // namespace shmkv
