// The server and connection families (server/commands/server_family.cc,
// connection_family.cc) in process, against redis-server: INFO, CONFIG,
// COMMAND, TIME.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "server/store/settings.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using shmkv_test::Bulk;

// The family's statistics ids, as first given: pin a new command's here.
TEST(ServerFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("server", {
      {"time", 57}, {"info", 58}, {"command", 59}, {"config", 60},
      {"swapdb", 157}, {"latency", 174}, {"save", 177}, {"lastsave", 178},
      {"bgsave", 179}, {"shutdown", 180}, {"replicaof", 182},
      {"slaveof", 183}, {"role", 184},
  });
  shmkv_test::ExpectPinnedIds("connection", {
      {"ping", 1}, {"echo", 2}, {"quit", 61}, {"select", 62},
      {"client", 63}, {"auth", 64}, {"hello", 65}, {"reset", 173},
  });
}

// The flags element of a COMMAND INFO reply for one command (its lines
// from the flags' header to the first key's position).
std::string FlagsOf(const std::string& reply) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < reply.size();) {
    size_t end = reply.find("\r\n", at);
    if (end == std::string::npos) break;
    lines.push_back(reply.substr(at, end - at));
    at = end + 2;
  }
  // *1, *10, $len, name, :arity, then the flags' header and its entries.
  if (lines.size() < 6) return "(short reply) " + reply;
  std::string out = lines[5];
  const size_t n = std::strtoul(lines[5].c_str() + 1, nullptr, 10);
  for (size_t i = 0; i < n && 6 + i < lines.size(); ++i) {
    out += " " + lines[6 + i];
  }
  return out;
}

// Every command's flags in COMMAND INFO, as Redis gives them (clients read
// them: which commands write, which may run on a replica or in a script),
// in both protocols. The one difference is SHUTDOWN's allow_busy: shmkv's
// saves under the write lock a busy script holds, so it waits instead.
TEST(ServerFamilyVsRedis, CommandInfoFlagsAreRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (int resp : {2, 3}) {
    CommandHarness h("srvflags");
    ASSERT_TRUE(h.ok()) << h.error();
    Client theirs(redis.port());
    if (resp == 3) {
      h.Run({"HELLO", "3"});
      theirs.Call({"HELLO", "3"});
    }
    size_t compared = 0;
    for (const shmkv::cmd::CommandRow* row : shmkv::cmd::Commands().rows()) {
      const std::string name = row->name;
      std::string want = FlagsOf(theirs.Call({"COMMAND", "INFO", name}));
      if (name == "shutdown") {
        const std::string busy = " +allow_busy";
        ASSERT_NE(want.find(busy), std::string::npos) << want;
        want.erase(want.find(busy), busy.size());
        want[1] = static_cast<char>(want[1] - 1);
      }
      EXPECT_EQ(FlagsOf(h.Run({"COMMAND", "INFO", name})), want)
          << name << " resp " << resp;
      ++compared;
    }
    EXPECT_GT(compared, 150u);
  }
}

