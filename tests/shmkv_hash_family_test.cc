// The hash family (server/commands/hash_family.cc) in process and against
// redis-server: every command with its edge values and errors, the
// listpack-to-hashtable conversion Redis makes, random sequences over a
// few hashes, and damaged value bytes answered with an error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <chrono>
#include <map>
#include <thread>
#include <cstring>
#include <set>
#include <random>
#include <string>
#include <vector>

#include "server/commands/bucket_hints.h"
#include "server/commands/hash_value.h"
#include "server/commands/registry.h"
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
TEST(HashFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("hash", {
      {"hset", 67}, {"hsetnx", 68}, {"hget", 69}, {"hmset", 70},
      {"hmget", 71}, {"hdel", 72}, {"hlen", 73}, {"hstrlen", 74},
      {"hexists", 75}, {"hgetall", 76}, {"hkeys", 77}, {"hvals", 78},
      {"hincrby", 79}, {"hincrbyfloat", 80}, {"hrandfield", 81},
      {"hscan", 82},
  });
}

TEST(HashFamily, BasicsInProcess) {
  CommandHarness h("hash");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h.Run({"HSET", "s", "user", "ann", "visits", "1"}), ":2\r\n");
  EXPECT_EQ(h.Run({"HINCRBY", "s", "visits", "41"}), ":42\r\n");
  EXPECT_EQ(h.Run({"HGET", "s", "visits"}), "$2\r\n42\r\n");
  EXPECT_EQ(h.Run({"TYPE", "s"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "s"}), "$8\r\nlistpack\r\n");
  EXPECT_EQ(h.Run({"GET", "s"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(h.Run({"HDEL", "s", "user", "visits"}), ":2\r\n");
  EXPECT_EQ(h.Run({"EXISTS", "s"}), ":0\r\n") << "the last field took the key";
  // A transaction sees its own hash writes.
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"HSET", "t", "f", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"HINCRBYFLOAT", "t", "f", "0.5"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}), "*2\r\n:1\r\n$3\r\n1.5\r\n");
}

// Value bytes that do not unpack (another process's damage) are an
// error for every hash command, never a crash or a misread.
TEST(HashFamily, DamagedBytesAreAnError) {
  CommandHarness h("hashbad");
  ASSERT_TRUE(h.ok()) << h.error();
  std::mt19937_64 rng(7);
  std::string good;
  shmkv::Pack({"f", "v", "g", "w"}, &good);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = good;
    switch (i % 3) {
      case 0: bytes[rng() % bytes.size()] = static_cast<char>(rng()); break;
      case 1: bytes.resize(rng() % bytes.size()); break;
      default:
        bytes.resize(rng() % 12);
        for (char& ch : bytes) ch = static_cast<char>(rng());
    }
    ASSERT_TRUE(h.WriteTyped("d", ValueType::kHash, bytes));
    for (const Cmd& cmd : {Cmd{"HGETALL", "d"}, Cmd{"HSET", "d", "x", "1"},
                           Cmd{"HDEL", "d", "f"}, Cmd{"HLEN", "d"},
                           Cmd{"HRANDFIELD", "d", "-3"}, Cmd{"HSCAN", "d", "0"},
                           Cmd{"HINCRBY", "d", "f", "1"}}) {
      std::string reply = h.Run(cmd);
      ASSERT_FALSE(reply.empty()) << CommandLine(cmd);
      std::vector<std::string_view> items;
      if (!shmkv::Unpack(bytes, &items) || items.size() % 2 != 0) {
        EXPECT_EQ(reply, "-ERR the value of this key is damaged (shmc check)"
                         "\r\n") << CommandLine(cmd);
      }
    }
  }
}

