// The list family (server/commands/list_family.cc) in process and against
// redis-server: every command with its edge values and errors, short
// lists packed and long ones in chunks (byte for byte against Redis over
// random sequences at both sizes), chunks kept dense as they empty, and
// damaged bytes answered with an error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/commands/list_value.h"
#include "server/commands/packed.h"
#include "tests/support/diff_harness.h"
#include "tests/support/kill_worker.h"
#include "tests/support/pinned_ids.h"
#include "tests/support/resp_reply.h"

namespace {

using shmkv::ValueType;
using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

// The family's statistics ids, as first given: pin a new command's here.
TEST(ListFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("list", {
      {"lpush", 83}, {"rpush", 84}, {"lpushx", 85}, {"rpushx", 86},
      {"lpop", 87}, {"rpop", 88}, {"llen", 89}, {"lindex", 90},
      {"lset", 91}, {"lrange", 92}, {"ltrim", 93}, {"linsert", 94},
      {"lrem", 95}, {"lpos", 96}, {"lmove", 97}, {"rpoplpush", 98},
      {"lmpop", 99},
  });
}

TEST(ListFamily, AQueueInProcess) {
  CommandHarness h("list");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"LPUSH", "jobs", "a", "b", "c"}), ":3\r\n");
  EXPECT_EQ(h.Run({"RPOP", "jobs"}), "$1\r\na\r\n");
  EXPECT_EQ(h.Run({"LMOVE", "jobs", "busy", "RIGHT", "LEFT"}),
            "$1\r\nb\r\n");
  EXPECT_EQ(h.Run({"LRANGE", "busy", "0", "-1"}), "*1\r\n$1\r\nb\r\n");
  EXPECT_EQ(h.Run({"TYPE", "jobs"}), "+list\r\n");
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "jobs"}), "$9\r\nquicklist\r\n");
  EXPECT_EQ(h.Run({"LREM", "busy", "1", "b"}), ":1\r\n");
  EXPECT_EQ(h.Run({"EXISTS", "busy"}), ":0\r\n");
}

// A chunk written again after pushes and pops at its ends copies the run
// of elements it read as one block (PackReusing): the bytes must be
// Pack's whatever the run claims, and a run that is not one (elements
// from elsewhere, cut mid-string, out of order, out of range, views at
// the first byte of the source) is written item by item.
TEST(ListFamily, PackReusingWritesPacksBytes) {
  std::mt19937_64 rng(20261129);
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> strings;
    const size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) {
      // Lengths on both sides of a one-byte length (127 / 128).
      size_t len = rng() % 4 == 0 ? 120 + rng() % 20 : rng() % 6;
      strings.push_back(std::string(len, static_cast<char>('a' + i % 26)));
    }
    std::vector<std::string_view> in(strings.begin(), strings.end());
    std::string src;
    shmkv::Pack(in, &src);
    std::vector<std::string_view> items;
    ASSERT_TRUE(shmkv::Unpack(src, &items));
    // Pushes and pops at both ends, and now and then an edit inside.
    std::vector<std::string> fresh = {"new", std::string(130, 'z'), ""};
    for (int op = 0; op < 6; ++op) {
      switch (rng() % 6) {
        case 0: items.insert(items.begin(), fresh[rng() % 3]); break;
        case 1: items.push_back(fresh[rng() % 3]); break;
        case 2: if (!items.empty()) items.erase(items.begin()); break;
        case 3: if (!items.empty()) items.pop_back(); break;
        case 4:
          if (!items.empty()) items[rng() % items.size()] = fresh[0];
          break;
        case 5:
          if (items.size() > 2) std::swap(items[0], items[items.size() - 1]);
          break;
      }
    }
    // A string cut inside (its length byte is then not before it).
    if (rng() % 8 == 0 && !items.empty() && items[0].size() > 1) {
      items[0] = items[0].substr(1);
    }
    std::string want = "head", got = "head";
    shmkv::Pack(items, &want);
    const size_t lo = rng() % (items.size() + 2);
    const size_t hi = rng() % 3 == 0 ? items.size()
                                     : rng() % (items.size() + 2);
    shmkv::PackReusing(items, lo, hi, src, &got);
    ASSERT_EQ(got, want) << "round " << round << " run " << lo << ".."
                         << hi;
  }
  // The whole source as the run, and a view at its first byte (no room
  // for a length before it).
  std::vector<std::string> strings = {"ab", "c", std::string(200, 'd')};
  std::vector<std::string_view> in(strings.begin(), strings.end());
  std::string src, want, got;
  shmkv::Pack(in, &src);
  std::vector<std::string_view> items;
  ASSERT_TRUE(shmkv::Unpack(src, &items));
  shmkv::Pack(items, &want);
  shmkv::PackReusing(items, 0, items.size(), src, &got);
  EXPECT_EQ(got, want);
  items = {std::string_view(src.data(), 1)};
  want.clear();
  got.clear();
  shmkv::Pack(items, &want);
  shmkv::PackReusing(items, 0, 1, src, &got);
  EXPECT_EQ(got, want);
}