// INFO with several sections and # CPU, CONFIG GET of every setting and
// Redis's refusals, COMMAND as clients ask it.
TEST(ServerFamilyVsRedis, ServerCommands) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("srvcmd");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"CONFIG", "GET", "nosuch*"},
      {"CONFIG", "GET", "appendonly"}, {"CONFIG", "SET", "nosuch", "1"},
      // Past maxmemory: writes refused before they run (queued in MULTI,
      // the transaction is doomed; an EXEC holding a write is refused),
      // reads and deletes served.
      {"SET", "big", std::string(8192, 'b')}, {"SET", "del", "x"},
      {"CONFIG", "SET", "maxmemory", "1"},
      {"SET", "k", "v"}, {"APPEND", "big", "x"}, {"GET", "k"},
      {"STRLEN", "big"}, {"DEL", "del"}, {"PING"},
      {"MULTI"}, {"GET", "big"}, {"EXEC"}, {"DISCARD"},
      {"CONFIG", "SET", "maxmemory", "0"},
      {"MULTI"}, {"SET", "q", "1"}, {"CONFIG", "SET", "maxmemory", "1"},
      {"EXEC"}, {"GET", "q"},
      {"CONFIG", "SET", "maxmemory", "0"}, {"SET", "k", "v"},
      // min-replicas-to-write: no replica here, so every write is
      // refused while it is above 0 (queued ones doom the transaction)
      {"CONFIG", "GET", "min-replicas-to-write"},
      {"CONFIG", "GET", "min-slaves-max-lag"},
      {"CONFIG", "SET", "min-replicas-to-write", "2"}, {"SET", "xx", "1"},
      {"GET", "xx"}, {"DEL", "xx"}, {"MULTI"}, {"GET", "xx"},
      {"SET", "xx", "2"}, {"EXEC"}, {"CONFIG", "GET", "min-slaves-to-write"},
      {"CONFIG", "SET", "min-slaves-to-write", "0"}, {"SET", "xx", "1"},
      {"CONFIG", "SET", "min-replicas-max-lag", "-1"},
      // noeviction: Redis's default and shmkv's only policy
      {"CONFIG", "GET", "maxmemory-policy"},
      {"CONFIG", "SET", "maxmemory-policy", "NoEviction"},
      {"CONFIG", "GET"}, {"CONFIG", "SET", "x"}, {"CONFIG", "NOSUCH"},
      {"COMMAND", "INFO", "nosuchcmd"}, {"COMMAND", "DOCS", "nosuchcmd"},
      {"COMMAND", "COUNT", "x"}, {"COMMAND", "NOSUCH"},
      {"INFO", "nosuchsection"}, {"TIME", "x"},
      // RESET: the connection as new, and its protocol back to RESP2
      {"SELECT", "3"}, {"CLIENT", "SETNAME", "n"}, {"MULTI"}, {"RESET"},
      {"CLIENT", "GETNAME"}, {"EXEC"}, {"SET", "in3", "x"}, {"SELECT", "3"},
      {"GET", "in3"}, {"RESET"}, {"HGETALL", "nosuch"}, {"GET", "nosuch"},
      {"RESET", "x"},
      // HELLO's errors (its success replies name the server's version)
      {"HELLO", "4"}, {"HELLO", "1"}, {"HELLO", "x"}, {"HELLO", "2", "bogus"},
      {"HELLO", "3", "AUTH", "default"}, {"HELLO", "3", "SETNAME"},
      {"HELLO", "2", "SETNAME", "has space"},
      // LATENCY: no events (Redis's monitor is off by default), and a
      // histogram of a command nobody ran is no entry
      {"LATENCY", "HISTOGRAM", "nosuchcmd"}, {"LATENCY", "HISTOGRAM", "lpush"},
      {"LATENCY", "LATEST"}, {"LATENCY", "LATEST", "x"},
      {"LATENCY", "HISTORY", "command"}, {"LATENCY", "HISTORY"},
      {"LATENCY", "RESET"}, {"LATENCY", "RESET", "command", "x"},
      {"LATENCY", "GRAPH", "command"}, {"LATENCY", "GRAPH"},
      {"LATENCY", "BOGUS"}, {"LATENCY"}, {"LATENCY", "DOCTOR", "x"},
  });
}

