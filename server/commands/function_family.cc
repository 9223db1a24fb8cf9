// shmkv's functions (Redis 7): FUNCTION LOAD|DELETE|FLUSH|LIST|STATS|
// KILL|HELP, FCALL and FCALL_RO (docs/server.md, "Functions").
//
// The libraries live in the store's functions segment
// (server/store/scripts.h, FunctionsKey) as one value, so that a change
// is one map write, whole or not at all, seen by every worker and kept
// across restarts of the workers as the data is:
//
//   "SHFN"  u32 layout (1)  u64 generation  u32 libraries
//   then per library: u32 name length, name, u32 code length, code
//
// (the code whole, shebang included, as FUNCTION LIST WITHCODE gives it
// back). Every length is checked against what is left; a value that does
// not parse is an error, and FUNCTION FLUSH writes a new one. Each worker
// compiles the libraries into its own Lua state and keeps the generation
// it compiled: a command that finds another one compiles them again.
// Changes and calls run under the store's write lock (a transaction), so
// a worker never runs a function another one deleted.
#include <strings.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/commands/function_family.h"

#include "server/commands/command_util.h"
#include "server/commands/fields.h"
#include "server/commands/notify.h"
#include "server/commands/script_lua.h"
#include "server/commands/script_sandbox.h"
#include "server/commands/split_args.h"
#include "server/rdb/codec.h"
#include "server/store/repl.h"
#include "server/store/scripts.h"

namespace shmkv {
namespace cmd {

// Parses the functions value: false when it is not one.
bool ParseLibraries(std::string_view v, uint64_t* generation,
                    std::vector<Library>* libs) {
  libs->clear();
  *generation = 0;
  if (v.empty()) return true;  // none loaded yet
  FieldReader r(v);
  char magic[4];
  uint32_t layout = 0, count = 0;
  if (!r.Take(magic, 4) || std::memcmp(magic, "SHFN", 4) != 0 ||
      !r.Take(&layout, 4) || layout != 1 || !r.Take(generation, 8) ||
      !r.Take(&count, 4)) {
    return false;
  }
  for (uint32_t i = 0; i < count; ++i) {
    Library l;
    if (!r.Bytes(&l.name) || !r.Bytes(&l.code)) return false;
    libs->push_back(std::move(l));
  }
  return r.Done();
}

std::string SerializeLibraries(uint64_t generation,
                               const std::vector<Library>& libs) {
  std::string v("SHFN", 4);
  FieldWriter w(&v);
  const uint32_t layout = 1, count = static_cast<uint32_t>(libs.size());
  w.Put(&layout, 4);
  w.Put(&generation, 8);
  w.Put(&count, 4);
  for (const Library& l : libs) {
    w.Bytes(l.name);
    w.Bytes(l.code);
  }
  return v;
}

namespace {

// The key of the one value in the functions segment.
const std::string& LibrariesKey() {
  static const std::string* k = new std::string(Sha1Hex("shmkv functions"));
  return *k;
}

// What this process compiled: the libraries by name (case kept, as
// Redis keys them; functions go by lower-case name), and the
// generation of the value they were compiled from (~0: none yet).
struct Compiled {
  struct Lib {
    std::string name, code;
    std::vector<LuaScripts::Function> fns;
  };
  uint64_t generation = ~0ULL;
  const void* store = nullptr;
  std::map<std::string, Lib> libs;
  std::unordered_map<std::string, std::pair<std::string, size_t>> fns;
  size_t function_count() const {
    size_t n = 0;
    for (const auto& [lower, lib] : libs) n += lib.fns.size();
    return n;
  }
};
Compiled& Local() {
  static auto* c = new Compiled();
  return *c;
}

void Forget() {
  Compiled& l = Local();
  LuaScripts::Instance()->ForgetFunctions();
  l.libs.clear();
  l.fns.clear();
  l.generation = ~0ULL;
}

void Adopt(const std::string& name, const std::string& code,
           std::vector<LuaScripts::Function> fns) {
  Compiled& l = Local();
  const std::string& lower = name;  // library names keep their case
  LuaScripts::Instance()->AdoptLoaded();
  // Two names of one library that differ only in case (Redis takes
  // both) call the first.
  for (size_t i = 0; i < fns.size(); ++i) {
    l.fns.emplace(Lower(fns[i].name), std::make_pair(lower, i));
  }
  l.libs[lower] = Compiled::Lib{name, code, std::move(fns)};
}

void Unlink(const std::string& lower) {
  Compiled& l = Local();
  auto it = l.libs.find(lower);
  if (it == l.libs.end()) return;
  for (const auto& f : it->second.fns) {
    std::string fl = Lower(f.name);
    LuaScripts::Instance()->DropFunction(fl);
    l.fns.erase(fl);
  }
  l.libs.erase(it);
}

// The library's metadata (the shebang): its name and where the code
// after the shebang line starts. False with *err as Redis answers.
bool ParseMetadata(std::string_view code, std::string* name, size_t* body,
                   std::string* err) {
  if (code.substr(0, 2) != "#!") {
    *err = "ERR Missing library metadata";
    return false;
  }
  size_t eol = code.find('\n');
  if (eol == std::string_view::npos) {
    *err = "ERR Invalid library metadata";
    return false;
  }
  // Split as Redis splits it (sdssplitargs): name="x" names x.
  std::vector<std::string_view> parts;
  std::string words;
  if (!SplitInline(code.data(), eol, &parts, &words)) parts.clear();
  if (parts.empty()) {
    *err = "ERR Invalid library metadata";
    return false;
  }
  bool named = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].size() >= 5 && strncasecmp(parts[i].data(), "name=", 5) == 0) {
      if (named) {
        *err = "ERR Invalid metadata value, name argument was given "
               "multiple times";
        return false;
      }
      named = true;
      name->assign(parts[i].substr(5));
      continue;
    }
    *err = "ERR Invalid metadata value given: " + std::string(parts[i]);
    return false;
  }
  if (!named) {
    *err = "ERR Library name was not given";
    return false;
  }
  if (!ValidFunctionName(*name)) {
    *err = "ERR Library names can only contain letters, numbers, or "
           "underscores(_) and must be at least one character long";
    return false;
  }
  std::string_view engine = parts[0].substr(2);
  if (!EqualFold(engine, "lua")) {
    *err = "ERR Engine '" + std::string(engine) + "' not found";
    return false;
  }
  *body = eol;
  return true;
}

