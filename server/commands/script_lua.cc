// The Lua side of scripting (server/commands/script_lua.h).
#include "server/commands/script_lua.h"

#include <lua5.1/lua.hpp>
#include <nettle/sha1.h>

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/fields.h"
#include "server/commands/script_convert.h"
#include "server/commands/script_sandbox.h"
#include "server/store/scripts.h"


namespace shmkv {
namespace cmd {

std::string Sha1Hex(std::string_view s) {
  sha1_ctx ctx;
  sha1_init(&ctx);
  sha1_update(&ctx, s.size(), reinterpret_cast<const uint8_t*>(s.data()));
  uint8_t d[SHA1_DIGEST_SIZE];
  sha1_digest(&ctx, sizeof(d), d);
  static const char kHex[] = "0123456789abcdef";
  std::string out(2 * sizeof(d), '0');
  for (size_t i = 0; i < sizeof(d); ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 15];
  }
  return out;
}

namespace {
int64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}
constexpr int kPidBits = 22;  // Linux's pid_max is at most 2^22
}  // namespace

int64_t MonoNowMs() { return MonoMs(); }
int64_t ScriptStartMs(uint64_t busy_word) {
  return static_cast<int64_t>(busy_word >> (kPidBits + 1));
}

uint64_t ScriptBusyWord(int64_t start_ms, int pid) {
  return (static_cast<uint64_t>(start_ms) << (kPidBits + 1)) |
         ((static_cast<uint64_t>(pid) & ((1u << kPidBits) - 1)) << 1);
}

namespace {
// The busy word's process, if it still runs.
bool BusyOwnerAlive(uint64_t w) {
  pid_t pid = static_cast<pid_t>((w >> 1) & ((1u << kPidBits) - 1));
  return kill(pid, 0) == 0 || errno != ESRCH;
}
}  // namespace

bool ScriptBusyElsewhere(ControlBlock* ctl, int64_t threshold_ms) {
  // Acquire: pairs with the running script's release store, though a
  // stale word only delays a BUSY by one command.
  uint64_t w = ctl->script_busy.load(std::memory_order_acquire);
  if (w == 0) return false;
  int64_t start = static_cast<int64_t>(w >> (kPidBits + 1));
  if (MonoMs() - start < threshold_ms) return false;
  if (ScriptBusyWord(start, getpid()) == (w & ~1ULL)) return false;
  if (!BusyOwnerAlive(w)) {
    ctl->script_busy.compare_exchange_strong(w, 0, std::memory_order_acq_rel);
    return false;
  }
  return true;
}

KillResult RequestScriptKill(ControlBlock* ctl) {
  uint64_t w = ctl->script_busy.load(std::memory_order_acquire);
  if (w == 0 || !BusyOwnerAlive(w)) return KillResult::kNotBusy;
  if ((w & 1) != 0) return KillResult::kUnkillable;
  // Release: the running script's hook reads it (acquire) and stops.
  ctl->script_kill.store(w, std::memory_order_release);
  return KillResult::kAsked;
}

namespace {
// The record's key in the functions segment.
const std::string& RunningKey() {
  static const std::string* k =
      new std::string(Sha1Hex("shmkv running script"));
  return *k;
}
}  // namespace

std::string EncodeRunning(const RunningScript& r) {
  std::string v;
  FieldWriter w(&v);
  w.Put(&r.busy, 8);
  const uint8_t kind = r.function ? 1 : 0;
  w.Put(&kind, 1);
  w.Bytes(r.name);
  const uint32_t argc = static_cast<uint32_t>(r.command.size());
  w.Put(&argc, 4);
  for (const std::string& a : r.command) w.Bytes(a);
  return v;
}

