// Streams' consumer groups (server/commands/stream_group_family.cc)
// against redis-server: every command with its options and errors, RESP2
// and RESP3, random sequences of deliveries, acknowledgements and claims
// over packed and large streams, and groups carried both ways in DUMP
// payloads. (Idle times and seen times are the clock's: the commands
// compared here are those whose replies do not carry them.)
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/kill_worker.h"

namespace {

using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

TEST(StreamGroupsVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (bool resp3 : {false, true}) {
    CommandHarness h(resp3 ? "groupdiff3" : "groupdiff");
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    if (resp3) {
      h.Run({"HELLO", "3"});
      c.Call({"HELLO", "3"});
    }
    ExpectSameAsRedis(&h, &c, {
        // XGROUP and its errors.
        {"XGROUP", "CREATE", "s", "g", "$"},
        {"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"},
        {"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"},
        {"XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "5"},
        {"XGROUP", "CREATE", "s", "g3", "0", "ENTRIESREAD", "-2"},
        {"XGROUP", "CREATE", "s", "g3", "0", "ENTRIESREAD", "x"},
        {"XGROUP", "CREATE", "s", "g3", "0", "FOO"},
        {"XGROUP", "CREATE", "s", "g3", "abc"},
        {"XGROUP", "CREATE", "s", "g3", "0", "MKSTREAM", "MKSTREAM",
         "ENTRIESREAD", "1"},
        {"XGROUP", "HELP"}, {"XGROUP", "HELP", "x"}, {"XGROUP", "FOO"},
        {"XGROUP", "CREATE", "s"}, {"XGROUP"},
        {"XGROUP", "SETID", "s", "nog", "0"},
        {"XGROUP", "SETID", "s", "g", "-"}, {"XGROUP", "SETID", "s", "g", "+"},
        {"XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "3"},
        {"XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD"},
        {"XGROUP", "DESTROY", "nokey", "g"},
        {"XADD", "s", "1-1", "a", "1"}, {"XADD", "s", "1-2", "b", "2"},
        {"XADD", "s", "2-1", "c", "3"}, {"XINFO", "GROUPS", "s"},
        // XREADGROUP: new entries, history, NOACK, errors.
        {"XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">"},
        {"XINFO", "GROUPS", "s"}, {"XGROUP", "SETID", "s", "g", "0"},
        {"XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0"},
        {"XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s",
         "1-1"},
        {"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", "0"},
        {"XREADGROUP", "GROUP", "g2", "c1", "NOACK", "STREAMS", "s", ">"},
        {"XINFO", "GROUPS", "s"}, {"XPENDING", "s", "g"},
        {"XPENDING", "s", "g2"},
        {"XPENDING", "s", "g", "IDLE", "100000000", "-", "+", "10"},
        {"XPENDING", "s", "g", "-", "+", "0"},
        {"XPENDING", "s", "g", "-", "+", "10", "nobody"},
        {"XPENDING", "s", "g", "x", "+", "10"},
        {"XPENDING", "s", "g", "-", "+", "x"},
        {"XPENDING", "s", "g", "IDLE", "x", "-", "+", "10"},
        {"XPENDING", "s", "g", "IDLE", "1", "-", "+"},
        {"XPENDING", "s", "g", "-"}, {"XPENDING", "s", "nog"},
        {"XPENDING", "nokey", "g"},
        {"XPENDING", "s", "g", "(18446744073709551615-18446744073709551615",
         "+", "1"},
        {"XACK", "s", "g", "1-1", "9-9"}, {"XACK", "s", "g", "bad"},
        {"XACK", "s", "nog", "1-1"}, {"XACK", "nokey", "g", "1-1"},
        {"XPENDING", "s", "g"}, {"XDEL", "s", "1-2"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "$"},
        {"XREADGROUP", "GROUP", "nog", "c1", "STREAMS", "s", ">"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "nokey", ">"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "bad"},
        {"XREADGROUP", "STREAMS", "s", ">"},
        {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s"},
        {"XREADGROUP", "GROUP", "g", "c1", "FOO", "STREAMS", "s", ">"},
        {"XREAD", "GROUP", "g", "c1", "STREAMS", "s", ">"},
        {"XREAD", "STREAMS", "s", ">"},
        // XCLAIM and XAUTOCLAIM (min idle 0: no clock in the replies).
        {"XCLAIM", "s", "g", "c3", "0", "1-2", "2-1", "JUSTID"},
        {"XCLAIM", "s", "g", "c3", "0", "2-1"},
        {"XCLAIM", "s", "g", "c3", "0", "2-1", "RETRYCOUNT", "7", "TIME",
         "5"},
        {"XCLAIM", "s", "g", "c3", "0", "2-1", "RETRYCOUNT", "7", "JUSTID"},
        {"XCLAIM", "s", "g", "c3", "0", "1-1", "FORCE", "TIME", "5"},
        {"XCLAIM", "s", "g", "c3", "0", "9-9", "FORCE"},
        {"XCLAIM", "s", "g", "c3", "0", "2-1", "BAD"},
        {"XCLAIM", "s", "g", "c3", "x", "2-1"},
        {"XCLAIM", "s", "g", "c3", "0", "2-1", "IDLE", "x"},
        {"XCLAIM", "s", "g", "c3", "0", "2-1", "LASTID", "x"},
        {"XCLAIM", "s", "nog", "c3", "0", "2-1"},
        {"XCLAIM", "s", "g", "c3", "0", "2-1", "LASTID", "9-9", "JUSTID"},
        {"XCLAIM", "s", "g", "c3", "3600000", "2-1"},
        {"XINFO", "GROUPS", "s"},
        {"XAUTOCLAIM", "s", "g", "c4", "0", "-", "COUNT", "1", "JUSTID"},
        {"XAUTOCLAIM", "s", "g", "c4", "0", "-", "COUNT", "1"},
        {"XAUTOCLAIM", "s", "g", "c4", "0", "(1-1"},
        {"XAUTOCLAIM", "s", "g", "c4", "3600000", "-"},
        {"XAUTOCLAIM", "s", "g", "c4", "0", "-", "COUNT", "0"},
        {"XAUTOCLAIM", "s", "g", "c4", "0", "-", "FOO"},
        {"XAUTOCLAIM", "s", "nog", "c4", "0", "-"},
        {"XAUTOCLAIM", "s", "g", "c4", "x", "-"},
        {"XPENDING", "s", "g"},
        // Consumers and groups removed.
        {"XGROUP", "CREATECONSUMER", "s", "g", "c9"},
        {"XGROUP", "CREATECONSUMER", "s", "g", "c9"},
        {"XGROUP", "CREATECONSUMER", "s", "nog", "c9"},
        {"XGROUP", "DELCONSUMER", "s", "g", "c4"},
        {"XGROUP", "DELCONSUMER", "s", "g", "c4"}, {"XPENDING", "s", "g"},
        {"XGROUP", "DESTROY", "s", "g"}, {"XGROUP", "DESTROY", "s", "g"},
        {"XINFO", "GROUPS", "s"}, {"XINFO", "STREAM", "s"},
        {"XINFO", "CONSUMERS", "s", "nog"},
        // Lag and entries read across deletes, trims and XSETID.
        {"XGROUP", "CREATE", "s", "h", "0"},
        {"XGROUP", "CREATE", "s", "i", "1-1"},
        {"XGROUP", "CREATE", "s", "j", "$"},
        {"XGROUP", "CREATE", "s", "k", "9-9"}, {"XINFO", "GROUPS", "s"},
        {"XREADGROUP", "GROUP", "h", "c", "COUNT", "1", "STREAMS", "s", ">"},
        {"XINFO", "GROUPS", "s"}, {"XTRIM", "s", "MAXLEN", "0"},
        {"XINFO", "GROUPS", "s"}, {"XADD", "s", "10-1", "z", "1"},
        {"XINFO", "GROUPS", "s"},
        {"XSETID", "s", "100-1", "ENTRIESADDED", "50", "MAXDELETEDID",
         "99-1"},
        {"XINFO", "GROUPS", "s"}, {"XDEL", "s", "10-1"},
        {"XINFO", "STREAM", "s"},
        // Other types, and the empty MKSTREAM stream.
        {"SET", "str", "x"}, {"XGROUP", "CREATE", "str", "g", "0"},
        {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"},
        {"XACK", "str", "g", "1-1"}, {"XPENDING", "str", "g"},
        {"XCLAIM", "str", "g", "c", "0", "1-1"},
        {"XGROUP", "CREATE", "e", "g", "0", "MKSTREAM"},
        {"XINFO", "STREAM", "e"}, {"XLEN", "e"}, {"TYPE", "e"},
        {"OBJECT", "ENCODING", "e"},
        {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", ">"},
        // A key named twice, and two keys.
        {"XADD", "e", "1-1", "f", "v"}, {"XADD", "e2", "1-1", "f", "v"},
        {"XGROUP", "CREATE", "e2", "g", "0"},
        {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", "e", ">", ">"},
        {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", "e2", "0", ">"},
        // Inside MULTI, BLOCK answers as its timeout.
        {"MULTI"},
        {"XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "e2",
         ">"},
        {"XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "e2",
         "0"},
        {"EXEC"},
        {"COPY", "e", "e3"}, {"XPENDING", "e3", "g"},
        {"XINFO", "GROUPS", "e3"},
    });
  }
}

// XINFO STREAM FULL's groups, their pending entries and each consumer's,
// for several COUNTs, as Redis's (delivery times fixed by XCLAIM TIME;
// the consumers' seen times, the clock's, masked).
TEST(StreamGroupsVsRedis, FullInfoAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("groupfull", 50000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  c.Call({"FLUSHALL"});
  std::vector<Cmd> fill;
  for (int i = 1; i < 60; ++i) {
    fill.push_back({"XADD", "s", std::to_string(i) + "-1", "f", "v"});
  }
  fill.push_back({"XGROUP", "CREATE", "s", "g1", "0"});
  fill.push_back({"XGROUP", "CREATE", "s", "g2", "0"});
  fill.push_back({"XGROUP", "CREATECONSUMER", "s", "g2", "zed"});
  const char* who[] = {"bob", "alice", "carl"};
  for (int k = 0; k < 3; ++k) {
    Cmd claim = {"XCLAIM", "s", "g1", who[k], "0"};
    for (int i = k + 1; i < 26; i += 3) {
      claim.push_back(std::to_string(i) + "-1");
    }
    claim.insert(claim.end(), {"FORCE", "TIME", std::to_string(1000 * k)});
    fill.push_back(claim);
  }
  for (const Cmd& cmd : fill) {
    ASSERT_EQ(h.Run(cmd).substr(0, 1), c.Call(cmd).substr(0, 1))
        << CommandLine(cmd);
  }
  auto masked = [](std::string reply) {
    for (const std::string field : {"seen-time", "radix-tree-nodes"}) {
      const std::string tag = "$" + std::to_string(field.size()) + "\r\n" +
                              field + "\r\n:";
      for (size_t at = reply.find(tag); at != std::string::npos;
           at = reply.find(tag, at + 1)) {
        const size_t from = at + tag.size();
        reply.replace(from, reply.find("\r\n", from) - from, "0");
      }
    }
    return reply;
  };
  for (const char* count : {"0", "3", "10", "100"}) {
    const Cmd full = {"XINFO", "STREAM", "s", "FULL", "COUNT", count};
    EXPECT_EQ(masked(h.Run(full)), masked(c.Call(full))) << count;
  }
}

// Random deliveries, acknowledgements, claims and deletes over streams
// that stay packed and ones past 100 entries, byte for byte.
TEST(StreamGroupsVsRedis, RandomSequencesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : shmkv_test::TestSeeds(1, 4)) {
    CommandHarness h("grouprand", 50000, 64ULL << 20);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    uint64_t ms = 1;
    auto key = [&] { return "s" + std::to_string(rng() % 2); };
    auto group = [&] { return "g" + std::to_string(rng() % 3); };
    auto consumer = [&] { return "c" + std::to_string(rng() % 3); };
    auto id = [&] {
      return std::to_string(rng() % (ms + 2)) + "-" + std::to_string(rng() % 3);
    };
    const int steps = seed <= 2 ? 2000 : 1000;
    for (int i = 0; i < steps; ++i) {
      Cmd cmd;
      switch (rng() % 16) {
        case 0: case 1: case 2: case 3:
          ms += rng() % 2;
          cmd = {"XADD", key(), std::to_string(ms) + "-*", "f",
                 std::to_string(rng() % 100)};
          break;
        case 4:
          cmd = {"XGROUP", "CREATE", key(), group(),
                 rng() % 3 == 0 ? "$" : id(), "MKSTREAM"};
          break;
        case 5: case 6:
          cmd = {"XREADGROUP", "GROUP", group(), consumer(), "COUNT",
                 std::to_string(rng() % 6), "STREAMS", key(),
                 rng() % 4 == 0 ? id() : ">"};
          if (rng() % 5 == 0) cmd.insert(cmd.begin() + 6, "NOACK");
          break;
        case 7:
          cmd = {"XACK", key(), group(), id(), id(), id()};
          break;
        case 8:
          cmd = {"XCLAIM", key(), group(), consumer(), "0", id(), id()};
          if (rng() % 2) cmd.push_back("JUSTID");
          if (rng() % 3 == 0) cmd.push_back("FORCE");
          break;
        case 9:
          cmd = {"XAUTOCLAIM", key(), group(), consumer(), "0", id(),
                 "COUNT", std::to_string(1 + rng() % 4)};
          if (rng() % 2) cmd.push_back("JUSTID");
          break;
        case 10: cmd = {"XPENDING", key(), group()}; break;
        case 11: cmd = {"XINFO", "GROUPS", key()}; break;
        case 12: cmd = {"XDEL", key(), id(), id()}; break;
        case 13:
          cmd = {"XTRIM", key(), "MAXLEN", std::to_string(rng() % 150)};
          break;
        case 14:
          cmd = rng() % 4 == 0
                    ? Cmd{"XGROUP", "DESTROY", key(), group()}
                    : Cmd{"XGROUP", "DELCONSUMER", key(), group(),
                          consumer()};
          break;
        default:
          cmd = {"XGROUP", "SETID", key(), group(),
                 rng() % 2 ? "$" : id()};
      }
      ASSERT_EQ(h.Run(cmd), c.Call(cmd))
          << "seed " << seed << " step " << i << ": " << CommandLine(cmd);
    }
    // Each consumer's history at the end.
    for (const char* k : {"s0", "s1"}) {
      for (const char* g : {"g0", "g1", "g2"}) {
        for (const char* who : {"c0", "c1", "c2"}) {
          Cmd all = {"XREADGROUP", "GROUP", g, who, "STREAMS", k, "0"};
          ASSERT_EQ(h.Run(all), c.Call(all)) << "seed " << seed;
        }
      }
    }
  }
}

// A stream with groups DUMPed by each server RESTOREs in the other with
// its groups, consumers and pending entries (delivery times included).
TEST(StreamGroupsVsRedis, PayloadsCarryGroupsBothWays) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("grouprdb", 50000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  c.Call({"FLUSHALL"});
  std::vector<Cmd> fill;
  for (int i = 1; i <= 250; ++i) {
    fill.push_back({"XADD", "s", std::to_string(i) + "-1", "f",
                    std::to_string(i), "g", std::string(i % 7, 'x')});
  }
  fill.push_back({"XDEL", "s", "5-1"});
  fill.push_back({"XGROUP", "CREATE", "s", "g1", "0"});
  fill.push_back({"XGROUP", "CREATE", "s", "g2", "$"});
  fill.push_back({"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "10",
                  "STREAMS", "s", ">"});
  fill.push_back({"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "3",
                  "STREAMS", "s", ">"});
  fill.push_back({"XGROUP", "CREATECONSUMER", "s", "g2", "zed"});
  fill.push_back({"XACK", "s", "g1", "2-1"});
  // Fixed delivery times, so that the pending entries compare whole.
  fill.push_back({"XCLAIM", "s", "g1", "carol", "0", "1-1", "3-1", "4-1",
                  "6-1", "7-1", "8-1", "9-1", "10-1", "11-1", "12-1",
                  "13-1", "14-1", "TIME", "1000", "RETRYCOUNT", "4"});
  for (const Cmd& cmd : fill) {
    ASSERT_EQ(h.Run(cmd).substr(0, 1), c.Call(cmd).substr(0, 1))
        << CommandLine(cmd);
  }
  const std::string from_redis = c.Call({"DUMP", "s"});
  const std::string from_shmkv = h.Run({"DUMP", "s"});
  auto payload = [](const std::string& bulk) {
    const size_t eol = bulk.find("\r\n");
    return bulk.substr(eol + 2, bulk.size() - eol - 4);
  };
  ASSERT_EQ(h.Run({"RESTORE", "r", "0", payload(from_redis)}), "+OK\r\n");
  ASSERT_EQ(c.Call({"RESTORE", "k", "0", payload(from_shmkv)}), "+OK\r\n");
  for (const Cmd& probe :
       {Cmd{"XINFO", "GROUPS", "#"}, Cmd{"XPENDING", "#", "g1"},
        Cmd{"XPENDING", "#", "g2"}, Cmd{"XLEN", "#"},
        Cmd{"XREADGROUP", "GROUP", "g1", "carol", "COUNT", "0", "STREAMS",
            "#", "0"}}) {
    Cmd on_s = probe, on_r = probe, on_k = probe;
    for (Cmd* x : {&on_s, &on_r, &on_k}) {
      for (std::string& w : *x) {
        if (w == "#") w = x == &on_s ? "s" : x == &on_r ? "r" : "k";
      }
    }
    const std::string want = c.Call(on_s);
    // (XREADGROUP's reply names its key.)
    auto named = [&](const char* k) {
      std::string w = want;
      const size_t at = w.find("$1\r\ns\r\n");
      if (at != std::string::npos) w[at + 4] = k[0];
      return w;
    };
    EXPECT_EQ(h.Run(on_r), named("r")) << CommandLine(on_r);
    EXPECT_EQ(c.Call(on_k), named("k")) << CommandLine(on_k);
  }
}

// A reply's first integer after `after` (-1 when there is none).
int64_t IntAfter(const std::string& reply, const std::string& after) {
  const size_t at = reply.find(after);
  if (at == std::string::npos) return -1;
  const size_t colon = reply.find(':', at + after.size());
  if (colon == std::string::npos) return -1;
  return std::stoll(reply.substr(colon + 1));
}

// The bulk strings of a reply, in order.
std::vector<std::string> Bulks(const std::string& reply) {
  std::vector<std::string> out;
  for (size_t at = reply.find('$'); at != std::string::npos;
       at = reply.find('$', at)) {
    const size_t eol = reply.find("\r\n", at);
    const int64_t len = std::stoll(reply.substr(at + 1, eol - at - 1));
    if (len < 0) {
      at = eol;
      continue;
    }
    out.push_back(reply.substr(eol + 2, static_cast<size_t>(len)));
    at = eol + 2 + static_cast<size_t>(len);
  }
  return out;
}

// Workers SIGKILLed anywhere while they add to a queue, deliver from it
// to consumers (XREADGROUP), acknowledge (XACK) and claim (XAUTOCLAIM):
// no acknowledged XADD or XACK is lost, and every entry delivered is
// pending or acknowledged, never both, never lost (delivered - pending is
// the acknowledgements, the one in flight at the kill counted or not);
// the group's pending count is the pending entries listed and the sum of
// its consumers', each of them a consumer the group knows.
TEST(StreamGroups, KilledWorkersNeitherLoseNorDoubleADelivery) {
  CommandHarness h("groupkill", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_EQ(h.Run({"XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"}),
            "+OK\r\n");
  shmkv_test::AckedCount added, acked;
  ASSERT_TRUE(added.ok() && acked.ok());
  std::mt19937_64 rng(17);
  for (int round = 0; round < 15; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 104729 + 5, 30 + rng() % 150,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          const std::string who = "c" + std::to_string(r() % 4);
          switch (r() % 6) {
            case 0: case 1: {
              added.Begin();
              if (w.Run({"XADD", "q", "*", "n", std::to_string(r() % 1000),
                         "pad", std::string(r() % 60, 'p')})[0] != '$') {
                _exit(91);
              }
              added.Acked();
              break;
            }
            case 2: case 3:
              w.Run({"XREADGROUP", "GROUP", "g", who, "COUNT",
                     std::to_string(1 + r() % 4), "STREAMS", "q", ">"});
              break;
            case 4: {
              // The oldest pending entry, acknowledged: exactly one.
              const std::vector<std::string> p =
                  Bulks(w.Run({"XPENDING", "q", "g", "-", "+", "1"}));
              if (p.empty()) break;
              acked.Begin();
              if (w.Run({"XACK", "q", "g", p[0]}) != ":1\r\n") _exit(92);
              acked.Acked();
              break;
            }
            default:
              w.Run({"XAUTOCLAIM", "q", "g", who, "0", "-", "COUNT", "3",
                     "JUSTID"});
          }
        }));
    const std::string len = h.Run({"XLEN", "q"});
    ASSERT_EQ(len[0], ':') << len;
    ASSERT_TRUE(added.Settle(std::stoll(len.substr(1))));
    const std::string info = h.Run({"XINFO", "GROUPS", "q"});
    const std::vector<std::string> fields = Bulks(info);
    std::string last;
    for (size_t i = 0; i + 1 < fields.size(); ++i) {
      if (fields[i] == "last-delivered-id") last = fields[i + 1];
    }
    ASSERT_FALSE(last.empty()) << info;
    const std::string upto = h.Run({"XRANGE", "q", "-", last});
    const int64_t delivered = std::stoll(upto.substr(1));
    const std::string summary = h.Run({"XPENDING", "q", "g"});
    const int64_t pending = IntAfter(summary, "*4\r\n");
    ASSERT_GE(pending, 0) << summary;
    EXPECT_EQ(IntAfter(info, "pending"), pending) << info;
    ASSERT_TRUE(acked.Settle(delivered - pending))
        << delivered << " delivered, " << pending << " pending";
    // The listed entries: as many, each delivered, each a known
    // consumer's; the summary's per-consumer counts add up.
    const std::vector<std::string> listed =
        Bulks(h.Run({"XPENDING", "q", "g", "-", last, "1000000"}));
    ASSERT_EQ(static_cast<int64_t>(listed.size()), 2 * pending);
    const std::vector<std::string> known =
        Bulks(h.Run({"XINFO", "CONSUMERS", "q", "g"}));
    std::map<std::string, int64_t> per;
    for (size_t i = 0; i < listed.size(); i += 2) {
      EXPECT_NE(std::find(known.begin(), known.end(), listed[i + 1]),
                known.end())
          << listed[i + 1];
      ++per[listed[i + 1]];
    }
    const std::vector<std::string> sum = Bulks(summary);
    int64_t total = 0;
    for (size_t i = 2; i + 1 < sum.size(); i += 2) {
      EXPECT_EQ(per[sum[i]], std::stoll(sum[i + 1])) << sum[i];
      total += std::stoll(sum[i + 1]);
    }
    EXPECT_EQ(total, pending);
  }
  EXPECT_GT(added.acked(), 100);  // past a packed stream's 100 entries
  EXPECT_GT(acked.acked(), 20);
  // Every part the stream holds (its groups, its entries' and its
  // pending entries' nodes) is its root's: deleted, none is left. (A
  // small stream all pending to a consumer of a long name has more
  // pending nodes than entry nodes.)
  for (int i = 1; i <= 100; ++i) {
    h.Run({"XADD", "small", std::to_string(i) + "-1", "f", "v"});
  }
  h.Run({"XGROUP", "CREATE", "small", "g", "0"});
  for (int i = 0; i < 50; ++i) {
    h.Run({"XREADGROUP", "GROUP", "g", std::string(600, 'c'), "COUNT", "2",
           "STREAMS", "small", ">"});
  }
  ASSERT_EQ(h.Run({"XPENDING", "small", "g"}).substr(0, 9), "*4\r\n:100\r");
  ASSERT_EQ(h.Run({"DEL", "q", "small"}), ":2\r\n");
  for (int i = 0; i < 100; ++i) h.store()->Sweep(1 << 20);
  EXPECT_EQ(h.store()->Parts(), 0u);
}

}  // namespace
