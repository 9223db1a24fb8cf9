// Keyspace notifications (docs/server.md, "Keyspace notifications"),
// spoken to over sockets: a subscriber on one worker receives the events
// of commands run on the other, byte for byte as redis-server publishes
// them for the same commands (this test also runs in RESP3, as resp3.*),
// the setting is shared by every worker, expiry on access and the
// master's active expiry publish "expired", and a write that does not
// commit publishes nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/pubsub_transcript.h"
#include "tests/support/redis_oracle.h"
#include "tests/support/shmkv_server.h"

namespace {

using shmkv_test::Client;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::OnEachWorker;
using shmkv_test::Received;
using shmkv_test::RedisOracle;
using shmkv_test::Server;
using shmkv_test::Step;
using namespace std::chrono_literals;

// Every command family's events: connection 0 listens to every database
// by pattern, connections 1 (the other worker) and 2 (its own worker)
// write.
TEST(ShmkvNotifyVsRedis, EventsOfEveryFamilyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("notify_diff");
  ASSERT_TRUE(s.Start()) << s.log();
  std::vector<Step> steps = {
      // the setting, as CONFIG shows and refuses it
      {2, {"CONFIG", "GET", "notify-keyspace-events"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", "KEX"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", "Kx", "databases",
           "4"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", "Kx",
           "notify-keyspace-events", "E"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", "g$lshzxeKEtmdn"}},
      {2, {"CONFIG", "GET", "notify-keyspace-events"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", "Kl"}},
      {2, {"CONFIG", "GET", "notify-keyspace-events"}},
      {0, {"PSUBSCRIBE", "__key*__:*"}},
      // only lists, keyspace channel only
      {1, {"SET", "k", "v"}}, {1, {"RPUSH", "l0", "a"}}, {1, {"DEL", "l0"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", "KEA"}},
      {2, {"CONFIG", "GET", "notify-keyspace-events"}},
      // strings
      {1, {"SET", "k", "v"}}, {1, {"SET", "k", "v", "EX", "100"}},
      {1, {"SET", "k", "v", "KEEPTTL"}}, {1, {"SET", "k", "w", "NX"}},
      {1, {"SETNX", "k2", "v"}}, {1, {"SETNX", "k2", "x"}},
      {1, {"SETEX", "k3", "100", "v"}}, {1, {"PSETEX", "k4", "100000", "v"}},
      {1, {"GETSET", "k", "v2"}}, {1, {"MSET", "a", "1", "b", "2"}},
      {1, {"MSETNX", "c", "1", "d", "2"}}, {1, {"MSETNX", "c", "1", "e", "2"}},
      {1, {"INCR", "n"}}, {1, {"INCRBY", "n", "5"}}, {1, {"DECR", "n"}},
      {1, {"DECRBY", "n", "2"}}, {1, {"INCR", "k"}},
      {1, {"INCRBYFLOAT", "f", "1.5"}}, {1, {"APPEND", "k", "x"}},
      {1, {"SETRANGE", "k", "1", "yy"}}, {1, {"SETRANGE", "k", "1", ""}},
      {1, {"SETRANGE", "nokey", "1", ""}}, {1, {"SETBIT", "bits", "3", "1"}},
      {1, {"GETEX", "k", "EX", "100"}}, {1, {"GETEX", "k", "PERSIST"}},
      {1, {"GETEX", "k", "PERSIST"}}, {1, {"GETEX", "k"}},
      {1, {"GETEX", "k3", "PXAT", "1"}}, {1, {"GETDEL", "k2"}},
      {1, {"GETDEL", "k2"}}, {1, {"GET", "k"}},
      // HyperLogLog: creation and a change are "pfadd", PFMERGE too
      {1, {"PFADD", "hll"}}, {1, {"PFADD", "hll", "a"}},
      {1, {"PFADD", "hll", "a"}}, {1, {"PFCOUNT", "hll"}},
      {1, {"PFMERGE", "hll2", "hll"}}, {1, {"PFDEBUG", "TODENSE", "hll"}},
      // geospatial: GEOADD is ZADD's event; the stores their own, or del
      {1, {"GEOADD", "geo", "13.36", "38.11", "p", "15.08", "37.5", "c"}},
      {1, {"GEOADD", "geo", "NX", "13.36", "38.11", "p"}},
      {1, {"GEORADIUS", "geo", "15", "37", "200", "km", "STORE", "gs"}},
      {1, {"GEOSEARCHSTORE", "gs2", "geo", "FROMMEMBER", "p", "BYRADIUS",
           "300", "km", "STOREDIST"}},
      {1, {"GEOSEARCHSTORE", "gs2", "geo", "FROMMEMBER", "p", "BYRADIUS",
           "0", "km", "COUNT", "1"}},
      {1, {"GEORADIUS", "nogeo", "15", "37", "200", "km", "STORE", "gs"}},
      // keys
      {1, {"DEL", "a", "b", "nosuch"}}, {1, {"UNLINK", "c"}},
      {1, {"EXPIRE", "d", "100"}}, {1, {"EXPIRE", "d", "100", "NX"}},
      {1, {"PEXPIRE", "d", "100000", "XX"}}, {1, {"PERSIST", "d"}},
      {1, {"PERSIST", "d"}}, {1, {"EXPIREAT", "d", "1"}},
      {1, {"EXPIRE", "nosuch", "10"}}, {1, {"RENAME", "n", "n2"}},
      {1, {"RENAME", "n2", "n2"}}, {1, {"RENAMENX", "n2", "f"}},
      {1, {"RENAMENX", "n2", "n3"}}, {1, {"COPY", "f", "fc"}},
      {1, {"COPY", "f", "fc"}}, {1, {"COPY", "f", "fc", "DB", "1"}},
      {1, {"MOVE", "fc", "2"}}, {1, {"MOVE", "nosuch", "2"}},
      // hashes
      {1, {"HSET", "h", "a", "1", "b", "2"}}, {1, {"HSET", "h", "a", "1"}},
      {1, {"HSETNX", "h", "a", "1"}}, {1, {"HSETNX", "h", "c", "3"}},
      {1, {"HMSET", "h2", "x", "1"}}, {1, {"HINCRBY", "h", "a", "1"}},
      {1, {"HINCRBYFLOAT", "h", "a", "1.5"}}, {1, {"HDEL", "h", "nosuch"}},
      {1, {"HDEL", "h", "a", "nosuch"}}, {1, {"HDEL", "h", "b", "c"}},
      // lists
      {1, {"LPUSH", "l", "a", "b"}}, {1, {"RPUSH", "l", "c", "d", "e"}},
      {1, {"LPUSHX", "nol", "a"}}, {1, {"RPUSHX", "l", "f"}},
      {1, {"LPOP", "l"}}, {1, {"RPOP", "l", "2"}}, {1, {"LPOP", "l", "0"}},
      {1, {"LPOP", "nol"}}, {1, {"LSET", "l", "0", "z"}},
      {1, {"LINSERT", "l", "BEFORE", "z", "y"}},
      {1, {"LINSERT", "l", "BEFORE", "nosuch", "y"}},
      {1, {"LREM", "l", "0", "y"}}, {1, {"LREM", "l", "0", "nosuch"}},
      {1, {"LTRIM", "l", "0", "1"}}, {1, {"LTRIM", "nol", "0", "1"}},
      {1, {"LMOVE", "l", "l2", "LEFT", "RIGHT"}},
      {1, {"LMOVE", "l", "l2", "LEFT", "RIGHT"}},
      {1, {"RPOPLPUSH", "l2", "l2"}}, {1, {"RPOPLPUSH", "l2", "l"}},
      {1, {"LMPOP", "2", "nol", "l2", "LEFT", "COUNT", "5"}},
      {1, {"RPUSH", "bl", "x", "y"}}, {1, {"BLPOP", "bl", "1"}},
      {1, {"BRPOP", "bl", "1"}}, {1, {"LTRIM", "l", "5", "9"}},
      // sets
      {1, {"SADD", "s", "a", "b"}}, {1, {"SADD", "s", "a"}},
      {1, {"SREM", "s", "a", "nosuch"}}, {1, {"SREM", "s", "nosuch"}},
      {1, {"SMOVE", "s", "s2", "b"}}, {1, {"SADD", "s", "q"}},
      {1, {"SADD", "s2", "q"}}, {1, {"SMOVE", "s", "s2", "q"}},
      {1, {"SMOVE", "s2", "s2", "q"}}, {1, {"SREM", "s2", "b"}},
      {1, {"SPOP", "s2"}}, {1, {"SPOP", "s2"}}, {1, {"SADD", "s3", "1", "2", "3"}},
      {1, {"SPOP", "s3", "0"}}, {1, {"SINTERSTORE", "dst", "s3", "nosuch"}},
      {1, {"SUNIONSTORE", "dst", "s3"}}, {1, {"SDIFFSTORE", "dst", "s3", "s3"}},
      {1, {"SINTERSTORE", "dst", "s3"}}, {1, {"SPOP", "s3", "5"}},
      // sorted sets
      {1, {"ZADD", "z", "1", "a", "2", "b"}}, {1, {"ZADD", "z", "1", "a"}},
      {1, {"ZADD", "z", "INCR", "5", "a"}}, {1, {"ZADD", "z", "NX", "9", "a"}},
      {1, {"ZADD", "z", "CH", "GT", "10", "a"}}, {1, {"ZINCRBY", "z", "0", "a"}},
      {1, {"ZINCRBY", "z", "1", "c"}}, {1, {"ZREM", "z", "c", "nosuch"}},
      {1, {"ZREM", "z", "nosuch"}}, {1, {"ZREMRANGEBYSCORE", "z", "100", "200"}},
      {1, {"ZREMRANGEBYRANK", "z", "0", "0"}}, {1, {"ZADD", "z", "3", "c"}},
      {1, {"ZREMRANGEBYLEX", "z", "[c", "[c"}}, {1, {"ZPOPMIN", "z"}},
      {1, {"ZPOPMIN", "z"}}, {1, {"ZADD", "z2", "1", "x", "2", "y", "3", "w"}},
      {1, {"ZPOPMAX", "z2", "2"}}, {1, {"ZADD", "z2", "4", "v"}},
      {1, {"ZUNIONSTORE", "u", "1", "z2"}}, {1, {"ZINTERSTORE", "u", "2", "z2", "nosuch"}},
      {1, {"ZRANGESTORE", "r", "z2", "0", "-1"}},
      {1, {"ZDIFFSTORE", "d", "1", "z2"}},
      {1, {"ZMPOP", "1", "z2", "MIN"}}, {1, {"BZPOPMAX", "z2", "1"}},
      {1, {"BZMPOP", "1", "2", "nosuch", "r", "MAX", "COUNT", "9"}},
      // streams (an emptied stream stays: no del)
      {1, {"XADD", "x", "1-1", "f", "v"}}, {1, {"XADD", "x", "1-1", "f", "v"}},
      {1, {"XADD", "x", "MAXLEN", "1", "2-1", "f", "v"}},
      {1, {"XADD", "nox", "NOMKSTREAM", "1-1", "f", "v"}},
      {1, {"XDEL", "x", "2-1", "9-9"}}, {1, {"XDEL", "x", "9-9"}},
      {1, {"XADD", "x", "3-1", "a", "b"}}, {1, {"XTRIM", "x", "MAXLEN", "0"}},
      {1, {"XTRIM", "x", "MAXLEN", "0"}}, {1, {"XSETID", "x", "5-0"}},
      // consumer groups
      {1, {"XGROUP", "CREATE", "xg", "g", "$", "MKSTREAM"}},
      {1, {"XGROUP", "CREATE", "xg", "g", "$"}},
      {1, {"XADD", "xg", "1-1", "f", "v"}},
      {1, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "xg", ">"}},
      {1, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "xg", "0"}},
      {1, {"XGROUP", "CREATECONSUMER", "xg", "g", "d"}},
      {1, {"XCLAIM", "xg", "g", "e", "0", "1-1"}},
      {1, {"XAUTOCLAIM", "xg", "g", "f", "0", "-"}},
      {1, {"XACK", "xg", "g", "1-1"}}, {1, {"XGROUP", "SETID", "xg", "g", "0"}},
      {1, {"XGROUP", "DELCONSUMER", "xg", "g", "d"}},
      {1, {"XGROUP", "DELCONSUMER", "xg", "g", "zz"}},
      {1, {"XGROUP", "DESTROY", "xg", "g"}},
      {1, {"XGROUP", "DESTROY", "xg", "g"}},
      // a transaction's and a script's events, in their order
      {1, {"MULTI"}}, {1, {"SET", "t", "1"}}, {1, {"INCR", "t"}},
      {1, {"HSET", "t", "f", "v"}}, {1, {"DEL", "t"}}, {1, {"EXEC"}},
      {1, {"MULTI"}}, {1, {"SET", "t2", "1"}}, {1, {"DISCARD"}},
      {1, {"EVAL", "redis.call('set', KEYS[1], '1') redis.call('expire', "
                   "KEYS[1], 100) return redis.call('del', KEYS[1])", "1", "e"}},
      {1, {"EVAL", "redis.call('lpush', KEYS[1], 'x') return redis.pcall("
                   "'incr', KEYS[1])", "1", "e2"}},
      // other databases
      {1, {"SELECT", "5"}}, {1, {"SET", "in5", "v"}}, {1, {"SWAPDB", "5", "6"}},
      {1, {"SET", "in5", "w"}}, {1, {"SELECT", "0"}},
      // an expired key found on access (the other worker wrote it)
      {2, {"SET", "soon", "v", "PX", "1"}, 50}, {1, {"GET", "soon"}},
      {2, {"SET", "soon", "v", "PX", "1"}, 50}, {1, {"SET", "soon", "w"}},
      // (20 ms, not 1: redis-server reads its clock twice in PEXPIRE and
      // calls a 1 ms TTL already past when a millisecond ticks between)
      {2, {"HSET", "hsoon", "f", "v"}}, {2, {"PEXPIRE", "hsoon", "20"}, 80},
      {1, {"HSET", "hsoon", "g", "w"}},
      // FLUSHALL publishes nothing; the setting off, nothing at all
      {1, {"FLUSHALL"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", ""}},
      {1, {"SET", "k", "v"}}, {1, {"LPUSH", "l", "a"}},
      {2, {"CONFIG", "GET", "notify-keyspace-events"}},
  };
  ExpectSameAsRedis(s.port(), redis.port(), steps);
}

// "new" (class n, outside A): a key a write makes, announced before the
// command's own events; a key replaced is not new.
TEST(ShmkvNotifyVsRedis, NewKeysAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("notify_new");
  ASSERT_TRUE(s.Start()) << s.log();
  std::vector<Step> steps = {
      {2, {"CONFIG", "SET", "notify-keyspace-events", "KEA"}},
      {2, {"CONFIG", "SET", "notify-keyspace-events", "KEAn"}},
      {2, {"CONFIG", "GET", "notify-keyspace-events"}},
      {0, {"PSUBSCRIBE", "__key*__:*"}},
      {1, {"SET", "k", "v"}}, {1, {"SET", "k", "w"}}, {1, {"INCR", "n"}},
      {1, {"APPEND", "a", "x"}}, {1, {"SETRANGE", "r", "2", "x"}},
      {1, {"SETBIT", "b", "1", "1"}}, {1, {"MSET", "m1", "1", "k", "2"}},
      {1, {"SETNX", "k", "x"}}, {1, {"GETSET", "g", "1"}},
      {1, {"HSET", "h", "f", "v"}}, {1, {"HSET", "h", "g", "v"}},
      {1, {"HINCRBY", "h2", "f", "1"}}, {1, {"LPUSH", "l", "a"}},
      {1, {"RPUSH", "l", "b"}}, {1, {"SADD", "s", "a"}},
      {1, {"ZADD", "z", "1", "a"}}, {1, {"ZINCRBY", "z2", "1", "a"}},
      {1, {"RENAME", "k", "k2"}}, {1, {"SET", "k3", "v"}},
      {1, {"RENAME", "k2", "k3"}}, {1, {"COPY", "k3", "k4"}},
      {1, {"COPY", "k3", "k4", "REPLACE"}}, {1, {"MOVE", "k4", "3"}},
      {1, {"SMOVE", "s", "s2", "a"}}, {1, {"LMOVE", "l", "l2", "LEFT", "LEFT"}},
      {1, {"SADD", "s3", "x"}}, {1, {"SINTERSTORE", "s4", "s3"}},
      {1, {"SINTERSTORE", "s4", "s3"}}, {1, {"ZUNIONSTORE", "z3", "1", "z"}},
      {1, {"ZUNIONSTORE", "z3", "1", "z"}},
      {1, {"MULTI"}}, {1, {"SET", "t", "1"}}, {1, {"INCR", "t"}},
      {1, {"EXEC"}},
      {1, {"EVAL", "redis.call('set', KEYS[1], '1') return redis.call("
                   "'lpush', KEYS[2], 'x')", "2", "e1", "e2"}},
      {2, {"SET", "soon", "v", "PX", "1"}, 50}, {1, {"SET", "soon", "w"}},
  };
  ExpectSameAsRedis(s.port(), redis.port(), steps);
}

// A key nobody reads again is removed by the master's active expiry,
// which publishes its "expired" event to subscribers on every worker.
TEST(ShmkvNotify, ActiveExpiryPublishesExpired) {
  Server s("notify_active");
  ASSERT_TRUE(s.Start({"--notify-keyspace-events", "Ex"})) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client* subs[2] = {groups[0][0].get(), groups[1][0].get()};
  for (Client* sub : subs) {
    ASSERT_EQ(sub->Call({"SUBSCRIBE", "__keyevent@0__:expired"}),
              "*3\r\n$9\r\nsubscribe\r\n$22\r\n__keyevent@0__:expired\r\n"
              ":1\r\n");
  }
  Client w(s.port());
  ASSERT_EQ(w.Call({"CONFIG", "GET", "notify-keyspace-events"}),
            "*2\r\n$22\r\nnotify-keyspace-events\r\n$2\r\nxE\r\n");
  ASSERT_EQ(w.Call({"SET", "gone", "v", "PX", "20"}), "+OK\r\n");
  const std::string want =
      "*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n$4\r\ngone\r\n";
  for (Client* sub : subs) {
    // (the sweep passes over the index about every 2 s; 10 s is margin)
    ASSERT_TRUE(sub->Answered(10000)) << s.log();
    EXPECT_EQ(sub->Reply(), want);
  }
  EXPECT_EQ(w.Call({"EXISTS", "gone"}), ":0\r\n");
}

// A write whose transaction does not commit publishes no event: an EXEC
// larger than the commit journal runs nothing, and says nothing.
TEST(ShmkvNotify, AWriteThatDoesNotCommitPublishesNothing) {
  Server s("notify_nocommit");
  ASSERT_TRUE(s.Start({"--notify-keyspace-events", "KA",
                       "--journal-size", "1M"})) << s.log();
  Client sub(s.port()), w(s.port());
  sub.Call({"PSUBSCRIBE", "__keyspace@0__:*"});
  std::string big(300000, 'x');
  ASSERT_EQ(w.Call({"MULTI"}), "+OK\r\n");
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(w.Call({"SET", "big" + std::to_string(i), big}), "+QUEUED\r\n");
  }
  std::string exec = w.Call({"EXEC"});
  ASSERT_EQ(exec.substr(0, 4), "-ERR") << exec;
  ASSERT_EQ(w.Call({"SET", "small", "v"}), "+OK\r\n");
  // The first event is the small SET's: none of the EXEC's came before.
  EXPECT_EQ(Received(&sub),
            "*4\r\n$8\r\npmessage\r\n$16\r\n__keyspace@0__:*\r\n"
            "$20\r\n__keyspace@0__:small\r\n$3\r\nset\r\n");
}

}  // namespace
