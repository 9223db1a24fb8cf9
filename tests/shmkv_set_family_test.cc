// The set family (server/commands/set_family.cc) in process and against
// redis-server: every command with its edge values and errors; sets of
// integers in Redis's intset order byte for byte; sets of strings and
// large sets (in buckets) compared as sets, since Redis orders those by
// its table; random sequences over both.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

// The family's statistics ids, as first given: pin a new command's here.
TEST(SetFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("set", {
      {"sadd", 100}, {"srem", 101}, {"smembers", 102}, {"sismember", 103},
      {"smismember", 104}, {"scard", 105}, {"spop", 106},
      {"srandmember", 107}, {"smove", 108}, {"sinter", 109},
      {"sintercard", 110}, {"sunion", 111}, {"sdiff", 112},
      {"sinterstore", 113}, {"sunionstore", 114}, {"sdiffstore", 115},
      {"sscan", 116},
  });
}

// A reply with the order of its array's elements taken out: the lines of
// an array of bulks, sorted (its header first).
std::vector<std::string> Unordered(const std::string& reply) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < reply.size();) {
    size_t e = reply.find("\r\n", at);
    if (e == std::string::npos) e = reply.size();
    lines.push_back(reply.substr(at, e - at));
    at = e + 2;
  }
  if (lines.size() > 1) {
    // Pair each $len with its bytes, then sort the pairs.
    std::vector<std::string> items;
    for (size_t i = 1; i + 1 < lines.size(); i += 2) {
      items.push_back(lines[i] + "\n" + lines[i + 1]);
    }
    std::sort(items.begin(), items.end());
    lines.resize(1);
    lines.insert(lines.end(), items.begin(), items.end());
  }
  return lines;
}

