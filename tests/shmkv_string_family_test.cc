// The string family (server/commands/string_family.cc) in process, and
// against redis-server where types meet: every string command on a key of
// each other type answers as Redis answers (-WRONGTYPE, nil, or a
// replacement), and OBJECT ENCODING names the encoding Redis would use.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/command_harness.h"
#include "tests/support/redis_oracle.h"

namespace {

using shmkv::ValueType;
using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

TEST(StringFamily, BasicsInProcess) {
  CommandHarness h("str");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"SET", "n", "41"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"INCR", "n"}), ":42\r\n");
  EXPECT_EQ(h.Run({"APPEND", "n", "x"}), ":3\r\n");
  EXPECT_EQ(h.Run({"INCR", "n"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(h.Run({"MSET", "a", "1", "b", "2"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"MGET", "a", "nosuch", "b"}),
            "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n");
  EXPECT_EQ(h.Run({"GETDEL", "a"}), "$1\r\n1\r\n");
  EXPECT_EQ(h.Run({"GET", "a"}), "$-1\r\n");
  EXPECT_EQ(h.Run({"SETRANGE", "s", "2", "ab"}), ":4\r\n");
  EXPECT_EQ(h.Run({"GET", "s"}), std::string("$4\r\n\0\0ab\r\n", 10));
}

// Inside MULTI the commands queue, and EXEC applies them whole.
TEST(StringFamily, TransactionsInProcess) {
  CommandHarness h("strtx");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "k", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"INCRBY", "k", "9"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}), "*2\r\n+OK\r\n:10\r\n");
  EXPECT_EQ(h.Run({"GET", "k"}), "$2\r\n10\r\n");
}

// The same keys, made once with Redis's own commands and once written
// into shmkv's store with the type's tag (the families of those types
// come with the next issue; the string commands only look at the tag).
void MakeTypedKeys(Client* redis, CommandHarness* h) {
  ASSERT_EQ(redis->Call({"HSET", "h", "f", "v"}), ":1\r\n");
  ASSERT_EQ(redis->Call({"RPUSH", "l", "a"}), ":1\r\n");
  ASSERT_EQ(redis->Call({"SADD", "st", "m"}), ":1\r\n");
  ASSERT_EQ(redis->Call({"ZADD", "z", "1", "m"}), ":1\r\n");
  ASSERT_TRUE(h->WriteTyped("h", ValueType::kHash, "packed"));
  ASSERT_TRUE(h->WriteTyped("l", ValueType::kList, "packed"));
  ASSERT_TRUE(h->WriteTyped("st", ValueType::kSet, "packed"));
  ASSERT_TRUE(h->WriteTyped("z", ValueType::kZSet, "packed"));
}

void ExpectAsRedis(Client* redis, CommandHarness* h,
                   const std::vector<Cmd>& cmds) {
  for (const Cmd& cmd : cmds) {
    std::string line;
    for (const std::string& w : cmd) line += w + " ";
    EXPECT_EQ(h->Run(cmd), redis->Call(cmd)) << "command: " << line;
  }
}

TEST(StringFamilyVsRedis, OtherTypesAnswerAsRedis) {
  RedisOracle oracle;
  SKIP_WITHOUT_REDIS(oracle);
  Client redis(oracle.port());
  CommandHarness h("strtypes");
  ASSERT_TRUE(h.ok()) << h.error();
  MakeTypedKeys(&redis, &h);
  std::vector<Cmd> cmds;
  for (const char* k : {"h", "l", "st", "z"}) {
    std::string key = k;
    for (Cmd c : std::vector<Cmd>{
             {"GET", key}, {"GETEX", key, "PERSIST"}, {"GETEX", key, "EX", "x"},
             {"GETSET", key, "v"}, {"GETDEL", key}, {"STRLEN", key},
             {"APPEND", key, "x"}, {"INCR", key}, {"DECR", key},
             {"INCRBY", key, "2"}, {"INCRBY", key, "x"}, {"DECRBY", key, "2"},
             {"INCRBYFLOAT", key, "1.5"}, {"INCRBYFLOAT", key, "x"},
             {"SETRANGE", key, "0", "x"}, {"SETRANGE", key, "-1", "x"},
             {"SETRANGE", key, "0", ""}, {"GETRANGE", key, "0", "-1"},
             {"GETRANGE", key, "x", "1"}, {"SUBSTR", key, "0", "1"},
             {"SETBIT", key, "1", "1"}, {"SETBIT", key, "-1", "1"},
             {"GETBIT", key, "1"}, {"BITCOUNT", key}, {"BITCOUNT", key, "x", "1"},
             {"BITPOS", key, "1"}, {"BITPOS", key, "2"}, {"LCS", key, "nosuch"},
             {"LCS", "nosuch", key, "LEN"}, {"MGET", key, "nosuch", key},
             {"SETNX", key, "v"}, {"MSETNX", "fresh", "1", key, "v"},
             {"SET", key, "v", "NX"}, {"SET", key, "v", "GET"},
             {"SET", key, "v", "NX", "GET"}, {"TYPE", key}, {"EXISTS", key},
             {"TTL", key}, {"EXPIRE", key, "100"}, {"TTL", key},
             {"PERSIST", key}, {"TTL", key}}) {
      cmds.push_back(c);
    }
  }
  ExpectAsRedis(&redis, &h, cmds);
  // Each type survives RENAME and COPY, and a plain SET (or SET XX)
  // replaces it with a string.
  ExpectAsRedis(&redis, &h, {
      {"RENAME", "h", "h2"}, {"TYPE", "h2"}, {"TYPE", "h"},
      {"COPY", "h2", "h3"}, {"TYPE", "h3"}, {"RENAMENX", "l", "h3"},
      {"TYPE", "l"}, {"SET", "st", "now a string", "XX"}, {"TYPE", "st"},
      {"GET", "st"}, {"SET", "z", "v", "KEEPTTL"}, {"TYPE", "z"},
      {"SET", "l", "x"}, {"TYPE", "l"}, {"DEL", "h2", "h3"},
      {"EXISTS", "h2", "h3"},
  });
}

