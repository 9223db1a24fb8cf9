// Redis's 16 databases (server/store/dbs.h, docs/server.md "Databases"):
// SELECT, MOVE, COPY ... DB, SWAPDB, FLUSHDB, DBSIZE and INFO keyspace
// against redis-server byte for byte, hand-written and in random
// sequences; keys and collections kept apart per database; counts that
// survive a writer killed under the lock.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/store/dbs.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "tests/support/command_harness.h"
#include "tests/support/diff_harness.h"
#include "tests/support/kill_worker.h"

namespace {

using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

// INFO keyspace with each avg_ttl as 0 and no length line: both servers
// estimate avg_ttl, Redis from its expiry cycle's samples (so it changes
// with time), shmkv from a sample when asked (docs/server.md).
std::string Keyspace(const std::string& reply) {
  std::string out = reply.substr(reply.find("\r\n") + 2);
  for (size_t at = 0; (at = out.find("avg_ttl=", at)) != std::string::npos;) {
    at += 8;
    size_t end = out.find("\r\n", at);
    out.replace(at, end - at, "0");
  }
  return out;
}

// Replies as Redis's, INFO keyspace as Keyspace() reads it.
void Same(CommandHarness* h, Client* c, const std::vector<Cmd>& cmds) {
  for (const Cmd& cmd : cmds) {
    std::string mine = h->Run(cmd), theirs = c->Call(cmd);
    if (cmd[0] == "INFO") {
      EXPECT_EQ(Keyspace(mine), Keyspace(theirs));
    } else {
      EXPECT_EQ(mine, theirs) << "command: " << CommandLine(cmd);
    }
  }
}

TEST(DatabasesVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("dbsdiff", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  c.Call({"FLUSHALL"});
  Same(&h, &c, {
      {"CONFIG", "GET", "databases"},
      {"SELECT", "x"}, {"SELECT", "16"}, {"SELECT", "-1"},
      {"SELECT", "2147483648"}, {"SELECT", "1.5"}, {"SELECT", "007"},
      {"SET", "k", "zero"}, {"SELECT", "1"}, {"GET", "k"}, {"DBSIZE"},
      {"SET", "k", "one"}, {"HSET", "h", "f", "v"}, {"DBSIZE"},
      {"SELECT", "0"}, {"GET", "k"}, {"DBSIZE"}, {"INFO", "keyspace"},
      // MOVE: errors, a key in the way, a key moved with its TTL.
      {"MOVE", "k", "x"}, {"MOVE", "k", "16"}, {"MOVE", "k", "-1"},
      {"MOVE", "k", "2147483648"}, {"MOVE", "k", "0"}, {"MOVE", "nope", "0"},
      {"MOVE", "nope", "3"}, {"MOVE", "k", "1"},
      {"SET", "t", "v", "EX", "100"}, {"MOVE", "t", "2"}, {"EXISTS", "t"},
      {"SELECT", "2"}, {"TTL", "t"}, {"GET", "t"}, {"TYPE", "t"},
      // COPY ... DB.
      {"COPY", "t", "t", "DB", "2"}, {"COPY", "t", "t", "DB", "x"},
      {"COPY", "t", "t", "DB", "99"}, {"COPY", "t", "t", "DB", "4"},
      {"COPY", "t", "t", "DB", "4"}, {"COPY", "t", "t", "DB", "4", "REPLACE"},
      {"COPY", "t", "u", "DB", "4"}, {"SELECT", "4"}, {"EXISTS", "t", "u"},
      {"SELECT", "1"}, {"COPY", "h", "h", "DB", "5"}, {"SELECT", "5"},
      {"HGETALL", "h"}, {"INFO", "keyspace"},
      // SWAPDB: errors, then two databases trade places.
      {"SWAPDB", "x", "1"}, {"SWAPDB", "1", "x"}, {"SWAPDB", "0", "16"},
      {"SWAPDB", "-1", "0"}, {"SWAPDB", "2147483648", "0"},
      {"SWAPDB", "0", "0"}, {"SWAPDB", "0", "5"}, {"HGETALL", "h"},
      {"SELECT", "0"}, {"HGETALL", "h"}, {"DBSIZE"}, {"INFO", "keyspace"},
      {"SWAPDB", "5", "0"}, {"DBSIZE"}, {"INFO", "keyspace"},
      // FLUSHDB empties one database only.
      {"SELECT", "4"}, {"FLUSHDB", "x"}, {"FLUSHDB", "ASYNC"}, {"DBSIZE"},
      {"SELECT", "2"}, {"DBSIZE"}, {"FLUSHDB"}, {"SELECT", "1"}, {"DBSIZE"},
      {"INFO", "keyspace"},
      // Inside MULTI: SELECT, MOVE and SWAPDB apply in order.
      {"MULTI"}, {"SELECT", "7"}, {"SET", "m", "7"}, {"MOVE", "m", "8"},
      {"SWAPDB", "8", "9"}, {"SELECT", "9"}, {"GET", "m"}, {"DBSIZE"},
      {"EXEC"}, {"GET", "m"}, {"SELECT", "8"}, {"GET", "m"},
      {"INFO", "keyspace"}, {"FLUSHALL"}, {"INFO", "keyspace"},
  });
}

// Random commands over four databases, several clients' worth of
// SELECTs, MOVEs, COPYs, SWAPDBs and FLUSHDBs among writes of every
// type: every reply byte for byte.
TEST(DatabasesVsRedis, RandomSequencesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : shmkv_test::TestSeeds(1, 4)) {
    CommandHarness h("dbsrand", 50000, 64ULL << 20);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    c.Call({"SELECT", "0"});
    std::mt19937_64 rng(seed);
    auto db = [&] { return std::to_string(rng() % 4); };
    auto key = [&] { return "k" + std::to_string(rng() % 6); };
    for (int i = 0; i < 2500; ++i) {
      Cmd cmd;
      switch (rng() % 16) {
        case 0: case 1: cmd = {"SELECT", db()}; break;
        case 2: case 3:
          cmd = {"SET", key(), std::to_string(i)};
          if (rng() % 3 == 0) cmd.insert(cmd.end(), {"EX", "1000"});
          break;
        case 4: cmd = {"GET", key()}; break;
        case 5: cmd = {"MOVE", key(), db()}; break;
        case 6:
          cmd = {"COPY", key(), key(), "DB", db()};
          if (rng() % 2) cmd.push_back("REPLACE");
          break;
        case 7: cmd = {"SWAPDB", db(), db()}; break;
        case 8: cmd = {rng() % 8 == 0 ? "FLUSHDB" : "DBSIZE"}; break;
        case 9: cmd = {"HSET", key(), "f" + std::to_string(rng() % 3), "v"};
          break;
        case 10: cmd = {"RPUSH", key(), std::to_string(i)}; break;
        case 11: cmd = {"TYPE", key()}; break;
        case 12: cmd = {"DEL", key()}; break;
        case 13: cmd = {"INFO", "keyspace"}; break;
        case 14: cmd = {"EXISTS", key(), key()}; break;
        default: cmd = {"RENAME", key(), key()};
      }
      std::string mine = h.Run(cmd), theirs = c.Call(cmd);
      if (cmd[0] == "INFO") {
        mine = Keyspace(mine);
        theirs = Keyspace(theirs);
      }
      ASSERT_EQ(mine, theirs)
          << "seed " << seed << " step " << i << ": " << CommandLine(cmd);
    }
  }
}

// Collections in parts live in any database and move with their key:
// MOVE keeps the parts, FLUSHDB removes them, and every part is gone once
// the keys are.
TEST(Databases, CollectionsMoveAndLeaveWithTheirKeys) {
  CommandHarness h("dbsparts", 50000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"SELECT", "3"}), "+OK\r\n");
  for (int i = 0; i < 700; ++i) {
    std::string n = std::to_string(i);
    h.Run({"HSET", "h", "f" + n, n});
    h.Run({"ZADD", "z", n, "m" + n});
    h.Run({"RPUSH", "l", n});
  }
  uint64_t parts = h.store()->Parts();
  EXPECT_GT(parts, 100u);
  EXPECT_EQ(h.Run({"MOVE", "h", "4"}), ":1\r\n");
  EXPECT_EQ(h.store()->Parts(), parts) << "MOVE keeps the parts";
  EXPECT_EQ(h.Run({"HLEN", "h"}), ":0\r\n");
  EXPECT_EQ(h.Run({"COPY", "z", "z", "DB", "4"}), ":1\r\n");
  EXPECT_EQ(h.Run({"SELECT", "4"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"HLEN", "h"}), ":700\r\n");
  EXPECT_EQ(h.Run({"HGET", "h", "f699"}), "$3\r\n699\r\n");
  EXPECT_EQ(h.Run({"ZCARD", "z"}), ":700\r\n");
  EXPECT_EQ(h.Run({"DBSIZE"}), ":2\r\n");
  EXPECT_EQ(h.Run({"FLUSHDB"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(h.Run({"SELECT", "3"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"DBSIZE"}), ":2\r\n");
  EXPECT_EQ(h.Run({"ZRANK", "z", "m699"}), ":699\r\n");
  EXPECT_EQ(h.Run({"LINDEX", "l", "-1"}), "$3\r\n699\r\n");
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"FLUSHDB"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}), "*1\r\n+OK\r\n");
  for (int i = 0; i < 100; ++i) h.store()->Sweep(1 << 20);
  EXPECT_EQ(h.store()->Parts(), 0u);
  EXPECT_EQ(h.store()->Keys(), 0u);
}

