// The transaction family (server/commands/transaction_family.cc) in
// process, against redis-server: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/kill_worker.h"
#include "tests/support/pinned_ids.h"
#include "tests/support/resp_reply.h"

namespace {

using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;

// The family's statistics ids, as first given: pin a new command's here.
TEST(TransactionFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("transaction", {
      {"multi", 52}, {"exec", 53}, {"discard", 54}, {"watch", 55},
      {"unwatch", 56},
  });
}

// MULTI / EXEC / DISCARD / WATCH / UNWATCH on one connection, with every
// error Redis gives, compared byte for byte.
TEST(TransactionFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("txndiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"EXEC"}, {"DISCARD"}, {"MULTI"}, {"MULTI"}, {"SET", "a", "1"},
      {"INCR", "a"}, {"GET", "a"}, {"MGET", "a", "b"}, {"EXEC"}, {"GET", "a"},
      // a runtime error inside EXEC does not stop the others
      {"MULTI"}, {"SET", "s", "x"}, {"INCR", "s"}, {"SET", "t", "y"},
      {"EXEC"}, {"MGET", "s", "t"},
      // a refused command dooms the transaction
      {"MULTI"}, {"SET", "u", "1"}, {"NOSUCH"}, {"EXEC"}, {"EXISTS", "u"},
      {"MULTI"}, {"SET", "u"}, {"SET", "u", "1"}, {"EXEC"}, {"EXISTS", "u"},
      {"MULTI"}, {"SET", "u", "1"}, {"DISCARD"}, {"EXISTS", "u"},
      // Inside EXEC DBSIZE, KEYS, SCAN and RANDOMKEY see the
      // transaction's own writes (they read the committed keys before)
      {"FLUSHALL"}, {"SET", "old", "1"}, {"MULTI"}, {"SET", "x", "1"},
      {"DBSIZE"}, {"KEYS", "x"}, {"DEL", "old"}, {"DBSIZE"}, {"KEYS", "old"},
      {"SCAN", "0", "COUNT", "1000000"}, {"RANDOMKEY"}, {"FLUSHALL"},
      {"DBSIZE"}, {"RANDOMKEY"}, {"KEYS", "*"}, {"SET", "q", "1"},
      {"DBSIZE"}, {"KEYS", "*"}, {"EXEC"}, {"DBSIZE"},
      // a key already expired when watched: EXEC runs after nothing, a
      // read, DEL or FLUSHALL (its deletion is no change), not after a
      // write that brings it back, even one already past itself
      {"SET", "ex", "v", "PXAT", "1"}, {"WATCH", "ex"}, {"MULTI"},
      {"PING"}, {"EXEC"},
      {"SET", "ex", "v", "PXAT", "1"}, {"WATCH", "ex"}, {"GET", "ex"},
      {"MULTI"}, {"PING"}, {"EXEC"},
      {"SET", "ex", "v", "PXAT", "1"}, {"WATCH", "ex"}, {"DEL", "ex"},
      {"MULTI"}, {"PING"}, {"EXEC"},
      {"SET", "ex", "v", "PXAT", "1"}, {"WATCH", "ex"}, {"FLUSHALL"},
      {"MULTI"}, {"PING"}, {"EXEC"},
      {"SET", "ex", "v", "PXAT", "1"}, {"WATCH", "ex"}, {"SET", "ex", "2"},
      {"DEL", "ex"}, {"MULTI"}, {"PING"}, {"EXEC"},
      {"SET", "ex", "v", "PXAT", "1"}, {"WATCH", "ex"}, {"SET", "ex", "3"},
      {"MULTI"}, {"PING"}, {"EXEC"},
      {"SET", "ex", "v", "PXAT", "1"}, {"WATCH", "ex"},
      {"SET", "ex", "4", "PXAT", "1"}, {"MULTI"}, {"PING"}, {"EXEC"},
      // FLUSHALL fails a WATCH of a key it deleted, not of a missing one
      {"FLUSHALL"}, {"WATCH", "nokey"}, {"FLUSHALL"}, {"MULTI"},
      {"SET", "x", "1"}, {"EXEC"}, {"WATCH", "x"}, {"FLUSHALL"}, {"MULTI"},
      {"SET", "y", "1"}, {"EXEC"}, {"EXISTS", "x", "y"},
      // a key written inside EXEC with a time already past reads as gone
      {"MULTI"}, {"SET", "gone", "", "PXAT", "4102444801"},
      {"GETEX", "gone", "EXAT", "4102444801"}, {"GET", "gone"},
      {"DEL", "gone"}, {"KEYS", "gone"}, {"EXISTS", "gone"}, {"EXEC"},
      // ... and so does one that was there before: still counted by
      // DBSIZE (as Redis counts a key not reaped yet), listed by nothing
      {"FLUSHALL"}, {"SET", "was", "1"}, {"SET", "other", "2"}, {"MULTI"},
      {"SET", "was", "x", "PXAT", "4102444800"}, {"KEYS", "*"}, {"DBSIZE"},
      {"SCAN", "0", "COUNT", "1000"}, {"EXISTS", "was"}, {"RANDOMKEY"},
      {"RANDOMKEY"}, {"EXEC"}, {"EXISTS", "was"}, {"KEYS", "*"},
      // EXEC with arguments: EXECABORT, and the transaction is gone
      {"EXEC", "x"}, {"MULTI"}, {"SET", "u", "1"}, {"EXEC", "y"},
      {"EXISTS", "u"}, {"EXEC"},
      {"MULTI"}, {"EXEC"},
      {"MULTI"}, {"WATCH", "a"}, {"SET", "w", "1"}, {"EXEC"},
      {"WATCH"}, {"UNWATCH"}, {"WATCH", "a", "b"}, {"GET", "a"},
      {"MULTI"}, {"SET", "a", "watched"}, {"EXEC"}, {"GET", "a"},
      // the watched key changes before EXEC: nothing runs
      {"WATCH", "a"}, {"SET", "a", "other"}, {"MULTI"}, {"SET", "a", "lost"},
      {"EXEC"}, {"GET", "a"},
      {"WATCH", "a"}, {"UNWATCH"}, {"SET", "a", "again"}, {"MULTI"},
      {"SET", "a", "kept"}, {"EXEC"}, {"GET", "a"},
      {"WATCH", "none"}, {"SET", "none", "1"}, {"MULTI"}, {"DEL", "none"},
      {"EXEC"}, {"EXISTS", "none"},
      {"WATCH", "a"}, {"FLUSHALL"}, {"MULTI"}, {"SET", "z", "1"}, {"EXEC"},
      {"MULTI"}, {"FLUSHALL"}, {"SET", "y", "1"}, {"RENAME", "y", "x"},
      {"EXEC"}, {"KEYS", "*"},
      // SMOVE of a member the destination holds does not touch it; one it
      // adds does (and SMOVE always touches its source)
      {"SADD", "src", "a", "b"}, {"SADD", "dst", "a"}, {"WATCH", "dst"},
      {"SMOVE", "src", "dst", "a"}, {"MULTI"}, {"SCARD", "dst"}, {"EXEC"},
      {"WATCH", "dst"}, {"SMOVE", "src", "dst", "b"}, {"MULTI"},
      {"SCARD", "dst"}, {"EXEC"}, {"SADD", "src", "c"}, {"WATCH", "src"},
      {"SMOVE", "src", "dst", "c"}, {"MULTI"}, {"SCARD", "src"}, {"EXEC"},
  });
}

