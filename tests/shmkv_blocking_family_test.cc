// The blocking commands in process (server/commands/blocking_family.cc):
// their ids, and every reply they give without waiting (served at once,
// errors, and the empty keys' answer, which in process is the timeout's)
// byte for byte against redis-server. Waiting itself, across workers, is
// tests/shmkv_blocking_test.cc's.
#include <gtest/gtest.h>

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

// The family's statistics ids, as first given: pin a new command's here.
TEST(BlockingFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("blocking", {
      {"blpop", 149}, {"brpop", 150}, {"blmove", 151}, {"brpoplpush", 152},
      {"blmpop", 153}, {"bzpopmin", 154}, {"bzpopmax", 155},
      {"bzmpop", 156},
  });
}

TEST(BlockingFamily, WithoutABoardNothingWaits) {
  CommandHarness h("blocking");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"BLPOP", "none", "0"}), "*-1\r\n");
  EXPECT_EQ(h.Run({"RPUSH", "q", "a", "b"}), ":2\r\n");
  EXPECT_EQ(h.Run({"BRPOP", "none", "q", "0"}),
            "*2\r\n$1\r\nq\r\n$1\r\nb\r\n");
}

TEST(BlockingFamilyVsRedis, EveryReplyWithoutWaitingIsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("blockingdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      // Served at once, from the first key with elements.
      {"RPUSH", "l1", "a", "b", "c"}, {"RPUSH", "l2", "x"},
      {"BLPOP", "none", "l1", "l2", "0"}, {"BRPOP", "l2", "l1", "1.5"},
      {"BRPOP", "l2", "l1", "0"}, {"BLPOP", "l1", "0"}, {"EXISTS", "l1"},
      {"RPUSH", "s", "1", "2", "3"},
      {"BLMOVE", "s", "d", "LEFT", "RIGHT", "0"},
      {"BLMOVE", "s", "s", "RIGHT", "LEFT", "0"},
      {"BRPOPLPUSH", "s", "d", "0"}, {"LRANGE", "s", "0", "-1"},
      {"LRANGE", "d", "0", "-1"},
      {"BLMPOP", "0", "2", "none", "d", "RIGHT", "COUNT", "10"},
      {"RPUSH", "m", "1", "2", "3"}, {"BLMPOP", "0", "1", "m", "left"},
      {"BLMPOP", "0", "1", "m", "LEFT", "count", "1"},
      {"ZADD", "z", "1", "a", "2", "b", "3", "c", "-inf", "lo", "inf", "hi"},
      {"BZPOPMIN", "none", "z", "0"}, {"BZPOPMAX", "z", "0"},
      {"BZMPOP", "0", "1", "z", "MIN", "COUNT", "2"},
      {"BZMPOP", "0", "2", "none", "z", "max"}, {"EXISTS", "z"},
      // Empty keys: Redis answers when its timeout passes; in process
      // (no board) at once, with the same bytes.
      {"BLPOP", "none", "0.01"}, {"BRPOPLPUSH", "none", "d", "0.01"},
      {"BLMPOP", "0.01", "1", "none", "LEFT"},
      {"BZPOPMIN", "none", "0.01"}, {"BZMPOP", "0.01", "1", "none", "MIN"},
      // Timeouts Redis refuses.
      {"BLPOP", "k", "abc"}, {"BLPOP", "k", "-1"}, {"BLPOP", "k", "nan"},
      {"BLPOP", "k", "inf"}, {"BLPOP", "k", "-inf"}, {"BLPOP", "k", "1e16"},
      {"BLPOP", "k", "9223372036854776"}, {"BLPOP", "k", ""},
      {"BLPOP", "k", " 1"}, {"BLPOP", "k", "1 "}, {"BRPOP", "k", "-0.002"},
      {"BZPOPMIN", "k", "x"}, {"BZPOPMAX", "k", "-5"},
      {"BLMOVE", "s", "d", "LEFT", "RIGHT", "x"},
      {"BRPOPLPUSH", "s", "d", "-1"},
      // Syntax before the timeout, as Redis checks them.
      {"BLMOVE", "s", "d", "UP", "LEFT", "x"},
      {"BLMOVE", "s", "d", "LEFT", "DOWN", "0"},
      {"BLMPOP", "x", "1", "k", "LEFT"}, {"BLMPOP", "0", "0", "k", "LEFT"},
      {"BLMPOP", "0", "x", "k", "LEFT"}, {"BLMPOP", "0", "5", "k", "LEFT"},
      {"BLMPOP", "0", "1", "k", "UP"}, {"BLMPOP", "0", "1", "k", "LEFT", "COUNT"},
      {"BLMPOP", "0", "1", "k", "LEFT", "COUNT", "0"},
      {"BLMPOP", "0", "1", "k", "LEFT", "COUNT", "-1"},
      {"BLMPOP", "0", "1", "k", "LEFT", "COUNT", "1", "COUNT", "1"},
      {"BLMPOP", "abc", "1", "k", "LEFT", "COUNT", "0"},
      {"BZMPOP", "x", "1", "k", "MIN"}, {"BZMPOP", "0", "1", "k", "LEFT"},
      {"BZMPOP", "0", "1", "k", "MAX", "COUNT", "x"},
      {"BLPOP", "k"}, {"BLMOVE", "s", "d", "LEFT", "0"},
      {"BLMPOP", "0", "1", "k"}, {"BZPOPMIN", "k"},
      // Types: a key of another type fails the command when reached.
      {"SET", "str", "v"}, {"HSET", "h", "f", "v"},
      {"BLPOP", "str", "0"}, {"BLPOP", "none", "str", "0"},
      {"RPUSH", "l3", "q", "r"}, {"BLPOP", "l3", "str", "0"},
      {"BZPOPMIN", "h", "0"}, {"BZPOPMAX", "l3", "0"},
      {"BLMOVE", "str", "d", "LEFT", "LEFT", "0"},
      {"BLMOVE", "l3", "str", "LEFT", "LEFT", "0"}, {"LLEN", "l3"},
      {"BLMPOP", "0", "2", "none", "h", "LEFT"},
      {"BZMPOP", "0", "1", "l3", "MIN"},
      // In MULTI a blocking command does not wait.
      {"MULTI"}, {"BLPOP", "none", "0"}, {"BZPOPMIN", "none", "0"},
      {"BLMOVE", "l3", "d", "LEFT", "LEFT", "0"},
      {"BLMOVE", "none", "d", "LEFT", "LEFT", "0"},
      {"BRPOPLPUSH", "none", "d", "0"}, {"BLMPOP", "0", "1", "none", "LEFT"},
      {"BZMPOP", "0", "1", "none", "MAX"}, {"EXEC"},
  });
}