bool DecodeRunning(std::string_view v, RunningScript* r) {
  FieldReader in(v);
  uint8_t kind = 0;
  uint32_t argc = 0;
  if (!in.Take(&r->busy, 8) || !in.Take(&kind, 1) || kind > 1 ||
      !in.Bytes(&r->name) || !in.Take(&argc, 4)) {
    return false;
  }
  r->function = kind == 1;
  r->command.clear();
  for (uint32_t i = 0; i < argc; ++i) {
    std::string a;
    if (!in.Bytes(&a)) return false;
    r->command.push_back(std::move(a));
  }
  return in.Done();
}

bool ReadRunning(Store* store, RunningScript* out) {
  uint64_t w = store->control()->script_busy.load(std::memory_order_acquire);
  if (w == 0 || !BusyOwnerAlive(w)) return false;
  std::string err, v;
  ScriptCache* fs = store->Functions(&err);
  if (fs == nullptr || !fs->Get(RunningKey(), &v) || !DecodeRunning(v, out)) {
    return false;
  }
  return out->busy == (w & ~1ULL);
}

std::string BusyText(bool function) {
  return std::string("BUSY Redis is busy running a script. You can only "
                     "call ") +
         (function ? "FUNCTION" : "SCRIPT") + " KILL or SHUTDOWN NOSAVE.";
}

void ReplyKill(Store* store, bool is_eval, Reply* r) {
  ControlBlock* ctl = store->control();
  uint64_t w = ctl->script_busy.load(std::memory_order_acquire);
  if (w == 0 || !BusyOwnerAlive(w)) {
    return r->Error("NOTBUSY No scripts in execution right now.");
  }
  if ((w & 1) != 0) {
    return r->Error(
        "UNKILLABLE Sorry the script already executed write commands "
        "against the dataset. You can either wait the script termination "
        "or kill the server in a hard way using the SHUTDOWN NOSAVE "
        "command.");
  }
  // A script too short to have said what it is yet is stopped by either.
  RunningScript info;
  if (ReadRunning(store, &info) && info.function == is_eval) {
    return r->Error(BusyText(info.function));
  }
  switch (RequestScriptKill(ctl)) {
    case KillResult::kNotBusy:
      return r->Error("NOTBUSY No scripts in execution right now.");
    case KillResult::kUnkillable:
      return ReplyKill(store, is_eval, r);
    case KillResult::kAsked:
      return r->Simple("OK");
  }
}

bool ParseShebang(std::string_view body, ScriptFlags* f, std::string* err) {
  *f = ScriptFlags();
  if (body.substr(0, 2) != "#!") return true;
  size_t eol = body.find('\n');
  if (eol == std::string_view::npos) {
    *err = "ERR Invalid script shebang";
    return false;
  }
  std::string_view line = body.substr(0, eol);
  f->shebang = true;
  f->skip = eol;  // the newline stays: line numbers are the body's own
  std::vector<std::string_view> words;
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  if (words.empty() || words[0] != "#!lua") {
    *err = "ERR Unexpected engine in script shebang: " +
           std::string(words.empty() ? line : words[0]);
    return false;
  }
  for (size_t w = 1; w < words.size(); ++w) {
    if (words[w].substr(0, 6) != "flags=") {
      *err = "ERR Unknown lua shebang option: " + std::string(words[w]);
      return false;
    }
    std::string_view list = words[w].substr(6);
    for (size_t i = 0; i <= list.size();) {
      size_t j = list.find(',', i);
      if (j == std::string_view::npos) j = list.size();
      std::string_view flag = list.substr(i, j - i);
      if (flag == "no-writes") {
        f->no_writes = true;
      } else if (flag != "allow-oom" && flag != "allow-stale" &&
                 flag != "no-cluster" && flag != "allow-cross-slot-keys" &&
                 !flag.empty()) {
        *err = "ERR Unexpected flag in script shebang: " + std::string(flag);
        return false;
      }
      i = j + 1;
    }
  }
  return true;
}

namespace {
LuaScripts* g_lua = nullptr;
std::function<void(bool)>* g_busy_serve = nullptr;
}  // namespace

void LuaScripts::SetBusyServe(std::function<void(bool)> f) {
  delete g_busy_serve;
  g_busy_serve = new std::function<void(bool)>(std::move(f));
}