// A write that changes nothing does not touch its key, as in Redis: a
// WATCH of it holds. Each case: the key's value, then the write.
TEST(TransactionFamilyVsRedis, WritesThatChangeNothingKeepAWatch) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("txnnoop");
  ASSERT_TRUE(h.ok()) << h.error();
  using Cmd = std::vector<std::string>;
  const std::vector<std::pair<Cmd, Cmd>> cases = {
      {{"SADD", "k", "a"}, {"SADD", "k", "a"}},
      {{"SADD", "k", "a"}, {"SREM", "k", "zz"}},
      {{"SADD", "k", "a"}, {"SMOVE", "k", "k", "a"}},
      {{"SADD", "k", "a"}, {"SPOP", "k", "0"}},
      {{"HSET", "k", "f", "v"}, {"HDEL", "k", "zz"}},
      {{"HSET", "k", "f", "v"}, {"HSETNX", "k", "f", "w"}},
      {{"RPUSH", "k", "a"}, {"LREM", "k", "0", "zz"}},
      {{"RPUSH", "k", "a"}, {"LINSERT", "k", "BEFORE", "zz", "x"}},
      {{"RPUSH", "k", "a"}, {"RPOP", "k", "0"}},
      {{"RPUSH", "k", "a"}, {"LPOP", "k", "0"}},
      {{"ZADD", "k", "1", "a"}, {"ZADD", "k", "1", "a"}},
      {{"ZADD", "k", "1", "a"}, {"ZADD", "k", "XX", "2", "zz"}},
      {{"ZADD", "k", "1", "a"}, {"ZADD", "k", "GT", "0", "a"}},
      {{"ZADD", "k", "1", "a"}, {"ZREM", "k", "zz"}},
      {{"ZADD", "k", "1", "a"}, {"ZREMRANGEBYSCORE", "k", "5", "6"}},
      {{"ZADD", "k", "1", "a"}, {"ZPOPMIN", "k", "0"}},
      {{"SET", "k", "v"}, {"SET", "k", "v", "NX"}},
      {{"SET", "k", "v"}, {"PERSIST", "k"}},
      {{"SET", "k", "v"}, {"EXPIRE", "k", "100", "XX"}},
      {{"SET", "k", "v"}, {"COPY", "zz", "k"}},
      {{"SET", "k", "v"}, {"SETBIT", "k", "0", "1"}},  // changes: touched
      {{"SETBIT", "k", "0", "1"}, {"SETBIT", "k", "0", "1"}},
      {{"SETBIT", "k", "0", "1"}, {"SETBIT", "k", "3", "0"}},
      // a bit set to what it was in a string not yet raw: Redis makes it
      // raw and touches nothing
      {{"SET", "k", "x"}, {"SETBIT", "k", "0", "0"}},
      {{"SET", "k", "12"}, {"SETBIT", "k", "2", "1"}},
      // the same in a commit of two keys; and after a real write of the
      // key in that commit, which touches it
      {{"SET", "k", "x"},
       {"EVAL", "redis.call('setbit', KEYS[1], 0, 0) "
                "return redis.call('set', KEYS[2], 'y')", "2", "k", "o"}},
      {{"SET", "k", "x"},
       {"EVAL", "redis.call('set', KEYS[1], 'y') "
                "return redis.call('setbit', KEYS[1], 0, 0)", "1", "k"}},
      {{"SET", "k", "x"},
       {"EVAL", "redis.call('setbit', KEYS[1], 0, 0) "
                "return redis.call('append', KEYS[1], 'y')", "1", "k"}},
  };
  std::vector<Cmd> cmds;
  for (const auto& c : cases) {
    cmds.push_back({"FLUSHALL"});
    cmds.push_back(c.first);
    cmds.push_back({"WATCH", "k"});
    cmds.push_back(c.second);
    cmds.push_back({"MULTI"});
    cmds.push_back({"PING"});
    cmds.push_back({"EXEC"});
    cmds.push_back({"OBJECT", "ENCODING", "k"});
  }
  ExpectSameAsRedis(&h, redis.port(), cmds);
}