// The shared libraries (into *libs, unless null), read under the lock;
// this process's compiled ones made to match them. False with the reply
// written.
bool Sync(CommandContext* c, Reply* r, std::vector<Library>* libs,
          uint64_t* generation) {
  std::string err;
  ScriptCache* fs = c->store->Functions(&err);
  if (fs == nullptr) {
    r->Error("ERR the function store is unavailable: " + err);
    return false;
  }
  // The value's head first (its generation): when this process compiled
  // that generation, what it keeps is the value, and the rest is not
  // read (FCALL's common case).
  Compiled& l = Local();
  std::string head;
  if (l.store == c->store && fs->Head(LibrariesKey(), 16, &head) &&
      head.compare(0, 8, std::string_view("SHFN\1\0\0\0", 8)) == 0 &&
      std::memcmp(head.data() + 8, &l.generation, 8) == 0) {
    *generation = l.generation;
    if (libs != nullptr) {
      libs->clear();
      for (const auto& [name, lib] : l.libs) {
        libs->push_back(Library{lib.name, lib.code});
      }
    }
    return true;
  }
  std::vector<Library> read;
  if (libs == nullptr) libs = &read;  // (the caller needs only this process's)
  std::string v;
  if (!fs->Get(LibrariesKey(), &v)) v.clear();
  if (!ParseLibraries(v, generation, libs)) {
    r->Error("ERR the function libraries are damaged; FUNCTION FLUSH "
             "clears them");
    return false;
  }
  if (l.generation == *generation && l.store == c->store) return true;
  Forget();
  for (const Library& lib : *libs) {
    std::string name;
    size_t body = 0;
    std::vector<LuaScripts::Function> fns;
    if (!ParseMetadata(lib.code, &name, &body, &err) ||
        !LuaScripts::Instance()->LoadLibrary(
            std::string_view(lib.code).substr(body), &fns, &err)) {
      Forget();
      r->Error("ERR library '" + lib.name + "' does not load here: " + err);
      return false;
    }
    Adopt(lib.name, lib.code, std::move(fns));
  }
  l.generation = *generation;
  l.store = c->store;
  return true;
}

