// The Lua side of scripting (docs/server.md, "Scripts"): one Lua 5.1
// state per process (Debian's liblua5.1, built as C++ so that a Lua error
// unwinds C++ frames), its sandbox, the `redis` library a script calls,
// and the conversions between Lua values and replies, as Redis 7 does
// them.
//
// The sandbox. A script sees base (less dofile, loadfile, print, getfenv,
// setfenv, newproxy), table, string, math, coroutine, cjson and bit; no
// package, io, os or debug library is opened, and load / loadstring
// refuse precompiled chunks (Debian's Lua would load bytecode, which can
// break out of the VM). Globals are read through an empty proxy whose
// metatable is locked: reading a global that does not exist and writing
// any global are errors (Redis's texts); the library tables are proxies
// too, and rawset refuses every proxy, so no script can change what the
// next one runs. The state's memory is capped (kMemoryCap): a script that
// allocates past it fails with an error, and the garbage collector is put
// back to its defaults after every script.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/registry.h"

struct lua_State;
struct lua_Debug;

namespace shmkv {
namespace cmd {

// SHA1 of `s`, 40 lower-case hex digits (nettle's SHA1).
std::string Sha1Hex(std::string_view s);

// A script's shebang flags (`#!lua flags=no-writes,...`), Redis 7's.
struct ScriptFlags {
  bool shebang = false;    // the body began with #!lua
  bool no_writes = false;  // flags=no-writes: as EVAL_RO
  size_t skip = 0;         // bytes of the shebang line, newline kept
};
// Reads the shebang of `body`: false with *err (a reply error) when it
// is one Redis refuses.
bool ParseShebang(std::string_view body, ScriptFlags* f, std::string* err);

// A running script, as every process sees it (ControlBlock::script_busy):
// its start on CLOCK_MONOTONIC in ms (the high 41 bits), its process id
// (22 bits), and in bit 0 whether it wrote. A script that has run
// busy-reply-threshold ms (5 s unless CONFIG SET changed it, as Redis's)
// makes the other workers answer BUSY until it ends or SCRIPT KILL stops
// it.
uint64_t ScriptBusyWord(int64_t start_ms, int pid);
// CLOCK_MONOTONIC in ms, and the start a busy word holds.
int64_t MonoNowMs();
int64_t ScriptStartMs(uint64_t busy_word);
// Whether a script of another process has run `threshold_ms`: commands
// other than SCRIPT KILL get -BUSY. A word whose process is gone (killed
// mid-script) is cleared.
bool ScriptBusyElsewhere(ControlBlock* ctl, int64_t threshold_ms);
// SCRIPT KILL: asks the running script to stop. kNotBusy: none runs;
// kUnkillable: it wrote (stopping it would apply half of it).
enum class KillResult { kNotBusy, kUnkillable, kAsked };
KillResult RequestScriptKill(ControlBlock* ctl);

// What a long script is, for the other workers: its first hook (after
// 100,000 instructions, so a short script pays nothing) publishes it in
// the store's functions segment under its busy word. BUSY replies, SCRIPT
// KILL / FUNCTION KILL and FUNCTION STATS read it.
struct RunningScript {
  uint64_t busy = 0;  // the busy word, without the wrote bit
  bool function = false;  // FCALL (else EVAL)
  std::string name;       // the function's
  std::vector<std::string> command;
};
// The published record of the script the busy word names: false when
// none runs, or it published none (yet), or the record is of another.
bool ReadRunning(Store* store, RunningScript* out);
// Redis's BUSY reply text, naming the command that stops what runs.
std::string BusyText(bool function);
// SCRIPT KILL (is_eval) and FUNCTION KILL, as Redis answers them: each
// stops only its own kind.
void ReplyKill(Store* store, bool is_eval, Reply* r);
// FUNCTION STATS answered by a worker whose own function runs long.
void FunctionStatsWhileBusy(Store* store, Reply* r);
// Any other command of a client of that worker, as Redis answers it
// while a script is busy: MULTI, DISCARD, WATCH and UNWATCH run (inside
// MULTI, UNWATCH, AUTH and HELLO are queued); EXEC discards the
// transaction, answering EXECABORT with `busy`; the rest, AUTH, HELLO
// and RESET outside MULTI too, are refused with `busy` and doom a
// transaction they were meant for (transaction_family.cc).
void TransactionWhileBusy(const Args& a, Store* store, ClientState* cl,
                          std::string_view busy, Reply* r);
// The parts of a published record (checked: false when it is not one).
std::string EncodeRunning(const RunningScript& r);
bool DecodeRunning(std::string_view v, RunningScript* r);

class LuaScripts {
 public:
  // Bytes the Lua state may hold (set_memory_cap: tests).
  static constexpr size_t kMemoryCap = 256u << 20;
  void set_memory_cap(size_t bytes) { cap_ = bytes; }

