// The server and connection family (server/commands/server_family.cc) in
// process, against redis-server: INFO, CONFIG, COMMAND, TIME.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using shmkv_test::Bulk;

// The family's statistics ids, as first given: pin a new command's here.
TEST(ServerFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("server", {
      {"ping", 1}, {"echo", 2}, {"time", 57}, {"info", 58}, {"command", 59},
      {"config", 60}, {"quit", 61}, {"select", 62}, {"client", 63},
      {"auth", 64}, {"hello", 65}, {"swapdb", 157}, {"reset", 173},
      {"latency", 174}, {"save", 177}, {"lastsave", 178}, {"bgsave", 179},
      {"shutdown", 180}, {"replicaof", 182}, {"slaveof", 183}, {"role", 184},
  });
}

// INFO with several sections and # CPU, CONFIG GET of every setting and
// Redis's refusals, COMMAND as clients ask it.
TEST(ServerFamilyVsRedis, ServerCommands) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("srvcmd");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"CONFIG", "GET", "nosuch*"},
      {"CONFIG", "GET", "appendonly"}, {"CONFIG", "SET", "nosuch", "1"},
      {"CONFIG", "GET"}, {"CONFIG", "SET", "x"}, {"CONFIG", "NOSUCH"},
      {"COMMAND", "INFO", "nosuchcmd"}, {"COMMAND", "DOCS", "nosuchcmd"},
      {"COMMAND", "COUNT", "x"}, {"COMMAND", "NOSUCH"},
      {"INFO", "nosuchsection"}, {"TIME", "x"},
      // RESET: the connection as new, and its protocol back to RESP2
      {"SELECT", "3"}, {"CLIENT", "SETNAME", "n"}, {"MULTI"}, {"RESET"},
      {"CLIENT", "GETNAME"}, {"EXEC"}, {"SET", "in3", "x"}, {"SELECT", "3"},
      {"GET", "in3"}, {"RESET"}, {"HGETALL", "nosuch"}, {"GET", "nosuch"},
      {"RESET", "x"},
      // HELLO's errors (its success replies name the server's version)
      {"HELLO", "4"}, {"HELLO", "1"}, {"HELLO", "x"}, {"HELLO", "2", "bogus"},
      {"HELLO", "3", "AUTH", "default"}, {"HELLO", "3", "SETNAME"},
      {"HELLO", "2", "SETNAME", "has space"},
      // LATENCY: no events (Redis's monitor is off by default), and a
      // histogram of a command nobody ran is no entry
      {"LATENCY", "HISTOGRAM", "nosuchcmd"}, {"LATENCY", "HISTOGRAM", "lpush"},
      {"LATENCY", "LATEST"}, {"LATENCY", "LATEST", "x"},
      {"LATENCY", "HISTORY", "command"}, {"LATENCY", "HISTORY"},
      {"LATENCY", "RESET"}, {"LATENCY", "RESET", "command", "x"},
      {"LATENCY", "GRAPH", "command"}, {"LATENCY", "GRAPH"},
      {"LATENCY", "BOGUS"}, {"LATENCY"}, {"LATENCY", "DOCTOR", "x"},
  });
}

// INFO keyspace's avg_ttl: the mean remaining TTL of the database's keys
// that have one (it was always 0), each database its own. The index is
// smaller than avg_ttl's walk, so every walk, from whichever slot it
// starts, meets every key (a walk that wrapped once stopped short and
// missed keys before its start: 100 calls catch that).
TEST(ServerFamily, InfoAvgTtlIsTheMeanOfTheKeysWithATtl) {
  CommandHarness h("avgttl");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"SET", "a", "v", "PX", "100000"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "b", "v", "PX", "50000"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "c", "v"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SELECT", "2"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "d", "v", "PX", "10000"}), "+OK\r\n");
  for (int call = 0; call < 100; ++call) {
    std::string info = h.Run({"INFO", "keyspace"});
    auto avg = [&](const std::string& db) -> int64_t {
      size_t at = info.find(db + ":keys=");
      if (at == std::string::npos) return -1;
      at = info.find("avg_ttl=", at);
      return at == std::string::npos ? -1 : std::stoll(info.substr(at + 8));
    };
    ASSERT_GT(avg("db0"), 70000) << "call " << call << ": " << info;
    ASSERT_LE(avg("db0"), 75000) << info;
    ASSERT_GT(avg("db2"), 5000) << info;
    ASSERT_LE(avg("db2"), 10000) << info;
    ASSERT_NE(info.find("db0:keys=3,expires=2,avg_ttl="), std::string::npos)
        << info;
  }
}