// COPY inside MULTI (or a script) copies the collection as it is then:
// what later commands of the same transaction do to the source or to
// the copy reaches neither the other (every type, in its large form,
// whose parts the copy must not share).
TEST(TransactionFamilyVsRedis, CopyInsideMultiCopiesThatMoment) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("txncopy");
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv_test::Commands setup = {{"FLUSHALL"}, {"SADD", "s", "a", "b"}};
  std::vector<std::string> hset = {"HSET", "h"}, rpush = {"RPUSH", "l"},
                           zadd = {"ZADD", "z"};
  for (int i = 0; i < 600; ++i) {
    hset.insert(hset.end(), {"f" + std::to_string(i), std::to_string(i)});
    rpush.push_back("v" + std::to_string(i));
    zadd.insert(zadd.end(), {std::to_string(i), "m" + std::to_string(i)});
  }
  setup.insert(setup.end(), {hset, rpush, zadd});
  ExpectSameAsRedis(&h, redis.port(), setup);
  ExpectSameAsRedis(&h, redis.port(), {
      {"OBJECT", "ENCODING", "s"}, {"OBJECT", "ENCODING", "h"},
      {"OBJECT", "ENCODING", "z"},
      {"MULTI"}, {"COPY", "s", "s2"}, {"COPY", "h", "h2"},
      {"COPY", "l", "l2"}, {"COPY", "z", "z2"},
      {"SADD", "s", "x"}, {"SADD", "s2", "y"}, {"HSET", "h", "new", "1"},
      {"HDEL", "h2", "f0"}, {"RPUSH", "l", "extra"}, {"LPOP", "l2"},
      {"ZADD", "z", "1000", "new"}, {"ZREM", "z2", "m0"}, {"EXEC"},
      {"SCARD", "s"}, {"SCARD", "s2"}, {"SMISMEMBER", "s", "x", "y"},
      {"SMISMEMBER", "s2", "x", "y"}, {"HLEN", "h"}, {"HLEN", "h2"},
      {"HMGET", "h", "new", "f0"}, {"HMGET", "h2", "new", "f0"},
      {"LLEN", "l"}, {"LLEN", "l2"}, {"LRANGE", "l", "0", "1"},
      {"LRANGE", "l2", "0", "1"}, {"LINDEX", "l2", "-1"},
      {"ZCARD", "z"}, {"ZCARD", "z2"}, {"ZMSCORE", "z", "new", "m0"},
      {"ZMSCORE", "z2", "new", "m0"}, {"ZRANGE", "z2", "0", "1"},
      // the same from a script
      {"EVAL",
       "redis.call('copy', KEYS[1], KEYS[2]) "
       "redis.call('sadd', KEYS[1], 'late') "
       "return {redis.call('sismember', KEYS[2], 'late'), "
       "redis.call('scard', KEYS[2])}",
       "2", "s", "s3"},
      {"SISMEMBER", "s3", "late"}, {"SCARD", "s3"}});
}