TEST(HashFamily, PackedRoundTrips) {
  std::vector<std::string> strings = {"", "a", std::string(200, 'x'),
                                      std::string("\0\xff", 2),
                                      std::string(70000, 'y')};
  std::vector<std::string_view> in(strings.begin(), strings.end());
  std::string bytes;
  shmkv::Pack(in, &bytes);
  std::vector<std::string_view> out;
  ASSERT_TRUE(shmkv::Unpack(bytes, &out));
  EXPECT_EQ(out, in);
  // Any strict prefix, and any extra byte, is refused.
  for (size_t n = 0; n < bytes.size(); n += 97) {
    EXPECT_FALSE(shmkv::Unpack(std::string_view(bytes.data(), n), &out)) << n;
    EXPECT_TRUE(out.empty());
  }
  EXPECT_FALSE(shmkv::Unpack(bytes + "z", &out));
  // A count past what the bytes could hold is refused before anything
  // is reserved for it.
  EXPECT_FALSE(shmkv::Unpack(std::string("\xff\xff\xff\xff\x0f", 5), &out));
  // The reader: the same strings one at a time, and Done() only when the
  // bytes were exactly them.
  shmkv::PackedReader r(bytes);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.count(), in.size());
  std::string_view s;
  for (std::string_view want : in) {
    EXPECT_FALSE(r.Done());
    ASSERT_TRUE(r.Next(&s));
    EXPECT_EQ(s, want);
  }
  EXPECT_FALSE(r.Next(&s));
  EXPECT_TRUE(r.Done());
  const std::string plus = bytes + "z";  // the reader views it: it must live
  shmkv::PackedReader longer(plus);
  while (longer.Next(&s)) {
  }
  EXPECT_FALSE(longer.Done()) << "a byte after the last string";
  shmkv::PackedReader cut(std::string_view(bytes.data(), bytes.size() - 1));
  size_t got = 0;
  while (cut.Next(&s)) ++got;
  EXPECT_EQ(got, in.size() - 1) << "the last string overruns";
  EXPECT_FALSE(cut.Done());
  EXPECT_FALSE(shmkv::PackedReader(std::string_view()).ok());
  // The writer makes Pack's bytes, after what *out held, whether it was
  // sized ahead for them, for none (growing item by item) or for more.
  for (size_t room : {size_t{0}, size_t{3}, bytes.size(), 4 * bytes.size()}) {
    std::string w = "head";
    shmkv::PackedWriter pw(&w, in.size(), room);
    for (std::string_view item : in) pw.Add(item);
    pw.Finish();
    EXPECT_EQ(w, "head" + bytes) << room;
  }
}