// Every list command with its edge values and errors, byte for byte.
TEST(ListFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("listdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string bin("a\0b\xff\r\n", 6);
  ExpectSameAsRedis(&h, redis.port(), {
      {"LPUSH", "l"}, {"RPUSH", "l", "a", "b", "c", "d", "e"},
      {"LPUSH", "l", "z", "y"}, {"LRANGE", "l", "0", "-1"},
      {"LPUSHX", "none", "x"}, {"RPUSHX", "none", "x"},
      {"LPUSHX", "l", "p"}, {"RPUSHX", "l", "q", bin}, {"LLEN", "l"},
      {"LLEN", "none"}, {"LINDEX", "l", "0"}, {"LINDEX", "l", "-1"},
      {"LINDEX", "l", "100"}, {"LINDEX", "l", "-100"}, {"LINDEX", "l", "x"},
      {"LINDEX", "none", "0"}, {"LRANGE", "l", "-3", "-1"},
      {"LRANGE", "l", "2", "1"}, {"LRANGE", "l", "-100", "100"},
      {"LRANGE", "l", "5", "5"}, {"LRANGE", "l", "x", "1"},
      {"LRANGE", "none", "0", "-1"}, {"LRANGE", "l", "100", "200"},
      {"LSET", "l", "0", "first"}, {"LSET", "l", "-1", "last"},
      {"LSET", "l", "100", "x"}, {"LSET", "none", "0", "x"},
      {"LSET", "l", "x", "y"}, {"LRANGE", "l", "0", "-1"},
      // pops
      {"LPOP", "l"}, {"RPOP", "l"}, {"LPOP", "l", "2"}, {"RPOP", "l", "0"},
      {"LPOP", "l", "-1"}, {"LPOP", "l", "x"}, {"LPOP", "l", "1", "2"},
      {"LPOP", "none"}, {"LPOP", "none", "2"}, {"LPOP", "none", "0"},
      {"RPOP", "l", "100"}, {"EXISTS", "l"},
      // LINSERT, LREM, LPOS
      {"RPUSH", "m", "a", "b", "a", "c", "a", "b"},
      {"LINSERT", "m", "BEFORE", "b", "x"}, {"LINSERT", "m", "after", "a", "y"},
      {"LINSERT", "m", "middle", "a", "x"}, {"LINSERT", "m", "before", "zz", "x"},
      {"LINSERT", "none", "before", "a", "x"}, {"LRANGE", "m", "0", "-1"},
      {"LPOS", "m", "a"}, {"LPOS", "m", "a", "RANK", "2"},
      {"LPOS", "m", "a", "RANK", "-1"}, {"LPOS", "m", "a", "RANK", "-2"},
      {"LPOS", "m", "a", "COUNT", "0"}, {"LPOS", "m", "a", "COUNT", "2"},
      {"LPOS", "m", "a", "COUNT", "2", "RANK", "-1"},
      {"LPOS", "m", "a", "MAXLEN", "2"}, {"LPOS", "m", "a", "COUNT", "0",
                                           "MAXLEN", "3"},
      {"LPOS", "m", "zz"}, {"LPOS", "m", "zz", "COUNT", "3"},
      {"LPOS", "none", "a"}, {"LPOS", "none", "a", "COUNT", "1"},
      {"LPOS", "m", "a", "RANK", "0"}, {"LPOS", "m", "a", "COUNT", "-1"},
      {"LPOS", "m", "a", "MAXLEN", "-1"}, {"LPOS", "m", "a", "RANK"},
      // COUNT and MAXLEN that do not parse: Redis's "can't be negative"
      {"LPOS", "m", "a", "COUNT", "x"}, {"LPOS", "m", "a", "MAXLEN", "01"},
      {"LPOS", "m", "a", "COUNT", "+1"}, {"LPOS", "m", "a", "RANK", "x"},
      {"LPOS", "m", "a", "RANK", "-9223372036854775808"},
      {"LPOS", "m", "a", "FOO", "1"}, {"LPOS", "m", "a", "RANK", "x"},
      {"LPOS", "m", "a", "RANK", "-9223372036854775808"},
      {"LPOS", "m", "a", "RANK", "100"},
      {"LREM", "m", "1", "a"}, {"LREM", "m", "-1", "a"},
      {"LRANGE", "m", "0", "-1"}, {"LREM", "m", "0", "b"},
      {"LREM", "m", "x", "a"}, {"LREM", "none", "0", "a"},
      {"LRANGE", "m", "0", "-1"},
      // LTRIM
      {"RPUSH", "t", "1", "2", "3", "4", "5", "6"}, {"LTRIM", "t", "1", "-2"},
      {"LRANGE", "t", "0", "-1"}, {"LTRIM", "t", "x", "1"},
      {"LTRIM", "t", "5", "10"}, {"EXISTS", "t"}, {"LTRIM", "none", "0", "1"},
      // LMOVE RPOPLPUSH LMPOP
      {"RPUSH", "s", "1", "2", "3"}, {"LMOVE", "s", "d", "LEFT", "RIGHT"},
      {"LMOVE", "s", "d", "RIGHT", "LEFT"}, {"LMOVE", "s", "s", "LEFT", "RIGHT"},
      {"LRANGE", "s", "0", "-1"}, {"LRANGE", "d", "0", "-1"},
      {"LMOVE", "s", "d", "left", "middle"}, {"LMOVE", "none", "d", "LEFT",
                                               "LEFT"},
      {"RPOPLPUSH", "s", "d"}, {"RPOPLPUSH", "s", "d"}, {"EXISTS", "s"},
      {"RPOPLPUSH", "d", "d"}, {"LRANGE", "d", "0", "-1"},
      {"LMPOP", "2", "none", "d", "LEFT"}, {"LMPOP", "1", "d", "RIGHT",
                                             "COUNT", "10"},
      {"LMPOP", "1", "d", "LEFT"}, {"LMPOP", "0", "d", "LEFT"},
      {"LMPOP", "x", "d", "LEFT"}, {"LMPOP", "2", "d", "LEFT"},
      {"LMPOP", "5", "d", "LEFT"}, {"LMPOP", "1", "d", "MIDDLE"},
      {"LMPOP", "1", "d", "LEFT", "COUNT", "0"},
      {"LMPOP", "1", "d", "LEFT", "COUNT", "-1"},
      {"LMPOP", "1", "d", "LEFT", "COUNT", "1", "COUNT", "2"},
      {"LMPOP", "1", "d", "LEFT", "FOO", "1"},
      // WRONGTYPE both ways
      {"SET", "str", "v"}, {"LPUSH", "str", "x"}, {"RPUSHX", "str", "x"},
      {"LPOP", "str"}, {"LLEN", "str"}, {"LINDEX", "str", "0"},
      {"LRANGE", "str", "0", "1"}, {"LSET", "str", "0", "x"},
      {"LTRIM", "str", "0", "1"}, {"LINSERT", "str", "before", "a", "b"},
      {"LREM", "str", "0", "a"}, {"LPOS", "str", "a"},
      {"RPUSH", "q", "1"}, {"LMOVE", "str", "q", "LEFT", "LEFT"},
      {"LMOVE", "q", "str", "LEFT", "LEFT"}, {"LRANGE", "q", "0", "-1"},
      {"LMOVE", "none", "str", "LEFT", "LEFT"}, {"LMPOP", "2", "q", "str",
                                                  "LEFT"},
      {"LMPOP", "2", "none", "str", "LEFT"}, {"GET", "q"},
      {"HSET", "q", "f", "v"}, {"INCR", "q"}, {"TYPE", "q"},
      // TTL kept by writes; transactions
      {"PEXPIREAT", "q", "4102444800000"}, {"RPUSH", "q", "2"},
      {"LPOP", "q"}, {"PEXPIRETIME", "q"},
      {"MULTI"}, {"RPUSH", "tx", "a"}, {"LPUSH", "tx", "b"},
      {"LRANGE", "tx", "0", "-1"}, {"INCR", "tx"}, {"RPOP", "tx"}, {"EXEC"},
  });
}

// A random sequence of list commands over a few keys, at lengths where
// the lists are in chunks (thousands of elements), byte for byte.
void RandomListSequence(CommandHarness* h, int redis_port, uint64_t seed,
                        int steps, int spread) {
  Client c(redis_port);
  ASSERT_TRUE(c.ok());
  std::mt19937_64 rng(seed);
  auto key = [&] { return "l" + std::to_string(rng() % 3); };
  auto elem = [&] {
    size_t n = rng() % 4 == 0 ? 40 + rng() % 200 : 1 + rng() % 6;
    return std::string(n, static_cast<char>('a' + rng() % 4));
  };
  auto idx = [&] {
    return std::to_string(static_cast<int64_t>(rng() % (2 * spread)) -
                          spread);
  };
  for (int i = 0; i < steps; ++i) {
    Cmd cmd;
    switch (rng() % 16) {
      case 0: case 1: case 2: {
        cmd = {rng() % 2 ? "LPUSH" : "RPUSH", key()};
        for (int n = 1 + rng() % 40; n > 0; --n) cmd.push_back(elem());
        break;
      }
      case 3: cmd = {rng() % 2 ? "LPOP" : "RPOP", key(),
                     std::to_string(rng() % 30)}; break;
      case 4: cmd = {rng() % 2 ? "LPOP" : "RPOP", key()}; break;
      case 5: cmd = {"LINDEX", key(), idx()}; break;
      case 6: cmd = {"LRANGE", key(), idx(), idx()}; break;
      case 7: cmd = {"LSET", key(), idx(), elem()}; break;
      case 8: cmd = {"LINSERT", key(), rng() % 2 ? "BEFORE" : "AFTER",
                     elem(), elem()}; break;
      case 9: cmd = {"LREM", key(), std::to_string(
                     static_cast<int>(rng() % 7) - 3), elem()}; break;
      case 10: cmd = {"LPOS", key(), elem(), "RANK",
                      rng() % 2 ? "1" : "-2", "COUNT",
                      std::to_string(rng() % 4)}; break;
      case 11: cmd = {"LMOVE", key(), key(), rng() % 2 ? "LEFT" : "RIGHT",
                      rng() % 2 ? "LEFT" : "RIGHT"}; break;
      case 12: cmd = {"LLEN", key()}; break;
      case 13: cmd = {"LTRIM", key(), idx(), std::to_string(
                      spread * 3 + rng() % spread)}; break;
      case 14: cmd = {"LMPOP", "2", key(), key(), "LEFT", "COUNT",
                      std::to_string(1 + rng() % 20)}; break;
      default: cmd = {"LRANGE", key(), "0", "-1"};
    }
    std::string mine = h->Run(cmd), theirs = c.Call(cmd);
    ASSERT_EQ(mine, theirs) << "seed " << seed << " step " << i << ": "
                            << CommandLine(cmd);
  }
}

TEST(ListFamilyVsRedis, ShortListsReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : shmkv_test::TestSeeds(1, 4)) {
    CommandHarness h("listshort");
    ASSERT_TRUE(h.ok()) << h.error();
    Client(redis.port()).Call({"FLUSHALL"});
    RandomListSequence(&h, redis.port(), seed, 1500, 20);
  }
}