// What only shmkv has (its settings, its COMMAND rows) in both protocols.
TEST(ServerFamily, InfoConfigAndCommandShapes) {
  CommandHarness h("srvshape");
  ASSERT_TRUE(h.ok()) << h.error();
  h.info()->resp_port = 16380;
  std::string info = h.Run({"INFO", "server", "CPU"});
  EXPECT_NE(info.find("# Server"), std::string::npos) << info;
  EXPECT_NE(info.find("# CPU\r\nused_cpu_sys:"), std::string::npos) << info;
  EXPECT_EQ(info.find("# Memory"), std::string::npos) << info;
  std::string all = h.Run({"INFO"});
  for (const char* sec : {"# Server", "# Clients", "# Memory",
                          "# Persistence", "# Stats", "# CPU", "# Keyspace"}) {
    EXPECT_NE(all.find(sec), std::string::npos) << sec;
  }
  std::string cfg = h.Run({"CONFIG", "GET", "*"});
  for (const char* k : {"port", "bind", "requirepass", "protected-mode",
                        "maxmemory", "proto-max-bulk-len",
                        "shmkv-journal-size", "shmkv-capacity"}) {
    EXPECT_NE(cfg.find(Bulk(k)), std::string::npos) << k << " in " << cfg;
  }
  EXPECT_NE(cfg.find(Bulk("16380")), std::string::npos);
  EXPECT_EQ(h.Run({"CONFIG", "SET", "maxmemory", "1"}),
            "-ERR CONFIG SET failed (possibly related to argument "
            "'maxmemory') - can't set immutable config\r\n");
  std::string count = h.Run({"COMMAND", "COUNT"});
  ASSERT_EQ(count[0], ':') << count;
  EXPECT_GT(std::stoi(count.substr(1)), 60);
  EXPECT_EQ(h.Run({"COMMAND", "INFO", "get", "nosuch"}),
            "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*1\r\n+readonly\r\n:1\r\n:1\r\n"
            ":1\r\n*0\r\n*0\r\n*0\r\n*0\r\n$-1\r\n");
  // SCAN TYPE: every key is a string.
  ASSERT_EQ(h.Run({"SET", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SCAN", "0", "COUNT", "1000000", "TYPE", "hash"}),
            "*2\r\n$1\r\n0\r\n*0\r\n");
  EXPECT_EQ(h.Run({"SCAN", "0", "COUNT", "1000000", "TYPE", "string"}),
            "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n");
  std::string docs = h.Run({"COMMAND", "DOCS", "set"});
  EXPECT_EQ(docs, "*2\r\n$3\r\nset\r\n*0\r\n");
  // In RESP3: sets, maps, nulls and verbatim text where Redis has them.
  std::string hello = h.Run({"HELLO", "3"});
  EXPECT_EQ(hello.substr(0, 4), "%7\r\n") << hello;
  EXPECT_NE(hello.find("$5\r\nproto\r\n:3\r\n"), std::string::npos) << hello;
  EXPECT_EQ(h.Run({"COMMAND", "INFO", "get", "nosuch"}),
            "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n~1\r\n+readonly\r\n:1\r\n:1\r\n"
            ":1\r\n~0\r\n~0\r\n~0\r\n~0\r\n_\r\n");
  EXPECT_EQ(h.Run({"COMMAND", "DOCS", "set"}), "%1\r\n$3\r\nset\r\n%0\r\n");
  std::string map = h.Run({"CONFIG", "GET", "port"});
  EXPECT_EQ(map, "%1\r\n$4\r\nport\r\n$5\r\n16380\r\n");
  std::string text = h.Run({"INFO", "server"});
  EXPECT_EQ(text.substr(0, 1), "=") << text;
  EXPECT_NE(text.find("\r\ntxt:# Server\r\n"), std::string::npos) << text;
  std::string me = h.Run({"CLIENT", "INFO"});
  EXPECT_EQ(me.substr(0, 1), "=") << me;
  EXPECT_EQ(h.Run({"HELLO", "2"}).substr(0, 5), "*14\r\n");
  ASSERT_EQ(h.Run({"HELLO", "3", "SETNAME", "me"}).substr(0, 4), "%7\r\n");
  EXPECT_EQ(h.Run({"CLIENT", "GETNAME"}), "$2\r\nme\r\n");
  EXPECT_EQ(h.Run({"RESET"}), "+RESET\r\n");
  EXPECT_EQ(h.Run({"CLIENT", "GETNAME"}), "$-1\r\n");
  EXPECT_EQ(h.Run({"HGETALL", "nosuch"}), "*0\r\n");
}

}  // namespace