// Random lists and sorted sets (some keys of other types) popped by the
// blocking commands, each inside MULTI ... EXEC so Redis answers at once
// too: every reply byte for byte, over many seeds.
TEST(BlockingFamilyVsRedis, RandomSequencesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("blockingrand");
  ASSERT_TRUE(h.ok()) << h.error();
  using Cmd = std::vector<std::string>;
  for (uint64_t seed : shmkv_test::TestSeeds(1, 8)) {
    Client b(redis.port());
    ASSERT_TRUE(b.ok());
    h.Run({"FLUSHALL"});
    b.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    auto pick = [&](std::initializer_list<const char*> xs) {
      return std::string(*(xs.begin() + rng() % xs.size()));
    };
    auto key = [&] { return pick({"l1", "l2", "z1", "z2", "s"}); };
    auto num = [&] { return std::to_string(static_cast<int>(rng() % 7) - 1); };
    auto timeout = [&] { return pick({"0", "0.5", "1", "x", "-1"}); };
    for (int i = 0; i < 1500; ++i) {
      Cmd cmd;
      switch (rng() % 12) {
        case 0: case 1:
          cmd = {pick({"LPUSH", "RPUSH"}), key(), "a" + num(), "b" + num()};
          break;
        case 2: case 3:
          cmd = {"ZADD", key(), num(), "m" + num(), num(), "n" + num()};
          break;
        case 4: cmd = {"SET", "s", "v"}; break;
        case 5:
          cmd = {pick({"BLPOP", "BRPOP"}), key(), key(), timeout()};
          break;
        case 6:
          cmd = {"BLMOVE", key(), key(), pick({"LEFT", "RIGHT", "UP"}),
                 pick({"LEFT", "RIGHT"}), timeout()};
          break;
        case 7: cmd = {"BRPOPLPUSH", key(), key(), timeout()}; break;
        case 8:
          cmd = {"BLMPOP", timeout(), pick({"1", "2", "0"}), key(), key(),
                 pick({"LEFT", "RIGHT"}), "COUNT", num()};
          break;
        case 9:
          cmd = {pick({"BZPOPMIN", "BZPOPMAX"}), key(), key(), timeout()};
          break;
        case 10:
          cmd = {"BZMPOP", timeout(), pick({"1", "2"}), key(), key(),
                 pick({"MIN", "MAX"}), "COUNT", num()};
          break;
        default:
          cmd = {pick({"LRANGE", "ZRANGE"}), key(), "0", "-1"};
      }
      bool blocking = cmd[0][0] == 'B';
      if (blocking) {
        ASSERT_EQ(h.Run({"MULTI"}), b.Call({"MULTI"}));
        std::string queued = h.Run(cmd);
        ASSERT_EQ(queued, b.Call(cmd)) << "seed " << seed << " step " << i
                                       << ": " << CommandLine(cmd);
        cmd = {"EXEC"};
      }
      std::string mine = h.Run(cmd), theirs = b.Call(cmd);
      ASSERT_EQ(mine, theirs) << "seed " << seed << " step " << i << ": "
                              << CommandLine(cmd);
    }
  }
}

}  // namespace