LuaScripts* LuaScripts::Instance() {
  if (g_lua == nullptr) g_lua = new LuaScripts();
  return g_lua;
}

size_t LuaScripts::MemoryInUse() {
  return g_lua == nullptr ? 0 : g_lua->used_;
}

LuaScripts::LuaScripts() {
  L_ = lua_newstate(Alloc, this);
  if (L_ == nullptr || lua_cpcall(L_, Setup, this) != 0) {
    std::fprintf(stderr, "shmkv: cannot set up the Lua state\n");
    std::abort();
  }
}

void* LuaScripts::Alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* self = static_cast<LuaScripts*>(ud);
  if (ptr == nullptr) osize = 0;
  if (nsize == 0) {
    std::free(ptr);
    self->used_ -= osize;
    return nullptr;
  }
  if (nsize > osize && self->used_ - osize + nsize > self->cap_) {
    return nullptr;  // Lua raises "not enough memory"
  }
  void* p = std::realloc(ptr, nsize);
  if (p != nullptr) self->used_ = self->used_ - osize + nsize;
  return p;
}

int LuaScripts::Setup(lua_State* L) {
  OpenSandbox(L, Call, PCall);
  return 0;
}

bool LuaScripts::Has(std::string_view sha) {
  lua_getfield(L_, LUA_REGISTRYINDEX, kScripts);
  lua_pushlstring(L_, sha.data(), sha.size());
  lua_rawget(L_, -2);
  bool has = lua_isfunction(L_, -1);
  lua_pop(L_, 2);
  return has;
}

namespace {
// Compiles `code` as chunk `name` onto the stack: false with *err, Lua's
// message after `what`, when it does not compile.
bool Compiled(lua_State* L, std::string_view code, const char* name,
              const char* what, std::string* err) {
  if (luaL_loadbuffer(L, code.data(), code.size(), name) == 0) return true;
  const char* m = lua_tostring(L, -1);
  *err = std::string(what) + (m == nullptr ? "?" : m);
  return false;
}

struct CompileArgs {
  std::string_view sha, body;
  std::string* err;
  bool ok = false;
};
int CompileProtected(lua_State* L) {
  auto* a = static_cast<CompileArgs*>(lua_touserdata(L, 1));
  lua_getfield(L, LUA_REGISTRYINDEX, kScripts);
  if (!Compiled(L, a->body, "@user_script",
                "ERR Error compiling script (new function): ", a->err)) {
    return 0;
  }
  lua_pushlstring(L, a->sha.data(), a->sha.size());
  lua_insert(L, -2);
  lua_rawset(L, -3);
  a->ok = true;
  return 0;
}
}  // namespace

bool LuaScripts::Compile(std::string_view sha, std::string_view body,
                         std::string* err) {
  CompileArgs a{sha, body, err};
  if (lua_cpcall(L_, CompileProtected, &a) != 0) {
    *err = "ERR Error compiling script (new function): not enough memory";
    lua_pop(L_, 1);
    a.ok = false;
  }
  if (a.ok) ++compiled_;
  Reset();
  return a.ok;
}

void LuaScripts::Forget() {
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kScripts);
  compiled_ = 0;
  lua_gc(L_, LUA_GCCOLLECT, 0);
}

