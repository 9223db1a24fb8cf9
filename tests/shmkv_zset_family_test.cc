// The sorted-set family (server/commands/zset_family.cc) in process and
// against redis-server: every command with its options, edge values
// (±inf scores, NaN increments, exclusive and lex bounds) and errors, and
// random sequences at sizes on both sides of Redis's listpack limit,
// byte for byte (a sorted set's order is Redis's at every size).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "server/commands/packed.h"
#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv::ValueType;
using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

// The family's statistics ids, as first given: pin a new command's here.
TEST(ZSetFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("zset", {
      {"zadd", 117}, {"zincrby", 118}, {"zrem", 119}, {"zcard", 120},
      {"zscore", 121}, {"zmscore", 122}, {"zrank", 123}, {"zrevrank", 124},
      {"zcount", 125}, {"zlexcount", 126}, {"zrange", 127},
      {"zrangestore", 128}, {"zrevrange", 129}, {"zrangebyscore", 130},
      {"zrevrangebyscore", 131}, {"zrangebylex", 132},
      {"zrevrangebylex", 133}, {"zremrangebyrank", 134},
      {"zremrangebyscore", 135}, {"zremrangebylex", 136}, {"zpopmin", 137},
      {"zpopmax", 138}, {"zmpop", 139}, {"zrandmember", 140}, {"zscan", 141},
      {"zunion", 142}, {"zinter", 143}, {"zdiff", 144},
      {"zunionstore", 145}, {"zinterstore", 146}, {"zdiffstore", 147},
      {"zintercard", 148},
  });
}

TEST(ZSetFamily, ALeaderboardInProcess) {
  CommandHarness h("zset");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"ZADD", "board", "10", "ann", "30", "bob", "20", "cy"}),
            ":3\r\n");
  EXPECT_EQ(h.Run({"ZINCRBY", "board", "25", "ann"}), "$2\r\n35\r\n");
  EXPECT_EQ(h.Run({"ZREVRANGE", "board", "0", "0", "WITHSCORES"}),
            "*2\r\n$3\r\nann\r\n$2\r\n35\r\n");
  EXPECT_EQ(h.Run({"ZRANK", "board", "cy"}), ":0\r\n");
  EXPECT_EQ(h.Run({"TYPE", "board"}), "+zset\r\n");
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "board"}), "$8\r\nlistpack\r\n");
}