// Writes `libs` as the next generation and makes it this process's.
bool Publish(CommandContext* c, Reply* r, std::vector<Library>* libs,
             uint64_t generation) {
  std::string err;
  ScriptCache* fs = c->store->Functions(&err);
  if (fs == nullptr ||
      !fs->Set(LibrariesKey(), SerializeLibraries(generation + 1, *libs),
               &err)) {
    Forget();
    r->Error(err.empty() ? "ERR the function store is unavailable" : err);
    return false;
  }
  Local().generation = generation + 1;
  return true;
}

// A replica's clients may not change the libraries (its master's
// stream may): true with Redis's reply when this one may not.
bool ReadOnlyReplica(CommandContext* c, Reply* r) {
  if (c->from_master) return false;
  SharedRepl* repl = c->store->Repl();
  if (repl == nullptr || repl->Mode() == ReplMode::kMaster) return false;
  r->Error("READONLY You can't write against a read only replica.");
  return true;
}

// Runs f on the libraries, made this process's first. A change (write)
// holds the store's write lock; a look does not (a script running long in
// another worker holds the lock, and FUNCTION STATS must answer then).
template <class F>
void WithLibraries(CommandContext* c, Reply* r, bool write, F f) {
  if (write && ReadOnlyReplica(c, r)) return;
  std::unique_ptr<Store::Txn> own;
  if (write && c->txn == nullptr) own = c->store->Begin();
  std::vector<Library> libs;
  uint64_t generation = 0;
  if (!Sync(c, r, &libs, &generation)) return;
  f(&libs, generation);
  if (own != nullptr) own->Commit();
}

void Load(const Args& a, CommandContext* c, Reply* r) {
  bool replace = false;
  size_t at = 2;
  for (; at + 1 < a.size(); ++at) {
    if (!Eq(a[at], "replace")) {
      return r->Error("ERR Unknown option given: " + std::string(a[at]));
    }
    replace = true;
  }
  if (at >= a.size()) return r->Error("ERR Function code is missing");
  std::string code(a[at]);
  std::string name, err;
  size_t body = 0;
  if (!ParseMetadata(code, &name, &body, &err)) return r->Error(err);
  WithLibraries(c, r, true, [&](std::vector<Library>* libs, uint64_t generation) {
    Compiled& l = Local();
    const std::string& lower = name;  // library names keep their case
    auto old = l.libs.find(lower);
    if (old != l.libs.end() && !replace) {
      return r->Error("ERR Library '" + name + "' already exists");
    }
    std::vector<LuaScripts::Function> fns;
    if (!LuaScripts::Instance()->LoadLibrary(
            std::string_view(code).substr(body), &fns, &err)) {
      return r->Error(err);
    }
    if (fns.empty()) return r->Error("ERR No functions registered");
    for (const auto& f : fns) {
      auto it = l.fns.find(Lower(f.name));
      if (it != l.fns.end() && it->second.first != lower) {
        return r->Error("ERR Function " + f.name + " already exists");
      }
    }
    std::vector<Library> next;
    for (Library& lib : *libs) {
      if (lib.name != lower) next.push_back(std::move(lib));
    }
    next.push_back(Library{name, code});
    if (!Publish(c, r, &next, generation)) return;
    Unlink(lower);
    Adopt(name, code, std::move(fns));
    r->Bulk(name);
  });
}

