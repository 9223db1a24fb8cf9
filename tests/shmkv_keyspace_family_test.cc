// The keyspace family (server/commands/keyspace_family.cc) in process:
// the key commands keep each value's type and answer for every type.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv::ValueType;
using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;

// The family's statistics ids, as first given: pin a new command's here.
TEST(KeyspaceFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("keyspace", {
      {"del", 29}, {"unlink", 30}, {"exists", 31}, {"touch", 32},
      {"type", 33}, {"rename", 34}, {"renamenx", 35}, {"copy", 36},
      {"randomkey", 37}, {"expire", 38}, {"pexpire", 39}, {"expireat", 40},
      {"pexpireat", 41}, {"ttl", 42}, {"pttl", 43}, {"expiretime", 44},
      {"pexpiretime", 45}, {"persist", 46}, {"dbsize", 47}, {"flushall", 48},
      {"flushdb", 49}, {"keys", 50}, {"scan", 51}, {"object", 66},
      {"move", 158}, {"dump", 175}, {"restore", 176},
      {"migrate", 181},
  });
}

TEST(KeyspaceFamily, KeyCommandsKeepTheType) {
  CommandHarness h("keys");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("h", ValueType::kHash, "packed-bytes"));
  EXPECT_EQ(h.Run({"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"PEXPIRE", "h", "100000"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"RENAME", "h", "h2"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h2"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"COPY", "h2", "h3"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h3"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"PERSIST", "h3"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TTL", "h3"}), ":-1\r\n");
  EXPECT_EQ(h.Run({"GET", "h3"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of "
            "value\r\n");
  shmkv::Value v;
  ASSERT_TRUE(h.store()->Get("h3", &v));
  EXPECT_EQ(v.type, ValueType::kHash);
  EXPECT_EQ(v.bytes, "packed-bytes");  // the value's bytes moved untouched
  EXPECT_EQ(h.Run({"DEL", "h2", "h3"}), ":2\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h2"}), "+none\r\n");
}

// Inside MULTI a key written with a type is seen with it by the commands
// queued after, and SCAN TYPE finds a key the transaction created.
TEST(KeyspaceFamily, TypesInsideTransactions) {
  CommandHarness h("keystx");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("z", ValueType::kZSet, "x"));
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"RENAME", "z", "z2"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"TYPE", "z2"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"SCAN", "0", "COUNT", "100000", "TYPE", "zset"}),
            "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}),
            "*3\r\n+OK\r\n+zset\r\n*2\r\n$1\r\n0\r\n*1\r\n$2\r\nz2\r\n");
}

// A type this build does not know (written by a newer one) is never read
// as a string: every string command answers WRONGTYPE, DEL removes it.
TEST(KeyspaceFamily, AnUnknownTypeIsNeverMisread) {
  CommandHarness h("keysunk");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("future", static_cast<ValueType>(200), "?"));
  EXPECT_EQ(h.Run({"GET", "future"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(h.Run({"APPEND", "future", "x"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(h.Run({"TYPE", "future"}), "+unknown\r\n");
  EXPECT_EQ(h.Run({"DEL", "future"}), ":1\r\n");
}

// Keys and expiry: every command and option, against Redis.
// TTLs are absolute and far away, so the replies do not depend on time.
TEST(KeyspaceFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("keydiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"SET", "a", "1"}, {"SET", "b", "2"},
      {"RENAME", "a", "c"}, {"GET", "a"}, {"GET", "c"},
      {"RENAME", "none", "x"}, {"RENAME", "c", "c"}, {"RENAME", "none", "none"},
      {"RENAMENX", "c", "b"}, {"RENAMENX", "c", "c"}, {"RENAMENX", "c", "d"},
      {"RENAMENX", "none", "d"}, {"MGET", "c", "d"},
      {"PEXPIREAT", "d", "99999999999000"}, {"RENAME", "d", "e"},
      {"PEXPIRETIME", "e"}, {"RENAME", "b", "e"}, {"PEXPIRETIME", "e"},
      {"COPY", "e", "f"}, {"COPY", "e", "f"}, {"COPY", "e", "f", "REPLACE"},
      {"COPY", "e", "e"}, {"COPY", "none", "g"}, {"COPY", "e", "g", "DB", "0"},
      {"COPY", "e", "h", "BOGUS"}, {"COPY", "e", "h", "DB", "x"},
      {"COPY", "e", "h", "DB"}, {"GET", "g"},
      {"PEXPIREAT", "e", "99999999999000"}, {"COPY", "e", "h"},
      {"PEXPIRETIME", "h"},
      {"TYPE", "e"}, {"TYPE", "none"}, {"TOUCH", "e", "f", "none", "e"},
      {"UNLINK", "f", "none", "g"}, {"EXISTS", "f", "g"},
      // EXPIRE forms and NX XX GT LT
      {"SET", "t", "v"}, {"EXPIRETIME", "t"}, {"EXPIRETIME", "none"},
      {"EXPIREAT", "t", "99999999999", "XX"},
      {"EXPIREAT", "t", "99999999999", "NX"}, {"EXPIRETIME", "t"},
      {"EXPIREAT", "t", "99999999999", "NX"},
      {"EXPIREAT", "t", "99999999990", "GT"},
      {"EXPIREAT", "t", "99999999999", "GT"},
      {"EXPIREAT", "t", "99999999999", "LT"},
      {"EXPIREAT", "t", "99999999998", "LT"}, {"EXPIRETIME", "t"},
      {"EXPIREAT", "t", "99999999999", "XX", "GT"}, {"EXPIRETIME", "t"},
      {"PERSIST", "t"}, {"PERSIST", "t"}, {"PERSIST", "none"},
      {"EXPIREAT", "t", "99999999999", "GT"},
      {"EXPIREAT", "t", "99999999999", "LT"}, {"EXPIRETIME", "t"},
      {"PEXPIREAT", "t", "99999999999999", "NX"},
      {"EXPIRE", "t", "100", "NX", "XX"}, {"EXPIRE", "t", "100", "NX", "GT"},
      {"EXPIRE", "t", "100", "GT", "LT"}, {"EXPIRE", "t", "100", "FOO"},
      {"EXPIRE", "t", "abc", "FOO"}, {"EXPIRE", "t", "abc"},
      {"EXPIREAT", "t", "9223372036854775807"},
      {"PEXPIREAT", "t", "9223372036854775807"}, {"PEXPIRETIME", "t"},
      {"EXPIREAT", "none", "1"}, {"EXPIREAT", "t", "1"}, {"EXISTS", "t"},
      {"SET", "t", "v"}, {"PEXPIREAT", "t", "-5"}, {"EXISTS", "t"},
      {"SET", "t", "v"}, {"EXPIRE", "t", "0"}, {"EXISTS", "t"},
      {"SET", "t", "v"}, {"PEXPIRE", "t", "-1", "XX"}, {"EXISTS", "t"},
      {"RANDOMKEY", "x"}, {"DBSIZE"}, {"FLUSHALL"}, {"RANDOMKEY"},
      {"SET", "only", "1"}, {"RANDOMKEY"}, {"TIME", "x"},
  });
}

}  // namespace