// CONFIG SET of the compact forms' limits (hash-max-listpack-*,
// set-max-intset-entries, zset-max-listpack-*, the lists' two), under
// their names and older aliases: Redis's parsing, ranges and errors, and
// the encodings values then take, checked when Redis checks them (a
// value packed under higher limits stays packed until a write adds to
// it or, for a hash, writes a longer field or value).
// COMMAND GETKEYS as Redis answers it: fixed key positions, steps,
// keys counted by an argument, SORT's STORE, MIGRATE's KEYS, and the
// errors.
TEST(ServerFamilyVsRedis, CommandGetKeysAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("getkeys");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::vector<std::vector<std::string>> cases = {
      {"GET", "a"}, {"SET", "a", "1", "EX", "5"}, {"MGET", "a", "b", "c"},
      {"MSET", "a", "1", "b", "2"}, {"DEL", "a", "b"}, {"RENAME", "a", "b"},
      {"LMOVE", "a", "b", "LEFT", "RIGHT"}, {"BLPOP", "a", "b", "0"},
      {"BLMOVE", "a", "b", "LEFT", "LEFT", "0"}, {"SMOVE", "a", "b", "m"},
      {"SINTERSTORE", "d", "a", "b"}, {"ZRANGESTORE", "d", "s", "0", "1"},
      {"ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"},
      {"ZINTERSTORE", "d", "1", "a"}, {"ZUNION", "2", "a", "b"},
      {"ZINTERCARD", "2", "a", "b", "LIMIT", "1"},
      {"SINTERCARD", "1", "a"}, {"LMPOP", "2", "a", "b", "LEFT"},
      {"ZMPOP", "1", "a", "MIN"}, {"BLMPOP", "0", "2", "a", "b", "LEFT"},
      {"BZMPOP", "0", "1", "a", "MAX"},
      {"EVAL", "return 1", "2", "a", "b", "x"}, {"EVAL", "return 1", "0"},
      {"EVALSHA", "abc", "1", "k"}, {"FCALL", "f", "1", "k", "arg"},
      {"FCALL_RO", "f", "0"},
      {"SORT", "a"}, {"SORT", "a", "BY", "w_*", "LIMIT", "0", "1", "GET", "#",
                      "STORE", "d"},
      {"SORT", "abc", "STORE", "invalid", "STORE", "stillbad", "STORE", "def"},
      {"SORT", "a", "STORE", "limit", "1", "2"}, {"SORT", "a", "STORE"},
      {"SORT", "a", "STORE", ""}, {"SORT", "a", "STORE", "by", "c"},
      {"SORT_RO", "a", "BY", "x"},
      {"MIGRATE", "h", "1", "k", "0", "10"},
      {"MIGRATE", "h", "1", "", "0", "10", "COPY", "KEYS", "a", "b"},
      {"LCS", "a", "b"}, {"COPY", "a", "b", "DB", "1"},
      {"WATCH", "a", "b"}, {"TOUCH", "a"}, {"DUMP", "a"},
      {"RESTORE", "a", "0", "x"}, {"GETEX", "a", "PERSIST"},
      {"HSET", "h", "f", "v"}, {"ZADD", "z", "1", "m"}, {"XYZ"},
      // errors
      {"PING"}, {"NOSUCH", "a"}, {"GET"}, {"GET", "a", "b"},
      {"ZUNIONSTORE", "d", "x", "a"}, {"ZUNION", "-1", "a"},
      {"ZUNION", "5", "a"}, {"LMPOP", "0", "a", "LEFT"},
      {"EVAL", "return 1", "x"}, {"EVAL", "return 1", "5", "a"},
      {"RANDOMKEY"}, {"DBSIZE"}, {"SCAN", "0"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> cmd = {"COMMAND", "GETKEYS"};
    cmd.insert(cmd.end(), c.begin(), c.end());
    ExpectSameAsRedis(&h, redis.port(), {cmd});
  }
  ExpectSameAsRedis(&h, redis.port(), {{"COMMAND", "GETKEYS"}});
}

TEST(ServerFamilyVsRedis, ConfigSetChangesEncodingLimitsAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("srvlimits");
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv_test::Commands cmds = {
      {"CONFIG", "SET", "hash-max-listpack-entries", "-1"},
      {"CONFIG", "SET", "hash-max-ziplist-entries", "abc"},
      {"CONFIG", "SET", "hash-max-listpack-entries", "1k"},
      {"CONFIG", "SET", "list-max-listpack-size", "99999999999"},
      {"CONFIG", "SET", "list-max-ziplist-size", "-2147483649"},
      {"CONFIG", "SET", "list-compress-depth", "-1"},
      {"CONFIG", "SET", "zset-max-listpack-value", "-5"},
      {"CONFIG", "SET", "zset-max-listpack-value", "2x"},
      {"CONFIG", "SET", "zset-max-listpack-value", "18446744073709551615"},
      {"CONFIG", "SET", "hash-max-listpack-entries", "5",
       "hash-max-listpack-entries", "6"},
      // all or nothing: the first is not set when the second fails
      {"CONFIG", "SET", "set-max-intset-entries", "7",
       "notify-keyspace-events", "Q"},
      {"CONFIG", "GET", "set-max-intset-entries"},
      {"CONFIG", "SET", "hash-max-listpack-value", "1kb"},
      {"CONFIG", "GET", "hash-max-listpack-value"},
      {"CONFIG", "SET", "hash-max-listpack-value", "2K"},
      {"CONFIG", "GET", "hash-max-ziplist-value"},
      {"CONFIG", "SET", "list-max-ziplist-size", "-5"},
      {"CONFIG", "GET", "list-max-listpack-size"},
      {"CONFIG", "SET", "list-compress-depth", "3"},
      {"CONFIG", "SET", "lua-time-limit", "-1"},
      {"CONFIG", "SET", "busy-reply-threshold", "x"},
      {"CONFIG", "SET", "lua-time-limit", "6000"},
      {"CONFIG", "GET", "list-compress-depth"},
      // sorted sets: by count and by member length, when a member is added
      {"CONFIG", "SET", "zset-max-ziplist-entries", "2",
       "zset-max-listpack-value", "4"},
      {"CONFIG", "GET", "zset-max-listpack-entries"},
      {"ZADD", "z", "1", "a", "2", "b"}, {"OBJECT", "ENCODING", "z"},
      {"ZADD", "z", "3", "c"}, {"OBJECT", "ENCODING", "z"},
      {"ZADD", "v", "1", "abcde"}, {"OBJECT", "ENCODING", "v"},
      {"ZADD", "w", "1", "abcd"}, {"OBJECT", "ENCODING", "w"},
      {"CONFIG", "SET", "zset-max-listpack-entries", "1"},
      {"ZADD", "w", "5", "abcd"}, {"ZINCRBY", "w", "1", "abcd"},
      {"OBJECT", "ENCODING", "w"}, {"ZADD", "w", "1", "x"},
      {"OBJECT", "ENCODING", "w"}, {"ZRANGE", "w", "0", "-1", "WITHSCORES"},
      {"CONFIG", "SET", "zset-max-listpack-entries", "0"},
      {"ZADD", "one", "1", "a"}, {"OBJECT", "ENCODING", "one"},
      {"ZRANGESTORE", "dst", "z", "0", "1"}, {"OBJECT", "ENCODING", "dst"},
      {"CONFIG", "SET", "zset-max-listpack-entries", "2"},
      {"ZRANGESTORE", "dst2", "z", "0", "1"}, {"OBJECT", "ENCODING", "dst2"},
      {"ZUNIONSTORE", "u", "2", "z", "w"}, {"OBJECT", "ENCODING", "u"},
      // hashes: by count when a field is added, by every length written
      {"CONFIG", "SET", "hash-max-listpack-entries", "2",
       "hash-max-listpack-value", "3"},
      {"HSET", "h", "a", "1", "b", "2"}, {"OBJECT", "ENCODING", "h"},
      {"HSET", "h", "a", "9"}, {"OBJECT", "ENCODING", "h"},
      {"HSET", "h", "c", "3"}, {"OBJECT", "ENCODING", "h"},
      {"HSET", "g", "a", "1234"}, {"OBJECT", "ENCODING", "g"},
      {"HSET", "f", "abcd", "1"}, {"OBJECT", "ENCODING", "f"},
      {"HSET", "e", "a", "1"}, {"HSETNX", "e", "a", "long value"},
      {"OBJECT", "ENCODING", "e"},
      {"CONFIG", "SET", "hash-max-listpack-entries", "512",
       "hash-max-listpack-value", "64"},
      {"HSET", "d", "a", "1", "b", "2", "c", "3"},
      {"CONFIG", "SET", "hash-max-listpack-entries", "1"},
      {"HSET", "d", "a", "5"}, {"HDEL", "d", "b"},
      {"OBJECT", "ENCODING", "d"}, {"HSET", "d", "x", "1"},
      {"OBJECT", "ENCODING", "d"},
      // sets of integers
      {"CONFIG", "SET", "set-max-intset-entries", "2"},
      {"SADD", "s", "1", "2"}, {"OBJECT", "ENCODING", "s"},
      {"SADD", "s", "3"}, {"OBJECT", "ENCODING", "s"},
      {"SADD", "t", "5", "6"}, {"SUNION", "t"},
      {"SUNIONSTORE", "st", "s", "t"}, {"OBJECT", "ENCODING", "st"},
      {"SCARD", "st"},
      {"CONFIG", "SET", "set-max-intset-entries", "512"},
      {"SINTERSTORE", "si", "s", "s"}, {"OBJECT", "ENCODING", "si"},
  };
  // save: Redis's reading (split at each space; seconds at least 1)
  for (const char* v : {"3600 1 300 100", "3600", "x 1", "-1 5", "1 -5",
                        " 10  20 ", "0 0", "10 ", "+5 1", "1 2 3 4 5 6",
                        "99999999999999999999 1", ""}) {
    cmds.push_back({"CONFIG", "SET", "save", v});
    cmds.push_back({"CONFIG", "GET", "save"});
  }
  cmds.push_back({"CONFIG", "SET", "save", "1 1", "save", "2 2"});
  for (const char* name :
       {"hash-max-listpack-entries", "hash-max-ziplist-entries",
        "hash-max-listpack-value", "hash-max-ziplist-value",
        "set-max-intset-entries", "zset-max-listpack-entries",
        "zset-max-ziplist-entries", "zset-max-listpack-value",
        "zset-max-ziplist-value", "list-max-listpack-size",
        "list-max-ziplist-size", "list-compress-depth",
        "busy-reply-threshold", "lua-time-limit"}) {
    cmds.push_back({"CONFIG", "GET", name});
  }
  ExpectSameAsRedis(&h, redis.port(), cmds);
}

// The limits are the store's, not a worker's: a worker attached to the
// same store (as after a restart) sees what another set, and its writes
// follow them.
TEST(ServerFamily, EncodingLimitsAreSharedByTheStore) {
  CommandHarness a("srvlimshare");
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a.Run({"CONFIG", "SET", "zset-max-listpack-entries", "3"}),
            "+OK\r\n");
  shmkv_test::CommandWorker b(a.config());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.Run({"CONFIG", "GET", "zset-max-listpack-entries"}),
            "*2\r\n$25\r\nzset-max-listpack-entries\r\n$1\r\n3\r\n");
  EXPECT_EQ(b.Run({"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"}),
            ":4\r\n");
  EXPECT_EQ(a.Run({"OBJECT", "ENCODING", "z"}), "$8\r\nskiplist\r\n");
}