int LuaScripts::RunProtected(lua_State* L) {
  auto* self = static_cast<LuaScripts*>(lua_touserdata(L, 1));
  Running* run = self->run_;
  lua_settop(L, 0);
  if (run->function) {
    // A function: its keys and arguments are its two arguments.
    lua_getfield(L, LUA_REGISTRYINDEX, kErrorHandler);  // 1
    lua_getfield(L, LUA_REGISTRYINDEX, kFunctions);
    lua_pushlstring(L, run->lower.data(), run->lower.size());
    lua_rawget(L, -2);
    lua_remove(L, -2);
    for (const Args* args : {run->keys, run->argv}) {
      lua_createtable(L, static_cast<int>(args->size()), 0);
      for (size_t i = 0; i < args->size(); ++i) {
        lua_pushlstring(L, (*args)[i].data(), (*args)[i].size());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
    }
    return self->Finish(L, lua_pcall(L, 2, 1, 1));
  }
  // KEYS and ARGV, in the real globals.
  lua_getfield(L, LUA_REGISTRYINDEX, kRealGlobals);
  for (auto [name, args] : {std::pair<const char*, const Args*>{"KEYS",
                                                                run->keys},
                            {"ARGV", run->argv}}) {
    lua_createtable(L, static_cast<int>(args->size()), 0);
    for (size_t i = 0; i < args->size(); ++i) {
      lua_pushlstring(L, (*args)[i].data(), (*args)[i].size());
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, name);
  }
  lua_pop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, kErrorHandler);  // 1
  lua_getfield(L, LUA_REGISTRYINDEX, kScripts);
  lua_pushlstring(L, run->sha.data(), run->sha.size());
  lua_rawget(L, -2);
  lua_remove(L, -2);  // 2: the function
  return self->Finish(L, lua_pcall(L, 0, 1, 1));
}

// The reply of a script or function that returned (rc 0) or failed.
int LuaScripts::Finish(lua_State* L, int rc) {
  Running* run = run_;
  LuaScripts* self = this;
  if (rc == 0) {
    Reply out(&run->reply);
    out.SetProtocol(run->c->client->resp);  // the caller's
    ToReply(L, run->resp, &out);
    return 0;
  }
  std::string sha(run->sha);
  if (lua_istable(L, -1)) {
    std::string msg = "ERR unknown error";
    lua_getfield(L, -1, "err");
    if (lua_isstring(L, -1)) msg = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "source");
    lua_getfield(L, -2, "line");
    if (lua_isstring(L, -2) && lua_isnumber(L, -1)) {
      msg += " script: " + sha + ", on " + lua_tostring(L, -2) + ":" +
             std::to_string(static_cast<long long>(lua_tonumber(L, -1))) + ".";
    } else {
      msg += " script: " + sha;
    }
    ReplyError(&run->reply, msg);
    return 0;
  }
  // Out of memory (or an error in the handler): no table was made.
  const char* m = lua_tostring(L, -1);
  std::string msg = std::string("ERR ") + (m == nullptr ? "error" : m);
  if (rc == LUA_ERRMEM) msg = self->OutOfMemory();
  ReplyError(&run->reply, msg + " script: " + sha);
  return 0;
}

void LuaScripts::Run(std::string_view sha, const Args& keys, const Args& argv,
                     bool read_only, CommandContext* c, Reply* r,
                     bool* wrote, const Args& command) {
  Running run;
  run.sha = sha;
  Start(&run, keys, argv, read_only, c, command, r, wrote);
}

void LuaScripts::RunFunction(std::string_view lower, std::string_view name,
                             const Args& keys, const Args& argv,
                             bool read_only, CommandContext* c, Reply* r,
                             bool* wrote, const Args& command) {
  Running run;
  run.sha = name;
  run.lower = lower;
  run.function = true;
  Start(&run, keys, argv, read_only, c, command, r, wrote);
}

void LuaScripts::Start(Running* run, const Args& keys, const Args& argv,
                       bool read_only, CommandContext* c,
                       const Args& command, Reply* r, bool* wrote) {
  run->command = &command;
  run->keys = &keys;
  run->argv = &argv;
  run->read_only = read_only;
  run->c = c;
  RunCommon(run, r, wrote);
}