// Every hash command with its edge values and errors, byte for byte.
TEST(HashFamilyVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("hashdiff");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string bin("a\0b\xff\r\n", 6);
  const std::string big(65, 'x');
  ExpectSameAsRedis(&h, redis.port(), {
      {"HSET", "h"}, {"HSET", "h", "f"}, {"HSET", "h", "f", "v", "g"},
      {"HSET", "h", "f", "1", "g", "2", "f", "3"}, {"HGETALL", "h"},
      {"HSET", "h", "f", "4"}, {"HGET", "h", "f"}, {"HGET", "h", "none"},
      {"HGET", "none", "f"}, {"HMSET", "h", "a", "1", "b"},
      {"HMSET", "h", "a", "1", "b", "2"}, {"HMGET", "h", "a", "x", "b"},
      {"HMGET", "none", "a", "b"}, {"HSETNX", "h", "a", "9"},
      {"HSETNX", "h", "c", "9"}, {"HSETNX", "h2", bin, bin},
      {"HGET", "h2", bin}, {"HLEN", "h"}, {"HLEN", "none"},
      {"HSTRLEN", "h", "c"}, {"HSTRLEN", "h", "none"},
      {"HSTRLEN", "none", "f"}, {"HEXISTS", "h", "a"},
      {"HEXISTS", "h", "zz"}, {"HEXISTS", "none", "a"}, {"HKEYS", "h"},
      {"HVALS", "h"}, {"HKEYS", "none"}, {"HVALS", "none"},
      {"HGETALL", "none"}, {"HDEL", "h", "a", "a", "zz"}, {"HDEL", "none", "a"},
      {"HGETALL", "h"}, {"HSET", "e", "", ""}, {"HGETALL", "e"},
      {"HDEL", "e", ""}, {"EXISTS", "e"},
      // counters
      {"HINCRBY", "n", "i", "5"}, {"HINCRBY", "n", "i", "-7"},
      {"HINCRBY", "n", "i", "x"}, {"HINCRBY", "n", "i", "01"},
      {"HINCRBY", "n", "i", "9223372036854775807"},
      {"HSET", "n", "max", "9223372036854775807"},
      {"HINCRBY", "n", "max", "1"}, {"HINCRBY", "n", "max", "0"},
      {"HSET", "n", "min", "-9223372036854775808"},
      {"HINCRBY", "n", "min", "-1"}, {"HSET", "n", "s", "abc"},
      {"HINCRBY", "n", "s", "1"}, {"HSET", "n", "sp", " 1"},
      {"HINCRBY", "n", "sp", "1"}, {"HINCRBYFLOAT", "n", "s", "1"},
      {"HINCRBYFLOAT", "n", "f", "10.5"}, {"HINCRBYFLOAT", "n", "f", "0.1"},
      {"HINCRBYFLOAT", "n", "f", "-5.0e3"}, {"HINCRBYFLOAT", "n", "f", "x"},
      {"HINCRBYFLOAT", "n", "f", "inf"}, {"HINCRBYFLOAT", "n", "f", "-inf"},
      {"HINCRBYFLOAT", "n", "f", "nan"}, {"HINCRBYFLOAT", "n", "f", ""},
      {"HINCRBYFLOAT", "n", "f", "1e400"}, {"HINCRBYFLOAT", "n", "i", "1.5"},
      {"HSET", "n", "huge", "1e308"}, {"HINCRBYFLOAT", "n", "huge", "1e308"},
      {"HINCRBYFLOAT", "n", "huge", "1"}, {"HGET", "n", "huge"},
      {"HINCRBYFLOAT", "n", "z", "0"}, {"HINCRBYFLOAT", "n", "z", "-0.0"},
      {"HMGET", "n", "i", "max", "min", "s", "sp", "f", "huge", "z"},
      {"OBJECT", "ENCODING", "n"},
      // the listpack limits: 64-byte fields and values (512 fields below)
      {"HSET", "lp", "f", "v"}, {"OBJECT", "ENCODING", "lp"},
      {"HSET", "lp", "g", big}, {"OBJECT", "ENCODING", "lp"},
      {"HDEL", "lp", "g"}, {"OBJECT", "ENCODING", "lp"},
      {"HSET", "lp2", big, "v"}, {"OBJECT", "ENCODING", "lp2"},
      {"HSET", "lp3", "a", big, "a", "short"}, {"OBJECT", "ENCODING", "lp3"},
      {"HSETNX", "lp4", "a", big}, {"OBJECT", "ENCODING", "lp4"},
      {"HSET", "lp5", "a", "1"}, {"HSETNX", "lp5", "a", big},
      {"OBJECT", "ENCODING", "lp5"}, {"HINCRBY", "lp6", big, "1"},
      {"OBJECT", "ENCODING", "lp6"}, {"HINCRBYFLOAT", "lp7", "x", "1e100"},
      {"OBJECT", "ENCODING", "lp7"}, {"HGET", "lp7", "x"},
      // HRANDFIELD's arguments, and what does not depend on chance
      {"HRANDFIELD", "none"}, {"HRANDFIELD", "none", "3"},
      {"HRANDFIELD", "none", "x"}, {"HRANDFIELD", "h", "x"},
      {"HRANDFIELD", "h", "1", "withvalue"},
      {"HRANDFIELD", "h", "1", "withvalues", "x"},
      {"HRANDFIELD", "h", "-9223372036854775808"},
      {"HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES"},
      {"HRANDFIELD", "h", "4611686018427387904", "withvalues"},
      {"HRANDFIELD", "h", "0"}, {"HRANDFIELD", "h", "0", "withvalues"},
      {"HRANDFIELD", "h", "100"}, {"HRANDFIELD", "h", "100", "WITHVALUES"},
      {"HRANDFIELD", "e", "5"}, {"HRANDFIELD", "h2", "-2"},
      // HSCAN: a listpack returns everything at once
      {"HSCAN", "h", "0"}, {"HSCAN", "h", "0", "MATCH", "[cf]*"},
      {"HSCAN", "h", "7"}, {"HSCAN", "h", "x"}, {"HSCAN", "h", "0", "COUNT", "0"},
      {"HSCAN", "h", "0", "COUNT", "x"}, {"HSCAN", "h", "0", "TYPE", "string"},
      {"HSCAN", "h", "0", "MATCH"}, {"HSCAN", "none", "0"},
      // A missing key's scan is empty before its options are read; a key
      // of another type is WRONGTYPE before them; the cursor comes first.
      {"HSCAN", "none", "0", "COUNT", "x"}, {"HSCAN", "none", "0", "FOO"},
      {"HSCAN", "none", "x", "FOO"}, {"SET", "str2", "v"},
      {"HSCAN", "str2", "0", "COUNT", "0"},
      {"SSCAN", "none", "0", "COUNT", "0"}, {"SSCAN", "str2", "0", "FOO"},
      {"ZSCAN", "none", "0", "MATCH"}, {"ZSCAN", "str2", "0", "COUNT", "x"},
      {"HSCAN", "h", "0", "COUNT", "1", "MATCH", "f"},
      // every hash command on a string, every string command on a hash
      {"SET", "str", "v"}, {"HSET", "str", "f", "v"}, {"HGET", "str", "f"},
      {"HMGET", "str", "f"}, {"HDEL", "str", "f"}, {"HLEN", "str"},
      {"HGETALL", "str"}, {"HKEYS", "str"}, {"HVALS", "str"},
      {"HEXISTS", "str", "f"}, {"HSTRLEN", "str", "f"},
      {"HINCRBY", "str", "f", "1"}, {"HINCRBYFLOAT", "str", "f", "1"},
      {"HINCRBY", "str", "f", "x"}, {"HSETNX", "str", "f", "v"},
      {"HMSET", "str", "f", "v"}, {"HRANDFIELD", "str"},
      {"HRANDFIELD", "str", "2"}, {"HRANDFIELD", "str", "0"},
      {"HSCAN", "str", "0"}, {"HSCAN", "str", "x"},
      {"GET", "h"}, {"APPEND", "h", "x"}, {"INCR", "h"}, {"STRLEN", "h"},
      {"SET", "h", "now a string"}, {"TYPE", "h"},
      // keys of any type: TTL kept by writes, RENAME, COPY
      {"HSET", "t", "f", "v"}, {"PEXPIREAT", "t", "4102444800000"},
      {"HSET", "t", "g", "w"}, {"HDEL", "t", "f"}, {"PEXPIRETIME", "t"},
      {"HINCRBY", "t", "n", "1"}, {"PEXPIRETIME", "t"}, {"RENAME", "t", "t2"},
      {"HGETALL", "t2"}, {"PEXPIRETIME", "t2"}, {"COPY", "t2", "t3"},
      {"HGETALL", "t3"}, {"TYPE", "t3"}, {"OBJECT", "ENCODING", "t3"},
      {"DEL", "t2", "t3"}, {"EXISTS", "t2", "t3"},
      // transactions
      {"MULTI"}, {"HSET", "x", "a", "1"}, {"HINCRBY", "x", "a", "x"},
      {"HINCRBY", "x", "a", "2"}, {"HGETALL", "x"}, {"EXEC"},
      {"MULTI"}, {"HSET", "x"}, {"HSET", "x", "b", "2"}, {"EXEC"},
      {"HGETALL", "x"},
  });
}

