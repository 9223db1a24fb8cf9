// HyperLogLog (server/commands/hll.h, hll_family.cc) against
// redis-server: every command with its errors, RESP2 and RESP3, the very
// bytes of the values (GET) after random sequences of PFADD, PFMERGE and
// PFCOUNT over sparse and dense values and sparse limits, and damaged
// values of every kind read without a bad access.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "server/commands/hll.h"
#include "tests/support/diff_harness.h"
#include "tests/support/kill_worker.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;
namespace hll = shmkv::cmd::hll;

TEST(HllFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("hyperloglog", {
      {"pfadd", 209}, {"pfcount", 210}, {"pfmerge", 211}, {"pfdebug", 212},
      {"pfselftest", 213},
  });
}

// Elements "e0" .. "e<n-1>" after PFADD key.
Cmd AddMany(const std::string& key, int from, int n) {
  Cmd c = {"PFADD", key};
  for (int i = from; i < from + n; ++i) c.push_back("e" + std::to_string(i));
  return c;
}

TEST(HllVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  shmkv_test::ForBothProtocols(
      redis, "hlldiff", [&](CommandHarness* hp, Client* cp) {
    CommandHarness& h = *hp;
    Client& c = *cp;
    c.Call({"CONFIG", "SET", "hll-sparse-max-bytes", "3000"});
    ExpectSameAsRedis(&h, &c, {
        // A new value, its count kept, the count marked unknown by a
        // change (byte 15) and kept again by PFCOUNT.
        {"PFADD", "h"}, {"GET", "h"}, {"PFCOUNT", "h"}, {"GET", "h"},
        {"PFADD", "h", "a", "b", "c"}, {"GETRANGE", "h", "15", "15"},
        {"PFADD", "h", "a", "b", "c"}, {"PFCOUNT", "h"},
        {"GETRANGE", "h", "15", "15"}, {"PFADD", "h", ""}, {"GET", "h"},
        {"PFCOUNT", "h", "nokey"}, {"PFCOUNT", "nokey"},
        {"PFCOUNT", "nokey", "nokey2"},
        {"PFDEBUG", "ENCODING", "h"}, {"PFDEBUG", "DECODE", "h"},
        {"PFDEBUG", "getreg", "nokey"}, {"PFDEBUG", "FOO", "h"},
        {"PFDEBUG", "FOO", "nokey"}, {"PFDEBUG", "ENCODING"},
        {"PFDEBUG", "ENCODING", "h", "x"},
        {"PFADD"}, {"PFCOUNT"}, {"PFMERGE"}, {"PFSELFTEST", "x"},
        // The expiry stays through PFADD, PFCOUNT and PFMERGE.
        {"PEXPIRE", "h", "100000000"}, {"PFADD", "h", "d"},
        {"PFCOUNT", "h"}, {"PFMERGE", "h", "nokey"}, {"TTL", "h"},
        {"PERSIST", "h"},
        // Types: another type, a string that is no HyperLogLog.
        {"SET", "s", "hello"}, {"PFADD", "s", "a"}, {"PFCOUNT", "s"},
        {"PFCOUNT", "h", "s"}, {"PFMERGE", "s", "h"}, {"PFMERGE", "h", "s"},
        {"PFDEBUG", "ENCODING", "s"}, {"SET", "n", "12345678901234567"},
        {"PFADD", "n", "x"}, {"LPUSH", "l", "x"}, {"PFADD", "l", "x"},
        {"PFCOUNT", "l"}, {"PFCOUNT", "h", "l"}, {"PFMERGE", "l", "h"},
        {"PFMERGE", "h", "l"}, {"PFDEBUG", "ENCODING", "l"},
        // PFMERGE: a new destination (its count marked unknown), the
        // destination among its sources, sparse and dense sources.
        {"PFMERGE", "m"}, {"GET", "m"}, {"EXISTS", "m"},
        AddMany("h1", 0, 3), AddMany("h2", 1, 3), AddMany("h3", 2, 3),
        {"PFMERGE", "m", "h1", "h2", "h3"}, {"PFCOUNT", "m"}, {"GET", "m"},
        {"PFMERGE", "h1", "h2"}, {"GET", "h1"},
        {"PFDEBUG", "TODENSE", "h2"}, {"PFDEBUG", "TODENSE", "h2"},
        {"PFDEBUG", "ENCODING", "h2"}, {"PFDEBUG", "DECODE", "h2"},
        {"PFMERGE", "h3", "h2"}, {"PFDEBUG", "ENCODING", "h3"},
        {"PFCOUNT", "h3"}, {"GET", "h3"}, {"PFCOUNT", "h1", "h2", "h3", "m"},
        // Growing past the sparse limit turns a value dense.
        AddMany("big", 0, 300), {"PFDEBUG", "ENCODING", "big"},
        {"STRLEN", "big"}, {"PFCOUNT", "big"}, {"GET", "big"},
        AddMany("big", 300, 3000), {"PFDEBUG", "ENCODING", "big"},
        {"PFCOUNT", "big"}, {"GET", "big"},
        {"CONFIG", "SET", "hll-sparse-max-bytes", "100"},
        {"CONFIG", "GET", "hll-sparse-max-bytes"}, AddMany("tiny", 0, 40),
        {"PFDEBUG", "ENCODING", "tiny"}, {"GET", "tiny"},
        {"CONFIG", "SET", "hll-sparse-max-bytes", "1kb"},
        {"CONFIG", "GET", "hll-sparse-max-bytes"},
        {"CONFIG", "SET", "hll-sparse-max-bytes", "-1"},
        {"CONFIG", "SET", "hll-sparse-max-bytes", "3000"},
        AddMany("sp", 0, 50), {"PFDEBUG", "GETREG", "sp"},
        {"PFDEBUG", "ENCODING", "sp"}, {"GET", "sp"},
        // Damage: bytes after the runs, a broken magic, an unknown
        // encoding, a dense one of the wrong length, runs short of the
        // registers.
        AddMany("d1", 0, 3), {"APPEND", "d1", "hello"}, {"PFCOUNT", "d1"},
        {"PFADD", "d1", "zz"}, {"PFCOUNT", "d1", "h"}, {"PFMERGE", "m", "d1"},
        {"PFDEBUG", "TODENSE", "d1"}, {"PFDEBUG", "DECODE", "d1"},
        AddMany("d2", 0, 3), {"SETRANGE", "d2", "0", "0123"},
        {"PFCOUNT", "d2"}, AddMany("d3", 0, 3), {"SETRANGE", "d3", "4", "x"},
        {"PFCOUNT", "d3"}, AddMany("d4", 0, 3),
        {"SETRANGE", "d4", "4", std::string(1, '\0')}, {"PFCOUNT", "d4"},
        {"SET", "d5", std::string("HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xfe", 18)},
        {"PFCOUNT", "d5"}, {"PFADD", "d5", "a"},
        {"SET", "d6", std::string("HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f", 17)},
        {"PFCOUNT", "d6"}, {"PFDEBUG", "DECODE", "d6"},
        {"SET", "d7", std::string("HYLL\x01\0\0\0\x05\0\0\0\0\0\0\0", 16)},
        {"PFCOUNT", "d7"},
        {"SET", "d8", std::string("HYLL\x01\0\0\0\x05\0\0\0\0\0\0\0", 16)},
        {"PFADD", "d8", "a"},
        // A kept count is trusted as Redis trusts it.
        {"SET", "d9", std::string("HYLL\x01\0\0\0\x05\0\0\0\0\0\0\0", 16)},
        {"PFCOUNT", "d9"}, {"PFSELFTEST"},
        // A value run past the last register.
        {"SET", "d10",
         std::string("HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff\x88", 19)},
        {"PFCOUNT", "d10"}, {"PFCOUNT", "d10", "d10"}, {"PFMERGE", "d11", "d10"},
        {"PFDEBUG", "TODENSE", "d10"}, {"PFADD", "d10", "x"}, {"GET", "d10"},
        {"MULTI"}, {"PFADD", "tx", "a"}, {"PFCOUNT", "tx"},
        {"PFCOUNT", "tx", "h"}, {"EXEC"}, {"GET", "tx"},
    });
  }, 4096, 32ULL << 20);
}