  // This process's Lua state (made on first use).
  static LuaScripts* Instance();
  // Bytes its state holds (0 while none was made).
  static size_t MemoryInUse();

  // Whether script `sha` is compiled in this process.
  bool Has(std::string_view sha);
  // Compiles `body` as script `sha`: false with *err (Redis's "Error
  // compiling script" reply) when it does not compile.
  bool Compile(std::string_view sha, std::string_view body, std::string* err);
  // Drops every compiled script (SCRIPT FLUSH, or a flush seen elsewhere).
  void Forget();
  size_t compiled() const { return compiled_; }
  size_t memory() const { return used_; }

  // Runs compiled script `sha` with KEYS and ARGV inside c->txn (which
  // must be set) and writes its reply. read_only: EVAL_RO, or flags
  // no-writes. *wrote: whether a write command of it succeeded.
  // `command` is the whole command (for FUNCTION STATS elsewhere).
  void Run(std::string_view sha, const Args& keys, const Args& argv,
           bool read_only, CommandContext* c, Reply* r, bool* wrote,
           const Args& command);
  // A function a library registered (redis.register_function).
  struct Function {
    std::string name;  // as registered
    std::string desc;
    bool has_desc = false;
    unsigned flags = 0;  // bit i: kFunctionFlagNames[i]
  };
  // Runs a library's code (after its shebang line, the newline kept) in
  // the load-time globals: false with *err (the reply's error text) when
  // it does not compile or fails; else *fns is what it registered, held
  // aside until AdoptLoaded makes it callable.
  bool LoadLibrary(std::string_view code, std::vector<Function>* fns,
                   std::string* err);
  void AdoptLoaded();
  // Drops function `lower` (its lower-case name) / every function.
  void DropFunction(std::string_view lower);
  void ForgetFunctions();
  // Runs function `lower` as Run runs a script, its keys and arguments
  // given as its two arguments; `name` names it in errors.
  void RunFunction(std::string_view lower, std::string_view name,
                   const Args& keys, const Args& argv, bool read_only,
                   CommandContext* c, Reply* r, bool* wrote,
                   const Args& command);

  // What the worker does for its other clients while a script of its own
  // has run past busy-reply-threshold (server/net/worker_busy.cc): called
  // from the script's hook with whether it is a function.
  static void SetBusyServe(std::function<void(bool)> f);

  // redis.setresp: the protocol the running script's commands reply in
  // (2 at the start of every script, as Redis).
  static void SetScriptProtocol(int version);

 private:
  LuaScripts();
  static void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize);
  static int Setup(lua_State* L);
  static int RunProtected(lua_State* L);
  int Finish(lua_State* L, int rc);
  static int Call(lua_State* L);
  static int PCall(lua_State* L);
  static int CallCommon(lua_State* L, bool raise);
  static void Hook(lua_State* L, lua_Debug* ar);
  void Reset();
  std::string OutOfMemory() const;

  lua_State* L_ = nullptr;
  size_t used_ = 0;
  size_t cap_ = kMemoryCap;
  size_t compiled_ = 0;

  // The script that runs now (Run's arguments, for the callbacks).
  struct Running {
    std::string_view sha;  // a function's name, when `function`
    std::string_view lower;
    bool function = false;
    const Args* keys = nullptr;
    const Args* argv = nullptr;
    const Args* command = nullptr;
    bool published = false;  // its RunningScript record
    bool read_only = false;
    bool wrote = false;
    CommandContext* c = nullptr;
    ControlBlock* ctl = nullptr;
    uint64_t busy = 0;  // its busy word, without the wrote bit
    int resp = 2;       // redis.setresp
    std::string reply;  // the reply being built
  };
  Running* run_ = nullptr;
  void Start(Running* run, const Args& keys, const Args& argv,
             bool read_only, CommandContext* c, const Args& command,
             Reply* r, bool* wrote);
  void RunCommon(Running* run, Reply* r, bool* wrote);
};

}  // namespace cmd
}  // namespace shmkv