TEST(ListFamilyVsRedis, LongListsInChunksReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : shmkv_test::TestSeeds(11, 13)) {
    CommandHarness h("listlong", 100000, 128ULL << 20);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    // Lists long enough to be many chunks from the start.
    for (int k = 0; k < 3; ++k) {
      for (int b = 0; b < 20; ++b) {
        Cmd push = {"RPUSH", "l" + std::to_string(k)};
        for (int i = 0; i < 100; ++i) {
          push.push_back(std::string(1 + (b + i) % 5, 'a' + (i % 4)));
        }
        ASSERT_EQ(h.Run(push), c.Call(push));
      }
    }
    RandomListSequence(&h, redis.port(), seed, 3000, 2500);
  }
}

// A long list: pushes and pops at both ends cost one chunk, the chunks
// stay about full, and as the list empties its chunks go (no part is
// left once it is gone).
TEST(ListFamily, LongListsKeepTheirChunksDense) {
  CommandHarness h("listdense", 200000, 256ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  const int kElems = 100000;
  for (int i = 0; i < kElems; ++i) {
    std::string v = std::to_string(i);
    ASSERT_EQ(h.Run({i % 2 ? "RPUSH" : "LPUSH", "q", v}),
              ":" + std::to_string(i + 1) + "\r\n");
  }
  uint64_t parts = h.store()->Parts();
  EXPECT_GE(parts, uint64_t{kElems} / shmkv::cmd::ListValue::kChunkElements);
  EXPECT_LE(parts,
            2 * uint64_t{kElems} / shmkv::cmd::ListValue::kChunkElements);
  // The middle, from either side.
  EXPECT_EQ(h.Run({"LINDEX", "q", "0"}), "$5\r\n99998\r\n");
  EXPECT_EQ(h.Run({"LINDEX", "q", "-1"}), "$5\r\n99999\r\n");
  EXPECT_EQ(h.Run({"LINDEX", "q", "50000"}), "$1\r\n1\r\n");
  EXPECT_EQ(h.Run({"LINDEX", "q", "49999"}), "$1\r\n0\r\n");
  // Pop most of it from the left: the chunks emptied go, and the indexes
  // of the rest stay dense (the list still reads whole).
  for (int i = 0; i < kElems - 10; ++i) {
    std::string r = h.Run({"LPOP", "q"});
    ASSERT_EQ(r[0], '$') << i << " " << r;
  }
  EXPECT_EQ(h.Run({"LLEN", "q"}), ":10\r\n");
  EXPECT_LE(h.store()->Parts(), 2u);
  EXPECT_EQ(h.Run({"LRANGE", "q", "0", "-1"}).substr(0, 4), "*10\r");
  EXPECT_EQ(h.Run({"DEL", "q"}), ":1\r\n");
  EXPECT_EQ(h.store()->Parts(), 0u);
}

// Workers SIGKILLed while they move elements between two long lists
// (LMOVE, RPOPLPUSH, LMPOP then RPUSH in one MULTI): no element is ever
// lost or doubled, the lists' lengths add up to the elements there are,
// and each list reads whole after every kill.
TEST(ListFamily, KilledWorkersNeverLoseOrDoubleAnElement) {
  CommandHarness h("listkill", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  constexpr int kElems = 3000;
  for (int i = 0; i < kElems; ++i) {
    ASSERT_EQ(h.Run({"RPUSH", i % 2 ? "a" : "b", std::to_string(i)}),
              ":" + std::to_string(i / 2 + 1) + "\r\n");
  }
  std::mt19937_64 rng(9);
  for (int round = 0; round < 15; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 31 + 7, 30 + rng() % 150,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          const char* from = r() % 2 ? "a" : "b";
          const char* to = r() % 3 ? (from[0] == 'a' ? "b" : "a") : from;
          switch (r() % 4) {
            case 0:
              w.Run({"LMOVE", from, to, r() % 2 ? "LEFT" : "RIGHT",
                     r() % 2 ? "LEFT" : "RIGHT"});
              break;
            case 1: w.Run({"RPOPLPUSH", from, to}); break;
            case 2:
              // Into the middle, and one element there written again:
              // walks past chunk heads inside the transaction.
              w.Run({"EVAL",
                     "local v = redis.call('RPOP', KEYS[1]) "
                     "if not v then return 0 end "
                     "local n = redis.call('LLEN', KEYS[2]) "
                     "local p = redis.call('LINDEX', KEYS[2], "
                     "  math.floor(n * ARGV[1] / 100)) "
                     "if p then redis.call('LINSERT', KEYS[2], 'BEFORE', p, v) "
                     "else redis.call('LPUSH', KEYS[2], v) end "
                     "local i = math.floor(n * ARGV[2] / 100) "
                     "local x = redis.call('LINDEX', KEYS[2], i) "
                     "if x then redis.call('LSET', KEYS[2], i, x) end "
                     "return 1",
                     "2", from, to, std::to_string(r() % 100),
                     std::to_string(r() % 100)});
              break;
            default: {
              // Ten at once, through a transaction.
              w.Run({"MULTI"});
              for (int k = 0; k < 10; ++k) w.Run({"RPOPLPUSH", from, to});
              w.Run({"EXEC"});
            }
          }
        }));
    std::vector<bool> seen(kElems, false);
    uint64_t total = 0;
    for (const char* key : {"a", "b"}) {
      std::string all = h.Run({"LRANGE", key, "0", "-1"});
      ASSERT_EQ(all[0], '*') << all.substr(0, 80);
      std::string len = h.Run({"LLEN", key});
      ASSERT_EQ(":" + all.substr(1, all.find("\r\n") - 1) + "\r\n", len);
      for (const std::string& e : shmkv_test::BulkElements(all)) {
        int v = std::stoi(e);
        ASSERT_FALSE(seen[v]) << v << " is there twice";
        seen[v] = true;
        ++total;
      }
    }
    ASSERT_EQ(total, static_cast<uint64_t>(kElems)) << "round " << round;
  }
}