TEST(StringFamilyVsRedis, ScanTypeFilters) {
  RedisOracle oracle;
  SKIP_WITHOUT_REDIS(oracle);
  Client redis(oracle.port());
  CommandHarness h("strscan");
  ASSERT_TRUE(h.ok()) << h.error();
  MakeTypedKeys(&redis, &h);
  ExpectAsRedis(&redis, &h, {{"SET", "s", "v"}});
  // One key of each type: each TYPE finds exactly its own.
  ExpectAsRedis(&redis, &h, {
      {"SCAN", "0", "COUNT", "1000", "TYPE", "hash"},
      {"SCAN", "0", "COUNT", "1000", "TYPE", "LIST"},
      {"SCAN", "0", "COUNT", "1000", "TYPE", "set"},
      {"SCAN", "0", "COUNT", "1000", "TYPE", "zset"},
      {"SCAN", "0", "COUNT", "1000", "TYPE", "string"},
      {"SCAN", "0", "COUNT", "1000", "TYPE", "nosuchtype"},
  });
}

TEST(StringFamilyVsRedis, ObjectEncodingAsRedis) {
  RedisOracle oracle;
  SKIP_WITHOUT_REDIS(oracle);
  Client redis(oracle.port());
  CommandHarness h("strenc");
  ASSERT_TRUE(h.ok()) << h.error();
  std::string long45(45, 'x'), long44(44, 'x');
  std::vector<Cmd> cmds = {
      {"SET", "i", "12345"}, {"SET", "neg", "-9223372036854775808"},
      {"SET", "big", "9223372036854775808"}, {"SET", "lead", "007"},
      {"SET", "e44", long44}, {"SET", "e45", long45}, {"SET", "w", "word"},
      {"APPEND", "w", "s"}, {"APPEND", "new", "5"}, {"SETRANGE", "r", "0", "1"},
      {"SETBIT", "b", "3", "1"}, {"SET", "c", "10"}, {"INCR", "c"},
      {"SET", "f", "1"}, {"INCRBYFLOAT", "f", "2"}, {"MSET", "m1", "7", "m2", "x"},
      {"SETNX", "nx", "3"}, {"GETSET", "gs", "4"}, {"SETEX", "se", "100", "5"},
      {"COPY", "w", "wcopy"}, {"RENAME", "f", "f2"}, {"EXPIRE", "w", "100"},
  };
  for (const char* k : {"i", "neg", "big", "lead", "e44", "e45", "w", "new",
                        "r", "b", "c", "f2", "m1", "m2", "nx", "gs", "se",
                        "wcopy", "nosuch"}) {
    cmds.push_back({"OBJECT", "ENCODING", k});
  }
  for (Cmd c : std::vector<Cmd>{{"OBJECT", "NOSUCH", "i"},
                                {"OBJECT", "ENCODING"},
                                {"OBJECT", "ENCODING", "i", "j"},
                                {"OBJECT", "REFCOUNT", "w"},
                                {"OBJECT", "FREQ", "w"},
                                {"OBJECT", "HELP"}}) {
    cmds.push_back(c);
  }
  ExpectAsRedis(&redis, &h, cmds);
}

}  // namespace