// The conversion past 512 fields, and every field kept in order.
TEST(HashFamilyVsRedis, ManyFieldsConvertOnce) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("hashmany");
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv_test::Commands cmds;
  for (int i = 0; i < 514; ++i) {
    cmds.push_back({"HSET", "m", "f" + std::to_string(i), std::to_string(i)});
    if (i >= 510) cmds.push_back({"OBJECT", "ENCODING", "m"});
  }
  for (int i = 0; i < 513; ++i) {
    cmds.push_back({"HDEL", "m", "f" + std::to_string(i)});
  }
  cmds.push_back({"OBJECT", "ENCODING", "m"});
  cmds.push_back({"HGETALL", "m"});
  cmds.push_back({"HLEN", "m"});
  ExpectSameAsRedis(&h, redis.port(), cmds);
  // Past 512 fields Redis's order is its table's; the sets agree.
  Client c(redis.port());
  for (int i = 0; i < 600; ++i) {
    Cmd set = {"HSET", "big", "k" + std::to_string(i), std::to_string(i * 7)};
    ASSERT_EQ(h.Run(set), c.Call(set));
  }
  auto sorted_lines = [](const std::string& reply) {
    std::vector<std::string> lines;
    size_t at = 0;
    while (at < reply.size()) {
      size_t e = reply.find("\r\n", at);
      lines.push_back(reply.substr(at, e - at));
      at = e + 2;
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  for (const Cmd& cmd : {Cmd{"HKEYS", "big"}, Cmd{"HVALS", "big"},
                         Cmd{"HGETALL", "big"}}) {
    EXPECT_EQ(sorted_lines(h.Run(cmd)), sorted_lines(c.Call(cmd)))
        << CommandLine(cmd);
  }
  EXPECT_EQ(h.Run({"HLEN", "big"}), c.Call({"HLEN", "big"}));
}

// HRANDFIELD's random answers: the right number of fields, each one of
// the hash's, distinct for a positive count, values beside their fields.
TEST(HashFamily, RandomFieldsAreTheHashs) {
  CommandHarness h("hashrand");
  ASSERT_TRUE(h.ok()) << h.error();
  for (int i = 0; i < 10; ++i) {
    std::string f = "f" + std::to_string(i);
    ASSERT_EQ(h.Run({"HSET", "h", f, "v" + std::to_string(i)}), ":1\r\n");
  }
  auto bulks = shmkv_test::BulkElements;
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> three = bulks(h.Run({"HRANDFIELD", "h", "3"}));
    ASSERT_EQ(three.size(), 3u);
    std::sort(three.begin(), three.end());
    EXPECT_EQ(std::unique(three.begin(), three.end()), three.end());
    std::vector<std::string> rep =
        bulks(h.Run({"HRANDFIELD", "h", "-25", "WITHVALUES"}));
    ASSERT_EQ(rep.size(), 50u);
    for (size_t i = 0; i < rep.size(); i += 2) {
      EXPECT_EQ("v" + rep[i].substr(1), rep[i + 1]);
    }
    std::string one = h.Run({"HRANDFIELD", "h"});
    EXPECT_EQ(one.substr(0, 5), "$2\r\nf") << one;
  }
}