// PFCOUNT keeps the count it works out: a WATCH on the key fails, as
// Redis's does.
TEST(HllVsRedis, CountingWritesTheWatchedKey) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("hllwatch");
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  c.Call({"FLUSHALL"});
  ExpectSameAsRedis(&h, &c, {
      {"PFADD", "h", "a"}, {"WATCH", "h"}, {"PFCOUNT", "h"}, {"MULTI"},
      {"PING"}, {"EXEC"}, {"WATCH", "h"}, {"PFCOUNT", "h"}, {"MULTI"},
      {"PING"}, {"EXEC"},
  });
}

// Random PFADDs (few elements and many, so values go sparse to dense),
// PFMERGEs, PFCOUNTs and PFDEBUGs under several sparse limits: every
// reply and every value's bytes as Redis's.
TEST(HllVsRedis, RandomSequencesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : shmkv_test::TestSeeds(1, 12)) {
    CommandHarness h("hllrand", 4096, 32ULL << 20);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    const char* limits[] = {"3000", "3000", "500", "100", "20000"};
    Cmd limit = {"CONFIG", "SET", "hll-sparse-max-bytes", limits[rng() % 5]};
    ASSERT_EQ(h.Run(limit), c.Call(limit));
    const std::vector<std::string> keys = {"h1", "h2", "h3"};
    auto key = [&] { return keys[rng() % keys.size()]; };
    for (int step = 0; step < 60; ++step) {
      Cmd cmd;
      uint64_t op = rng() % 20;
      if (op < 11) {
        const int sizes[] = {0, 1, 3, 10, 100, 1000};
        int n = sizes[rng() % 6];
        cmd = {"PFADD", key()};
        for (int i = 0; i < n; ++i) {
          uint64_t range = 1;
          for (uint64_t d = 1 + rng() % 7; d > 0; --d) range *= 10;
          cmd.push_back(std::to_string(rng() % range));
        }
      } else if (op < 14) {
        cmd = {"PFCOUNT"};
        for (uint64_t n = 1 + rng() % 3; n > 0; --n) cmd.push_back(key());
      } else if (op < 17) {
        cmd = {"PFMERGE", key()};
        for (uint64_t n = rng() % 4; n > 0; --n) cmd.push_back(key());
      } else {
        const char* subs[] = {"ENCODING", "DECODE", "TODENSE", "GETREG"};
        cmd = {"PFDEBUG", subs[rng() % 4], key()};
      }
      ASSERT_EQ(h.Run(cmd), c.Call(cmd))
          << "seed " << seed << " step " << step << ": "
          << CommandLine(cmd).substr(0, 200);
      for (const std::string& k : keys) {
        ASSERT_EQ(h.Run({"GET", k}), c.Call({"GET", k}))
            << "seed " << seed << " step " << step << " key " << k
            << " after " << CommandLine(cmd).substr(0, 200);
      }
    }
  }
}

