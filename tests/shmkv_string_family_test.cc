// The string family (server/commands/string_family.cc) in process, and
// against redis-server where types meet: every string command on a key of
// each other type answers as Redis answers (-WRONGTYPE, nil, or a
// replacement), and OBJECT ENCODING names the encoding Redis would use.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv::ValueType;
using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;
using Cmds = std::vector<Cmd>;

// The family's statistics ids, as first given: pin a new command's here.
TEST(StringFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("string", {
      {"get", 3}, {"set", 4}, {"getex", 5}, {"getset", 6}, {"getdel", 7},
      {"setnx", 8}, {"setex", 9}, {"psetex", 10}, {"mget", 11}, {"mset", 12},
      {"msetnx", 13}, {"incr", 14}, {"incrby", 15}, {"decr", 16},
      {"decrby", 17}, {"incrbyfloat", 18}, {"append", 19}, {"strlen", 20},
      {"setrange", 21}, {"getrange", 22}, {"substr", 23}, {"setbit", 24},
      {"getbit", 25}, {"bitcount", 26}, {"bitpos", 27}, {"lcs", 28},
      {"bitop", 191}, {"bitfield", 192}, {"bitfield_ro", 193},
  });
}

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
  ExpectSameAsRedis(&h, &redis, cmds);
  // Each type survives RENAME and COPY, and a plain SET (or SET XX)
  // replaces it with a string.
  ExpectSameAsRedis(&h, &redis, {
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
  ExpectSameAsRedis(&h, &redis, {{"SET", "s", "v"}});
  // One key of each type: each TYPE finds exactly its own.
  ExpectSameAsRedis(&h, &redis, {
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
  ExpectSameAsRedis(&h, &redis, cmds);
}

// Every string command with its edge values and error cases,
// compared byte for byte with Redis.
// BITOP of every operation over strings of different lengths, missing
// keys, an empty result (which removes the destination, its TTL with
// it), other types and bad arguments, as Redis answers them.
TEST(StringFamilyVsRedis, BitOpAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("bitopdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string bin("\x00\xff\x0f\xf0\x81", 5);
  ExpectSameAsRedis(&h, redis.port(), {
      {"FLUSHALL"},
      {"SET", "a", "foobar"}, {"SET", "b", "abcdef"}, {"SET", "c", bin},
      {"SET", "s", "x"},
      {"BITOP", "AND", "d", "a", "b"}, {"GET", "d"},
      {"BITOP", "or", "d", "a", "b", "c"}, {"GET", "d"},
      {"BITOP", "Xor", "d", "a", "c", "s"}, {"GET", "d"},
      {"BITOP", "NOT", "d", "c"}, {"GET", "d"}, {"OBJECT", "ENCODING", "d"},
      {"BITOP", "AND", "d", "a", "missing"}, {"GET", "d"},
      {"BITOP", "OR", "d", "missing", "s"}, {"GET", "d"},
      {"BITOP", "XOR", "d", "a", "a"}, {"GET", "d"}, {"STRLEN", "d"},
      {"BITOP", "AND", "d", "d"}, {"GET", "d"},
      {"SET", "t", "v", "EX", "100"}, {"BITOP", "OR", "t", "s"},
      {"TTL", "t"}, {"GET", "t"},
      {"EXPIRE", "t", "100"}, {"BITOP", "OR", "t", "missing", "nothing"},
      {"EXISTS", "t"}, {"BITOP", "OR", "t", "missing"},
      {"SET", "e", ""}, {"BITOP", "NOT", "d", "e"}, {"EXISTS", "d"},
      {"RPUSH", "l", "x"},
      {"BITOP", "AND", "d", "a", "l"}, {"BITOP", "AND", "l", "a"},
      {"TYPE", "l"}, {"BITOP", "NOT", "d", "l"},
      {"BITOP", "NOT", "d", "a", "b"}, {"BITOP", "NOT", "d"},
      {"BITOP", "NAND", "d", "a"}, {"BITOP", "AND", "d"}, {"BITOP", "AND"},
      {"MULTI"}, {"BITOP", "OR", "m", "a", "b"}, {"GET", "m"}, {"EXEC"},
      {"EVAL", "return redis.call('bitop', 'xor', 'z', KEYS[1], KEYS[2])",
       "2", "a", "b"},
      {"GET", "z"},
  });
}

// BITFIELD and BITFIELD_RO: every width at the edges of its range, the
// three overflow rules on SET and INCRBY, #n offsets, fields past the
// string's end and across byte edges, a string grown by writes that all
// fail, other types and every argument error, in the order Redis checks
// them; then random sequences over many seeds.
TEST(StringFamilyVsRedis, BitFieldAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("bitfield");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"FLUSHALL"},
      {"BITFIELD", "k", "GET", "u8", "0"}, {"EXISTS", "k"},
      {"BITFIELD", "k"}, {"EXISTS", "k"},
      {"BITFIELD", "k", "SET", "i8", "0", "-100", "GET", "u8", "0",
       "GET", "i4", "4", "GET", "u1", "7"},
      {"GET", "k"},
      {"BITFIELD", "k", "SET", "u8", "#2", "255", "GET", "u16", "12",
       "GET", "i64", "3", "GET", "u63", "1"},
      {"GET", "k"}, {"STRLEN", "k"},
      {"BITFIELD", "k", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT",
       "INCRBY", "u2", "102", "1", "OVERFLOW", "FAIL", "INCRBY", "u2",
       "102", "5"},
      {"BITFIELD", "k", "OVERFLOW", "WRAP", "INCRBY", "i8", "0", "200",
       "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-1000", "INCRBY", "i8", "0",
       "1000", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "1"},
      {"BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "SET",
       "i8", "8", "200", "SET", "i8", "8", "-200", "OVERFLOW", "WRAP",
       "SET", "u8", "0", "-1", "SET", "i8", "8", "200", "SET", "u3", "0",
       "9"},
      {"BITFIELD", "k", "SET", "i64", "0", "9223372036854775807", "INCRBY",
       "i64", "0", "1", "OVERFLOW", "SAT", "INCRBY", "i64", "0",
       "-9223372036854775808", "INCRBY", "i64", "0", "-5", "OVERFLOW",
       "FAIL", "INCRBY", "i64", "0", "-9223372036854775807"},
      {"BITFIELD", "k", "SET", "u63", "1", "9223372036854775807", "GET",
       "u63", "1", "INCRBY", "u63", "1", "1", "OVERFLOW", "SAT", "INCRBY",
       "u63", "1", "-9223372036854775808"},
      {"GET", "k"},
      // Writes that all fail still grow the string; an unchanged write
      // leaves it as it was.
      {"BITFIELD", "g", "OVERFLOW", "FAIL", "SET", "u2", "20", "9"},
      {"GET", "g"}, {"BITFIELD", "g", "SET", "u2", "0", "0"}, {"GET", "g"},
      {"SET", "t", "ab", "EX", "100"}, {"BITFIELD", "t", "SET", "u8", "8", "99"},
      {"GET", "t"}, {"TTL", "t"},
      {"SET", "n", "12345"}, {"BITFIELD", "n", "GET", "u8", "0"},
      {"BITFIELD", "n", "INCRBY", "u8", "0", "1"}, {"GET", "n"},
      {"OBJECT", "ENCODING", "n"},
      {"BITFIELD_RO", "k", "GET", "u8", "0", "GET", "i16", "#1"},
      {"BITFIELD_RO", "k", "GET", "u8", "0", "SET", "u8", "0", "1"},
      {"BITFIELD_RO", "k", "INCRBY", "u8", "0", "x"},
      {"BITFIELD_RO", "nothere", "GET", "u8", "0"}, {"BITFIELD_RO", "k"},
      {"RPUSH", "l", "x"}, {"BITFIELD", "l", "GET", "u8", "0"},
      {"BITFIELD", "l", "SET", "u8", "0", "1"}, {"BITFIELD", "l"},
      {"BITFIELD_RO", "l", "GET", "u8", "0"},
      {"BITFIELD_RO", "l", "SET", "u8", "0", "1"},
      {"BITFIELD_RO", "l", "INCRBY", "u8", "0", "1", "GET", "u8", "0"},
      {"BITFIELD", "l", "GET", "u99", "0"},
      // Argument errors, in Redis's order.
      {"BITFIELD", "k", "GET", "u8"}, {"BITFIELD", "k", "SET", "u8", "0"},
      {"BITFIELD", "k", "BOGUS", "u8", "0"}, {"BITFIELD", "k", "OVERFLOW"},
      {"BITFIELD", "k", "OVERFLOW", "nope", "GET", "u8", "0"},
      {"BITFIELD", "k", "GET", "u64", "0"}, {"BITFIELD", "k", "GET", "i65", "0"},
      {"BITFIELD", "k", "GET", "i0", "0"}, {"BITFIELD", "k", "GET", "x8", "0"},
      {"BITFIELD", "k", "GET", "", "0"}, {"BITFIELD", "k", "GET", "i08", "0"},
      {"BITFIELD", "k", "GET", "u8", "-1"}, {"BITFIELD", "k", "GET", "u8", "x"},
      {"BITFIELD", "k", "GET", "u8", "4294967296"},
      {"BITFIELD", "k", "GET", "u8", "4294967295"},
      {"BITFIELD", "k", "GET", "u8", "#536870911"},
      {"BITFIELD", "k", "GET", "u8", "#536870912"},
      {"BITFIELD", "k", "GET", "u8", "#-1"}, {"BITFIELD", "k", "GET", "u8", "#"},
      {"BITFIELD", "k", "GET", "u8", "#9223372036854775807"},
      {"BITFIELD", "k", "SET", "u8", "0", "x"},
      {"BITFIELD", "k", "SET", "u8", "0", "1.5"},
      {"BITFIELD", "k", "SET", "x8", "y", "z"},
      {"BITFIELD", "k", "GET", "u8", "0", "SET", "u8", "x", "1"},
      {"BITFIELD"}, {"BITFIELD_RO"},
      {"MULTI"}, {"BITFIELD", "m", "INCRBY", "u4", "0", "3"},
      {"BITFIELD_RO", "m", "GET", "u4", "0"}, {"EXEC"},
      {"EVAL", "return redis.call('bitfield', KEYS[1], 'incrby', 'i5', "
       "'3', '9')", "1", "m"},
      {"GET", "m"},
  });
  // Random fields and rules over a few short strings.
  shmkv_test::Client redis_client(redis.port());
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    Cmds cmds = {{"DEL", "r0", "r1"}};
    for (int i = 0; i < 30; ++i) {
      Cmd cmd = {rng() % 5 == 0 ? "BITFIELD_RO" : "BITFIELD",
                 "r" + std::to_string(rng() % 2)};
      for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) {
        const bool sign = rng() % 2;
        const int bits = 1 + static_cast<int>(rng() % (sign ? 64 : 63));
        std::string type = (sign ? "i" : "u") + std::to_string(bits);
        std::string off = rng() % 4 == 0 ? "#" + std::to_string(rng() % 6)
                                         : std::to_string(rng() % 90);
        static const int64_t kValues[] = {0, 1, -1, 127, 128, -129, 255,
                                          256, INT64_MAX, INT64_MIN, 1000003};
        std::string val = std::to_string(
            rng() % 2 ? kValues[rng() % 11]
                      : static_cast<int64_t>(rng() % 2000) - 1000);
        switch (rng() % 4) {
          case 0: cmd.insert(cmd.end(), {"GET", type, off}); break;
          case 1: cmd.insert(cmd.end(), {"SET", type, off, val}); break;
          case 2: cmd.insert(cmd.end(), {"INCRBY", type, off, val}); break;
          default: {
            static const char* kRules[] = {"WRAP", "SAT", "FAIL"};
            cmd.insert(cmd.end(), {"OVERFLOW", kRules[rng() % 3]});
          }
        }
      }
      cmds.push_back(cmd);
      if (rng() % 5 == 0) cmds.push_back({"GET", "r" + std::to_string(rng() % 2)});
    }
    for (const Cmd& c : cmds) {
      ASSERT_EQ(h.Run(c), redis_client.Call(c))
          << "seed " << seed << ": " << shmkv_test::CommandLine(c);
    }
  }
}