void LuaScripts::RunCommon(Running* run_in, Reply* r, bool* wrote) {
  Running& run = *run_in;
  run.ctl = run.c->store->control();
  run.busy = ScriptBusyWord(MonoMs(), getpid());
  // Release: publishes the word to the other workers' BUSY checks.
  run.ctl->script_busy.store(run.busy, std::memory_order_release);
  lua_sethook(L_, Hook, LUA_MASKCOUNT, 100000);
  run_ = &run;
  int rc = lua_cpcall(L_, RunProtected, this);
  run_ = nullptr;
  lua_sethook(L_, nullptr, 0, 0);
  run.ctl->script_busy.store(0, std::memory_order_release);
  if (rc != 0) {
    // Setting up the run failed (memory): nothing of the script ran.
    run.reply.clear();
    ReplyError(&run.reply,
               OutOfMemory() + " script: " + std::string(run.sha));
  }
  Reset();
  *wrote = run.wrote;
  if (!run.reply.empty() && run.reply[0] == '-') {
    r->Error(std::string_view(run.reply).substr(1, run.reply.size() - 3));
  } else {
    r->Raw(run.reply);
  }
}

namespace {
struct LoadArgs {
  std::string_view code;
  std::string* err;
  bool ok = false;
  int64_t start = 0;
};
// A library's code may run 500 ms, as in Redis.
constexpr int64_t kLoadTimeoutMs = 500;
int64_t g_load_start = -1;
void LoadHook(lua_State* L, lua_Debug*) {
  if (g_load_start >= 0 && MonoMs() - g_load_start > kLoadTimeoutMs) {
    lua_sethook(L, LoadHook, LUA_MASKLINE, 0);
    luaL_error(L, "FUNCTION LOAD timeout");
  }
}
int LoadProtected(lua_State* L) {
  auto* a = static_cast<LoadArgs*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kRegistered);
  if (!Compiled(L, a->code, "@user_function", "ERR Error compiling function: ",
                a->err)) {
    return 0;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, kLoadGlobals);
  lua_setfield(L, LUA_REGISTRYINDEX, kLoadingLib);
  g_load_start = MonoMs();
  lua_sethook(L, LoadHook, LUA_MASKCOUNT, 100000);
  int rc = lua_pcall(L, 0, 0, 0);
  lua_sethook(L, nullptr, 0, 0);
  g_load_start = -1;
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kLoadingLib);
  if (rc != 0) {
    // As Redis: a raised error table gives its text, any other error
    // its string with ERR.
    std::string msg = "ERR unknown error";
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      if (lua_isstring(L, -1)) msg = lua_tostring(L, -1);
      lua_pop(L, 1);
    } else if (lua_isstring(L, -1)) {
      msg = std::string("ERR ") + lua_tostring(L, -1);
    }
    *a->err = "ERR Error registering functions: " + msg;
    return 0;
  }
  a->ok = true;
  return 0;
}
}  // namespace

bool LuaScripts::LoadLibrary(std::string_view code, std::vector<Function>* fns,
                             std::string* err) {
  fns->clear();
  LoadArgs a{code, err};
  if (lua_cpcall(L_, LoadProtected, &a) != 0) {
    *err = "ERR Error registering functions: not enough memory";
    a.ok = false;
  }
  // What the code registered waits for AdoptLoaded; register_function
  // is refused again from here on, whatever the load's outcome.
  lua_getfield(L_, LUA_REGISTRYINDEX, kRegistered);
  lua_setfield(L_, LUA_REGISTRYINDEX, kLoaded);
  lua_pushnil(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kRegistered);
  if (a.ok) {
    lua_getfield(L_, LUA_REGISTRYINDEX, kLoaded);
    const size_t n = lua_objlen(L_, -1);
    for (size_t i = 1; i <= n; ++i) {
      lua_rawgeti(L_, -1, static_cast<int>(i));
      Function f;
      lua_getfield(L_, -1, "name");
      f.name = lua_tostring(L_, -1);
      lua_getfield(L_, -2, "flags");
      f.flags = static_cast<unsigned>(lua_tonumber(L_, -1));
      lua_getfield(L_, -3, "desc");
      if (lua_isstring(L_, -1)) {
        size_t len = 0;
        const char* d = lua_tolstring(L_, -1, &len);
        f.desc.assign(d, len);
        f.has_desc = true;
      }
      lua_pop(L_, 4);
      fns->push_back(std::move(f));
    }
  }
  Reset();
  return a.ok;
}