// Two clients in two databases: the same name is two keys; a WATCH is
// of the database it was made in; a SWAPDB fails every WATCH; expiry
// and the counts follow each database.
TEST(Databases, ClientsAndWatchesKeepTheirDatabase) {
  CommandHarness h("dbsclients", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  CommandHarness::Client other = h.NewClient();
  EXPECT_EQ(h.RunAs(&other, {"SELECT", "6"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "k", "mine"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"SET", "k", "theirs"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"GET", "k"}), "$4\r\nmine\r\n");
  EXPECT_EQ(h.RunAs(&other, {"GET", "k"}), "$6\r\ntheirs\r\n");
  // A WATCH made in database 6 sees a write there, not one in 0.
  EXPECT_EQ(h.RunAs(&other, {"WATCH", "k"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "k", "again"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"GET", "k"}), "+QUEUED\r\n");
  EXPECT_EQ(h.RunAs(&other, {"EXEC"}), "*1\r\n$5\r\nagain\r\n");
  EXPECT_EQ(h.RunAs(&other, {"SELECT", "6"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"WATCH", "k"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SELECT", "6"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "k", "changed"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"GET", "k"}), "+QUEUED\r\n");
  EXPECT_EQ(h.RunAs(&other, {"EXEC"}), "*-1\r\n");
  EXPECT_EQ(h.RunAs(&other, {"WATCH", "k"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SWAPDB", "1", "2"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"EXEC"}), "*-1\r\n");
  // Expiry in a database other than 0, lazy and active.
  EXPECT_EQ(h.Run({"SET", "gone", "v", "PX", "1"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "gone2", "v", "PX", "1"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"DBSIZE"}), ":3\r\n");
  usleep(5000);
  EXPECT_EQ(h.Run({"GET", "gone"}), "$-1\r\n");
  h.store()->Sweep(1 << 20);
  EXPECT_EQ(h.Run({"DBSIZE"}), ":1\r\n");
  EXPECT_EQ(h.Run({"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"DBSIZE"}), ":1\r\n");
  EXPECT_EQ(h.Run({"KEYS", "*"}), "*1\r\n$1\r\nk\r\n");
}

// A writer killed anywhere, under the lock or not, leaves every
// database's count right: the next writer recounts after a death.
TEST(Databases, CountsSurviveKilledWriters) {
  CommandHarness h("dbskill", 50000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  std::mt19937_64 rng(9);
  for (int round = 0; round < 10; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round + 1, 20 + rng() % 80,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          std::string k = "k" + std::to_string(r() % 500);
          std::string d = std::to_string(r() % 4);
          w.Run({"SELECT", d});
          switch (r() % 4) {
            case 0: w.Run({"SET", k, "v"}); break;
            case 1: w.Run({"DEL", k}); break;
            case 2: w.Run({"MOVE", k, std::to_string(r() % 4)}); break;
            default: w.Run({"MSET", k, "1", k + "b", "2"});
          }
        }));
    for (int d = 0; d < 4; ++d) {
      ASSERT_EQ(h.Run({"SELECT", std::to_string(d)}), "+OK\r\n");
      std::string keys = h.Run({"KEYS", "*"});
      std::string count = keys.substr(1, keys.find("\r\n") - 1);
      ASSERT_EQ(h.Run({"DBSIZE"}), ":" + count + "\r\n")
          << "round " << round << " db " << d;
    }
  }
}

// Database 0's count is the map's keys less the other databases' counts:
// keys no process counted (an older build's, written while it drains in a
// hot upgrade) count too. Simulated by a counter gone wrong in the
// databases' segment; DBSIZE and INFO read the truth, inside EXEC too
// (where the command already holds the write lock).
TEST(Databases, DatabaseZeroCountsKeysNobodyCounted) {
  CommandHarness h("dbszero", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(h.Run({"SET", "k" + std::to_string(i), "v"}), "+OK\r\n");
  }
  ASSERT_EQ(h.Run({"HSET", "h", "f", "v"}), ":1\r\n");
  Cmd big = {"RPUSH", "l"};  // a list in parts: its parts are no keys
  for (int i = 0; i < 1000; ++i) big.push_back("e" + std::to_string(i));
  ASSERT_EQ(h.Run(big), ":1000\r\n");
  ASSERT_EQ(h.Run({"SELECT", "3"}), "+OK\r\n");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(h.Run({"SET", "k" + std::to_string(i), "v"}), "+OK\r\n");
  }
  ASSERT_EQ(h.Run({"SELECT", "0"}), "+OK\r\n");
  ASSERT_EQ(h.Run({"DBSIZE"}), ":12\r\n");
  {
    shmc::ShmArray<shmkv::DbBlock, shmc::POSIX> arr;
    ASSERT_TRUE(arr.InitForWrite(shmkv::DbsKey(h.store()->config()), 1))
        << arr.last_error().message;
    const_cast<shmkv::DbBlock&>(arr[0]).keys[0].store(1000);
  }
  EXPECT_EQ(h.Run({"DBSIZE"}), ":12\r\n");
  std::string info = h.Run({"INFO", "keyspace"});
  EXPECT_NE(info.find("db0:keys=12,"), std::string::npos) << info;
  EXPECT_NE(info.find("db3:keys=5,"), std::string::npos) << info;
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "new", "v"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"DBSIZE"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"INFO", "keyspace"}), "+QUEUED\r\n");
  std::string exec = h.Run({"EXEC"});
  EXPECT_EQ(exec.rfind("*3\r\n+OK\r\n:13\r\n", 0), 0u) << exec;
  EXPECT_NE(exec.find("db0:keys=12,"), std::string::npos)
      << "INFO in EXEC sees the map before the commit: " << exec;
  EXPECT_EQ(h.Run({"DBSIZE"}), ":13\r\n");
}

}  // namespace
