// The keyspace family (server/commands/keyspace_family.cc) in process:
// the key commands keep each value's type and answer for every type.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using namespace std::string_literals;

using shmkv::ValueType;
using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;

// The family's statistics ids, as first given: pin a new command's here.
TEST(KeyspaceFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("keyspace", {
      {"del", 29}, {"unlink", 30}, {"exists", 31}, {"touch", 32},
      {"type", 33}, {"rename", 34}, {"renamenx", 35}, {"copy", 36},
      {"randomkey", 37}, {"expire", 38}, {"pexpire", 39}, {"expireat", 40},
      {"pexpireat", 41}, {"ttl", 42}, {"pttl", 43}, {"expiretime", 44},
      {"pexpiretime", 45}, {"persist", 46}, {"dbsize", 47}, {"flushall", 48},
      {"flushdb", 49}, {"keys", 50}, {"scan", 51}, {"object", 66},
      {"move", 158}, {"dump", 175}, {"restore", 176},
      {"migrate", 181}, {"memory", 185}, {"sort", 186}, {"sort_ro", 187},
  });
}

// MEMORY's errors and refusals as Redis's; the figures are the store's
// (docs/server.md), so only their shapes are compared here.
TEST(KeyspaceFamilyVsRedis, MemoryRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("keymemdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"SET", "k", "v"}, {"MEMORY"}, {"MEMORY", "foo"}, {"MEMORY", "USAGE"},
      {"MEMORY", "USAGE", "nokey"}, {"MEMORY", "USAGE", "nokey", "SAMPLES",
                                     "0"},
      {"MEMORY", "USAGE", "k", "SAMPLES"},
      {"MEMORY", "USAGE", "k", "SAMPLES", "-1"},
      {"MEMORY", "USAGE", "k", "SAMPLES", "x"},
      {"MEMORY", "USAGE", "k", "foo"}, {"MEMORY", "USAGE", "k", "foo", "1"},
      {"MEMORY", "STATS", "x"}, {"MEMORY", "DOCTOR", "x"},
      {"MEMORY", "PURGE"}, {"MEMORY", "PURGE", "x"},
      {"MEMORY", "MALLOC-STATS", "x"}, {"MEMORY", "HELP", "x"},
  });
}