TEST(StringFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("strdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string bin("a\0b\xff\r\n", 6);
  ExpectSameAsRedis(&h, redis.port(), {
      // SET and its options
      {"SET", "k", "v", "GET"}, {"SET", "k", "w", "GET"},
      {"SET", "k", "x", "NX", "GET"}, {"SET", "n1", "x", "XX", "GET"},
      {"SET", "k", "y", "NX", "NX"}, {"SET", "k", "y", "NX", "XX"},
      {"SET", "k", "y", "EX", "10", "PX", "10"},
      {"SET", "k", "y", "KEEPTTL", "EX", "10"},
      {"SET", "k", "y", "EX", "abc", "NX", "XX"}, {"SET", "k", "y", "EX"},
      {"SET", "k", "y", "EXAT", "0"}, {"SET", "k", "y", "PXAT", "1"},
      {"EXISTS", "k"}, {"SET", "k", "y", "PXAT", "99999999999999"},
      {"EXPIRETIME", "k"}, {"PEXPIRETIME", "k"},
      {"SET", "k", "z", "KEEPTTL"}, {"PEXPIRETIME", "k"},
      {"SET", "k", "z", "PERSIST"}, {"SET", "b", bin}, {"GET", "b"},
      {"SET", "e", ""}, {"GET", "e"}, {"STRLEN", "e"}, {"STRLEN", "b"},
      {"STRLEN", "none"},
      // GETEX GETSET GETDEL
      {"GETEX", "none"}, {"GETEX", "k", "PERSIST"}, {"TTL", "k"},
      // A missing key is nil before its time is checked.
      {"GETEX", "none", "EX", "0"}, {"GETEX", "none", "PX", "x"},
      {"GETEX", "none", "EXAT", "-5"}, {"GETEX", "none", "EX"},
      {"GETEX", "k", "EXAT", "99999999999"}, {"EXPIRETIME", "k"},
      {"GETEX", "k", "PERSIST", "EX", "1"}, {"GETEX", "k", "EX", "0"},
      {"GETEX", "k", "EX", "-1"}, {"GETEX", "k", "PX", "x"},
      {"GETEX", "k", "KEEPTTL"}, {"GETEX", "k", "EX"},
      {"GETEX", "k", "PXAT", "1"}, {"EXISTS", "k"},
      {"GETSET", "g", "1"}, {"GETSET", "g", "2"}, {"GET", "g"},
      {"GETDEL", "g"}, {"GETDEL", "g"},
      // SETNX SETEX PSETEX MSETNX
      {"SETNX", "sn", "1"}, {"SETNX", "sn", "2"}, {"GET", "sn"},
      {"SETEX", "se", "0", "v"}, {"SETEX", "se", "-5", "v"},
      {"SETEX", "se", "x", "v"}, {"SETEX", "se", "9223372036854775", "v"},
      {"PSETEX", "se", "9223372036854775807", "v"},
      {"PSETEX", "se", "0", "v"}, {"SETEX", "se", "100", "v"},
      {"TTL", "se"}, {"MSETNX", "m1", "a", "m2", "b"},
      {"MSETNX", "m2", "c", "m3", "d"}, {"MGET", "m1", "m2", "m3"},
      {"MSETNX", "m4"}, {"MSET", "m4"}, {"MSET", "m4", "1", "m5"},
      // ranges
      {"SET", "r", "Hello World"}, {"GETRANGE", "r", "0", "4"},
      {"GETRANGE", "r", "-5", "-1"}, {"GETRANGE", "r", "-1", "-5"},
      {"GETRANGE", "r", "5", "1"}, {"GETRANGE", "r", "0", "100"},
      {"GETRANGE", "r", "-100", "-50"}, {"GETRANGE", "r", "100", "200"},
      {"GETRANGE", "none", "0", "-1"}, {"GETRANGE", "r", "a", "1"},
      {"GETRANGE", "e", "0", "-1"}, {"SUBSTR", "r", "6", "-1"},
      {"SETRANGE", "r", "6", "Redis"}, {"GET", "r"},
      {"SETRANGE", "r", "20", "!"}, {"GET", "r"},
      {"SETRANGE", "sr", "3", ""}, {"EXISTS", "sr"},
      {"SETRANGE", "sr", "3", "x"}, {"GET", "sr"},
      {"SETRANGE", "sr", "-1", "x"}, {"SETRANGE", "sr", "x", "x"},
      {"SETRANGE", "r", "0", ""},
      // bits
      {"SETBIT", "bits", "7", "1"}, {"SETBIT", "bits", "7", "0"},
      {"SETBIT", "bits", "7", "1"}, {"SETBIT", "bits", "100", "1"},
      {"GET", "bits"}, {"GETBIT", "bits", "7"}, {"GETBIT", "bits", "6"},
      {"GETBIT", "bits", "100000"}, {"GETBIT", "none", "3"},
      {"SETBIT", "bits", "-1", "1"}, {"SETBIT", "bits", "4294967296", "1"},
      {"SETBIT", "bits", "1", "2"}, {"SETBIT", "bits", "1", "x"},
      {"GETBIT", "bits", "-1"}, {"GETBIT", "bits", "x"},
      {"SET", "bc", "foobar"}, {"BITCOUNT", "bc"},
      {"BITCOUNT", "bc", "0", "0"}, {"BITCOUNT", "bc", "1", "1"},
      {"BITCOUNT", "bc", "1", "1", "BYTE"}, {"BITCOUNT", "bc", "5", "30", "BIT"},
      {"BITCOUNT", "bc", "-2", "-1"}, {"BITCOUNT", "bc", "-1", "-2"},
      {"BITCOUNT", "bc", "-100", "100"}, {"BITCOUNT", "bc", "0"},
      {"BITCOUNT", "bc", "0", "1", "WORD"}, {"BITCOUNT", "none", "x", "y"},
      {"BITCOUNT", "bc", "x", "1"}, {"BITCOUNT", "e"},
      {"BITCOUNT", "bc", "-3", "-1", "BIT"},
      {"SET", "bp", std::string("\xff\xf0\x00", 3)}, {"BITPOS", "bp", "0"},
      {"BITPOS", "bp", "1"}, {"BITPOS", "bp", "1", "1"},
      {"BITPOS", "bp", "1", "2"}, {"BITPOS", "bp", "0", "0", "0"},
      {"BITPOS", "bp", "0", "0", "-1"}, {"BITPOS", "bp", "1", "7", "15", "BIT"},
      {"BITPOS", "bp", "0", "2", "-1", "BIT"}, {"BITPOS", "bp", "1", "-1"},
      {"BITPOS", "bp", "2"}, {"BITPOS", "bp", "1", "0", "1", "NIBBLE"},
      {"BITPOS", "none", "0"}, {"BITPOS", "none", "1"}, {"BITPOS", "e", "0"},
      {"SET", "ones", std::string("\xff\xff", 2)}, {"BITPOS", "ones", "0"},
      {"BITPOS", "ones", "0", "0", "-1"}, {"BITPOS", "ones", "0", "1"},
      {"BITPOS", "ones", "0", "3", "12", "BIT"}, {"BITPOS", "bp", "x"},
      // LCS
      {"SET", "l1", "ohmytext"}, {"SET", "l2", "mynewtext"},
      {"LCS", "l1", "l2"}, {"LCS", "l1", "l2", "LEN"},
      {"LCS", "l1", "l2", "IDX"}, {"LCS", "l1", "l2", "IDX", "WITHMATCHLEN"},
      {"LCS", "l1", "l2", "IDX", "MINMATCHLEN", "4"},
      {"LCS", "l1", "l2", "IDX", "MINMATCHLEN", "-3", "WITHMATCHLEN"},
      {"LCS", "l1", "l2", "LEN", "IDX"}, {"LCS", "l1", "l2", "FOO"},
      {"LCS", "l1", "none"}, {"LCS", "none", "none", "IDX"},
      {"LCS", "l1", "l2", "MINMATCHLEN"}, {"LCS", "l1", "l2", "MINMATCHLEN", "x"},
      {"SET", "l3", "abcabcabc"}, {"SET", "l4", "cbacba"},
      {"LCS", "l3", "l4", "IDX", "WITHMATCHLEN"},
      // counters
      {"INCRBYFLOAT", "f", "10.5"}, {"INCRBYFLOAT", "f", "0.1"},
      {"INCRBYFLOAT", "f", "-5.0e3"}, {"INCRBYFLOAT", "f", "5.0e3"},
      {"INCRBYFLOAT", "f", "1e400"}, {"INCRBYFLOAT", "f", "inf"},
      {"INCRBYFLOAT", "f", "nan"}, {"INCRBYFLOAT", "f", " 1"},
      {"INCRBYFLOAT", "f", "1x"}, {"INCRBYFLOAT", "f", ""},
      // A zero byte ends no float: the whole argument or value must parse.
      {"INCRBYFLOAT", "f", std::string("1\0zz", 4)},
      {"INCRBYFLOAT", "f", std::string("\0", 1)},
      {"SET", "fz", std::string("2\0", 2)}, {"INCRBYFLOAT", "fz", "1"},
      {"SET", "fz", std::string("\0 y9", 4)}, {"INCRBYFLOAT", "fz", "1"},
      {"INCRBYFLOAT", "r", "1"}, {"INCRBYFLOAT", "e", "1"},
      {"SET", "i", "10"}, {"INCRBYFLOAT", "i", "-10"},
      {"INCRBYFLOAT", "i", "3"}, {"SET", "i", "9223372036854775807"},
      {"INCR", "i"}, {"DECRBY", "i", "-9223372036854775808"},
      {"INCRBY", "i", "x"}, {"SET", "i", " 1"}, {"INCR", "i"},
      {"SET", "i", "01"}, {"INCR", "i"},
      // Integer arguments follow the same rule as values: no '+', no
      // leading zero, no "-0" (strtoll took all three).
      {"SET", "i", "7"}, {"INCRBY", "i", "+5"}, {"INCRBY", "i", "05"},
      {"DECRBY", "i", "-0"}, {"INCRBY", "i", "0"}, {"GETRANGE", "i", "00", "1"},
      {"SETRANGE", "i", "01", "x"}, {"BITCOUNT", "i", "0", "+1"},
      {"SET", "i", "v", "EX", "010"}, {"SET", "i", "v", "PX", "+100"},
      // the same unit again replaces the time (the first is never read)
      {"SET", "r", "v", "PXAT", "x", "PXAT", "4102444800000"},
      {"SET", "r", "v", "EXAT", "0", "EXAT", "4102444802"},
      {"EXPIRETIME", "r"},
      {"SET", "r", "v", "EX", "10", "PX", "100"},
      {"GETEX", "r", "EXAT", "-1", "EXAT", "4102444801"}, {"EXPIRETIME", "r"},
      {"SET", "i", "18446744073709551616"}, {"INCR", "i"},
      {"SET", "i", "99999999999999999999"}, {"INCR", "i"},
      {"SET", "i", "-9223372036854775808"}, {"INCR", "i"}, {"DECR", "i"},
      {"SET", "i", "-9223372036854775809"}, {"INCR", "i"},
      {"APPEND", "ap", "x"},
      {"APPEND", "ap", bin}, {"GET", "ap"},
  });
}

}  // namespace
