// The commands of Redis's cluster mode, modules and replica
// acknowledgements (server/commands/standalone_family.cc) against
// redis-server, which like shmkv runs standalone with no module loaded
// and no replica: every subcommand, arity and error, RESP2 and RESP3.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;

TEST(StandaloneFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("standalone", {
      {"cluster", 224}, {"readonly", 225}, {"readwrite", 226},
      {"asking", 227}, {"module", 228}, {"wait", 229},
  });
}

TEST(StandaloneVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  shmkv_test::ForBothProtocols(
      redis, "standalone", [&](CommandHarness* hp, Client* cp) {
    CommandHarness& h = *hp;
    Client& c = *cp;
    shmkv_test::Commands cmds = {
        {"CLUSTER"}, {"CLUSTER", "NOSUCH"}, {"CLUSTER", "NOSUCH", "x"},
        {"READONLY"}, {"READONLY", "x"}, {"READWRITE"}, {"ASKING"},
        {"MODULE"}, {"MODULE", "LIST"}, {"MODULE", "list", "x"},
        {"MODULE", "HELP", "x"}, {"MODULE", "NOSUCH"},
        {"MODULE", "UNLOAD"}, {"MODULE", "LOAD"},
        {"WAIT", "0", "0"}, {"WAIT", "1", "10"}, {"WAIT", "-1", "0"},
        {"WAIT", "x", "0"}, {"WAIT", "0", "x"}, {"WAIT", "0", "1.5"},
        {"WAIT", "0", "-1"}, {"WAIT", "99999999999999999999", "0"},
        {"WAIT", "0", "99999999999999999999"}, {"WAIT", "0"},
        {"MULTI"}, {"READONLY"}, {"WAIT", "1", "0"}, {"CLUSTER", "INFO"},
        {"MODULE", "LIST"}, {"EXEC"},
        {"COMMAND", "GETKEYS", "WAIT", "0", "0"},
    };
    // Each subcommand with too few and too many words, and its arity.
    for (const char* sub :
         {"addslots", "addslotsrange", "bumpepoch", "count-failure-reports",
          "countkeysinslot", "delslots", "delslotsrange", "failover",
          "flushslots", "forget", "getkeysinslot", "help", "info", "keyslot",
          "links", "meet", "myid", "nodes", "replicas", "replicate", "reset",
          "saveconfig", "set-config-epoch", "setslot", "shards", "slaves",
          "slots"}) {
      std::vector<std::string> cmd = {"CLUSTER", sub};
      for (int extra = 0; extra < 4; ++extra) {
        cmds.push_back(cmd);
        cmd.push_back("1");
      }
    }
    ExpectSameAsRedis(&h, &c, cmds);
  });
}

// A script may call CLUSTER INFO (and hear that cluster support is
// disabled) and MODULE HELP, not CLUSTER RESET or MODULE LIST: Redis flags
// those subcommands noscript.
TEST(StandaloneVsRedis, ScriptsCallWhatRedisLetsThem) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("standalonelua");
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  shmkv_test::Commands cmds;
  for (const char* call :
       {"'cluster', 'info'", "'cluster', 'reset'", "'cluster', 'myid'",
        "'module', 'list'", "'module', 'load', 'x'", "'readonly'",
        "'asking'"}) {
    cmds.push_back({"EVAL",
                    std::string("return redis.pcall(") + call + ")", "0"});
  }
  // (MODULE HELP's lines are shmkv's own: their number is Redis's.)
  cmds.push_back({"EVAL", "return #redis.pcall('module', 'help')", "0"});
  ExpectSameAsRedis(&h, &c, cmds);
}

}  // namespace