// CLIENT REPLY OFF / SKIP / ON: the byte stream a client gets for a
// pipeline is redis-server's, byte for byte (replies dropped while OFF,
// the one after SKIP, ON's OK sent even right after SKIP; errors dropped
// too), in a transaction and a script as well.
TEST(ServerFamilyVsRedis, ClientReplyDropsRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("srvreply");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::vector<std::vector<std::string>> cmds = {
      {"CLIENT", "REPLY"}, {"CLIENT", "REPLY", "maybe"},
      {"CLIENT", "REPLY", "ON"}, {"CLIENT", "REPLY", "OFF"},
      {"SET", "a", "1"}, {"GET", "a"}, {"NOSUCH"}, {"CLIENT", "REPLY", "SKIP"},
      {"INCR", "a"}, {"CLIENT", "REPLY", "ON"}, {"GET", "a"},
      {"CLIENT", "REPLY", "SKIP"}, {"GET", "a"}, {"INCR", "a"},
      {"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "ON"}, {"GET", "a"},
      {"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "SKIP"}, {"GET", "a"},
      {"GET", "a"}, {"CLIENT", "REPLY", "SKIP"}, {"MULTI"}, {"INCR", "a"},
      {"EXEC"}, {"CLIENT", "REPLY", "OFF"}, {"MULTI"}, {"INCR", "a"},
      {"EXEC"}, {"CLIENT", "REPLY", "ON"}, {"GET", "a"},
      {"CLIENT", "REPLY", "SKIP"},
      {"EVAL", "return redis.call('incr', 'a')", "0"}, {"GET", "a"},
      {"ECHO", "end"},
  };
  std::string ours;
  for (const auto& c : cmds) ours += h.Run(c);
  Client c(redis.port());
  ASSERT_TRUE(c.ok());
  std::string pipeline;
  for (const auto& cmd : cmds) pipeline += Client::Encode(cmd);
  ASSERT_TRUE(c.SendRaw(pipeline));
  std::string theirs;
  for (int i = 0; i < 100; ++i) {
    std::string one = c.Reply();
    if (one.empty()) break;
    theirs += one;
    if (one == "$3\r\nend\r\n") break;
  }
  EXPECT_EQ(ours, theirs);
}

// The settings segment's words, as a store of this layout writes them: a
// change here is a new kSettingsMagic (a running server of the old
// layout is refused), never an edit of these figures.
TEST(ServerFamily, SettingsSegmentLayoutGolden) {
  CommandHarness h("srvsetgold");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_EQ(h.Run({"CONFIG", "SET", "zset-max-listpack-entries", "7",
                   "list-max-listpack-size", "-3", "save", "5 6 70 80"}),
            "+OK\r\n");
  shmc::ShmArray<shmkv::SettingsBlock, shmc::POSIX> arr;
  ASSERT_TRUE(arr.InitForWrite(shmkv::SettingsKey(h.config()), 1))
      << arr.last_error().message;
  const auto* w = reinterpret_cast<const volatile uint64_t*>(&arr[0]);
  EXPECT_EQ(w[0], 0x31746573766b6d73ULL);  // "smkvset1"
  EXPECT_EQ(w[1], (uint64_t{1} << 63) | (uint64_t{1} << 5) |
                      (uint64_t{1} << 3));
  EXPECT_EQ(w[2 + 3], 7u);                        // zset-max-listpack-entries
  EXPECT_EQ(w[2 + 5], static_cast<uint64_t>(-3));  // list-max-listpack-size
  EXPECT_EQ(w[16], 2u);                           // save_seq: one write
  EXPECT_EQ(w[17], 2u);                           // two points
  EXPECT_EQ(w[18], 5u);
  EXPECT_EQ(w[19], 6u);
  EXPECT_EQ(w[20], 70u);
  EXPECT_EQ(w[21], 80u);
}

// The second settings block (the settings added once the first was
// full), as a store of this layout writes it.
TEST(ServerFamily, MoreSettingsSegmentLayoutGolden) {
  CommandHarness h("srvsetmore");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_EQ(h.Run({"CONFIG", "SET", "hll-sparse-max-bytes", "1234"}),
            "+OK\r\n");
  shmc::ShmArray<shmkv::SettingsMoreBlock, shmc::POSIX> arr;
  ASSERT_TRUE(arr.InitForWrite(shmkv::SettingsKey(h.config()) + ".more", 1))
      << arr.last_error().message;
  const auto* w = reinterpret_cast<const volatile uint64_t*>(&arr[0]);
  EXPECT_EQ(w[0], 0x6d746573766b6d73ULL);  // "smkvsetm"
  EXPECT_EQ(w[1], uint64_t{1} << 0);         // hll-sparse-max-bytes given
  EXPECT_EQ(w[2], 1234u);
  // Out of range (damage): the default.
  const_cast<volatile uint64_t*>(w)[2] = static_cast<uint64_t>(-7);
  EXPECT_EQ(h.Run({"CONFIG", "GET", "hll-sparse-max-bytes"}),
            "*2\r\n$20\r\nhll-sparse-max-bytes\r\n$4\r\n3000\r\n");
}

// Damaged settings words (out of range, a sequence left odd by a writer
// that died, a count past the points) read as the defaults; random words
// never crash a command that reads them.
TEST(ServerFamily, DamagedSettingsReadAsDefaults) {
  CommandHarness h("srvsetdamage");
  ASSERT_TRUE(h.ok()) << h.error();
  h.info()->save = "900 1";
  shmc::ShmArray<shmkv::SettingsBlock, shmc::POSIX> arr;
  ASSERT_TRUE(arr.InitForWrite(shmkv::SettingsKey(h.config()), 1))
      << arr.last_error().message;
  auto& b = const_cast<shmkv::SettingsBlock&>(arr[0]);
  b.words[0].store(static_cast<uint64_t>(-5));  // hash-max-listpack-entries
  b.words[5].store(uint64_t{1} << 40);          // list-max-listpack-size
  b.given.store(~uint64_t{0});
  b.save_count.store(1000);
  EXPECT_EQ(h.Run({"CONFIG", "GET", "hash-max-listpack-entries"}),
            "*2\r\n$25\r\nhash-max-listpack-entries\r\n$3\r\n512\r\n");
  EXPECT_EQ(h.Run({"CONFIG", "GET", "list-max-listpack-size"}),
            "*2\r\n$22\r\nlist-max-listpack-size\r\n$2\r\n-2\r\n");
  EXPECT_EQ(h.Run({"CONFIG", "GET", "save"}),
            "*2\r\n$4\r\nsave\r\n$5\r\n900 1\r\n");
  b.save_count.store(1);
  b.save_seq.store(7);  // a writer died mid-write
  EXPECT_EQ(h.Run({"CONFIG", "GET", "save"}),
            "*2\r\n$4\r\nsave\r\n$5\r\n900 1\r\n");
  EXPECT_EQ(h.Run({"CONFIG", "SET", "save", "10 20"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"CONFIG", "GET", "save"}),
            "*2\r\n$4\r\nsave\r\n$5\r\n10 20\r\n")
      << "the next writer makes the sequence even again";
  std::mt19937_64 rng(20261128);
  auto* words = reinterpret_cast<std::atomic<uint64_t>*>(&b);
  for (int round = 0; round < 300; ++round) {
    for (int k = 0; k < 3; ++k) {
      size_t at = 1 + rng() % (sizeof(b) / 8 - 1);  // the magic stays
      uint64_t v = rng();
      if (rng() % 2) v %= 1000;  // small values, in range or near it
      words[at].store(v);
    }
    std::string cfg = h.Run({"CONFIG", "GET", "*"});
    ASSERT_EQ(cfg.rfind("*", 0), 0u) << cfg;
    std::string k = "k" + std::to_string(round % 7);
    h.Run({"ZADD", "z" + k, std::to_string(round), k});
    h.Run({"HSET", "h" + k, k, std::string(round % 100, 'x')});
    h.Run({"SADD", "s" + k, std::to_string(round)});
  }
  h.Run({"FLUSHALL"});
}

// INFO keyspace's avg_ttl: the mean remaining TTL of the database's keys
// that have one (it was always 0), each database its own. The index is
// smaller than avg_ttl's walk, so every walk, from whichever slot it
// starts, meets every key (a walk that wrapped once stopped short and
// missed keys before its start: 100 calls catch that).
TEST(ServerFamily, InfoAvgTtlIsTheMeanOfTheKeysWithATtl) {
  CommandHarness h("avgttl");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"SET", "a", "v", "PX", "100000"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "b", "v", "PX", "50000"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "c", "v"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SELECT", "2"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "d", "v", "PX", "10000"}), "+OK\r\n");
  for (int call = 0; call < 100; ++call) {
    std::string info = h.Run({"INFO", "keyspace"});
    auto avg = [&](const std::string& db) -> int64_t {
      size_t at = info.find(db + ":keys=");
      if (at == std::string::npos) return -1;
      at = info.find("avg_ttl=", at);
      return at == std::string::npos ? -1 : std::stoll(info.substr(at + 8));
    };
    ASSERT_GT(avg("db0"), 70000) << "call " << call << ": " << info;
    ASSERT_LE(avg("db0"), 75000) << info;
    ASSERT_GT(avg("db2"), 5000) << info;
    ASSERT_LE(avg("db2"), 10000) << info;
    ASSERT_NE(info.find("db0:keys=3,expires=2,avg_ttl="), std::string::npos)
        << info;
  }
}

// What only shmkv has (its settings, its COMMAND rows) in both protocols.
TEST(ServerFamily, InfoConfigAndCommandShapes) {
  CommandHarness h("srvshape");
  ASSERT_TRUE(h.ok()) << h.error();
  h.info()->resp_port = 16380;
  std::string info = h.Run({"INFO", "server", "CPU"});
  EXPECT_NE(info.find("# Server"), std::string::npos) << info;
  EXPECT_NE(info.find("# CPU\r\nused_cpu_sys:"), std::string::npos) << info;
  EXPECT_EQ(info.find("# Memory"), std::string::npos) << info;
  std::string all = h.Run({"INFO"});
  for (const char* sec : {"# Server", "# Clients", "# Memory",
                          "# Persistence", "# Stats", "# CPU", "# Keyspace"}) {
    EXPECT_NE(all.find(sec), std::string::npos) << sec;
  }
  std::string cfg = h.Run({"CONFIG", "GET", "*"});
  for (const char* k : {"port", "bind", "requirepass", "protected-mode",
                        "maxmemory", "proto-max-bulk-len",
                        "shmkv-journal-size", "shmkv-capacity"}) {
    EXPECT_NE(cfg.find(Bulk(k)), std::string::npos) << k << " in " << cfg;
  }
  EXPECT_NE(cfg.find(Bulk("16380")), std::string::npos);
  // Memory as Redis writes it for people, and the policy clients check
  // (Sidekiq warns at start unless it is noeviction).
  std::string mem = h.Run({"INFO", "memory"});
  EXPECT_NE(mem.find("\r\nmaxmemory_policy:noeviction\r\n"), std::string::npos)
      << mem;
  // Freed at once, never by a background thread.
  EXPECT_NE(mem.find("\r\nlazyfree_pending_objects:0\r\n"), std::string::npos)
      << mem;
  EXPECT_NE(h.Run({"INFO", "stats"}).find("\r\nlazyfreed_objects:0\r\n"),
            std::string::npos);
  for (const char* f : {"\r\nused_memory_human:", "\r\nmaxmemory_human:"}) {
    size_t at = mem.find(f);
    ASSERT_NE(at, std::string::npos) << f << " in " << mem;
    std::string v = mem.substr(at + std::strlen(f));
    v = v.substr(0, v.find("\r\n"));
    EXPECT_TRUE(std::regex_match(v, std::regex("[0-9]+B|[0-9]+\\.[0-9]{2}[KMGTP]")))
        << f << v;
  }
  EXPECT_EQ(h.Run({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}),
            "-ERR CONFIG SET failed (possibly related to argument "
            "'maxmemory-policy') - shmkv evicts no key: its only policy is "
            "noeviction\r\n");
  EXPECT_EQ(h.Run({"CONFIG", "SET", "databases", "1"}),
            "-ERR CONFIG SET failed (possibly related to argument "
            "'databases') - can't set immutable config\r\n");
  EXPECT_EQ(h.Run({"CONFIG", "SET", "maxmemory", "-1"}),
            "-ERR CONFIG SET failed (possibly related to argument "
            "'maxmemory') - argument must be a memory value\r\n");
  std::string count = h.Run({"COMMAND", "COUNT"});
  ASSERT_EQ(count[0], ':') << count;
  EXPECT_GT(std::stoi(count.substr(1)), 60);
  EXPECT_EQ(h.Run({"COMMAND", "INFO", "get", "nosuch"}),
            "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n"
            ":1\r\n:1\r\n"
            ":1\r\n*0\r\n*0\r\n*0\r\n*0\r\n$-1\r\n");
  // SCAN TYPE: every key is a string.
  ASSERT_EQ(h.Run({"SET", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SCAN", "0", "COUNT", "1000000", "TYPE", "hash"}),
            "*2\r\n$1\r\n0\r\n*0\r\n");
  EXPECT_EQ(h.Run({"SCAN", "0", "COUNT", "1000000", "TYPE", "string"}),
            "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n");
  std::string docs = h.Run({"COMMAND", "DOCS", "set"});
  EXPECT_EQ(docs, "*2\r\n$3\r\nset\r\n*0\r\n");
  // In RESP3: sets, maps, nulls and verbatim text where Redis has them.
  std::string hello = h.Run({"HELLO", "3"});
  EXPECT_EQ(hello.substr(0, 4), "%7\r\n") << hello;
  EXPECT_NE(hello.find("$5\r\nproto\r\n:3\r\n"), std::string::npos) << hello;
  EXPECT_EQ(h.Run({"COMMAND", "INFO", "get", "nosuch"}),
            "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n"
            ":1\r\n:1\r\n"
            ":1\r\n~0\r\n~0\r\n~0\r\n~0\r\n_\r\n");
  EXPECT_EQ(h.Run({"COMMAND", "DOCS", "set"}), "%1\r\n$3\r\nset\r\n%0\r\n");
  std::string map = h.Run({"CONFIG", "GET", "port"});
  EXPECT_EQ(map, "%1\r\n$4\r\nport\r\n$5\r\n16380\r\n");
  std::string text = h.Run({"INFO", "server"});
  EXPECT_EQ(text.substr(0, 1), "=") << text;
  EXPECT_NE(text.find("\r\ntxt:# Server\r\n"), std::string::npos) << text;
  std::string me = h.Run({"CLIENT", "INFO"});
  EXPECT_EQ(me.substr(0, 1), "=") << me;
  EXPECT_EQ(h.Run({"HELLO", "2"}).substr(0, 5), "*14\r\n");
  ASSERT_EQ(h.Run({"HELLO", "3", "SETNAME", "me"}).substr(0, 4), "%7\r\n");
  EXPECT_EQ(h.Run({"CLIENT", "GETNAME"}), "$2\r\nme\r\n");
  EXPECT_EQ(h.Run({"RESET"}), "+RESET\r\n");
  EXPECT_EQ(h.Run({"CLIENT", "GETNAME"}), "$-1\r\n");
  EXPECT_EQ(h.Run({"HGETALL", "nosuch"}), "*0\r\n");
}

}  // namespace