void Delete(const Args& a, CommandContext* c, Reply* r) {
  WithLibraries(c, r, true, [&](std::vector<Library>* libs, uint64_t generation) {
    const std::string lower(a[2]);  // library names keep their case
    if (Local().libs.count(lower) == 0) {
      return r->Error("ERR Library not found");
    }
    std::vector<Library> next;
    for (Library& lib : *libs) {
      if (lib.name != lower) next.push_back(std::move(lib));
    }
    if (!Publish(c, r, &next, generation)) return;
    Unlink(lower);
    r->Simple("OK");
  });
}

void Flush(const Args& a, CommandContext* c, Reply* r) {
  if (a.size() > 3) {
    return r->Error("ERR unknown subcommand or wrong number of arguments "
                    "for '" + std::string(a[1]) + "'. Try FUNCTION HELP.");
  }
  if (a.size() == 3 && !Eq(a[2], "sync") && !Eq(a[2], "async")) {
    return r->Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
  }
  if (ReadOnlyReplica(c, r)) return;
  std::unique_ptr<Store::Txn> own;
  if (c->txn == nullptr) own = c->store->Begin();
  // Not Sync: a damaged value is what FLUSH is for.
  std::string err, v;
  ScriptCache* fs = c->store->Functions(&err);
  if (fs == nullptr) {
    return r->Error("ERR the function store is unavailable: " + err);
  }
  uint64_t generation = 0;
  std::vector<Library> libs;
  if (!fs->Get(LibrariesKey(), &v) || !ParseLibraries(v, &generation, &libs)) {
    generation = Local().generation == ~0ULL ? 0 : Local().generation;
  }
  libs.clear();
  Forget();
  if (!Publish(c, r, &libs, generation)) return;
  Local().store = c->store;
  if (own != nullptr) own->Commit();
  r->Simple("OK");
}

// FUNCTION DUMP: every library's code, in a DUMP payload.
void Dump(CommandContext* c, Reply* r) {
  WithLibraries(c, r, false, [&](std::vector<Library>* libs, uint64_t) {
    std::vector<std::string> codes;
    for (const Library& l : *libs) codes.push_back(l.code);
    r->Bulk(rdb::DumpFunctions(codes));
  });
}

// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: the payload's
// libraries, each checked as FUNCTION LOAD checks one, joined to the
// ones there as the policy says, all or none.
void Restore(const Args& a, CommandContext* c, Reply* r) {
  if (a.size() > 4) {
    return r->Error("ERR unknown subcommand or wrong number of arguments "
                    "for '" + std::string(a[1]) + "'. Try FUNCTION HELP.");
  }
  enum { kAppend, kReplace, kFlush } policy = kAppend;
  if (a.size() == 4) {
    if (Eq(a[3], "append")) {
      policy = kAppend;
    } else if (Eq(a[3], "replace")) {
      policy = kReplace;
    } else if (Eq(a[3], "flush")) {
      policy = kFlush;
    } else {
      return r->Error("ERR Wrong restore policy given, value should be "
                      "either FLUSH, APPEND or REPLACE.");
    }
  }
  std::vector<std::string> codes;
  bool checksum_ok = false;
  std::string why;
  if (!rdb::UndumpFunctions(a[2], ~size_t{0}, &codes, &checksum_ok, &why)) {
    if (!checksum_ok) {
      return r->Error("ERR DUMP payload version or checksum are wrong");
    }
    return r->Error("ERR " + why);
  }
  WithLibraries(c, r, true, [&](std::vector<Library>* libs,
                                uint64_t generation) {
    // The payload's libraries on their own: each must load, no two of
    // one name or with a function of one name.
    std::vector<Library> fresh;
    std::map<std::string, std::string> fresh_fns;  // lower name -> library
    for (const std::string& code : codes) {
      std::string name, err;
      size_t body = 0;
      std::vector<LuaScripts::Function> fns;
      if (!ParseMetadata(code, &name, &body, &err)) return r->Error(err);
      for (const Library& f : fresh) {
        if (f.name == name) {
          return r->Error("ERR Library '" + name + "' already exists");
        }
      }
      if (!LuaScripts::Instance()->LoadLibrary(
              std::string_view(code).substr(body), &fns, &err)) {
        return r->Error(err);
      }
      if (fns.empty()) return r->Error("ERR No functions registered");
      for (const auto& f : fns) {
        if (!fresh_fns.emplace(Lower(f.name), name).second) {
          return r->Error("ERR Function " + f.name + " already exists");
        }
      }
      fresh.push_back(Library{name, code});
    }
    std::vector<Library> next;
    if (policy != kFlush) {
      const Compiled& l = Local();
      for (Library& lib : *libs) {
        bool replaced = false;
        for (const Library& f : fresh) replaced |= f.name == lib.name;
        if (replaced && policy == kAppend) {
          return r->Error("ERR Library " + lib.name + " already exists");
        }
        if (!replaced) next.push_back(std::move(lib));
      }
      for (const Library& kept : next) {
        auto it = l.libs.find(kept.name);
        if (it == l.libs.end()) continue;
        for (const auto& f : it->second.fns) {
          if (fresh_fns.count(Lower(f.name)) != 0) {
            return r->Error("ERR Function " + f.name + " already exists");
          }
        }
      }
    }
    for (Library& f : fresh) next.push_back(std::move(f));
    if (!Publish(c, r, &next, generation)) return;
    // Compiled again at the next use, from what was written.
    Forget();
    r->Simple("OK");
  });
}