// The representation itself: the estimator against known counts, the
// sparse form against the dense one register by register.
TEST(HllValues, SparseAndDenseHoldTheSameRegisters) {
  std::mt19937_64 rng(44);
  for (int round = 0; round < 200; ++round) {
    std::string sparse = hll::NewSparse(), dense = hll::NewSparse();
    ASSERT_TRUE(hll::ToDense(&dense));
    int n = static_cast<int>(rng() % 400);
    for (int i = 0; i < n; ++i) {
      std::string e = std::to_string(rng());
      ASSERT_GE(hll::Add(&sparse, e, 1u << 20), 0);
      ASSERT_GE(hll::Add(&dense, e, 1u << 20), 0);
    }
    std::vector<uint8_t> a(hll::kRegisters), b(hll::kRegisters);
    ASSERT_TRUE(hll::MergeInto(sparse, a.data()));
    ASSERT_TRUE(hll::MergeInto(dense, b.data()));
    ASSERT_EQ(a, b) << "round " << round;
    uint64_t x = 0, y = 0;
    ASSERT_TRUE(hll::Count(sparse, &x));
    ASSERT_TRUE(hll::Count(dense, &y));
    EXPECT_EQ(x, y);
    EXPECT_EQ(x, hll::CountRegisters(a.data()));
  }
  EXPECT_EQ(hll::SelfTest(), "");
}

