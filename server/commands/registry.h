// The command table: each family of commands (strings, keys, server and
// connection, transactions, ...) lists its own rows beside its handlers
// and registers them (Register*Family below); dispatch, COMMAND and the
// statistics read the rows and nothing else lists commands.
//
// A row carries what Redis's command table carries: name, arity, flags,
// the key positions, and the handler. Its `id` is the command's statistics
// slot (server/store/stats.h): given once when the command is added and
// never changed or reused, so counters that live in shared memory keep
// their meaning across a hot reload to a build whose table differs.
// Each family's test pins its rows' ids (tests/support/pinned_ids.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/commands/reply.h"

namespace shmkv {

struct CommandContext;

namespace cmd {

using Args = std::vector<std::string_view>;
// A command's handler. Syntax errors and run-time errors are replies
// (Reply::Error); a write command runs inside the transaction
// CommandContext::txn names, committed by dispatch unless it replied an
// error.
using Handler = void (*)(const Args& a, CommandContext* c, Reply* r);

// Flags, under the names Redis's COMMAND INFO gives them.
enum CommandFlag : uint32_t {
  kWrite = 1u << 0,     // changes data: runs in a write transaction
  kReadOnly = 1u << 1,  // reads data only
  kFast = 1u << 2,      // O(1) or O(log n)
  kAdmin = 1u << 3,     // server administration
  kNoScript = 1u << 4,  // not allowed in scripts
  kDenyOom = 1u << 5,   // may use more memory ("denyoom")
  kLoading = 1u << 6,   // allowed while loading
  kStale = 1u << 7,     // allowed on a stale replica
  kNoAuth = 1u << 8,    // allowed before AUTH (AUTH, HELLO, QUIT)
  kNotQueued = 1u << 9, // runs at once inside MULTI ("no-multi" in Redis's
                        // terms for some, EXEC/DISCARD/WATCH/QUIT here)
  kMayReplicate = 1u << 10,
  kPubSub = 1u << 11,
  // A write command that commits on its own instead of in the
  // transaction dispatch opens (FLUSHALL outside MULTI, which the journal
  // could not hold); inside EXEC it runs in EXEC's transaction.
  kOwnCommit = 1u << 12,
  kBlocking = 1u << 13,  // may hold the client until a key is written
  // Runs while another client's script is busy ("allow-busy"): the
  // transaction commands, AUTH, HELLO, RESET and QUIT (SCRIPT KILL,
  // FUNCTION KILL and FUNCTION STATS are subcommands: dispatch's).
  kAllowBusy = 1u << 14,
  // Shown by COMMAND INFO as Redis shows them; nothing here reads them.
  kSkipMonitor = 1u << 15,
  kSkipSlowlog = 1u << 16,
  kNoMandatoryKeys = 1u << 17,  // its keys may be none (EVAL, FCALL)
  kNoAsyncLoading = 1u << 18,
  kNoMulti = 1u << 19,     // Redis refuses it inside MULTI
  kMovableKeys = 1u << 20, // its keys move with its arguments
  // A command of subcommands (CONFIG, CLIENT, ...): Redis flags each
  // subcommand, not the container, so COMMAND INFO shows none; the row's
  // other flags are what dispatch applies to every subcommand.
  kContainer = 1u << 21,
  // Runs in a write transaction of its own (under the store's write lock)
  // although Redis does not flag it write: SAVE and SHUTDOWN save there.
  kLocked = 1u << 22,
};

struct CommandRow {
  const char* name;  // lower case
  uint16_t id;       // statistics slot: fixed for this name, never reused
  int16_t arity;     // > 0: exactly; < 0: at least -arity (name included)
  uint32_t flags;
  // Redis's key positions: the first and last key argument and the step
  // between keys (last -1: to the end); 0 0 0 for a command of no keys.
  int8_t first_key, last_key, key_step;
  Handler run;
};

// f(i) for each argument i (of argc, the name being 0) that the row's
// key positions name (first_key, last_key, key_step): the keys of a
// command whose keys do not move (EVAL's and ZUNION's do).
template <class F>
void ForEachKeyIndex(const CommandRow& row, size_t argc, F&& f) {
  if (row.first_key <= 0) return;
  const int64_t n = static_cast<int64_t>(argc);
  int64_t last = row.last_key < 0 ? n + row.last_key : row.last_key;
  if (last >= n) last = n - 1;
  const int64_t step = row.key_step > 0 ? row.key_step : 1;
  for (int64_t i = row.first_key; i <= last; i += step) {
    f(static_cast<size_t>(i));
  }
}

class Registry {
 public:
  // Adds a family's rows. A duplicate name or id, or an id past the
  // statistics table, is a bug in the table: it aborts at start-up with
  // the offending row named (and tests/shmkv_commands_test.cc fails).
  // `family` names the family ("string", "hash", ...) for its tests.
  void Add(const CommandRow* rows, size_t n, const char* family = "");
  template <size_t N>
  void Add(const CommandRow (&rows)[N], const char* family = "") {
    Add(rows, N, family);
  }
  // The row of a command by its name in any case; null when unknown.
  const CommandRow* Find(std::string_view name) const;
  // Every row, in the order the families added them.
  const std::vector<const CommandRow*>& rows() const { return rows_; }
  // The name for a statistics id ("" when unused).
  const char* NameOfId(size_t id) const;
  // The family a row was added with ("" for none).
  std::string_view FamilyOf(const CommandRow* row) const;

 private:
  std::vector<const CommandRow*> rows_;
  std::vector<const CommandRow*> by_id_;
  // Lower-case name -> row (the names are the rows' static strings).
  std::unordered_map<std::string_view, const CommandRow*> index_;
  std::unordered_map<const CommandRow*, std::string_view> family_;
};

// The table of every family, built once.
const Registry& Commands();

// The families (each in its own file).
void RegisterStringFamily(Registry* r);
void RegisterKeyspaceFamily(Registry* r);
void RegisterServerFamily(Registry* r);
void RegisterConnectionFamily(Registry* r);
void RegisterTransactionFamily(Registry* r);
void RegisterHashFamily(Registry* r);
void RegisterListFamily(Registry* r);
void RegisterSetFamily(Registry* r);
void RegisterZSetFamily(Registry* r);
void RegisterStreamFamily(Registry* r);
void RegisterHllFamily(Registry* r);
void RegisterGeoFamily(Registry* r);
void RegisterStandaloneFamily(Registry* r);
void RegisterStreamGroupFamily(Registry* r);
void RegisterBlockingFamily(Registry* r);
void RegisterScriptFamily(Registry* r);
void RegisterFunctionFamily(Registry* r);
void RegisterPubSubFamily(Registry* r);

}  // namespace cmd
}  // namespace shmkv
