// What a standalone Redis answers to the commands of its cluster mode,
// its modules and its replicas' acknowledgements (docs/server.md,
// "Commands"), so that clients that probe for them (a cluster client's
// CLUSTER INFO or READONLY, a library's MODULE LIST, a lock's WAIT) get
// Redis's answers: a shmkv store is no cluster node, loads no modules and
// serves no replicas.
#include <initializer_list>
#include <string>

#include "server/commands/command_util.h"
#include "server/commands/reply.h"
#include "server/store/repl.h"

namespace shmkv {
namespace cmd {

namespace {

struct Subcommand {
  const char* name;
  int arity;  // as a row's: > 0 exactly, < 0 at least
};

// The name of subcommand `a[1]` of `container` among `subs`: null after
// replying Redis's unknown-subcommand or arity error.
const char* FindSubcommand(const Args& a, const char* container,
                           const char* upper,
                           std::initializer_list<Subcommand> subs, Reply* r) {
  const std::string sub = Lower(a[1]);
  for (const Subcommand& s : subs) {
    if (sub != s.name) continue;
    const int n = static_cast<int>(a.size());
    if ((s.arity > 0 && n != s.arity) || (s.arity < 0 && n < -s.arity)) {
      SubcommandArityError(container, sub, r);
      return nullptr;
    }
    return s.name;
  }
  r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
           "'. Try " + upper + " HELP.");
  return nullptr;
}

void NoCluster(Reply* r) {
  r->Error("ERR This instance has cluster support disabled");
}

// CLUSTER <subcommand> ...: each of Redis 7.0's subcommands (and their
// arities) answers that cluster support is disabled, as a standalone
// Redis does.
void Cluster(const Args& a, CommandContext*, Reply* r) {
  if (FindSubcommand(
          a, "cluster", "CLUSTER",
          {{"addslots", -3}, {"addslotsrange", -4}, {"bumpepoch", 2},
           {"count-failure-reports", 3}, {"countkeysinslot", 3},
           {"delslots", -3}, {"delslotsrange", -4}, {"failover", -2},
           {"flushslots", 2}, {"forget", 3}, {"getkeysinslot", 4},
           {"help", 2}, {"info", 2}, {"keyslot", 3}, {"links", 2},
           {"meet", -4}, {"myid", 2}, {"nodes", 2}, {"replicas", 3},
           {"replicate", 3}, {"reset", -2}, {"saveconfig", 2},
           {"set-config-epoch", 3}, {"setslot", -4}, {"shards", 2},
           {"slaves", 3}, {"slots", 2}},
          r) != nullptr) {
    NoCluster(r);
  }
}

// READONLY, READWRITE, ASKING
void ClusterOnly(const Args&, CommandContext*, Reply* r) { NoCluster(r); }

// MODULE LIST | HELP | LOAD | LOADEX | UNLOAD
void Module(const Args& a, CommandContext*, Reply* r) {
  const char* s = FindSubcommand(
      a, "module", "MODULE",
      {{"help", 2}, {"list", 2}, {"load", -3}, {"loadex", -3},
       {"unload", 3}},
      r);
  if (s == nullptr) return;
  const std::string_view name = s;
  if (name == "list") return r->Array(0);
  if (name == "help") {
    const char* refused = "    Refused: shmkv loads no modules.";
    return HelpReply(r, "MODULE",
                     {"LIST", "    Return the modules loaded: none in shmkv.",
                      "LOAD <path> [<arg> ...]", refused,
                      "LOADEX <path> [...]", refused, "UNLOAD <name>",
                      refused});
  }
  r->Error("ERR shmkv loads no modules");
}

// WAIT numreplicas timeout: the replicas that acknowledged the client's
// writes. A shmkv store serves none, so the answer is 0, given at once
// (Redis waits out the timeout for the same answer when numreplicas is
// above it).
void Wait(const Args& a, CommandContext* c, Reply* r) {
  if (SharedRepl* repl = c->store->Repl()) {
    if (repl->Mode() != ReplMode::kMaster) {
      return r->Error("ERR WAIT cannot be used with replica instances.");
    }
  }
  int64_t replicas = 0, timeout = 0;
  if (!ToInt(a[1], &replicas)) return NotInt(r);
  if (!ToInt(a[2], &timeout)) {
    return r->Error("ERR timeout is not an integer or out of range");
  }
  if (timeout < 0) return r->Error("ERR timeout is negative");
  r->Int(0);
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kStandaloneRows[] = {
    {"cluster", 224, -2, kContainer, 0, 0, 0, Cluster},
    {"readonly", 225, 1, kLoading | kStale | kFast, 0, 0, 0, ClusterOnly},
    {"readwrite", 226, 1, kLoading | kStale | kFast, 0, 0, 0, ClusterOnly},
    {"asking", 227, 1, kFast, 0, 0, 0, ClusterOnly},
    {"module", 228, -2, kContainer, 0, 0, 0, Module},
    {"wait", 229, 3, kNoScript, 0, 0, 0, Wait},
};

}  // namespace

void RegisterStandaloneFamily(Registry* r) {
  r->Add(kStandaloneRows, "standalone");
}

}  // namespace cmd
}  // namespace shmkv