TEST(SetFamily, TagsInProcess) {
  CommandHarness h("set");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"SADD", "ids", "3", "1", "2", "1"}), ":3\r\n");
  EXPECT_EQ(h.Run({"SMEMBERS", "ids"}),
            "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n");
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "ids"}), "$6\r\nintset\r\n");
  EXPECT_EQ(h.Run({"SADD", "ids", "x"}), ":1\r\n");
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "ids"}), "$9\r\nhashtable\r\n");
  EXPECT_EQ(h.Run({"SISMEMBER", "ids", "x"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TYPE", "ids"}), "+set\r\n");
  EXPECT_EQ(h.Run({"SREM", "ids", "1", "2", "3", "x"}), ":4\r\n");
  EXPECT_EQ(h.Run({"EXISTS", "ids"}), ":0\r\n");
}

// Every set command with its errors, on sets of integers (whose order
// Redis fixes: ascending), byte for byte.
TEST(SetFamilyVsRedis, IntegerSetsReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("setdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"SADD", "s"}, {"SADD", "s", "5", "3", "-1", "3", "100", "0"},
      {"SMEMBERS", "s"}, {"SCARD", "s"}, {"SCARD", "none"},
      {"SISMEMBER", "s", "3"}, {"SISMEMBER", "s", "4"},
      {"SISMEMBER", "none", "1"}, {"SMISMEMBER", "s", "3", "4", "5"},
      {"SMISMEMBER", "none", "1"}, {"SMEMBERS", "none"},
      {"SADD", "t", "3", "4", "5", "6"}, {"SINTER", "s", "t"},
      {"SINTER", "s", "none"}, {"SUNION", "s", "t"}, {"SUNION", "none"},
      {"SDIFF", "s", "t"}, {"SDIFF", "t", "s", "none"}, {"SDIFF", "none", "s"},
      {"SINTERCARD", "2", "s", "t"}, {"SINTERCARD", "2", "s", "t", "LIMIT",
                                      "1"},
      {"SINTERCARD", "2", "s", "t", "LIMIT", "0"},
      {"SINTERCARD", "0", "s"}, {"SINTERCARD", "x", "s"},
      {"SINTERCARD", "3", "s", "t"}, {"SINTERCARD", "2", "s", "t", "LIMIT"},
      {"SINTERCARD", "2", "s", "t", "LIMIT", "-1"},
      {"SINTERCARD", "2", "s", "t", "LIMIT", "a"},
      {"SINTERCARD", "2", "s", "t", "LIMIT", "99999999999999999999"},
      {"SINTERCARD", "2", "s", "t", "FOO", "1"},
      {"SINTERCARD", "1", "none"},
      {"SINTERSTORE", "d", "s", "t"}, {"SMEMBERS", "d"},
      {"SUNIONSTORE", "d", "s", "t"}, {"SMEMBERS", "d"},
      {"SDIFFSTORE", "d", "s", "t"}, {"SMEMBERS", "d"},
      {"SINTERSTORE", "d", "s", "none"}, {"EXISTS", "d"},
      {"SET", "str", "v"}, {"SUNIONSTORE", "str", "s"}, {"TYPE", "str"},
      {"SMOVE", "s", "t", "100"}, {"SMOVE", "s", "t", "100"},
      {"SMOVE", "s", "s", "5"}, {"SMOVE", "s", "s", "7"},
      {"SMOVE", "none", "t", "1"}, {"SMOVE", "s", "new", "5"},
      {"SMEMBERS", "new"}, {"SMEMBERS", "t"},
      {"SPOP", "none"}, {"SPOP", "none", "2"}, {"SPOP", "s", "-1"},
      {"SPOP", "s", "x"}, {"SPOP", "s", "0"}, {"SPOP", "s", "1", "2"},
      {"SRANDMEMBER", "none"}, {"SRANDMEMBER", "none", "2"},
      {"SRANDMEMBER", "s", "x"}, {"SRANDMEMBER", "s", "0"},
      {"SRANDMEMBER", "s", "100"}, {"SRANDMEMBER", "s", "1", "2"},
      {"SRANDMEMBER", "s", "-9223372036854775808"},
      {"SPOP", "s", "100"}, {"EXISTS", "s"},
      {"SSCAN", "t", "0"}, {"SSCAN", "t", "0", "MATCH", "[35]"},
      {"SSCAN", "t", "x"}, {"SSCAN", "t", "0", "COUNT", "0"},
      {"SSCAN", "t", "0", "NOVALUES"}, {"SSCAN", "none", "0"},
      // intset's limits: canonical integers only
      {"SADD", "i", "1", "01"}, {"OBJECT", "ENCODING", "i"},
      {"SADD", "j", "-0"}, {"OBJECT", "ENCODING", "j"},
      {"SADD", "k", "9223372036854775807", "-9223372036854775808"},
      {"OBJECT", "ENCODING", "k"}, {"SMEMBERS", "k"},
      {"SADD", "k", "9223372036854775808"}, {"OBJECT", "ENCODING", "k"},
      // WRONGTYPE both ways (str became a set above: a string again)
      {"SET", "str", "v"}, {"SADD", "str", "1"}, {"SREM", "str", "1"}, {"SMEMBERS", "str"},
      {"SISMEMBER", "str", "1"}, {"SMISMEMBER", "str", "1"},
      {"SCARD", "str"}, {"SPOP", "str"}, {"SRANDMEMBER", "str"},
      {"SMOVE", "str", "t", "1"}, {"SMOVE", "t", "str", "3"},
      {"SMOVE", "none", "str", "3"}, {"SINTER", "t", "str"},
      {"SINTER", "none", "str"}, {"SUNION", "t", "str"},
      {"SDIFF", "t", "str"}, {"SINTERCARD", "2", "t", "str"},
      {"SINTERSTORE", "x", "t", "str"}, {"SSCAN", "str", "0"},
      {"GET", "t"}, {"HSET", "t", "f", "v"}, {"LPUSH", "t", "x"},
      // transactions
      {"MULTI"}, {"SADD", "m", "1", "2"}, {"SREM", "m", "1"},
      {"SMEMBERS", "m"}, {"INCR", "m"}, {"SCARD", "m"}, {"EXEC"},
  });
}

// Sets of strings, small and large (in buckets): each reply is Redis's
// as a set (Redis orders these by its table), over random sequences.
TEST(SetFamilyVsRedis, StringSetsReplyAsRedisAsSets) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : {1u, 2u}) {
    CommandHarness h("setstr", 100000, 128ULL << 20);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    int spread = seed == 1 ? 40 : 3000;
    auto key = [&] { return "s" + std::to_string(rng() % 3); };
    auto member = [&] {
      return rng() % 3 == 0 ? std::to_string(rng() % spread)
                            : "m" + std::to_string(rng() % spread);
    };
    for (int i = 0; i < 4000; ++i) {
      Cmd cmd;
      switch (rng() % 12) {
        case 0: case 1: case 2: case 3: {
          cmd = {"SADD", key()};
          for (int n = 1 + rng() % 30; n > 0; --n) cmd.push_back(member());
          break;
        }
        case 4: cmd = {"SREM", key(), member(), member()}; break;
        case 5: cmd = {"SISMEMBER", key(), member()}; break;
        case 6: cmd = {"SMISMEMBER", key(), member(), member()}; break;
        case 7: cmd = {"SCARD", key()}; break;
        case 8: cmd = {"SMOVE", key(), key(), member()}; break;
        case 9: cmd = {"SINTERCARD", "2", key(), key()}; break;
        case 10: cmd = {rng() % 2 ? "SUNIONSTORE" : "SDIFFSTORE", key(),
                        key(), key()}; break;
        default: cmd = {"SINTERSTORE", "tmp", key(), key()};
      }
      ASSERT_EQ(h.Run(cmd), c.Call(cmd))
          << "seed " << seed << " step " << i << ": " << CommandLine(cmd);
    }
    for (const char* k : {"s0", "s1", "s2"}) {
      for (const Cmd& cmd : {Cmd{"SMEMBERS", k}, Cmd{"SINTER", k, "s0"},
                             Cmd{"SUNION", k, "s1"}, Cmd{"SDIFF", k, "s2"}}) {
        EXPECT_EQ(Unordered(h.Run(cmd)), Unordered(c.Call(cmd)))
            << CommandLine(cmd);
      }
      EXPECT_EQ(h.Run({"OBJECT", "ENCODING", k}),
                c.Call({"OBJECT", "ENCODING", k})) << k;
    }
  }
}