// SORT and SORT_RO against redis-server: numbers and ALPHA, ASC and DESC,
// LIMIT's clamping, BY keys and hash fields, BY nosort, GET (and #),
// STORE (a list; an empty result deletes), Redis's score reading
// (strtod: spaces, hex, inf; refused: leftovers, NaN, out of range), the
// errors. Sets are compared only where Redis's order is defined (sorted,
// an intset, or ALPHA for a stored nosort).
TEST(KeyspaceFamilyVsRedis, SortRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("sortdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv_test::Commands cmds = {
      {"RPUSH", "l", "3", "1", "10", "2", "-5", "2.5", "1e2", "03"},
      {"SORT", "l"}, {"SORT", "l", "DESC"}, {"SORT", "l", "ALPHA"},
      {"SORT", "l", "ALPHA", "DESC"}, {"SORT_RO", "l"},
      {"SORT", "l", "LIMIT", "0", "0"}, {"SORT", "l", "LIMIT", "1", "2"},
      {"SORT", "l", "LIMIT", "-5", "3"}, {"SORT", "l", "LIMIT", "2", "-1"},
      {"SORT", "l", "LIMIT", "100", "5"}, {"SORT", "l", "LIMIT", "7", "5"},
      {"SORT", "l", "LIMIT", "0", "100"}, {"SORT", "l", "DESC", "LIMIT",
                                           "1", "3"},
      {"SORT", "l", "LIMIT", "9223372036854775807", "1"},
      {"SORT", "l", "LIMIT", "1", "9223372036854775807"},
      // BY keys and hash fields; missing ones weigh 0 (or nothing: ALPHA)
      {"MSET", "w_3", "30", "w_1", "10", "w_10", "-1", "w_2", "20",
       "w_-5", "5", "w_2.5", "25", "w_1e2", "7"},
      {"SORT", "l", "BY", "w_*"}, {"SORT", "l", "BY", "w_*", "DESC"},
      {"HSET", "h_3", "f", "c"}, {"HSET", "h_1", "f", "a"},
      {"HSET", "h_10", "f", "z"}, {"HSET", "h_2", "f", "b"},
      {"HSET", "h_-5", "f", "y"}, {"HSET", "h_2.5", "f", "x"},
      {"HSET", "h_1e2", "f", "m"}, {"HSET", "h_03", "f", "n"},
      {"SORT", "l", "BY", "h_*->f", "ALPHA"},
      {"SORT", "l", "BY", "h_*->f", "ALPHA", "DESC", "LIMIT", "0", "3"},
      {"SORT", "l", "BY", "h_*->g"}, {"SORT", "l", "BY", "h_*->f"},
      // BY nosort keeps the list's order (DESC reverses it)
      {"SORT", "l", "BY", "nosort"}, {"SORT", "l", "BY", "nosort", "DESC"},
      {"SORT", "l", "BY", "nosort", "LIMIT", "2", "3"},
      {"SORT", "l", "BY", "nosort", "DESC", "LIMIT", "2", "3"},
      // GET: keys, hash fields, the element; missing ones are nil
      {"SORT", "l", "GET", "w_*"}, {"SORT", "l", "GET", "#", "GET", "w_*",
                                    "GET", "h_*->f"},
      {"SORT", "l", "GET", "nostar"}, {"SORT", "l", "GET", "h_*->"},
      {"SORT", "l", "BY", "nosort", "GET", "#", "GET", "h_*->f", "LIMIT",
       "1", "2"},
      {"SET", "str_1", "one"}, {"RPUSH", "lst_2", "x"},
      {"SORT", "l", "GET", "str_*", "GET", "lst_*"},
      // STORE: a list (nil as ""), replacing any type and its TTL
      {"SET", "dst", "x", "EX", "100"},
      {"SORT", "l", "GET", "str_*", "STORE", "dst"},
      {"TYPE", "dst"}, {"TTL", "dst"}, {"LRANGE", "dst", "0", "-1"},
      {"SORT", "l", "DESC", "LIMIT", "0", "2", "STORE", "dst"},
      {"LRANGE", "dst", "0", "-1"}, {"SORT", "nolist", "STORE", "dst"},
      {"EXISTS", "dst"}, {"SORT", "nolist", "STORE", "dst"},
      {"SORT", "nolist"}, {"SORT_RO", "nolist"},
      // sets and sorted sets
      {"SADD", "s", "5", "-1", "30", "2"}, {"SORT", "s"},
      {"SORT", "s", "DESC", "LIMIT", "1", "2"}, {"SORT", "s", "BY", "nosort"},
      {"SORT", "s", "BY", "nosort", "STORE", "dst"},
      {"LRANGE", "dst", "0", "-1"},
      {"SADD", "t", "b", "a", "c", "ab"}, {"SORT", "t", "ALPHA"},
      {"SORT", "t", "BY", "nosort", "STORE", "dst"},
      {"LRANGE", "dst", "0", "-1"}, {"SORT", "t"},
      {"EVAL", "return redis.call('SORT', KEYS[1], 'BY', 'nosort')", "1",
       "t"},
      {"EVAL", "return redis.call('SORT_RO', KEYS[1], 'DESC')", "1", "l"},
      {"MULTI"}, {"SORT", "l", "STORE", "dst"}, {"SORT_RO", "dst", "DESC"},
      {"EXEC"},
      {"ZADD", "z", "1", "30", "2", "10", "3", "20", "4", "5"},
      {"SORT", "z"}, {"SORT", "z", "BY", "nosort"},
      {"SORT", "z", "BY", "nosort", "DESC"},
      {"SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2"},
      {"SORT", "z", "ALPHA", "DESC"},
      // scores as Redis reads them
      {"RPUSH", "odd", " 1", "0x10", "inf", "-inf", "", "-0", "7"},
      {"SORT", "odd"}, {"SORT", "odd", "DESC"},
      {"RPUSH", "big", "1e400"}, {"SORT", "big"}, {"RPUSH", "tiny", "1e-400"},
      {"SORT", "tiny"}, {"RPUSH", "nan", "nan"}, {"SORT", "nan"},
      {"RPUSH", "word", "1", "a"}, {"SORT", "word"}, {"SORT", "word", "ALPHA"},
      {"RPUSH", "ties", "b", "a", "c"}, {"SORT", "ties", "BY", "nokey_*"},
      {"SORT", "ties", "BY", "nokey_*", "DESC"},
      // A BY without '*' means no sort, whatever BY comes after it
      {"SORT", "l", "BY", "nosort", "BY", "w_*"},
      {"SORT", "l", "BY", "nosort", "BY", "nokey_*", "DESC"},
      {"SORT", "l", "BY", "w_*", "BY", "nosort"},
      // ALPHA compares up to a zero byte (strcoll), strings equal that
      // far keep their order; stored, it compares every byte
      {"RPUSH", "zb", "a\0z"s, "a\0b"s, "a", "\0\xff"s, "\0x"s, "b\0"s},
      {"SORT", "zb", "ALPHA"}, {"SORT", "zb", "ALPHA", "DESC"},
      {"SORT", "zb", "ALPHA", "STORE", "dst"}, {"LRANGE", "dst", "0", "-1"},
      {"MSET", "wz_1", "a\0z"s, "wz_2", "a\0b"s, "wz_3", "a"},
      {"RPUSH", "zw", "1", "2", "3"}, {"SORT", "zw", "BY", "wz_*", "ALPHA"},
      {"SORT", "zw", "BY", "wz_*", "ALPHA", "STORE", "dst"},
      {"LRANGE", "dst", "0", "-1"},
      // errors, in Redis's order (options before the key's type)
      {"SET", "str", "x"}, {"SORT", "str"}, {"SORT", "str", "BY", "nosort"},
      {"SORT", "str", "LIMIT", "x", "1"}, {"SORT", "l", "LIMIT", "1"},
      {"SORT", "l", "LIMIT", "1", "x"}, {"SORT", "l", "STORE"},
      {"SORT_RO", "l", "STORE", "dst"}, {"SORT", "l", "BY"},
      {"SORT", "l", "GET"}, {"SORT", "l", "FOO"}, {"SORT"}, {"SORT_RO"},
      {"SORT", "str", "FOO"},
  };
  ExpectSameAsRedis(&h, redis.port(), cmds);
}