void LuaScripts::AdoptLoaded() {
  lua_getfield(L_, LUA_REGISTRYINDEX, kFunctions);
  lua_getfield(L_, LUA_REGISTRYINDEX, kLoaded);
  if (lua_istable(L_, -1)) {
    const size_t n = lua_objlen(L_, -1);
    for (size_t i = 1; i <= n; ++i) {
      lua_rawgeti(L_, -1, static_cast<int>(i));
      lua_getfield(L_, -1, "name");
      std::string lower = Lower(lua_tostring(L_, -1));
      lua_pop(L_, 1);
      lua_pushlstring(L_, lower.data(), lower.size());
      lua_rawget(L_, -4);
      const bool taken = !lua_isnil(L_, -1);
      lua_pop(L_, 1);
      if (!taken) {  // of two names differing in case, the first
        lua_pushlstring(L_, lower.data(), lower.size());
        lua_getfield(L_, -2, "cb");
        lua_rawset(L_, -5);
      }
      lua_pop(L_, 1);
    }
  }
  lua_pop(L_, 2);
  lua_pushnil(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kLoaded);
}

void LuaScripts::DropFunction(std::string_view lower) {
  lua_getfield(L_, LUA_REGISTRYINDEX, kFunctions);
  lua_pushlstring(L_, lower.data(), lower.size());
  lua_pushnil(L_);
  lua_rawset(L_, -3);
  lua_pop(L_, 1);
}

void LuaScripts::ForgetFunctions() {
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kFunctions);
  lua_pushnil(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kLoaded);
  lua_gc(L_, LUA_GCCOLLECT, 0);
}

void LuaScripts::SetScriptProtocol(int version) {
  Running* run = Instance()->run_;
  if (run != nullptr) run->resp = version;
}

std::string LuaScripts::OutOfMemory() const {
  return "ERR the script ran out of memory (the Lua state's limit is " +
         std::to_string(cap_ >> 20) + " MiB)";
}

void LuaScripts::Reset() {
  lua_settop(L_, 0);
  // Nothing a script did to the shared state outlives it: the proxies
  // are emptied (table.insert writes them raw), KEYS and ARGV go, the
  // collector is running with its defaults.
  ClearProxies(L_);
  lua_getfield(L_, LUA_REGISTRYINDEX, kRealGlobals);
  lua_pushnil(L_);
  lua_setfield(L_, -2, "KEYS");
  lua_pushnil(L_);
  lua_setfield(L_, -2, "ARGV");
  lua_pop(L_, 1);
  lua_gc(L_, LUA_GCRESTART, 0);
  lua_gc(L_, LUA_GCSETPAUSE, 200);
  lua_gc(L_, LUA_GCSETSTEPMUL, 200);
  if (used_ > cap_ / 2) lua_gc(L_, LUA_GCCOLLECT, 0);
}

// Every 100,000 instructions of a script: stops it when SCRIPT KILL
// asked (and it wrote nothing), then on every line after, so that a pcall
// that caught the error cannot keep it running.
void LuaScripts::Hook(lua_State* L, lua_Debug*) {
  Running* run = Instance()->run_;
  if (run != nullptr && !run->published) {
    // Long enough to be seen: what it is, for the other workers (under
    // the write lock the script holds).
    run->published = true;
    RunningScript info;
    info.busy = run->busy;
    info.function = run->function;
    if (run->function) info.name.assign(run->sha);
    if (run->command != nullptr) {
      info.command.assign(run->command->begin(), run->command->end());
    }
    std::string err;
    if (ScriptCache* fs = run->c->store->Functions(&err)) {
      fs->Set(RunningKey(), EncodeRunning(info), &err);
    }
  }
  if (run == nullptr) return;
  // Past the threshold the worker's other clients are answered (BUSY,
  // or a kill), as Redis answers its clients from inside a long script.
  if (g_busy_serve != nullptr &&
      MonoMs() - ScriptStartMs(run->busy) >=
          run->c->store->GetSetting(Setting::kBusyReplyThreshold)) {
    (*g_busy_serve)(run->function);
  }
  if (run->wrote) return;
  // Acquire: pairs with RequestScriptKill's release.
  if (run->ctl->script_kill.load(std::memory_order_acquire) != run->busy) {
    return;
  }
  lua_sethook(L, Hook, LUA_MASKLINE, 0);
  RaiseError(L, "Script killed by user with SCRIPT KILL...");
}