void Flags(const LuaScripts::Function& f, Reply* r) {
  size_t n = 0;
  for (size_t i = 0; i < std::size(kFunctionFlagNames); ++i) {
    n += (f.flags >> i) & 1;
  }
  r->Set(n);
  for (size_t i = 0; i < std::size(kFunctionFlagNames); ++i) {
    if ((f.flags >> i) & 1) r->Simple(kFunctionFlagNames[i]);
  }
}

void List(const Args& a, CommandContext* c, Reply* r) {
  bool with_code = false;
  bool has_pattern = false;
  std::string pattern;
  for (size_t i = 2; i < a.size(); ++i) {
    if (!with_code && Eq(a[i], "withcode")) {
      with_code = true;
      continue;
    }
    if (!has_pattern && Eq(a[i], "libraryname")) {
      if (i + 1 >= a.size()) {
        return r->Error("ERR library name argument was not given");
      }
      pattern.assign(a[++i]);
      has_pattern = true;
      continue;
    }
    return r->Error("ERR Unknown argument " + std::string(a[i]));
  }
  WithLibraries(c, r, false, [&](std::vector<Library>*, uint64_t) {
    std::vector<const Compiled::Lib*> shown;
    for (const auto& [lower, lib] : Local().libs) {
      if (!has_pattern || GlobMatch(pattern, lib.name)) {
        shown.push_back(&lib);
      }
    }
    r->Array(shown.size());
    for (const Compiled::Lib* lib : shown) {
      r->Map(with_code ? 4 : 3);
      r->Bulk("library_name");
      r->Bulk(lib->name);
      r->Bulk("engine");
      r->Bulk("LUA");
      r->Bulk("functions");
      r->Array(lib->fns.size());
      for (const auto& f : lib->fns) {
        r->Map(3);
        r->Bulk("name");
        r->Bulk(f.name);
        r->Bulk("description");
        if (f.has_desc) {
          r->Bulk(f.desc);
        } else {
          r->Null();
        }
        r->Bulk("flags");
        Flags(f, r);
      }
      if (with_code) {
        r->Bulk("library_code");
        r->Bulk(lib->code);
      }
    }
  });
}