// A hash past the listpack limits lives in buckets: every field is found,
// HLEN is right at every step, a full HSCAN returns every field, and the
// buckets stay near their target size as the hash grows and shrinks.
TEST(HashFamily, LargeHashesLiveInBuckets) {
  CommandHarness h("hashbig", 200000, 256ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  const int kFields = 50000;
  for (int i = 0; i < kFields; ++i) {
    std::string f = "field:" + std::to_string(i);
    ASSERT_EQ(h.Run({"HSET", "big", f, "v" + std::to_string(i)}), ":1\r\n")
        << i;
  }
  EXPECT_EQ(h.Run({"HLEN", "big"}), ":50000\r\n");
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "big"}), "$9\r\nhashtable\r\n");
  uint64_t parts = h.store()->Parts();
  EXPECT_GE(parts, uint64_t{kFields} / shmkv::cmd::HashValue::kBucketFields);
  EXPECT_LE(parts, 2 * uint64_t{kFields} / shmkv::cmd::HashValue::kBucketFields);
  EXPECT_EQ(h.store()->Keys(), 1u);
  // INFO counts the buckets, and the index they fill with the key.
  std::string info = h.Run({"INFO", "memory"});
  EXPECT_NE(info.find("collection_parts:" + std::to_string(parts) + "\r\n"),
            std::string::npos) << info;
  char fill[64];
  std::snprintf(fill, sizeof(fill), "key_fill_pct:%.2f\r\n",
                100.0 * (parts + 1) / 200000);
  EXPECT_NE(info.find(fill), std::string::npos) << info;
  std::mt19937_64 rng(3);
  for (int k = 0; k < 2000; ++k) {
    int i = static_cast<int>(rng() % kFields);
    std::string v = "v" + std::to_string(i);
    ASSERT_EQ(h.Run({"HGET", "big", "field:" + std::to_string(i)}),
              "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n");
  }
  // Every field, through HSCAN pages of about 100.
  std::set<std::string> seen;
  std::string cursor = "0";
  size_t calls = 0;
  do {
    std::string reply = h.Run({"HSCAN", "big", cursor, "COUNT", "100"});
    ++calls;
    size_t p = reply.find("\r\n", 4);
    size_t q = reply.find("\r\n", p + 2);
    cursor = reply.substr(p + 2, q - p - 2);
    for (size_t at = reply.find("field:"); at != std::string::npos;
         at = reply.find("field:", at + 1)) {
      seen.insert(reply.substr(at, reply.find("\r\n", at) - at));
    }
  } while (cursor != "0" && calls < 100000);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kFields));
  EXPECT_LT(calls, 2u * kFields / 100 + 10);
  // Half removed: the rest still found, HLEN follows.
  for (int i = 0; i < kFields; i += 2) {
    ASSERT_EQ(h.Run({"HDEL", "big", "field:" + std::to_string(i)}), ":1\r\n");
  }
  EXPECT_EQ(h.Run({"HLEN", "big"}), ":25000\r\n");
  EXPECT_EQ(h.Run({"HEXISTS", "big", "field:2"}), ":0\r\n");
  EXPECT_EQ(h.Run({"HGET", "big", "field:3"}), "$2\r\nv3\r\n");
  std::string all = h.Run({"HGETALL", "big"});
  EXPECT_EQ(all.substr(0, 8), "*50000\r\n");
  // COPY gets buckets of its own; DEL takes every bucket with the key.
  EXPECT_EQ(h.Run({"COPY", "big", "copy"}), ":1\r\n");
  EXPECT_EQ(h.Run({"HSET", "copy", "field:3", "changed"}), ":0\r\n");
  EXPECT_EQ(h.Run({"HGET", "big", "field:3"}), "$2\r\nv3\r\n");
  EXPECT_EQ(h.Run({"RENAME", "big", "moved"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"HGET", "moved", "field:3"}), "$2\r\nv3\r\n");
  EXPECT_EQ(h.Run({"DEL", "moved", "copy"}), ":2\r\n");
  for (int i = 0; i < 100 && h.store()->Parts() > 0; ++i) {
    h.store()->Sweep(1 << 20);
  }
  EXPECT_EQ(h.store()->Parts(), 0u);
  EXPECT_EQ(h.store()->Keys(), 0u);
}