// MEMORY USAGE: what a key holds of the store, for every type; a value
// in parts counted part by part (SAMPLES 0) or sampled and scaled; a
// root that claims more parts than the map can hold is damage.
TEST(KeyspaceFamily, MemoryUsageCountsTheStoresBytes) {
  CommandHarness h("keymem", 100000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  auto usage = [&](std::vector<std::string> cmd) -> int64_t {
    std::string out = h.Run(cmd);
    EXPECT_EQ(out[0], ':') << out;
    return std::stoll(out.substr(1));
  };
  ASSERT_EQ(h.Run({"SET", "s", "v"}), "+OK\r\n");
  ASSERT_EQ(h.Run({"SET", "long", std::string(1000, 'x')}), "+OK\r\n");
  int64_t small = usage({"MEMORY", "USAGE", "s"});
  int64_t large = usage({"MEMORY", "USAGE", "long"});
  EXPECT_GT(small, 0);
  EXPECT_GE(large, small + 1000) << "a value's bytes are counted";
  EXPECT_LE(large, small + 1000 * 80 / 64 + 160) << "and little else";
  for (const auto& cmd :
       {std::vector<std::string>{"RPUSH", "l", "a"}, {"SADD", "t", "a"},
        {"ZADD", "z", "1", "a"}, {"HSET", "h", "f", "v"}}) {
    h.Run(cmd);
    EXPECT_GT(usage({"MEMORY", "USAGE", cmd[1]}), 0) << cmd[1];
  }
  // A hash in parts: all parts counted, or five sampled and scaled.
  std::vector<std::string> hset = {"HSET", "big"};
  for (int i = 0; i < 20000; ++i) {
    hset.push_back("field:" + std::to_string(i));
    hset.push_back(std::string(40, 'v'));
  }
  uint64_t before = h.store()->MemoryUsed();
  ASSERT_EQ(h.Run(hset), ":20000\r\n");
  uint64_t nodes = h.store()->MemoryUsed() - before;
  int64_t all = usage({"MEMORY", "USAGE", "big", "SAMPLES", "0"});
  shmkv::Value root;
  ASSERT_TRUE(h.store()->Get("big", &root));
  shmkv::PartsRoot pr;
  std::memcpy(&pr, root.bytes.data(), sizeof(pr));
  // every node the hash took, and an index node (24 bytes) per blob
  EXPECT_EQ(static_cast<uint64_t>(all), nodes + 24 * (pr.parts + 1));
  int64_t sampled = usage({"MEMORY", "USAGE", "big"});
  EXPECT_GT(sampled, all / 2);
  EXPECT_LT(sampled, all * 2);
  // MEMORY STATS: the store's keys and bytes.
  std::string stats = h.Run({"MEMORY", "STATS"});
  EXPECT_NE(stats.find("$10\r\nkeys.count\r\n:7\r\n"), std::string::npos)
      << stats;
  EXPECT_NE(stats.find("total.allocated"), std::string::npos) << stats;
  // A root claiming 2^62 parts (of a collection of its own): the
  // damaged-value error, at once.
  ASSERT_TRUE(h.store()->Get("big", &root));
  {
    auto t = h.store()->Begin();
    pr.id = t->NewCollection();
    pr.parts = uint64_t{1} << 62;
    std::memcpy(&root.bytes[0], &pr, sizeof(pr));
    ASSERT_EQ(t->Write("bad", ValueType::kHash, root.encoding, root.bytes, 0),
              shmkv::Store::Status::kOk);
    ASSERT_EQ(t->Commit(), shmkv::Store::Status::kOk);
  }
  EXPECT_EQ(h.Run({"MEMORY", "USAGE", "bad", "SAMPLES", "0"}),
            "-ERR the value of this key is damaged (shmc check)\r\n");
}

// Every container command whose unknown-subcommand error says "Try X
// HELP." answers X HELP, in Redis's shape, and every subcommand its help
// names is one it knows.
TEST(KeyspaceFamily, EveryTryHelpHasAHelp) {
  CommandHarness h("tryhelp");
  ASSERT_TRUE(h.ok()) << h.error();
  for (std::string x : {"COMMAND", "CONFIG", "CLIENT", "OBJECT", "MEMORY",
                        "LATENCY", "PUBSUB", "SCRIPT", "FUNCTION"}) {
    SCOPED_TRACE(x);
    EXPECT_NE(h.Run({x, "NOSUCH"}).find("Try " + x + " HELP."),
              std::string::npos);
    const std::string help = h.Run({x, "HELP"});
    ASSERT_EQ(help[0], '*') << help.substr(0, 120);
    std::vector<std::string> lines;
    for (size_t at = help.find("\r\n") + 2; at < help.size();) {
      ASSERT_EQ(help[at], '+') << help.substr(at, 80);
      size_t end = help.find("\r\n", at);
      lines.push_back(help.substr(at + 1, end - at - 1));
      at = end + 2;
    }
    ASSERT_EQ(std::to_string(lines.size()),
              help.substr(1, help.find("\r\n") - 1));
    EXPECT_EQ(lines.front().rfind(x + " <subcommand> ", 0), 0u)
        << lines.front();
    EXPECT_EQ(lines.back(), "    Prints this help.");
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      if (l.empty() || l[0] == ' ' || l[0] == '(' || l == "HELP") continue;
      const std::string sub = l.substr(0, l.find(' '));
      EXPECT_EQ(h.Run({x, sub}).find("unknown subcommand"), std::string::npos)
          << x << " " << sub << " is in its help but unknown";
    }
  }
  // HELP takes no argument: one more is its arity error.
  for (std::string x : {"OBJECT", "MEMORY", "LATENCY", "PUBSUB", "SCRIPT",
                        "FUNCTION"}) {
    std::string lower = x;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
    EXPECT_EQ(h.Run({x, "HELP", "x"}),
              "-ERR wrong number of arguments for '" + lower +
                  "|help' command\r\n");
  }
  EXPECT_EQ(h.Run({"COMMAND", "HELP", "x"}),
            "-ERR wrong number of arguments for 'command|help' command\r\n");
  EXPECT_EQ(h.Run({"CONFIG", "HELP", "x"}),
            "-ERR wrong number of arguments for 'config|help' command\r\n");
  EXPECT_EQ(h.Run({"CLIENT", "HELP", "x"}),
            "-ERR wrong number of arguments for 'client|help' command\r\n");
}