// FUNCTION STATS's reply: `run`, the function running (null: none).
void StatsReply(const RunningScript* run, Reply* r) {
  r->Map(2);
  r->Bulk("running_script");
  if (run != nullptr) {
    r->Map(3);
    r->Bulk("name");
    r->Bulk(run->name);
    r->Bulk("command");
    r->Array(run->command.size());
    for (const std::string& arg : run->command) r->Bulk(arg);
    r->Bulk("duration_ms");
    r->Int(std::max<int64_t>(0, MonoNowMs() - ScriptStartMs(run->busy)));
  } else {
    r->Null();
  }
  r->Bulk("engines");
  r->Map(1);
  r->Bulk("LUA");
  r->Map(2);
  r->Bulk("libraries_count");
  r->Int(static_cast<int64_t>(Local().libs.size()));
  r->Bulk("functions_count");
  r->Int(static_cast<int64_t>(Local().function_count()));
}

void Stats(CommandContext* c, Reply* r) {
  // A worker answering this runs no script itself (its own long one is
  // answered by FunctionStatsWhileBusy): one of another worker is shown
  // once it has run long enough to say what it is.
  RunningScript run;
  const bool running = ReadRunning(c->store, &run);
  if (running && !run.function) {
    // As Redis: an EVAL that runs long is not a function's to show.
    return r->Error(BusyText(false));
  }
  WithLibraries(c, r, false, [&](std::vector<Library>*, uint64_t) {
    StatsReply(running ? &run : nullptr, r);
  });
}

void Function(const Args& a, CommandContext* c, Reply* r) {
  auto arity = [&](const char* sub) {
    r->Error(std::string("ERR wrong number of arguments for 'function|") +
             sub + "' command");
  };
  if (Eq(a[1], "help")) {
    if (a.size() != 2) return arity("help");
    HelpReply(r, "FUNCTION", {
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Adds a library of the code given (its first line names it).",
        "DELETE <LIBRARY NAME>",
        "    Removes a library and its functions.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Each library: its name, engine, functions and code if asked.",
        "STATS",
        "    The running function, and the libraries and functions held.",
        "KILL",
        "    Stops the function that runs too long, if it wrote nothing.",
        "FLUSH [ASYNC|SYNC]",
        "    Removes every library.",
        "DUMP",
        "    Every library, in a payload FUNCTION RESTORE takes.",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Adds a payload's libraries: FLUSH drops the ones there first,",
        "    APPEND (the default) refuses one of a name there, REPLACE",
        "    replaces it."});
    return;
  }
  // The subcommands that write are refused on a replica before their
  // arguments are read, as Redis refuses a write command.
  if (Eq(a[1], "load")) {
    if (a.size() < 3) return arity("load");
    if (ReadOnlyReplica(c, r)) return;
    return Load(a, c, r);
  }
  if (Eq(a[1], "delete")) {
    if (a.size() != 3) return arity("delete");
    if (ReadOnlyReplica(c, r)) return;
    return Delete(a, c, r);
  }
  if (Eq(a[1], "flush")) {
    if (ReadOnlyReplica(c, r)) return;
    return Flush(a, c, r);
  }
  if (Eq(a[1], "dump")) {
    if (a.size() != 2) return arity("dump");
    return Dump(c, r);
  }
  if (Eq(a[1], "restore")) {
    if (a.size() < 3) return arity("restore");
    if (ReadOnlyReplica(c, r)) return;
    return Restore(a, c, r);
  }
  if (Eq(a[1], "list")) return List(a, c, r);
  if (Eq(a[1], "stats")) {
    if (a.size() != 2) return arity("stats");
    return Stats(c, r);
  }
  if (Eq(a[1], "kill")) {
    if (a.size() != 2) return arity("kill");
    return ReplyKill(c->store, false, r);
  }
  r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
           "'. Try FUNCTION HELP.");
}