namespace {

// The subcommands Redis flags noscript in a container whose other
// subcommands a script may call (a container's row flags all of them).
bool NoScriptSubcommand(std::string_view name,
                        const std::vector<std::string>& args) {
  if (args.size() < 2) return false;
  const std::string sub = Lower(args[1]);
  if (name == "cluster") return sub == "reset";
  if (name == "module") {
    return sub == "list" || sub == "load" || sub == "loadex" ||
           sub == "unload";
  }
  return false;
}

}  // namespace

int LuaScripts::Call(lua_State* L) { return CallCommon(L, true); }
int LuaScripts::PCall(lua_State* L) { return CallCommon(L, false); }

// redis.call / redis.pcall: runs one command inside the script's
// transaction and converts its reply.
int LuaScripts::CallCommon(lua_State* L, bool raise) {
  Running* run = Instance()->run_;
  auto fail = [&](std::string_view text) -> int {
    if (raise) RaiseError(L, text);
    PushError(L, text);
    return 1;
  };
  if (run == nullptr) return fail("redis.call is not available here");
  int argc = lua_gettop(L);
  if (argc == 0) {
    return fail("Please specify at least one argument for this redis lib "
                "call");
  }
  std::vector<std::string> owned(static_cast<size_t>(argc));
  for (int j = 1; j <= argc; ++j) {
    int t = lua_type(L, j);
    if (t == LUA_TNUMBER) {
      owned[j - 1] = NumberArg(lua_tonumber(L, j));
    } else if (t == LUA_TSTRING) {
      size_t n = 0;
      const char* p = lua_tolstring(L, j, &n);
      owned[j - 1].assign(p, n);
    } else {
      return fail("Lua redis lib command arguments must be strings or "
                  "integers");
    }
  }
  const CommandRow* row = Commands().Find(owned[0]);
  if (row == nullptr) return fail("Unknown Redis command called from script");
  if ((row->arity > 0 && argc != row->arity) ||
      (row->arity < 0 && argc < -row->arity)) {
    return fail("Wrong number of args calling Redis command from script");
  }
  if ((row->flags & kNoScript) != 0 || NoScriptSubcommand(row->name, owned)) {
    return fail("This Redis command is not allowed from script");
  }
  if ((row->flags & kWrite) != 0 && run->read_only) {
    return fail("Write commands are not allowed from read-only scripts.");
  }
  Args args(owned.begin(), owned.end());
  std::string out;
  {
    // The command replies in the script's protocol, not the caller's.
    run->c->script_resp = run->resp;
    Reply inner(&out);
    Execute(args, run->c, &inner);
    run->c->script_resp = 0;
    if ((row->flags & kWrite) != 0 && !inner.error() && !run->wrote) {
      run->wrote = true;
      // Release: SCRIPT KILL elsewhere now answers UNKILLABLE.
      run->ctl->script_busy.store(run->busy | 1, std::memory_order_release);
    }
  }
  if (PushReply(L, out, 0) == 0) {
    return fail("the command's reply could not be read");
  }
  if (raise && lua_istable(L, -1)) {
    lua_getfield(L, -1, "err");
    bool is_err = lua_isstring(L, -1);
    lua_pop(L, 1);
    if (is_err) return lua_error(L);
  }
  return 1;
}

}  // namespace cmd
}  // namespace shmkv