// Every command with its options and errors, byte for byte.
TEST(ZSetFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("zsetdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"ZADD", "z", "1", "a", "2", "b", "3", "c", "1.1", "d", "-inf", "lo",
       "+inf", "hi", "2", "bb"},
      {"ZRANGE", "z", "0", "-1", "WITHSCORES"}, {"ZCARD", "z"},
      {"ZADD", "z", "NX", "XX", "1", "a"}, {"ZADD", "z", "GT", "LT", "1", "a"},
      {"ZADD", "z", "NX", "GT", "1", "a"}, {"ZADD", "z", "INCR", "1", "a", "2",
                                             "b"},
      {"ZADD", "z", "1"}, {"ZADD", "z", "x", "a"}, {"ZADD", "z", "nan", "a"},
      {"ZADD", "z", "1e400", "a"}, {"ZADD", "z", " 1", "a"},
      {"ZADD", "z", "NX", "5", "a", "6", "new"},
      {"ZADD", "z", "XX", "CH", "7", "a", "8", "absent"},
      {"ZADD", "z", "GT", "CH", "1", "a", "100", "b"},
      {"ZADD", "z", "LT", "CH", "1", "a", "100", "c"},
      {"ZADD", "z", "INCR", "NX", "5", "a"}, {"ZADD", "z", "INCR", "XX", "5",
                                               "absent"},
      {"ZADD", "z", "INCR", "2.5", "a"}, {"ZADD", "z", "INCR", "GT", "-1",
                                           "a"},
      {"ZADD", "z", "INCR", "-inf", "hi"}, {"ZSCORE", "z", "hi"},
      {"ZADD", "none", "XX", "1", "a"}, {"EXISTS", "none"},
      {"ZINCRBY", "z", "1.5", "c"}, {"ZINCRBY", "z", "x", "c"},
      {"ZINCRBY", "z", "inf", "lo"}, {"ZINCRBY", "new2", "0.1", "m"},
      {"ZINCRBY", "z", "1e308", "c"}, {"ZINCRBY", "z", "1e308", "c"},
      {"ZSCORE", "z", "a"}, {"ZSCORE", "z", "none"}, {"ZSCORE", "none", "a"},
      {"ZMSCORE", "z", "a", "none", "d"}, {"ZMSCORE", "none", "a"},
      {"ZRANK", "z", "a"}, {"ZREVRANK", "z", "a"}, {"ZRANK", "z", "none"},
      {"ZRANK", "none", "a"}, {"ZRANK", "z", "a", "WITHSCORE"},
      // ranges
      {"ZRANGE", "z", "0", "-1"}, {"ZRANGE", "z", "-2", "-1", "WITHSCORES"},
      {"ZRANGE", "z", "1", "0"}, {"ZRANGE", "z", "0", "1", "REV"},
      {"ZRANGE", "z", "0", "1", "LIMIT", "0", "1"},
      // by rank, a LIMIT of count -1 is no limit: it passes, offset unread
      {"ZRANGE", "z", "0", "1", "LIMIT", "1", "-1"},
      {"ZRANGE", "z", "0", "1", "LIMIT", "0", "-5"},
      {"ZRANGE", "z", "0", "+1"}, {"ZRANGE", "z", "x", "1", "LIMIT", "0", "5"},
      {"ZRANGESTORE", "zdst", "z", "0", "-1", "LIMIT", "2", "-1"},
      {"ZRANGE", "zdst", "0", "-1"},
      {"ZRANGE", "z", "(1", "3", "BYSCORE", "WITHSCORES"},
      {"ZRANGE", "z", "3", "(1", "BYSCORE", "REV", "WITHSCORES"},
      {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"},
      {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"},
      {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "-1"},
      {"ZRANGE", "z", "x", "1", "BYSCORE"}, {"ZRANGE", "z", "(", "(5",
                                              "BYSCORE"},
      {"ZRANGE", "z", "[a", "[c", "BYLEX", "WITHSCORES"},
      {"ZRANGE", "z", "0", "-1", "REV", "BYLEX"},
      {"ZRANGE", "z", "0", "-1", "FOO"}, {"ZRANGE", "z", "0", "-1", "LIMIT"},
      {"ZRANGE", "z", "x", "1"}, {"ZRANGE", "none", "0", "-1"},
      {"ZREVRANGE", "z", "0", "2", "WITHSCORES"},
      {"ZREVRANGE", "z", "0", "2", "LIMIT", "0", "1"},
      {"ZRANGEBYSCORE", "z", "1", "3"}, {"ZRANGEBYSCORE", "z", "(1", "(3",
                                          "WITHSCORES"},
      {"ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "2", "3"},
      {"ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "x", "3"},
      {"ZRANGEBYSCORE", "z", "x", "1"}, {"ZRANGEBYSCORE", "z", "1", "3",
                                          "BYSCORE"},
      {"ZREVRANGEBYSCORE", "z", "3", "1", "WITHSCORES"},
      {"ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "1", "1"},
      // lex ranges, on members of one score
      {"ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e"},
      {"ZRANGEBYLEX", "lex", "-", "+"}, {"ZRANGEBYLEX", "lex", "[b", "(d"},
      {"ZRANGEBYLEX", "lex", "(a", "[z", "LIMIT", "1", "2"},
      {"ZRANGEBYLEX", "lex", "+", "-"}, {"ZRANGEBYLEX", "lex", "a", "c"},
      {"ZRANGEBYLEX", "lex", "[b", "[b"}, {"ZRANGEBYLEX", "lex", "[c", "[b"},
      {"ZREVRANGEBYLEX", "lex", "+", "-"}, {"ZREVRANGEBYLEX", "lex", "[d",
                                             "(a"},
      {"ZRANGEBYLEX", "lex", "-", "+", "WITHSCORES"},
      // BYSCORE, BYLEX and REV each once at most
      {"ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"},
      {"ZRANGE", "lex", "-", "+", "BYLEX", "BYSCORE"},
      {"ZRANGE", "z", "0", "-1", "BYSCORE", "BYSCORE"},
      {"ZRANGE", "lex", "-", "+", "BYLEX", "BYLEX"},
      {"ZRANGE", "z", "0", "-1", "REV", "REV"},
      {"ZRANGESTORE", "d", "z", "0", "-1", "BYLEX", "BYSCORE"},
      {"ZRANGE", "z", "0", "-1", "LIMIT", "0", "1", "LIMIT", "1", "1",
       "BYSCORE", "WITHSCORES", "WITHSCORES"},
      {"ZLEXCOUNT", "lex", "-", "+"}, {"ZLEXCOUNT", "lex", "[b", "[d"},
      {"ZLEXCOUNT", "lex", "a", "b"}, {"ZLEXCOUNT", "none", "-", "+"},
      {"ZCOUNT", "z", "-inf", "+inf"}, {"ZCOUNT", "z", "(1", "3"},
      {"ZCOUNT", "z", "x", "1"}, {"ZCOUNT", "none", "0", "1"},
      // stores and removals
      {"ZRANGESTORE", "d", "z", "0", "2"}, {"ZRANGE", "d", "0", "-1",
                                             "WITHSCORES"},
      {"ZRANGESTORE", "d", "z", "5", "1", "BYSCORE", "REV"},
      {"ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"},
      {"ZRANGESTORE", "d", "none", "0", "-1"}, {"EXISTS", "d"},
      {"ZREMRANGEBYLEX", "lex", "[b", "[c"}, {"ZRANGE", "lex", "0", "-1"},
      {"ZREMRANGEBYLEX", "lex", "x", "y"}, {"ZREMRANGEBYRANK", "z", "0", "0"},
      {"ZREMRANGEBYRANK", "z", "x", "1"}, {"ZREMRANGEBYSCORE", "z", "(1",
                                            "2"},
      {"ZREMRANGEBYSCORE", "z", "x", "2"}, {"ZRANGE", "z", "0", "-1",
                                             "WITHSCORES"},
      {"ZREM", "z", "a", "a", "none"}, {"ZREM", "none", "a"},
      // pops
      {"ZPOPMIN", "z"}, {"ZPOPMAX", "z", "2"}, {"ZPOPMIN", "z", "-1"},
      {"ZPOPMIN", "z", "x"}, {"ZPOPMIN", "z", "0"}, {"ZPOPMIN", "none"},
      {"ZPOPMIN", "none", "2"}, {"ZPOPMIN", "z", "1", "2"},
      {"ZADD", "p", "1", "x", "2", "y"},
      {"ZMPOP", "2", "none", "p", "MAX", "COUNT", "5"}, {"EXISTS", "p"},
      {"ZMPOP", "1", "none", "MIN"}, {"ZMPOP", "0", "p", "MIN"},
      {"ZMPOP", "1", "p", "MIDDLE"}, {"ZMPOP", "1", "p", "MIN", "COUNT", "0"},
      {"ZMPOP", "2", "p", "MIN"},
      // ZRANDMEMBER's arguments
      {"ZRANDMEMBER", "none"}, {"ZRANDMEMBER", "none", "3"},
      {"ZRANDMEMBER", "lex", "x"}, {"ZRANDMEMBER", "lex", "1", "withscore"},
      {"ZRANDMEMBER", "lex", "-9223372036854775808"},
      {"ZRANDMEMBER", "lex", "4611686018427387904", "withscores"},
      {"ZRANDMEMBER", "lex", "0"},
      // A count past the size: the whole set, highest score first (as
      // Redis answers), with and without scores.
      {"ZRANDMEMBER", "z", "100"}, {"ZRANDMEMBER", "z", "100", "WITHSCORES"},
      {"ZRANDMEMBER", "lex", "5"},
      // ZSCAN
      {"ZSCAN", "lex", "0"}, {"ZSCAN", "lex", "0", "MATCH", "[ae]"},
      {"ZSCAN", "lex", "x"}, {"ZSCAN", "none", "0"},
      // combinations, with a set as an input
      {"ZADD", "u", "1", "a", "2", "b", "3", "c"},
      {"ZADD", "v", "10", "b", "20", "c", "30", "d"}, {"SADD", "s", "c", "e"},
      {"ZUNION", "2", "u", "v", "WITHSCORES"},
      {"ZUNION", "3", "u", "v", "s", "WEIGHTS", "1", "2", "3", "WITHSCORES"},
      {"ZUNION", "2", "u", "v", "AGGREGATE", "MAX", "WITHSCORES"},
      {"ZINTER", "2", "u", "v", "AGGREGATE", "MIN", "WITHSCORES"},
      {"ZINTER", "3", "u", "v", "s", "WITHSCORES"},
      {"ZDIFF", "2", "u", "v", "WITHSCORES"}, {"ZDIFF", "2", "v", "s"},
      {"ZUNION", "0", "u"}, {"ZUNION", "1", "u", "WEIGHTS", "x"},
      {"ZUNION", "1", "u", "AGGREGATE", "foo"}, {"ZINTER", "2", "u"},
      {"ZDIFF", "2", "u", "v", "WEIGHTS", "1", "1"},
      {"ZUNION", "2", "u", "v", "WEIGHTS", "1", "inf", "WITHSCORES"},
      {"ZUNION", "2", "u", "v", "WEIGHTS", "0", "inf", "WITHSCORES"},
      {"ZUNIONSTORE", "w", "2", "u", "v"}, {"ZRANGE", "w", "0", "-1",
                                             "WITHSCORES"},
      {"ZINTERSTORE", "w", "2", "u", "v", "WEIGHTS", "2", "3"},
      {"ZRANGE", "w", "0", "-1", "WITHSCORES"},
      {"ZDIFFSTORE", "w", "2", "u", "u"}, {"EXISTS", "w"},
      {"ZUNIONSTORE", "w", "0", "u"}, {"ZUNIONSTORE", "w", "2", "u", "v",
                                        "WITHSCORES"},
      {"ZINTERCARD", "2", "u", "v"}, {"ZINTERCARD", "2", "u", "v", "LIMIT",
                                       "1"},
      {"ZINTERCARD", "0", "u"}, {"ZINTERCARD", "3", "u", "v"},
      {"ZINTERCARD", "2", "u", "v", "LIMIT", "-1"},
      {"ZINTERCARD", "2", "u", "v", "LIMIT", "a"},
      {"ZINTERCARD", "2", "u", "v", "LIMIT", "1.5"},
      // listpack limits
      {"ZADD", "big", "1", std::string(65, 'm')}, {"OBJECT", "ENCODING",
                                                     "big"},
      {"ZADD", "small", "1", "m"}, {"OBJECT", "ENCODING", "small"},
      // WRONGTYPE both ways
      {"SET", "str", "v"}, {"ZADD", "str", "1", "a"}, {"ZSCORE", "str", "a"},
      {"ZRANGE", "str", "0", "-1"}, {"ZRANGE", "str", "x", "1"},
      {"ZCARD", "str"}, {"ZPOPMIN", "str"}, {"ZUNION", "2", "u", "str"},
      {"ZINCRBY", "str", "1", "a"}, {"ZRANGESTORE", "d", "str", "0", "1"},
      {"GET", "u"}, {"LPUSH", "u", "x"}, {"SADD", "u", "x"},
      // TTL kept; transactions
      {"PEXPIREAT", "u", "4102444800000"}, {"ZADD", "u", "5", "e"},
      {"ZREM", "u", "a"}, {"PEXPIRETIME", "u"},
      {"MULTI"}, {"ZADD", "t", "1", "a"}, {"ZINCRBY", "t", "1", "a"},
      {"ZADD", "t", "x", "b"}, {"ZRANGE", "t", "0", "-1", "WITHSCORES"},
      {"EXEC"},
  });
}

// Random sequences on a few sorted sets, small and past 128 members,
// every reply byte for byte (scores include ties, infinities, decimals).
TEST(ZSetFamilyVsRedis, RandomSequencesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : shmkv_test::TestSeeds(1, 3)) {
    CommandHarness h("zsetrand", 50000, 64ULL << 20);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    int spread = seed == 1 ? 30 : 400;
    auto key = [&] { return "z" + std::to_string(rng() % 3); };
    auto member = [&] { return "m" + std::to_string(rng() % spread); };
    auto score = [&]() -> std::string {
      switch (rng() % 6) {
        case 0: return "-inf";
        case 1: return "+inf";
        case 2: return std::to_string(static_cast<int>(rng() % 7));
        case 3: return "0.1";
        default: return std::to_string(static_cast<int>(rng() % 1000) - 500) +
                        "." + std::to_string(rng() % 10);
      }
    };
    auto bound = [&] {
      std::string b = rng() % 3 == 0 ? "(" : "";
      return b + score();
    };
    for (int i = 0; i < 3000; ++i) {
      Cmd cmd;
      switch (rng() % 14) {
        case 0: case 1: case 2: {
          cmd = {"ZADD", key()};
          if (rng() % 4 == 0) cmd.push_back(rng() % 2 ? "GT" : "XX");
          if (rng() % 4 == 0) cmd.push_back("CH");
          for (int n = 1 + rng() % 10; n > 0; --n) {
            cmd.push_back(score());
            cmd.push_back(member());
          }
          break;
        }
        case 3: cmd = {"ZINCRBY", key(), score(), member()}; break;
        case 4: cmd = {"ZREM", key(), member(), member()}; break;
        case 5: cmd = {"ZRANGE", key(), std::to_string(rng() % 50),
                       std::to_string(static_cast<int>(rng() % 60) - 10),
                       "WITHSCORES"}; break;
        case 6: cmd = {"ZRANGEBYSCORE", key(), bound(), bound(), "WITHSCORES",
                       "LIMIT", std::to_string(rng() % 5),
                       std::to_string(static_cast<int>(rng() % 20) - 1)};
          break;
        case 7: cmd = {"ZREVRANGEBYSCORE", key(), bound(), bound()}; break;
        case 8: cmd = {rng() % 2 ? "ZRANK" : "ZREVRANK", key(), member()};
          break;
        case 9: cmd = {"ZCOUNT", key(), bound(), bound()}; break;
        case 10: cmd = {rng() % 2 ? "ZPOPMIN" : "ZPOPMAX", key(),
                        std::to_string(rng() % 4)}; break;
        case 11: cmd = {"ZUNIONSTORE", key(), "2", key(), key(), "WEIGHTS",
                        "1", rng() % 2 ? "2" : "-1"}; break;
        case 12: cmd = {"ZINTER", "2", key(), key(), "WITHSCORES"}; break;
        default: cmd = {"ZMSCORE", key(), member(), member()};
      }
      ASSERT_EQ(h.Run(cmd), c.Call(cmd))
          << "seed " << seed << " step " << i << ": " << CommandLine(cmd);
    }
    for (const char* k : {"z0", "z1", "z2"}) {
      Cmd all = {"ZRANGE", k, "0", "-1", "WITHSCORES"};
      EXPECT_EQ(h.Run(all), c.Call(all)) << k;
      Cmd enc = {"OBJECT", "ENCODING", k};
      EXPECT_EQ(h.Run(enc), c.Call(enc)) << k;
    }
  }
}

// Value bytes that are not a sorted set (out of order, a member twice,
// a NaN score, a short score) answer the damaged-value error.
TEST(ZSetFamily, DamagedBytesAreAnError) {
  CommandHarness h("zsetbad");
  ASSERT_TRUE(h.ok()) << h.error();
  auto score = [](double d) {
    return std::string(reinterpret_cast<const char*>(&d), sizeof(d));
  };
  const std::string damaged =
      "-ERR the value of this key is damaged (shmc check)\r\n";
  std::vector<std::vector<std::string>> bad = {
      {"b", score(2), "a", score(1)},
      {"a", score(1), "a", score(2)},
      {"a", score(1), "b", score(2), "c", score(3), "a", score(4)},
      {"a", score(std::nan(""))},
      {"a", "1234"},
      {"a"},
  };
  for (const auto& items : bad) {
    std::vector<std::string_view> views(items.begin(), items.end());
    std::string bytes;
    shmkv::Pack(views, &bytes);
    ASSERT_TRUE(h.WriteTyped("d", ValueType::kZSet, bytes));
    EXPECT_EQ(h.Run({"ZRANGE", "d", "0", "-1"}), damaged);
    EXPECT_EQ(h.Run({"ZADD", "d", "1", "x"}), damaged);
  }
}

}  // namespace