// The read-ahead hints (server/commands/bucket_hints.h): once a large
// hash, set or sorted set has been opened, the part the hint names for a
// field is the bucket that holds it (a sorted set's member table being
// every other part); the commands that look fields up name them.
TEST(HashFamily, BucketHintsNameTheBucketAFieldIsIn) {
  CommandHarness h("hints", 100000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  std::vector<std::string> hset = {"HSET", "bh"}, sadd = {"SADD", "bs"},
                           zadd = {"ZADD", "bz"};
  for (int i = 0; i < 3000; ++i) {
    const std::string f = "f" + std::to_string(i);
    hset.insert(hset.end(), {f, "v"});
    sadd.push_back(f);
    zadd.insert(zadd.end(), {std::to_string(i), f});
  }
  for (const auto& cmd : {hset, sadd, zadd}) h.Run(cmd);
  EXPECT_EQ(h.Run({"HGET", "bh", "f1"}), "$1\r\nv\r\n");
  EXPECT_EQ(h.Run({"SISMEMBER", "bs", "f1"}), ":1\r\n");
  EXPECT_EQ(h.Run({"ZSCORE", "bz", "f1"}), "$1\r\n1\r\n");
  const uint32_t db = h.store()->db();
  for (const char* key : {"bh", "bs", "bz"}) {
    std::set<uint64_t> parts;
    for (int i = 0; i < 3000; ++i) {
      const std::string f = "f" + std::to_string(i);
      uint64_t id = 0, part = 0;
      ASSERT_TRUE(shmkv::cmd::Hints().Part(db, key, f, &id, &part)) << key;
      std::string bytes;
      ASSERT_TRUE(h.store()->GetPart(id, part, &bytes)) << key << " " << f;
      std::vector<std::string_view> items;
      ASSERT_TRUE(shmkv::Unpack(bytes, &items));
      EXPECT_NE(std::find(items.begin(), items.end(), f), items.end())
          << key << " " << f;
      if (std::string(key) == "bz") {
        EXPECT_EQ(part % 2, 0u);
      }
      parts.insert(part);
    }
    EXPECT_GT(parts.size(), 20u) << key;  // spread over the buckets
  }
  // A key never opened has no hint; another database's is another key.
  uint64_t id = 0, part = 0;
  EXPECT_FALSE(shmkv::cmd::Hints().Part(db, "none", "f1", &id, &part));
  EXPECT_FALSE(shmkv::cmd::Hints().Part(db + 1, "bh", "f1", &id, &part));
  // The arguments each command looks up.
  auto fields = [](const std::vector<std::string>& args) {
    const shmkv::cmd::CommandRow* row = shmkv::cmd::Commands().Find(args[0]);
    std::vector<size_t> at;
    shmkv::cmd::BucketHints::ForEachField(*row, args.size(),
                                          [&](size_t i) { at.push_back(i); });
    return at;
  };
  EXPECT_EQ(fields({"hget", "k", "f"}), (std::vector<size_t>{2}));
  EXPECT_EQ(fields({"hmget", "k", "a", "b", "c"}),
            (std::vector<size_t>{2, 3, 4}));
  EXPECT_EQ(fields({"hset", "k", "a", "1", "b", "2"}),
            (std::vector<size_t>{2, 4}));
  EXPECT_EQ(fields({"zrank", "k", "m"}), (std::vector<size_t>{2}));
  EXPECT_EQ(fields({"get", "k"}), (std::vector<size_t>{}));
  EXPECT_EQ(fields({"lindex", "k", "0"}), (std::vector<size_t>{}));
}

// Workers SIGKILLed anywhere while they count into, grow, shrink and copy
// a large hash: every acknowledged HINCRBY is there (the one in flight at
// the kill is there or not, never half), HLEN always equals the fields
// the buckets hold, and once swept every part left belongs to a key.
TEST(HashFamily, KilledWorkersLoseNoAcknowledgedWrite) {
  CommandHarness h("hashkill", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  constexpr int kCounters = 40;
  for (int i = 0; i < 2000; ++i) {
    ASSERT_EQ(h.Run({"HSET", "h", "base:" + std::to_string(i), "x"}),
              ":1\r\n");
  }
  std::deque<shmkv_test::AckedCount> ctr(kCounters);
  for (const auto& c : ctr) ASSERT_TRUE(c.ok());
  std::mt19937_64 rng(5);
  for (int round = 0; round < 15; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 7919 + 1, 30 + rng() % 150,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          int k = static_cast<int>(r() % kCounters);
          switch (r() % 6) {
            case 0: case 1: case 2: {
              ctr[k].Begin();
              std::string reply =
                  w.Run({"HINCRBY", "h", "ctr:" + std::to_string(k), "1"});
              if (reply[0] != ':') _exit(91);
              ctr[k].Acked();
              break;
            }
            case 3:
              w.Run({"HSET", "h", "tmp:" + std::to_string(r() % 5000),
                     std::string(r() % 100, 'y')});
              break;
            case 4: w.Run({"HDEL", "h", "tmp:" + std::to_string(r() % 5000)});
              break;
            default:
              if (r() % 2) {
                w.Run({"COPY", "h", "h2"});
              } else {
                w.Run({"DEL", "h2"});
              }
          }
        }));
    for (int k = 0; k < kCounters; ++k) {
      std::string reply = h.Run({"HGET", "h", "ctr:" + std::to_string(k)});
      int64_t got = reply == "$-1\r\n"
                        ? 0
                        : std::stoll(reply.substr(reply.find("\r\n") + 2));
      ASSERT_TRUE(ctr[k].Settle(got)) << k;
    }
    std::string len = h.Run({"HLEN", "h"});
    std::string keys = h.Run({"HKEYS", "h"});
    ASSERT_EQ(":" + keys.substr(1, keys.find("\r\n") - 1) + "\r\n", len);
  }
  h.Run({"DEL", "h2"});
  for (int i = 0; i < 100; ++i) h.store()->Sweep(1 << 20);
  shmkv::Value root;
  ASSERT_TRUE(h.store()->Get("h", &root));
  shmkv::PartsRoot pr;
  std::memcpy(&pr, root.bytes.data(), sizeof(pr));
  EXPECT_EQ(h.store()->Parts(), pr.parts);
}