// The count a reply leads with: an integer's value, an aggregate's
// length ("*n", "~n" or "%n", a map's pairs counted as two elements).
int64_t Leading(const std::string& reply) {
  int64_t n = std::stoll(reply.substr(1, reply.find("\r\n") - 1));
  return reply[0] == '%' ? 2 * n : n;
}

// Workers SIGKILLed anywhere while they COPY large collections of every
// type, alone, inside MULTI with writes to the source after the copy,
// and inside scripts: every key's count is the members it holds (a copy
// that shared parts with its source would hold the source's later
// members under its own count), a write after the copy never reaches
// it, and with the keys deleted and swept no part is left.
TEST(TransactionFamily, KilledWorkersCopyWholeCollections) {
  CommandHarness h("txncopykill", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  // Sources in parts (members that are not integers, more than the packed
  // forms hold), each with two copies it is copied to.
  const char* kTypes[] = {"s", "h", "l", "z"};
  std::vector<std::string> sadd = {"SADD", "s"}, hset = {"HSET", "h"},
                           rpush = {"RPUSH", "l"}, zadd = {"ZADD", "z"};
  for (int i = 0; i < 1500; ++i) {
    std::string m = "m" + std::to_string(i);
    sadd.push_back(m);
    hset.insert(hset.end(), {m, "v"});
    rpush.push_back(m);
    zadd.insert(zadd.end(), {std::to_string(i), m});
  }
  for (const auto& cmd : {sadd, hset, rpush, zadd}) {
    ASSERT_EQ(h.Run(cmd), ":1500\r\n");
  }
  // The write each type gets on its source, and what shows whether a
  // member `mk` reached a key (zero or null when it did not).
  auto add = [](char t, const std::string& k, const std::string& m) {
    switch (t) {
      case 's': return std::vector<std::string>{"SADD", k, m};
      case 'h': return std::vector<std::string>{"HSET", k, m, "v"};
      case 'l': return std::vector<std::string>{"RPUSH", k, m};
      default: return std::vector<std::string>{"ZADD", k, "7", m};
    }
  };
  auto remove = [](char t, const std::string& k, const std::string& m) {
    switch (t) {
      case 's': return std::vector<std::string>{"SREM", k, m};
      case 'h': return std::vector<std::string>{"HDEL", k, m};
      case 'l': return std::vector<std::string>{"LREM", k, "1", m};
      default: return std::vector<std::string>{"ZREM", k, m};
    }
  };
  auto has = [](char t, const std::string& k, const std::string& m) {
    switch (t) {
      case 's': return std::vector<std::string>{"SISMEMBER", k, m};
      case 'h': return std::vector<std::string>{"HEXISTS", k, m};
      case 'l': return std::vector<std::string>{"LPOS", k, m};
      default: return std::vector<std::string>{"ZSCORE", k, m};
    }
  };
  // Per type: copy, add ARGV[1] to the source, ask the copy for it, take
  // it out of the source; the copy's answer is none.
  const char* kScripts[] = {
      "redis.call('copy', KEYS[1], KEYS[2], 'replace') "
      "redis.call('sadd', KEYS[1], ARGV[1]) "
      "local n = redis.call('sismember', KEYS[2], ARGV[1]) "
      "redis.call('srem', KEYS[1], ARGV[1]) return n",
      "redis.call('copy', KEYS[1], KEYS[2], 'replace') "
      "redis.call('hset', KEYS[1], ARGV[1], 'v') "
      "local n = redis.call('hexists', KEYS[2], ARGV[1]) "
      "redis.call('hdel', KEYS[1], ARGV[1]) return n",
      "redis.call('copy', KEYS[1], KEYS[2], 'replace') "
      "redis.call('rpush', KEYS[1], ARGV[1]) "
      "local n = redis.call('lpos', KEYS[2], ARGV[1]) "
      "redis.call('rpop', KEYS[1]) return n or 0",
      "redis.call('copy', KEYS[1], KEYS[2], 'replace') "
      "redis.call('zadd', KEYS[1], 7, ARGV[1]) "
      "local n = redis.call('zscore', KEYS[2], ARGV[1]) "
      "redis.call('zrem', KEYS[1], ARGV[1]) return n or 0"};
  std::mt19937_64 rng(17);
  for (int round = 0; round < 16; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 104729 + 3, 40 + rng() % 200,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          const char t = kTypes[r() % 4][0];
          const std::string src(1, t);
          const std::string dst = src + std::to_string(2 + r() % 2);
          const std::string m = "m" + std::to_string(r() % 3000);
          switch (r() % 6) {
            case 0:
              w.Run({"COPY", src, dst, "REPLACE"});
              break;
            case 1: {
              // The copy, then a member added to the source and taken
              // out again: the copy never holds it.
              const std::string mk = "mark" + std::to_string(r());
              w.Run({"MULTI"});
              w.Run({"COPY", src, dst, "REPLACE"});
              w.Run(add(t, src, mk));
              w.Run(has(t, dst, mk));
              w.Run(remove(t, src, mk));
              std::string reply = w.Run({"EXEC"});
              std::vector<std::string> lines;
              for (size_t at = 0; at < reply.size();) {
                size_t e = reply.find("\r\n", at);
                lines.push_back(reply.substr(at, e - at));
                at = e + 2;
              }
              // *4, :1 (copied), the add's reply, then the copy's
              // answer for the mark: none.
              if (lines.size() < 4 || lines[1] != ":1") _exit(92);
              if (lines[3] != ":0" && lines[3] != "$-1" && lines[3] != "_") {
                _exit(93);
              }
              break;
            }
            case 2: {
              // The same in a script.
              const std::string mk = "mark" + std::to_string(r());
              std::string reply =
                  w.Run({"EVAL", kScripts[std::string("shlz").find(t)], "2",
                         src, dst, mk});
              if (reply != ":0\r\n") _exit(94);
              break;
            }
            case 3:
              w.Run(add(t, src, m));
              break;
            case 4:
              w.Run(remove(t, src, m));
              break;
            default:
              if (r() % 4 == 0) w.Run({"DEL", dst});
              w.Run(add(t, dst, m));
          }
        }));
    for (const char* type : kTypes) {
      const char t = type[0];
      for (const std::string& k :
           {std::string(1, t), std::string(1, t) + "2",
            std::string(1, t) + "3"}) {
        std::string count, members;
        switch (t) {
          case 's':
            count = h.Run({"SCARD", k});
            members = h.Run({"SMEMBERS", k});
            break;
          case 'h':
            count = h.Run({"HLEN", k});
            members = h.Run({"HKEYS", k});
            break;
          case 'l':
            count = h.Run({"LLEN", k});
            members = h.Run({"LRANGE", k, "0", "-1"});
            break;
          default:
            count = h.Run({"ZCARD", k});
            members = h.Run({"ZRANGE", k, "0", "-1"});
        }
        ASSERT_EQ(Leading(count), Leading(members)) << k << " round " << round;
        // Every member read is the key's own.
        if (t == 's') {
          std::vector<std::string> ask = {"SMISMEMBER", k};
          for (const std::string& e : shmkv_test::BulkElements(members)) {
            ask.push_back(e);
          }
          if (ask.size() > 2) {
            std::string reply = h.Run(ask);
            ASSERT_EQ(reply.find(":0"), std::string::npos) << k;
          }
        }
      }
    }
  }
  // Every part belongs to a key: with the keys deleted and swept, none
  // is left.
  for (const char* type : kTypes) {
    h.Run({"DEL", type, std::string(type) + "2", std::string(type) + "3"});
  }
  for (int i = 0; i < 100 && h.store()->Parts() > 0; ++i) {
    h.store()->Sweep(1 << 20);
  }
  EXPECT_EQ(h.store()->Parts(), 0u);
  EXPECT_EQ(h.store()->Keys(), 0u);
}