TEST(KeyspaceFamily, KeyCommandsKeepTheType) {
  CommandHarness h("keys");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("h", ValueType::kHash, "packed-bytes"));
  EXPECT_EQ(h.Run({"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"PEXPIRE", "h", "100000"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"RENAME", "h", "h2"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h2"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"COPY", "h2", "h3"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h3"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"PERSIST", "h3"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TTL", "h3"}), ":-1\r\n");
  EXPECT_EQ(h.Run({"GET", "h3"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of "
            "value\r\n");
  shmkv::Value v;
  ASSERT_TRUE(h.store()->Get("h3", &v));
  EXPECT_EQ(v.type, ValueType::kHash);
  EXPECT_EQ(v.bytes, "packed-bytes");  // the value's bytes moved untouched
  EXPECT_EQ(h.Run({"DEL", "h2", "h3"}), ":2\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h2"}), "+none\r\n");
}

// Inside MULTI a key written with a type is seen with it by the commands
// queued after, and SCAN TYPE finds a key the transaction created.
TEST(KeyspaceFamily, TypesInsideTransactions) {
  CommandHarness h("keystx");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("z", ValueType::kZSet, "x"));
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"RENAME", "z", "z2"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"TYPE", "z2"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"SCAN", "0", "COUNT", "100000", "TYPE", "zset"}),
            "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}),
            "*3\r\n+OK\r\n+zset\r\n*2\r\n$1\r\n0\r\n*1\r\n$2\r\nz2\r\n");
}