// SPOP and SRANDMEMBER's random answers: members of the set, distinct
// for a positive count, SPOP's gone from it.
TEST(SetFamily, RandomMembersAreTheSets) {
  CommandHarness h("setrand", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Cmd add = {"SADD", "big"};
  for (int i = 0; i < 3000; ++i) add.push_back("m" + std::to_string(i));
  ASSERT_EQ(h.Run(add), ":3000\r\n");
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> some = Unordered(h.Run({"SRANDMEMBER", "big",
                                                     "20"}));
    ASSERT_EQ(some.size(), 21u);
    EXPECT_EQ(std::unique(some.begin() + 1, some.end()), some.end());
    std::string popped = h.Run({"SPOP", "big"});
    ASSERT_EQ(popped.substr(0, 1), "$");
    std::string m = popped.substr(popped.find("\r\n") + 2);
    m.resize(m.size() - 2);
    EXPECT_EQ(h.Run({"SISMEMBER", "big", m}), ":0\r\n") << m;
  }
  EXPECT_EQ(h.Run({"SCARD", "big"}), ":2980\r\n");
  EXPECT_EQ(h.Run({"SPOP", "big", "2980"}).substr(0, 7), "*2980\r\n");
  EXPECT_EQ(h.Run({"EXISTS", "big"}), ":0\r\n");
  EXPECT_EQ(h.store()->Parts(), 0u);
}

}  // namespace