// Lock-free reads of a list in chunks see one commit's state: while
// another process rotates a long list (RPOPLPUSH l l: every commit a
// rotation of 0 .. n-1), every LRANGE of it in this process reads a whole
// rotation, each element once and in order, never a mix of two commits.
TEST(ListFamily, ReadersNeverSeeHalfACommitOfChunks) {
  CommandHarness h("listread", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  constexpr int kElems = 2000;
  Cmd push = {"RPUSH", "l"};
  for (int i = 0; i < kElems; ++i) push.push_back(std::to_string(i));
  ASSERT_EQ(h.Run(push), ":" + std::to_string(kElems) + "\r\n");
  pid_t pid = fork();
  if (pid == 0) {
    shmkv_test::CommandWorker w(h.config());
    if (!w.ok()) _exit(90);
    for (;;) {
      w.Run({"RPOPLPUSH", "l", "l"});
      w.Run({"LMOVE", "l", "l", "LEFT", "RIGHT"});
    }
  }
  ASSERT_GT(pid, 0);
  int reads = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string all = h.Run({"LRANGE", "l", "0", "-1"});
    ASSERT_EQ(all.substr(0, all.find("\r\n")), "*" + std::to_string(kElems))
        << all.substr(0, 100);
    std::vector<int> got;
    for (const std::string& e : shmkv_test::BulkElements(all)) {
      got.push_back(std::stoi(e));
    }
    ASSERT_EQ(got.size(), static_cast<size_t>(kElems));
    for (int k = 1; k < kElems; ++k) {
      ASSERT_EQ(got[k], (got[k - 1] + 1) % kElems)
          << "read " << reads << " at " << k << ": not one rotation";
    }
    ++reads;
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_GT(reads, 10);
}

const char kDamaged[] = "-ERR the value of this key is damaged (shmc check)\r\n";

// RPUSHes e0 .. e999 to "c", a list in chunks, and reads its root.
void PushThousand(CommandHarness* h, shmkv::Value* root, shmkv::PartsRoot* pr) {
  Cmd push = {"RPUSH", "c"};
  for (int i = 0; i < 1000; ++i) push.push_back("e" + std::to_string(i));
  ASSERT_EQ(h->Run(push), ":1000\r\n");
  ASSERT_TRUE(h->store()->Get("c", root));
  std::memcpy(pr, root->bytes.data(), sizeof(*pr));
}

// Damaged list bytes answer the damaged-value error: a packed list that
// does not unpack, a chunk that does not parse, links that loop.
// A reader keeps the chunk heads it walked past (list_value.cc,
// HeadCache) while their parts are unchanged: another process that
// changes a chunk's count in the middle must be seen by the next walk.
TEST(ListFamily, KeptChunkHeadsFollowAnotherProcesssWrites) {
  CommandHarness h("listheads", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  constexpr int kElems = 5000;
  Cmd push = {"RPUSH", "l"};
  for (int i = 0; i < kElems; ++i) push.push_back(std::to_string(i));
  ASSERT_EQ(h.Run(push), ":" + std::to_string(kElems) + "\r\n");
  // Walked from the head, past the chunk of "500": every head kept.
  ASSERT_EQ(h.Run({"LINDEX", "l", "2000"}), "$4\r\n2000\r\n");
  pid_t pid = fork();
  if (pid == 0) {
    shmkv_test::CommandWorker w(h.config());
    if (!w.ok()) _exit(90);
    for (;;) {
      // One more element in that chunk, then one fewer again.
      w.Run({"LINSERT", "l", "BEFORE", "500", "x"});
      w.Run({"LREM", "l", "1", "x"});
    }
  }
  ASSERT_GT(pid, 0);
  int reads = 0, shifted = 0;
  // Two seconds at least, and on (up to 20 s, on a busy machine) until the
  // other process's insert has been seen.
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < start + std::chrono::seconds(2) ||
         ((shifted == 0 || reads < 10) &&
          std::chrono::steady_clock::now() < start + std::chrono::seconds(20))) {
    std::string got = h.Run({"LINDEX", "l", "2000"});
    ASSERT_TRUE(got == "$4\r\n2000\r\n" || got == "$4\r\n1999\r\n")
        << "read " << reads << ": " << got;
    shifted += got == "$4\r\n1999\r\n";
    ++reads;
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_GT(reads, 10);
  EXPECT_GT(shifted, 0) << "the other process's insert was never seen";
  // At rest, in this process: its own writes are seen as well.
  h.Run({"LREM", "l", "0", "x"});
  ASSERT_EQ(h.Run({"LINDEX", "l", "2000"}), "$4\r\n2000\r\n");
  ASSERT_EQ(h.Run({"LINSERT", "l", "AFTER", "10", "y"}), ":5001\r\n");
  EXPECT_EQ(h.Run({"LINDEX", "l", "2000"}), "$4\r\n1999\r\n");
  ASSERT_EQ(h.Run({"LSET", "l", "1500", "z"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"LINDEX", "l", "1500"}), "$1\r\nz\r\n");
  EXPECT_EQ(h.Run({"LINDEX", "l", "2000"}), "$4\r\n1999\r\n");
}

TEST(ListFamily, DamagedListsAreAnError) {
  CommandHarness h("listbad", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("p", ValueType::kList, "\x09short"));
  EXPECT_EQ(h.Run({"LRANGE", "p", "0", "-1"}), kDamaged);
  EXPECT_EQ(h.Run({"RPUSH", "p", "x"}), kDamaged);
  shmkv::Value root;
  shmkv::PartsRoot pr;
  ASSERT_NO_FATAL_FAILURE(PushThousand(&h, &root, &pr));
  ASSERT_GT(pr.parts, 3u);
  // A chunk whose next link points back at the head: a loop.
  std::string part;
  ASSERT_TRUE(h.store()->GetPart(pr.id, 1, &part));
  uint64_t head = 0;
  std::memcpy(&head, root.bytes.data() + 24, 8);
  {
    std::string looped = part;
    std::memcpy(&looped[8], &head, 8);
    auto t = h.store()->Begin();
    ASSERT_EQ(t->WritePart(pr.id, 1, looped), shmkv::Store::Status::kOk);
    ASSERT_EQ(t->Commit(), shmkv::Store::Status::kOk);
  }
  EXPECT_EQ(h.Run({"LRANGE", "c", "0", "-1"}), kDamaged);
  EXPECT_EQ(h.Run({"LINDEX", "c", "300"}), kDamaged);
  EXPECT_EQ(h.Run({"LREM", "c", "0", "nothing"}), kDamaged);
  {
    auto t = h.store()->Begin();
    ASSERT_EQ(t->WritePart(pr.id, 1, "garbage"), shmkv::Store::Status::kOk);
    ASSERT_EQ(t->Commit(), shmkv::Store::Status::kOk);
  }
  EXPECT_EQ(h.Run({"LRANGE", "c", "0", "-1"}), kDamaged);
  EXPECT_EQ(h.Run({"LLEN", "c"}), ":1000\r\n");
  EXPECT_EQ(h.Run({"DEL", "c"}), ":1\r\n");
}

// LINDEX, LRANGE and LSET skip the chunks before their first element by
// the chunks' heads alone (links and count): a head whose count cannot be
// a chunk's, or that disagrees with the elements of the chunk where the
// walk lands, is damage, answered as such.
TEST(ListFamily, SkippedChunksWithDamagedHeadsAreAnError) {
  CommandHarness h("listheads", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv::Value root;
  shmkv::PartsRoot pr;
  ASSERT_NO_FATAL_FAILURE(PushThousand(&h, &root, &pr));
  // The chunks from the head: their indexes and element counts.
  std::vector<std::pair<uint64_t, size_t>> order;
  uint64_t at = 0;
  std::memcpy(&at, root.bytes.data() + 24, 8);
  while (at != shmkv::cmd::ListValue::kNone && order.size() < pr.parts) {
    std::string part;
    ASSERT_TRUE(h.store()->GetPart(pr.id, at, &part));
    std::vector<std::string_view> items;
    ASSERT_TRUE(shmkv::Unpack(std::string_view(part).substr(16), &items));
    order.push_back({at, items.size()});
    std::memcpy(&at, part.data() + 8, 8);
  }
  ASSERT_GE(order.size(), 3u);
  // The second chunk from the head is skipped by an index in the third.
  const uint64_t second = order[1].first;
  const size_t in_third = order[0].second + order[1].second + 1;
  const std::string want = "e" + std::to_string(in_third);
  ASSERT_EQ(h.Run({"LINDEX", "c", std::to_string(in_third)}),
            "$" + std::to_string(want.size()) + "\r\n" + want + "\r\n");
  std::string good;
  ASSERT_TRUE(h.store()->GetPart(pr.id, second, &good));
  auto with_count = [&](const std::string& varint) {
    std::string bad = good.substr(0, 16) + varint;
    // The elements after the count, as they were (a count of 128 or more
    // is two varint bytes).
    bad += good.substr(16 + (order[1].second >= 128 ? 2 : 1));
    auto t = h.store()->Begin();
    ASSERT_EQ(t->WritePart(pr.id, second, bad), shmkv::Store::Status::kOk);
    ASSERT_EQ(t->Commit(), shmkv::Store::Status::kOk);
  };
  for (const std::string& count :
       {std::string(1, '\0'),          // no elements: never a chunk's
        std::string("\xac\x02"),       // 300: more than a chunk holds
        std::string("\xff\xff\xff\xff\xff")}) {  // no varint at all
    with_count(count);
    EXPECT_EQ(h.Run({"LINDEX", "c", std::to_string(in_third)}), kDamaged);
    EXPECT_EQ(h.Run({"LRANGE", "c", std::to_string(in_third), "-1"}), kDamaged);
    EXPECT_EQ(h.Run({"LSET", "c", std::to_string(in_third), "x"}), kDamaged);
  }
  // Where the walk lands: a head that disagrees with its elements.
  with_count(std::string(1, '\x01'));
  const size_t in_second = order[0].second;
  EXPECT_EQ(h.Run({"LINDEX", "c", std::to_string(in_second)}), kDamaged);
  EXPECT_EQ(h.Run({"LLEN", "c"}), ":1000\r\n");
  EXPECT_EQ(h.Run({"DEL", "c"}), ":1\r\n");
}

}  // namespace