// A type this build does not know (written by a newer one) is never read
// as a string: every string command answers WRONGTYPE, DEL removes it.
TEST(KeyspaceFamily, AnUnknownTypeIsNeverMisread) {
  CommandHarness h("keysunk");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("future", static_cast<ValueType>(200), "?"));
  EXPECT_EQ(h.Run({"GET", "future"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(h.Run({"APPEND", "future", "x"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(h.Run({"TYPE", "future"}), "+unknown\r\n");
  EXPECT_EQ(h.Run({"DEL", "future"}), ":1\r\n");
}

// Keys and expiry: every command and option, against Redis.
// TTLs are absolute and far away, so the replies do not depend on time.
TEST(KeyspaceFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("keydiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"SET", "a", "1"}, {"SET", "b", "2"},
      {"RENAME", "a", "c"}, {"GET", "a"}, {"GET", "c"},
      {"RENAME", "none", "x"}, {"RENAME", "c", "c"}, {"RENAME", "none", "none"},
      {"RENAMENX", "c", "b"}, {"RENAMENX", "c", "c"}, {"RENAMENX", "c", "d"},
      {"RENAMENX", "none", "d"}, {"MGET", "c", "d"},
      {"PEXPIREAT", "d", "99999999999000"}, {"RENAME", "d", "e"},
      {"PEXPIRETIME", "e"}, {"RENAME", "b", "e"}, {"PEXPIRETIME", "e"},
      {"COPY", "e", "f"}, {"COPY", "e", "f"}, {"COPY", "e", "f", "REPLACE"},
      {"COPY", "e", "e"}, {"COPY", "none", "g"}, {"COPY", "e", "g", "DB", "0"},
      {"COPY", "e", "h", "BOGUS"}, {"COPY", "e", "h", "DB", "x"},
      {"COPY", "e", "h", "DB"}, {"GET", "g"},
      {"PEXPIREAT", "e", "99999999999000"}, {"COPY", "e", "h"},
      {"PEXPIRETIME", "h"},
      {"TYPE", "e"}, {"TYPE", "none"}, {"TOUCH", "e", "f", "none", "e"},
      {"UNLINK", "f", "none", "g"}, {"EXISTS", "f", "g"},
      // EXPIRE forms and NX XX GT LT
      {"SET", "t", "v"}, {"EXPIRETIME", "t"}, {"EXPIRETIME", "none"},
      {"EXPIREAT", "t", "99999999999", "XX"},
      {"EXPIREAT", "t", "99999999999", "NX"}, {"EXPIRETIME", "t"},
      {"EXPIREAT", "t", "99999999999", "NX"},
      {"EXPIREAT", "t", "99999999990", "GT"},
      {"EXPIREAT", "t", "99999999999", "GT"},
      {"EXPIREAT", "t", "99999999999", "LT"},
      {"EXPIREAT", "t", "99999999998", "LT"}, {"EXPIRETIME", "t"},
      {"EXPIREAT", "t", "99999999999", "XX", "GT"}, {"EXPIRETIME", "t"},
      {"PERSIST", "t"}, {"PERSIST", "t"}, {"PERSIST", "none"},
      {"EXPIREAT", "t", "99999999999", "GT"},
      {"EXPIREAT", "t", "99999999999", "LT"}, {"EXPIRETIME", "t"},
      {"PEXPIREAT", "t", "99999999999999", "NX"},
      {"EXPIRE", "t", "100", "NX", "XX"}, {"EXPIRE", "t", "100", "NX", "GT"},
      {"EXPIRE", "t", "100", "GT", "LT"}, {"EXPIRE", "t", "100", "FOO"},
      {"EXPIRE", "t", "abc", "FOO"}, {"EXPIRE", "t", "abc"},
      {"EXPIREAT", "t", "9223372036854775807"},
      {"PEXPIREAT", "t", "9223372036854775807"}, {"PEXPIRETIME", "t"},
      {"EXPIREAT", "none", "1"}, {"EXPIREAT", "t", "1"}, {"EXISTS", "t"},
      {"SET", "t", "v"}, {"PEXPIREAT", "t", "-5"}, {"EXISTS", "t"},
      {"SET", "t", "v"}, {"EXPIRE", "t", "0"}, {"EXISTS", "t"},
      {"SET", "t", "v"}, {"PEXPIRE", "t", "-1", "XX"}, {"EXISTS", "t"},
      {"RANDOMKEY", "x"}, {"DBSIZE"}, {"FLUSHALL"}, {"RANDOMKEY"},
      {"SET", "only", "1"}, {"RANDOMKEY"}, {"TIME", "x"},
  });
}

}  // namespace