// FCALL function numkeys [key ...] [arg ...] and FCALL_RO.
void FCallGeneric(const Args& a, CommandContext* c, Reply* r, bool ro) {
  std::unique_ptr<Store::Txn> own;
  Store::Txn* txn = c->txn;
  if (txn == nullptr) {
    own = c->store->Begin();
    txn = own.get();
    uint32_t db = txn->Physical(c->client->db);
    c->store->UseDb(db);
    txn->UseDb(db);
  }
  uint64_t generation = 0;
  if (!Sync(c, r, nullptr, &generation)) return;
  const std::string lower = Lower(a[1]);
  Compiled& l = Local();
  auto it = l.fns.find(lower);
  if (it == l.fns.end()) return r->Error("ERR Function not found");
  const LuaScripts::Function& f =
      l.libs[it->second.first].fns[it->second.second];
  const bool no_writes = (f.flags & kFunctionNoWrites) != 0;
  // A function that may write is a write command: not on a replica.
  if (!no_writes && ReadOnlyReplica(c, r)) return;
  int64_t numkeys = 0;
  if (!ToInt(a[2], &numkeys)) {
    return r->Error("ERR Bad number of keys provided");
  }
  if (numkeys > static_cast<int64_t>(a.size()) - 3) {
    return r->Error("ERR Number of keys can't be greater than number of "
                    "args");
  }
  if (numkeys < 0) return r->Error("ERR Number of keys can't be negative");
  if (ro && !no_writes) {
    return r->Error("ERR Can not execute a script with write flag using "
                    "*_ro command.");
  }

  Args keys(a.begin() + 3, a.begin() + 3 + numkeys);
  Args argv(a.begin() + 3 + numkeys, a.end());
  const std::string name = f.name;
  Store::Txn* outer = c->txn;
  c->txn = txn;
  ClientState* cl = c->client;
  uint32_t db = cl->db;
  bool deny = c->deny_blocking;
  c->deny_blocking = true;
  size_t mark = r->Mark();
  bool wrote = false;
  LuaScripts::Instance()->RunFunction(lower, name, keys, argv,
                                      ro || no_writes, c, r, &wrote, a);
  c->deny_blocking = deny;
  cl->db = db;
  c->txn = outer;
  if (own != nullptr) {
    Store::Status st = own->Commit();
    if (st != Store::Status::kOk) {
      r->Rewind(mark);
      StoreError(st, r);
    } else {
      PublishEvents(c);
    }
    c->events.clear();
  }
}

void FCall(const Args& a, CommandContext* c, Reply* r) {
  FCallGeneric(a, c, r, false);
}
void FCallRo(const Args& a, CommandContext* c, Reply* r) {
  FCallGeneric(a, c, r, true);
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kFunctionRows[] = {
    {"function", 188, -2, kNoScript | kContainer, 0, 0, 0, Function},
    {"fcall", 189, -3, kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kMovableKeys | kMayReplicate, 0, 0, 0, FCall},
    {"fcall_ro", 190, -3, kReadOnly | kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kMovableKeys, 0, 0, 0, FCallRo},
};

}  // namespace

void FunctionStatsWhileBusy(Store* store, Reply* r) {
  // What this process compiled when its running function began (it
  // cannot compile again while it runs).
  RunningScript run;
  const bool running = ReadRunning(store, &run);
  if (running && !run.function) return r->Error(BusyText(false));
  StatsReply(running ? &run : nullptr, r);
}

bool StoredLibraryCodes(Store* store, std::vector<std::string>* codes,
                        std::string* why) {
  codes->clear();
  ScriptCache* fs = store->Functions(why);
  if (fs == nullptr) return false;
  std::string v;
  uint64_t generation = 0;
  std::vector<Library> libs;
  if (!fs->Get(LibrariesKey(), &v)) v.clear();
  if (!ParseLibraries(v, &generation, &libs)) {
    *why = "the function libraries are damaged (FUNCTION FLUSH clears them)";
    return false;
  }
  for (Library& l : libs) codes->push_back(std::move(l.code));
  return true;
}

void RegisterFunctionFamily(Registry* r) { r->Add(kFunctionRows, "function"); }

}  // namespace cmd
}  // namespace shmkv