// A change to a bucket alone (an existing field's value) is a change to
// the key for WATCH, as any write to a Redis hash is.
TEST(HashFamily, WatchSeesABucketOnlyChange) {
  CommandHarness h("hashwatch", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  for (int i = 0; i < 600; ++i) {
    ASSERT_EQ(h.Run({"HSET", "w", "f" + std::to_string(i), "x"}), ":1\r\n");
  }
  CommandHarness::Client other = h.NewClient();
  EXPECT_EQ(h.Run({"WATCH", "w"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"HSET", "w", "f7", "changed"}), ":0\r\n");
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"HSET", "w", "f8", "mine"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}), "*-1\r\n");
  EXPECT_EQ(h.Run({"HGET", "w", "f8"}), "$1\r\nx\r\n");
}

// The chi-square statistic of the bulk strings of a RESP array reply
// against a uniform draw over `n` distinct values (and how many distinct
// ones it met).
double ChiSquare(const std::string& reply, size_t n, size_t* distinct) {
  std::map<std::string, uint64_t> seen;
  uint64_t draws = 0;
  for (size_t at = reply.find('$'); at != std::string::npos;
       at = reply.find('$', at)) {
    size_t eol = reply.find("\r\n", at);
    size_t len = std::stoul(reply.substr(at + 1, eol - at - 1));
    ++seen[reply.substr(eol + 2, len)];
    ++draws;
    at = eol + 2 + len + 2;
  }
  *distinct = seen.size();
  double expect = static_cast<double>(draws) / static_cast<double>(n);
  double x2 = 0;
  for (const auto& [v, k] : seen) {
    x2 += (static_cast<double>(k) - expect) * (static_cast<double>(k) - expect) /
          expect;
  }
  x2 += expect * static_cast<double>(n - seen.size());  // values never met
  return x2;
}

