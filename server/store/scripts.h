// The script cache every worker shares (docs/server.md, "Scripts"): the
// bodies of the Lua scripts EVAL and SCRIPT LOAD were given, by their
// SHA1, in a ShmHashMap segment of their own (SEG.ctl.scripts), so that a
// script loaded through one worker runs by EVALSHA on every other, and
// outlives a restart of the workers as the data does. FLUSHALL leaves it;
// SCRIPT FLUSH empties it.
//
// A map key is the 128-bit hash of the 40 hex digits; a value is
//   the 40 hex digits  the script's bytes
// and a read checks the digits against the ones asked for (a value that
// is not of this shape, or names another script, reads as missing).
//
// Writes happen under the store's write lock (a Store::Txn held), which
// serializes them across workers; reads take no lock. A writer killed
// mid-write leaves the map's intent record, which the next write finishes
// first (Recover), as the store's own map does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/store/store.h"

namespace shmkv {

// The segment of the script cache of a store (posix, beside the others).
std::string ScriptsKey(const StoreConfig& cfg);
// The segment of the store's function libraries (FUNCTION LOAD): a second
// map of the same shape, so that SCRIPT FLUSH leaves the libraries and
// FUNCTION FLUSH the scripts (server/commands/function_family.cc).
std::string FunctionsKey(const StoreConfig& cfg);

class ScriptCache {
 public:
  // Scripts the cache holds at most, and bytes for their bodies.
  static constexpr uint64_t kCapacity = 16384;
  static constexpr uint64_t kMemory = 8ULL << 20;
  // `key` names the segment: ScriptsKey, or FunctionsKey.
  explicit ScriptCache(std::string (*key)(const StoreConfig&) = ScriptsKey);
  ~ScriptCache();
  ScriptCache(const ScriptCache&) = delete;
  ScriptCache& operator=(const ScriptCache&) = delete;

  // Attaches the cache, creating it when missing (any process may: a
  // worker of a build that has scripts, started under a master of one
  // that had none, makes it).
  bool Open(const StoreConfig& cfg, std::string* err);
  // The body of script `sha` (40 lower-case hex digits): lock-free.
  bool Get(std::string_view sha, std::string* body) const;
  bool Has(std::string_view sha) const;
  // Lock-free: the first n (at most 64) bytes of `sha`'s body, without
  // copying the rest; false when it is missing or shorter.
  bool Head(std::string_view sha, size_t n, std::string* head) const;
  // Under the store's write lock: adds a script (kept if already there).
  // False with *err when the cache is full or damaged.
  bool Put(std::string_view sha, std::string_view body, std::string* err);
  // Under the store's write lock: sets `sha`'s body, replacing what it
  // held (one map write: a reader sees the old body or the new one).
  bool Set(std::string_view sha, std::string_view body, std::string* err);
  // Under the store's write lock: removes every script; how many.
  uint64_t Flush();
  uint64_t Count() const;
  // Bytes the bodies take (INFO's used_memory_scripts).
  uint64_t MemoryUsed() const;

 private:
  struct Impl;
  Impl* impl_;
  std::string (*key_)(const StoreConfig&);
};

}  // namespace shmkv