// Workers SIGKILLed anywhere while they commit quiet writes (a SETBIT of a
// bit to what it was, Txn::Quiet) alone and inside a MULTI with an INCR:
// the string keeps its bytes, the encoding turns raw, and every
// acknowledged INCR is there (the one in flight at the kill is there or
// not, never half): a quiet write commits as any write does.
TEST(TransactionFamily, KilledWorkersQuietWritesLoseNothing) {
  CommandHarness h("txnquietkill");
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv_test::AckedCount incrs;
  ASSERT_TRUE(incrs.ok());
  std::mt19937_64 rng(23);
  for (int round = 0; round < 12; ++round) {
    ASSERT_EQ(h.Run({"SET", "s", "x"}), "+OK\r\n");  // embstr again
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 7907 + 5, 20 + rng() % 120,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          if (r() % 3 == 0) {
            if (w.Run({"SETBIT", "s", "0", "0"}) != ":0\r\n") _exit(95);
            return;
          }
          w.Run({"MULTI"});
          w.Run({"SETBIT", "s", "0", "0"});
          w.Run({"INCR", "ctr"});
          incrs.Begin();
          std::string reply = w.Run({"EXEC"});
          if (reply.rfind("*2\r\n:0\r\n:", 0) != 0) _exit(96);
          incrs.Acked();
        }));
    EXPECT_EQ(h.Run({"GET", "s"}), "$1\r\nx\r\n");
    EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "s"}), "$3\r\nraw\r\n");
    std::string reply = h.Run({"GET", "ctr"});
    int64_t got = reply == "$-1\r\n"
                      ? 0
                      : std::stoll(reply.substr(reply.find("\r\n") + 2));
    ASSERT_TRUE(incrs.Settle(got)) << "round " << round;
  }
  EXPECT_GT(incrs.acked(), 0);
}

}  // namespace