// HRANDFIELD and SRANDMEMBER with a negative count draw every field or
// member equally often from a table in buckets, small (read whole) or
// large (a bucket, then a place). A field drawn from a drawn bucket
// favoured the fields of sparse buckets: Redis's own suite (unit/type/
// hash, HRANDFIELD with <count> - hashtable) measured a chi-square of 120
// over 10 fields where it allows 40. Thresholds sit far in the tails
// (about 10^-9 for a fair draw).
TEST(HashFamily, RandomDrawsFromBucketsAreUniform) {
  CommandHarness h("hashuniform", 50000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_EQ(h.Run({"CONFIG", "SET", "hash-max-listpack-entries", "4",
                   "set-max-intset-entries", "4"}),
            "+OK\r\n");
  for (int i = 0; i < 10; ++i) {
    h.Run({"HSET", "small", "f" + std::to_string(i), "v"});
    h.Run({"SADD", "smallset", "m" + std::to_string(i)});
  }
  ASSERT_EQ(h.Run({"OBJECT", "ENCODING", "small"}), "$9\r\nhashtable\r\n");
  size_t distinct = 0;
  EXPECT_LT(ChiSquare(h.Run({"HRANDFIELD", "small", "-10000"}), 10, &distinct),
            60.0);
  EXPECT_EQ(distinct, 10u);
  EXPECT_LT(
      ChiSquare(h.Run({"SRANDMEMBER", "smallset", "-10000"}), 10, &distinct),
      60.0);
  std::vector<std::string> hset = {"HSET", "large"};
  std::vector<std::string> sadd = {"SADD", "largeset"};
  for (int i = 0; i < 5000; ++i) {
    hset.push_back("field:" + std::to_string(i));
    hset.push_back("v");
    sadd.push_back("member:" + std::to_string(i));
  }
  h.Run(hset);
  h.Run(sadd);
  // df = 4999: mean 4999, standard deviation 100
  EXPECT_LT(ChiSquare(h.Run({"HRANDFIELD", "large", "-200000"}), 5000,
                      &distinct),
            6000.0);
  EXPECT_LT(ChiSquare(h.Run({"SRANDMEMBER", "largeset", "-200000"}), 5000,
                      &distinct),
            6000.0);
}

// A bucket whose bytes are damaged answers the damaged-value error to
// every command that reads it; other buckets still answer.
TEST(HashFamily, DamagedBucketsAreAnError) {
  CommandHarness h("hashbadbucket", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  for (int i = 0; i < 600; ++i) {
    ASSERT_EQ(h.Run({"HSET", "d", "f" + std::to_string(i), "x"}), ":1\r\n");
  }
  shmkv::Value root;
  ASSERT_TRUE(h.store()->Get("d", &root));
  shmkv::PartsRoot pr;
  std::memcpy(&pr, root.bytes.data(), sizeof(pr));
  {
    auto t = h.store()->Begin();
    ASSERT_EQ(t->WritePart(pr.id, 0, "\x05garbage"), shmkv::Store::Status::kOk);
    ASSERT_EQ(t->Commit(), shmkv::Store::Status::kOk);
  }
  const std::string damaged =
      "-ERR the value of this key is damaged (shmc check)\r\n";
  EXPECT_EQ(h.Run({"HGETALL", "d"}), damaged);
  EXPECT_EQ(h.Run({"HSCAN", "d", "0", "COUNT", "100000"}), damaged);
  int bad = 0, good = 0;
  for (int i = 0; i < 600; ++i) {
    std::string reply = h.Run({"HGET", "d", "f" + std::to_string(i)});
    if (reply == damaged) {
      ++bad;
    } else {
      EXPECT_EQ(reply, "$1\r\nx\r\n");
      ++good;
    }
  }
  EXPECT_GT(bad, 0);
  EXPECT_GT(good, 0);
  EXPECT_EQ(h.Run({"HLEN", "d"}), ":600\r\n");
  // A root whose bucket count is damaged (of a collection of its own).
  {
    auto t = h.store()->Begin();
    pr.id = t->NewCollection();
    pr.parts = 1ULL << 62;
    std::memcpy(&root.bytes[0], &pr, sizeof(pr));
    ASSERT_EQ(t->Write("d2", ValueType::kHash, shmkv::cmd::kHashBuckets,
                       root.bytes, 0),
              shmkv::Store::Status::kOk);
    ASSERT_EQ(t->Commit(), shmkv::Store::Status::kOk);
  }
  EXPECT_EQ(h.Run({"HGET", "d2", "f1"}), damaged);
  EXPECT_EQ(h.Run({"HSET", "d2", "f1", "y"}), damaged);
}

// Against redis-server on a hash past the limits: every reply that does
// not show the table's order is byte for byte Redis's, over random
// writes, counters and deletes; the whole hash agrees as a set.
TEST(HashFamilyVsRedis, LargeHashesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("hashbigdiff", 50000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  std::mt19937_64 rng(17);
  auto field = [&] { return "f" + std::to_string(rng() % 3000); };
  for (int i = 0; i < 20000; ++i) {
    Cmd cmd;
    switch (rng() % 8) {
      case 0: case 1: case 2:
        cmd = {"HSET", "big", field(), std::string(rng() % 80, 'v'),
               field(), std::to_string(rng() % 100)};
        break;
      case 3: cmd = {"HDEL", "big", field(), field()}; break;
      case 4: cmd = {"HINCRBY", "big", field(), "3"}; break;
      case 5: cmd = {"HMGET", "big", field(), field(), field()}; break;
      case 6: cmd = {rng() % 2 ? "HSTRLEN" : "HEXISTS", "big", field()}; break;
      default: cmd = {"HLEN", "big"};
    }
    std::string mine = h.Run(cmd), theirs = c.Call(cmd);
    ASSERT_EQ(mine, theirs) << i << ": " << CommandLine(cmd);
  }
  auto sorted_lines = [](const std::string& reply) {
    std::vector<std::string> lines;
    for (size_t at = 0; at < reply.size();) {
      size_t e = reply.find("\r\n", at);
      lines.push_back(reply.substr(at, e - at));
      at = e + 2;
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(sorted_lines(h.Run({"HGETALL", "big"})),
            sorted_lines(c.Call({"HGETALL", "big"})));
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "big"}),
            c.Call({"OBJECT", "ENCODING", "big"}));
}

}  // namespace