// Damaged values (random bytes over sparse and dense ones, cut short,
// lengthened) go through every reading and writing path: each answers or
// reports the damage, never reads or writes past the value (ASan).
TEST(HllValues, DamagedValuesAreReadWithinBounds) {
  std::mt19937_64 rng(4404);
  std::vector<std::string> seeds;
  for (int n : {0, 3, 50, 400, 3000}) {
    std::string v = hll::NewSparse();
    for (int i = 0; i < n; ++i) hll::Add(&v, std::to_string(i), 1u << 20);
    seeds.push_back(v);
    std::string d = v;
    hll::ToDense(&d);
    seeds.push_back(d);
  }
  int corrupt = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string v = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0:
        for (uint64_t k = 1 + rng() % 5; k > 0; --k) {
          v[hll::kHeader + rng() % (v.size() - hll::kHeader)] =
              static_cast<char>(rng());
        }
        break;
      case 1: v.resize(hll::kHeader + rng() % (v.size() - hll::kHeader + 1)); break;
      case 2: v.append(1 + rng() % 8, static_cast<char>(rng())); break;
      default: v[4] = static_cast<char>(rng() % 2);  // sparse read as dense
    }
    if (!hll::IsHll(v)) continue;
    uint64_t n = 0;
    std::vector<uint8_t> max(hll::kRegisters);
    bool counted = hll::Count(v, &n);
    bool merged = hll::MergeInto(v, max.data());
    // A run past the last register is damage to each reading (as to
    // redis-server 7.0.15 as Debian patches it).
    EXPECT_EQ(counted, merged) << "round " << round;
    corrupt += !counted;
    if (hll::Encoding(v) == hll::kSparse) (void)hll::Decode(v);
    std::string w = v;
    for (int i = 0; i < 20; ++i) {
      if (hll::Add(&w, std::to_string(rng()), rng() % 2 ? 3000 : 20000) < 0) {
        break;
      }
    }
    std::string d = v;
    bool made = hll::ToDense(&d);
    EXPECT_EQ(made, merged) << "round " << round;
    if (made) {
      EXPECT_EQ(d.size(), hll::kDenseBytes);
    }
  }
  EXPECT_GT(corrupt, 100) << "the damage should be found often";
}

}  // namespace

namespace {

// Workers SIGKILLed while they add elements to a HyperLogLog and points
// to a geospatial set together (MULTI: PFADD and GEOADD), count the
// HyperLogLog (PFCOUNT keeps its count: a write of its own), merge it
// and store searches: after each kill the set holds every acknowledged
// point (and at most the one in flight), the HyperLogLog every
// acknowledged element (adding one again to a copy changes no register),
// and both values read whole.
TEST(HllAndGeo, KilledWorkersLoseNoAcknowledgedAdd) {
  CommandHarness h("hllgeokill", 100000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv_test::AckedCount added;
  ASSERT_TRUE(added.ok());
  std::mt19937_64 rng(48);
  for (int round = 0; round < 12; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 7919 + 3, 30 + rng() % 120,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          switch (r() % 5) {
            case 0: case 1: {
              const std::string k = std::to_string(added.acked());
              const double lon = -170.0 + static_cast<double>(r() % 34000) / 100;
              const double lat = -80.0 + static_cast<double>(r() % 16000) / 100;
              added.Begin();
              w.Run({"MULTI"});
              w.Run({"PFADD", "h", "e" + k});
              w.Run({"GEOADD", "g", std::to_string(lon), std::to_string(lat),
                     "m" + k});
              if (w.Run({"EXEC"}).rfind("*2\r\n", 0) != 0) _exit(91);
              added.Acked();
              break;
            }
            case 2:
              if (w.Run({"PFCOUNT", "h"})[0] != ':') _exit(92);
              break;
            case 3:
              w.Run({"PFMERGE", "h2", "h", "h2"});
              break;
            default:
              w.Run({"GEOSEARCHSTORE", "near", "g", "FROMLONLAT", "0", "0",
                     "BYRADIUS", "5000", "km", "COUNT", "20"});
          }
        }));
    const std::string card = h.Run({"ZCARD", "g"});
    ASSERT_EQ(card[0], ':') << card;
    const int64_t found = std::stoll(card.substr(1));
    ASSERT_TRUE(added.Settle(found)) << "round " << round;
    const std::string count = h.Run({"PFCOUNT", "h"});
    ASSERT_EQ(count[0], ':') << count;
    ASSERT_EQ(h.Run({"PFCOUNT", "h2"})[0], ':');
    ASSERT_EQ(h.Run({"PFMERGE", "copy", "h"}), "+OK\r\n");
    Cmd again = {"PFADD", "copy"};
    for (int64_t k = 0; k < found; ++k) again.push_back("e" + std::to_string(k));
    if (found > 0) {
      EXPECT_EQ(h.Run(again), ":0\r\n") << "round " << round;
      EXPECT_NE(h.Run({"GEOPOS", "g", "m" + std::to_string(found - 1)}),
                "*1\r\n*-1\r\n");
    }
    h.Run({"DEL", "copy"});
  }
  EXPECT_GT(added.acked(), 20);
}

}  // namespace
