// Redis's RDB serialization (server/rdb/codec.h): CRC-64, lengths and
// strings at every encoding boundary, DUMP payloads of every type and
// encoding redis-server 7 writes decoded equal, shmkv's payloads restored
// into redis-server equal, and damaged payloads refused, never misread.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/rdb/codec.h"
#include "server/rdb/crc64.h"
#include "server/store/store.h"
#include "tests/support/temp_files.h"
#include "tests/support/command_harness.h"
#include "tests/support/diff_harness.h"
#include "tests/support/redis_oracle.h"

namespace {

using shmkv::rdb::Crc64;
using shmkv::rdb::Dump;
using shmkv::rdb::Reader;
using shmkv::rdb::Undump;
using shmkv::rdb::Value;
using shmkv::rdb::Writer;
using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using shmkv_test::ReadAll;
using shmkv_test::TempDir;
using shmkv_test::WriteAll;

constexpr size_t kMax = 64 << 20;

// The bytes of a bulk reply ("" for anything else).
std::string BulkOf(const std::string& reply) {
  if (reply.empty() || reply[0] != '$') return "";
  size_t nl = reply.find("\r\n");
  long n = std::stol(reply.substr(1, nl - 1));
  if (n < 0) return "";
  return reply.substr(nl + 2, static_cast<size_t>(n));
}

// `v` with its set members, hash pairs and sorted-set entries in order,
// so two values of the same contents compare equal.
Value Sorted(Value v) {
  std::sort(v.pairs.begin(), v.pairs.end());
  std::sort(v.scored.begin(), v.scored.end());
  if (v.kind == Value::kSet) std::sort(v.items.begin(), v.items.end());
  return v;
}

bool Same(const Value& a, const Value& b) {
  Value x = Sorted(a), y = Sorted(b);
  const auto& p = x.stream;
  const auto& q = y.stream;
  bool streams = p.entries.size() == q.entries.size() &&
                 p.last_ms == q.last_ms && p.last_seq == q.last_seq &&
                 p.deleted_ms == q.deleted_ms &&
                 p.deleted_seq == q.deleted_seq && p.added == q.added;
  for (size_t i = 0; streams && i < p.entries.size(); ++i) {
    streams = p.entries[i].ms == q.entries[i].ms &&
              p.entries[i].seq == q.entries[i].seq &&
              p.entries[i].fields == q.entries[i].fields;
  }
  return x.kind == y.kind && x.str == y.str && x.items == y.items &&
         x.pairs == y.pairs && x.scored == y.scored && streams;
}

Value Str(std::string s) {
  Value v;
  v.str = std::move(s);
  return v;
}

// `body` as a DUMP payload: the RDB version and a CRC that matches, so
// what is tried is the decoder, not the checksum.
std::string WithFooter(std::string body) {
  Writer w(&body);
  w.Byte(10);
  w.Byte(0);
  const uint64_t crc = Crc64(0, body.data(), body.size());
  for (int k = 0; k < 8; ++k) w.Byte(static_cast<uint8_t>(crc >> (8 * k)));
  return body;
}

TEST(Rdb, Crc64IsRedissCrc) {
  EXPECT_EQ(Crc64(0, "123456789", 9), 0xe9c6d914c4b8d9caULL);
  std::string b(1000, '\0');
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 7 + 3);
  for (size_t cut : {0u, 1u, 7u, 8u, 333u, 999u}) {
    EXPECT_EQ(Crc64(Crc64(0, b.data(), cut), b.data() + cut, b.size() - cut),
              Crc64(0, b.data(), b.size()))
        << cut;
  }
}

TEST(Rdb, LengthsAndStringsRoundTripAtEveryEncoding) {
  for (uint64_t n : {0ull, 63ull, 64ull, 16383ull, 16384ull, 0xffffffffull,
                     0x100000000ull, ~0ull}) {
    std::string out;
    Writer(&out).Length(n);
    Reader r(out, kMax);
    uint64_t back = 0;
    ASSERT_TRUE(r.Length(&back)) << n << r.error();
    EXPECT_EQ(back, n);
    EXPECT_EQ(r.left(), 0u);
  }
  std::mt19937_64 rng(7);
  std::string noise(1000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  std::string repeats;
  for (int i = 0; i < 30000; ++i) repeats += "abc" + std::to_string(i % 10);
  struct Case {
    std::string s;
    uint8_t first;  // the string's first byte as written
  };
  std::vector<Case> cases = {
      {"", 0x00},          {"0", 0xc0},           {"-1", 0xc0},
      {"127", 0xc0},       {"128", 0xc1},         {"-32768", 0xc1},
      {"32768", 0xc2},     {"2147483647", 0xc2},  {"-2147483648", 0xc2},
      {"2147483648", 10},  {"007", 3},            {"-0", 2},
      {"+1", 2},           {"12345678901", 11},   {std::string(20, 'a'), 20},
      {std::string(21, 'a'), 0xc3}, {noise, 0x43}, {repeats, 0xc3}};
  for (const Case& c : cases) {
    std::string out;
    Writer(&out).String(c.s);
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(static_cast<uint8_t>(out[0]), c.first) << c.s.substr(0, 30);
    Reader r(out, kMax);
    std::string back;
    ASSERT_TRUE(r.String(&back)) << r.error();
    EXPECT_EQ(back, c.s);
    EXPECT_EQ(r.left(), 0u);
  }
  // A string past the reader's limit is refused before it is sized.
  std::string out;
  Writer(&out).String(repeats);
  std::string back;
  Reader small(out, 1000);
  EXPECT_FALSE(small.String(&back));
  EXPECT_NE(small.error().find("compressed string"), std::string::npos)
      << small.error();
}

// The values the differential tests put in both servers, with the
// commands that make them: every encoding Redis 7.0 has for each type.
struct Sample {
  std::string key;
  std::vector<std::vector<std::string>> make;
  Value want;
};

std::vector<Sample> Samples() {
  std::vector<Sample> out;
  auto str = [&](const std::string& key, const std::string& s) {
    out.push_back({key, {{"SET", key, s}}, Str(s)});
  };
  str("s:int8", "-100");
  str("s:int32", "123456789");
  str("s:int64", "12345678901234");
  str("s:short", "hello");
  str("s:binary", std::string("\0\xff\r\n", 4));
  std::string big;
  for (int i = 0; i < 2000; ++i) big += "row" + std::to_string(i % 17) + ";";
  str("s:compressible", big);
  auto coll = [&](const std::string& key, Value::Kind kind, size_t n,
                  size_t width, bool ints) {
    Sample s{key, {}, Value()};
    s.want.kind = kind;
    std::vector<std::string> args;
    for (size_t i = 0; i < n; ++i) {
      std::string item = ints ? std::to_string(static_cast<int64_t>(i * 7919) -
                                               50000)
                              : std::string(width, 'a' + i % 26) +
                                    std::to_string(i);
      switch (kind) {
        case Value::kList:
        case Value::kSet:
          s.want.items.push_back(item);
          args.push_back(item);
          break;
        case Value::kHash:
          s.want.pairs.emplace_back(item, "v" + std::to_string(i));
          args.push_back(item);
          args.push_back("v" + std::to_string(i));
          break;
        case Value::kZSet: {
          double score = i % 3 == 0 ? static_cast<double>(i) : i / 7.0;
          if (i == 1) score = -HUGE_VAL;
          s.want.scored.emplace_back(item, score);
          char buf[64];
          std::snprintf(buf, sizeof(buf), "%.17g", score);
          args.push_back(i == 1 ? "-inf" : buf);
          args.push_back(item);
          break;
        }
        default:
          break;
      }
    }
    const char* cmd = kind == Value::kList  ? "RPUSH"
                      : kind == Value::kSet ? "SADD"
                      : kind == Value::kHash ? "HSET"
                                             : "ZADD";
    const size_t step = kind == Value::kHash || kind == Value::kZSet ? 200 : 100;
    for (size_t at = 0; at < args.size(); at += step) {
      std::vector<std::string> c = {cmd, key};
      c.insert(c.end(), args.begin() + static_cast<long>(at),
               args.begin() + static_cast<long>(std::min(args.size(), at + step)));
      s.make.push_back(c);
    }
    out.push_back(s);
  };
  coll("l:listpack", Value::kList, 5, 3, false);
  coll("l:ints", Value::kList, 50, 0, true);
  coll("l:quicklist", Value::kList, 3000, 40, false);
  coll("set:intset", Value::kSet, 100, 0, true);
  coll("set:table", Value::kSet, 300, 10, false);
  coll("h:listpack", Value::kHash, 10, 5, false);
  coll("h:table", Value::kHash, 1000, 8, false);
  coll("z:listpack", Value::kZSet, 10, 4, false);
  coll("z:skiplist", Value::kZSet, 300, 6, false);
  // Streams: entries of the node's own fields and of others (Redis codes
  // the first as values alone), several nodes, and entries XDEL marked
  // deleted inside Redis's nodes.
  auto stream = [&](const std::string& key, size_t n, size_t width,
                    bool del) {
    Sample s{key, {}, Value()};
    s.want.kind = Value::kStream;
    auto& w = s.want.stream;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t ms = 1000 + i / 3, seq = i % 3;
      std::vector<std::string> f =
          i % 5 == 4 ? std::vector<std::string>{"other", std::to_string(i)}
                     : std::vector<std::string>{
                           "f", std::string(width, 'a' + i % 26), "n",
                           std::to_string(static_cast<int64_t>(i) - 40)};
      std::vector<std::string> c = {
          "XADD", key, std::to_string(ms) + "-" + std::to_string(seq)};
      c.insert(c.end(), f.begin(), f.end());
      s.make.push_back(c);
      w.last_ms = ms;
      w.last_seq = seq;
      ++w.added;
      if (del && i % 4 == 1) {
        s.make.push_back({"XDEL", key, c[2]});
        w.deleted_ms = ms;
        w.deleted_seq = seq;
      } else {
        w.entries.push_back({ms, seq, f});
      }
    }
    out.push_back(s);
  };
  stream("x:small", 7, 3, false);
  stream("x:nodes", 450, 30, true);
  return out;
}

TEST(RdbVsRedis, RedissPayloadsOfEveryEncodingDecodeEqual) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Client c(redis.port());
  for (const Sample& s : Samples()) {
    for (const auto& cmd : s.make) c.Call(cmd);
    std::string payload = BulkOf(c.Call({"DUMP", s.key}));
    ASSERT_FALSE(payload.empty()) << s.key;
    Value v;
    bool crc_ok = false;
    std::string why;
    ASSERT_TRUE(Undump(payload, kMax, &v, &crc_ok, &why)) << s.key << ": "
                                                          << why;
    EXPECT_TRUE(Same(v, s.want)) << s.key;
  }
}

TEST(RdbVsRedis, ShmkvsPayloadsRestoreIntoRedisEqual) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Client c(redis.port());
  for (const Sample& s : Samples()) {
    std::string mine = Dump(s.want);
    ASSERT_EQ(c.Call({"RESTORE", s.key, "0", mine}), "+OK\r\n") << s.key;
    // What Redis made of it, dumped back in its own encoding.
    Value v;
    bool crc_ok = false;
    std::string why;
    ASSERT_TRUE(Undump(BulkOf(c.Call({"DUMP", s.key})), kMax, &v, &crc_ok,
                       &why))
        << s.key << ": " << why;
    EXPECT_TRUE(Same(v, s.want)) << s.key;
  }
}

// Strings as Redis writes them, byte for byte: integer encodings, plain
// strings and LZF (the same LZF, Debian's liblzf, as Redis bundles).
TEST(RdbVsRedis, StringPayloadsAreRedissByteForByte) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Client c(redis.port());
  for (const Sample& s : Samples()) {
    if (s.want.kind != Value::kString) continue;
    for (const auto& cmd : s.make) c.Call(cmd);
    EXPECT_EQ(Dump(s.want), BulkOf(c.Call({"DUMP", s.key}))) << s.key;
  }
}

// Every prefix, and thousands of damaged copies (one to four bytes
// changed, the CRC made right again so the decoder itself is tried), of
// Redis's payloads: each is decoded whole or refused, never misread past
// its bytes (ASan), and what decodes encodes and decodes again the same.
TEST(RdbVsRedis, DamagedPayloadsAreRefusedOrDecodedWhole) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Client c(redis.port());
  std::mt19937_64 rng(2026);
  size_t refused = 0, decoded = 0;
  for (const Sample& s : Samples()) {
    for (const auto& cmd : s.make) c.Call(cmd);
    const std::string payload = BulkOf(c.Call({"DUMP", s.key}));
    ASSERT_FALSE(payload.empty());
    Value v;
    bool crc_ok = false;
    std::string why;
    for (size_t n = 0; n < payload.size(); n += 1 + payload.size() / 200) {
      EXPECT_FALSE(Undump(payload.substr(0, n), kMax, &v, &crc_ok, &why));
    }
    std::string body = payload.substr(0, payload.size() - 10);
    for (int round = 0; round < 400; ++round) {
      std::string bad = body;
      for (int k = 0, m = 1 + static_cast<int>(rng() % 4); k < m; ++k) {
        bad[rng() % bad.size()] = static_cast<char>(rng());
      }
      if (Undump(WithFooter(bad), kMax, &v, &crc_ok, &why)) {
        ++decoded;
        Value again;
        ASSERT_TRUE(Undump(Dump(v), kMax, &again, &crc_ok, &why)) << why;
        EXPECT_TRUE(Same(again, v));
      } else {
        ++refused;
        EXPECT_TRUE(crc_ok);
        EXPECT_NE(why.find(" at byte "), std::string::npos) << why;
      }
    }
  }
  EXPECT_GT(refused, 1000u);
  // A flip the CRC does not catch gets the version and checksum error.
  Value v;
  bool crc_ok = true;
  std::string why;
  std::string p = Dump(Str("hello"));
  p[2] ^= 1;
  EXPECT_FALSE(Undump(p, kMax, &v, &crc_ok, &why));
  EXPECT_FALSE(crc_ok);
}

// Lengths that lie, as Redis's crafted-payload reports use them: a count
// past the bytes, a listpack or intset whose header disagrees with its
// bytes, a 64-bit length, a repeated member. Each is refused before it
// sizes anything.
TEST(Rdb, LyingLengthsAreRefusedBeforeUse) {
  auto undump_body = [](const std::string& body, std::string* why) {
    Value v;
    bool crc_ok = false;
    return Undump(WithFooter(body), kMax, &v, &crc_ok, why);
  };
  std::string why;
  // A list that says 2^62 elements.
  std::string b;
  {
    Writer w(&b);
    w.Byte(shmkv::rdb::kTypeList);
    w.Length(uint64_t{1} << 62);
    w.String("x");
  }
  EXPECT_FALSE(undump_body(b, &why));
  EXPECT_NE(why.find("past the bytes left"), std::string::npos) << why;
  // A listpack whose count says 3 while it holds 1.
  std::string lp = std::string("\x0a\x00\x00\x00\x03\x00", 6) +
                   std::string("\x05\x01", 2) + "\xff";
  lp[0] = static_cast<char>(lp.size());
  b.clear();
  {
    Writer w(&b);
    w.Byte(shmkv::rdb::kTypeHashListpack);
    w.Length(lp.size());
    b += lp;
  }
  EXPECT_FALSE(undump_body(b, &why));
  EXPECT_NE(why.find("listpack"), std::string::npos) << why;
  // An intset of 1,000 8-byte integers in 16 bytes.
  std::string is = std::string("\x08\x00\x00\x00\xe8\x03\x00\x00", 8) +
                   std::string(8, '\x01');
  b.clear();
  {
    Writer w(&b);
    w.Byte(shmkv::rdb::kTypeSetIntset);
    w.Length(is.size());
    b += is;
  }
  EXPECT_FALSE(undump_body(b, &why));
  EXPECT_NE(why.find("intset"), std::string::npos) << why;
  // A set holding one member twice.
  Value dup;
  dup.kind = Value::kSet;
  dup.items = {"a", "b", "a"};
  std::string p = Dump(dup);
  Value v;
  bool crc_ok = false;
  EXPECT_FALSE(Undump(p, kMax, &v, &crc_ok, &why));
  EXPECT_NE(why.find("repeated"), std::string::npos) << why;
  // A module's value is named, not skipped.
  b.assign(1, static_cast<char>(shmkv::rdb::kTypeModule2));
  EXPECT_FALSE(undump_body(b, &why));
  EXPECT_NE(why.find("module"), std::string::npos) << why;
  // A stream that says 2^40 nodes, one whose length is not its entries,
  // and consumer groups that lie: more than the bytes hold, a pending
  // entry no consumer holds, a consumer holding an entry its group has
  // not, one held twice, groups out of order.
  auto stream_body = [](uint64_t nodes, uint64_t length, uint64_t groups,
                        const std::string& tail = "") {
    std::string out;
    shmkv::rdb::Writer w(&out);
    w.Byte(shmkv::rdb::kTypeStreamListpacks2);
    w.Length(nodes);
    for (int k = 0; k < 8; ++k) w.Length(k == 0 ? length : 0);
    w.Length(groups);
    return out + tail;
  };
  // A group: its name, last ID 0-0, entries read 0, pending entries of
  // IDs 0-1, 0-2, ... (time 0, count 1), consumers each holding `held`.
  auto group = [](const std::string& name, int pending,
                  const std::vector<std::vector<int>>& held) {
    std::string out;
    shmkv::rdb::Writer w(&out);
    w.String(name);
    w.Length(0);
    w.Length(0);
    w.Length(0);
    auto id = [&](int seq) {
      for (int b = 0; b < 15; ++b) w.Byte(0);
      w.Byte(static_cast<uint8_t>(seq));
    };
    w.Length(static_cast<uint64_t>(pending));
    for (int k = 1; k <= pending; ++k) {
      id(k);
      for (int b = 0; b < 8; ++b) w.Byte(0);
      w.Length(1);
    }
    w.Length(held.size());
    for (size_t c = 0; c < held.size(); ++c) {
      w.String("c" + std::to_string(c));
      for (int b = 0; b < 8; ++b) w.Byte(0);
      w.Length(held[c].size());
      for (int seq : held[c]) id(seq);
    }
    return out;
  };
  EXPECT_FALSE(undump_body(stream_body(uint64_t{1} << 40, 0, 0), &why));
  EXPECT_NE(why.find("past the bytes left"), std::string::npos) << why;
  EXPECT_FALSE(undump_body(stream_body(0, 5, 0), &why));
  EXPECT_NE(why.find("length is not its entries"), std::string::npos) << why;
  EXPECT_FALSE(undump_body(stream_body(0, 0, 1), &why));
  EXPECT_NE(why.find("past the bytes left"), std::string::npos) << why;
  EXPECT_FALSE(undump_body(stream_body(0, 0, 1, group("g", 2, {{1}})), &why));
  EXPECT_NE(why.find("without a consumer"), std::string::npos) << why;
  EXPECT_FALSE(undump_body(stream_body(0, 0, 1, group("g", 1, {{1, 2}})), &why));
  EXPECT_NE(why.find("its group lacks"), std::string::npos) << why;
  EXPECT_FALSE(
      undump_body(stream_body(0, 0, 1, group("g", 1, {{1}, {1}})), &why));
  EXPECT_NE(why.find("two consumers hold"), std::string::npos) << why;
  EXPECT_FALSE(undump_body(
      stream_body(0, 0, 2, group("h", 0, {}) + group("g", 0, {})), &why));
  EXPECT_NE(why.find("out of order"), std::string::npos) << why;
  EXPECT_TRUE(undump_body(
      stream_body(0, 0, 2, group("g", 2, {{1}, {2}}) + group("h", 0, {})),
      &why)) << why;
  EXPECT_TRUE(undump_body(stream_body(0, 0, 0), &why)) << why;
}

// DUMP and RESTORE's replies and errors, byte for byte: a payload made
// by each server restores in the other, every option and its errors, a
// busy key, REPLACE over another type, TTLs relative and absolute, one
// already past, damaged payloads.
TEST(DumpFamilyVsRedis, RepliesAndErrorsAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("dumpcmd");
  ASSERT_TRUE(h.ok()) << h.error();
  Client rc(redis.port());
  for (const Sample& s : Samples()) {
    for (const auto& cmd : s.make) {
      ASSERT_EQ(h.Run(cmd), rc.Call(cmd)) << cmd[0] << " " << s.key;
    }
    // Redis's payload into shmkv, and shmkv's into Redis, under new names.
    std::string theirs = BulkOf(rc.Call({"DUMP", s.key}));
    std::string mine = BulkOf(h.Run({"DUMP", s.key}));
    ASSERT_FALSE(mine.empty()) << s.key;
    ExpectSameAsRedis(&h, &rc, {
        {"RESTORE", s.key + ":r", "0", theirs},
        {"RESTORE", s.key + ":r", "0", theirs},  // busy
        {"RESTORE", s.key + ":m", "0", mine},
    });
    EXPECT_EQ(rc.Call({"RESTORE", s.key + ":m2", "0", mine}), "+OK\r\n");
    EXPECT_EQ(h.Run({"RESTORE", s.key + ":r2", "0", theirs}), "+OK\r\n");
    // Each copy holds what the original does, in whichever server holds
    // it (":r", ":m" in both; ":m2" in Redis, ":r2" in shmkv).
    auto holds = [&](const std::string& payload, const std::string& what) {
      Value got;
      bool ok = false;
      std::string why;
      ASSERT_TRUE(Undump(payload, kMax, &got, &ok, &why)) << what << why;
      EXPECT_TRUE(Same(got, s.want)) << what;
    };
    for (const char* sfx : {":r", ":m"}) {
      holds(BulkOf(h.Run({"DUMP", s.key + sfx})), "shmkv " + s.key + sfx);
      holds(BulkOf(rc.Call({"DUMP", s.key + sfx})), "redis " + s.key + sfx);
    }
    holds(BulkOf(rc.Call({"DUMP", s.key + ":m2"})), "redis " + s.key + ":m2");
    holds(BulkOf(h.Run({"DUMP", s.key + ":r2"})), "shmkv " + s.key + ":r2");
  }
  const std::string p = Dump(Str("v"));
  std::string bad_crc = p;
  bad_crc.back() ^= 1;
  std::string newer = p.substr(0, p.size() - 10) + std::string("\x0b\x00", 2);
  newer += std::string(8, '\0');
  // A string that says 5 bytes and has 2.
  const std::string bad_body = WithFooter(std::string("\x00\x05", 2) + "ab");
  ExpectSameAsRedis(&h, &rc, {
      {"DUMP", "nosuch"}, {"DUMP"}, {"DUMP", "a", "b"},
      {"RESTORE", "k"}, {"RESTORE", "k", "0"},
      {"RESTORE", "k", "x", p}, {"RESTORE", "k", "-1", p},
      {"RESTORE", "k", "0", bad_crc}, {"RESTORE", "k", "0", newer},
      {"RESTORE", "k", "0", "short"},
      {"RESTORE", "k", "0", p, "BOGUS"},
      {"RESTORE", "k", "0", p, "IDLETIME"},
      {"RESTORE", "k", "0", p, "IDLETIME", "-1"},
      {"RESTORE", "k", "0", p, "IDLETIME", "x"},
      {"RESTORE", "k", "0", p, "FREQ", "256"},
      {"RESTORE", "k", "0", p, "FREQ", "-1"},
      {"RESTORE", "k", "0", p, "IDLETIME", "5", "FREQ", "5"},
      {"RESTORE", "k", "0", p, "FREQ", "5", "IDLETIME", "5"},
      {"RESTORE", "k", "0", p, "IDLETIME", "10"},
      {"GET", "k"}, {"TTL", "k"},
      {"RESTORE", "k", "0", p, "FREQ", "10"},  // busy
      {"SADD", "set", "a"},
      {"RESTORE", "set", "0", p}, {"RESTORE", "set", "0", p, "REPLACE"},
      {"TYPE", "set"}, {"GET", "set"},
      {"RESTORE", "t", "100000", p}, {"TTL", "t"},
      {"RESTORE", "t", "1", p, "REPLACE", "ABSTTL"}, {"EXISTS", "t"},
      {"RESTORE", "u", "4102444800000", p, "ABSTTL"}, {"EXPIRETIME", "u"},
      {"RESTORE", "k", "0", p, "REPLACE", "REPLACE", "ABSTTL"},
  });
  // A value that runs into the footer: redis-server 7.0 reads the footer's
  // bytes as the string's (it restores "ab\n\0" and a CRC byte); shmkv
  // refuses it (docs/server.md: an intended difference).
  EXPECT_EQ(h.Run({"RESTORE", "b", "0", bad_body}),
            "-ERR Bad data format\r\n");
  EXPECT_EQ(rc.Call({"RESTORE", "b", "0", bad_body}), "+OK\r\n");
}

// ---- RDB files -------------------------------------------------------

// The samples in database 0, and again in database 3 under "db3:" with a
// TTL on every other one, as one RDB file.
std::string SampleFile(int64_t ttl_at) {
  std::string out;
  shmkv::rdb::FileWriter w([&](std::string_view b) {
    out.append(b.data(), b.size());
    return true;
  });
  std::vector<Sample> all = Samples();
  EXPECT_TRUE(w.Begin(1764000000, 1 << 20));
  EXPECT_TRUE(w.Database(0, all.size(), 0));
  for (const Sample& s : all) EXPECT_TRUE(w.Key(s.key, s.want, 0));
  EXPECT_TRUE(w.Database(3, all.size(), (all.size() + 1) / 2));
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(w.Key("db3:" + all[i].key, all[i].want,
                      i % 2 == 0 ? ttl_at : 0));
  }
  EXPECT_TRUE(w.Finish());
  return out;
}

// A file shmkv writes passes redis-check-rdb and loads into redis-server
// with every key, type, value, database and TTL equal.
TEST(RdbVsRedis, ShmkvsFilesPassRedisCheckAndLoadEqual) {
  TempDir dir;
  const int64_t ttl_at = shmkv::NowMs() + 3600 * 1000;
  ASSERT_TRUE(WriteAll(dir.path + "/dump.rdb", SampleFile(ttl_at)));
  if (access("/usr/bin/redis-check-rdb", X_OK) == 0) {
    const std::string cmd = "/usr/bin/redis-check-rdb '" + dir.path +
                            "/dump.rdb' > '" + dir.path + "/check.txt' 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << ReadAll(dir.path + "/check.txt");
    EXPECT_NE(ReadAll(dir.path + "/check.txt").find("RDB looks OK"),
              std::string::npos);
  }
  RedisOracle redis({"--dir", dir.path, "--dbfilename", "dump.rdb"});
  SKIP_WITHOUT_REDIS(redis);
  Client c(redis.port());
  EXPECT_EQ(c.Call({"DBSIZE"}), ":" + std::to_string(Samples().size()) + "\r\n");
  for (int db : {0, 3}) {
    c.Call({"SELECT", std::to_string(db)});
    for (const Sample& s : Samples()) {
      const std::string key = (db == 3 ? "db3:" : "") + s.key;
      Value v;
      bool ok = false;
      std::string why;
      ASSERT_TRUE(Undump(BulkOf(c.Call({"DUMP", key})), kMax, &v, &ok, &why))
          << key << ": " << why;
      EXPECT_TRUE(Same(v, s.want)) << key;
    }
    std::string ttl = c.Call({"PEXPIRETIME", (db == 3 ? "db3:" : "") + Samples()[0].key});
    EXPECT_EQ(ttl, db == 3 ? ":" + std::to_string(ttl_at) + "\r\n" : ":-1\r\n");
  }
}

// A file redis-server 7 writes (SAVE) reads back as what was put in it:
// every encoding, two databases, TTLs.
TEST(RdbVsRedis, RedissFilesReadEqual) {
  TempDir dir;
  std::string file;
  const int64_t ttl_at = shmkv::NowMs() + 3600 * 1000;
  {
    RedisOracle redis({"--dir", dir.path, "--dbfilename", "r.rdb"});
    SKIP_WITHOUT_REDIS(redis);
    Client c(redis.port());
    for (int db : {0, 5}) {
      c.Call({"SELECT", std::to_string(db)});
      for (const Sample& s : Samples()) {
        for (auto cmd : s.make) {
          cmd[1] = std::to_string(db) + ":" + cmd[1];
          c.Call(cmd);
        }
      }
      c.Call({"PEXPIREAT", std::to_string(db) + ":" + Samples()[1].key,
              std::to_string(ttl_at)});
    }
    ASSERT_EQ(c.Call({"SAVE"}), "+OK\r\n");
    file = ReadAll(dir.path + "/r.rdb");
  }
  ASSERT_FALSE(file.empty());
  size_t seen = 0;
  std::string why;
  const std::vector<Sample> all = Samples();
  ASSERT_TRUE(shmkv::rdb::ReadFile(
      file, kMax,
      [&](shmkv::rdb::Entry& e, std::string*) {
        ++seen;
        const std::string prefix = std::to_string(e.db) + ":";
        EXPECT_EQ(e.key.rfind(prefix, 0), 0u) << e.key;
        const std::string name = e.key.substr(prefix.size());
        for (size_t i = 0; i < all.size(); ++i) {
          if (all[i].key != name) continue;
          EXPECT_TRUE(Same(e.value, all[i].want)) << e.key;
          EXPECT_EQ(e.expire_ms, i == 1 ? ttl_at : 0) << e.key;
        }
        return true;
      },
      &why))
      << why;
  EXPECT_EQ(seen, 2 * all.size());
  // Damaged copies: every prefix is refused; with the CRC left out (0,
  // as a server with rdbchecksum no writes), changed bytes are refused
  // with a reason or read whole, never misread (ASan).
  for (size_t n = 0; n < file.size(); n += 1 + file.size() / 300) {
    EXPECT_FALSE(shmkv::rdb::ReadFile(
        file.substr(0, n), kMax,
        [](shmkv::rdb::Entry&, std::string*) { return true; }, &why));
  }
  std::mt19937_64 rng(11);
  size_t refused = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bad = file;
    for (int k = 0; k < 3; ++k) {
      bad[9 + rng() % (bad.size() - 17)] = static_cast<char>(rng());
    }
    const bool crc_left = round % 2 == 0;
    if (crc_left) std::fill(bad.end() - 8, bad.end(), '\0');
    const bool ok = shmkv::rdb::ReadFile(
        bad, kMax, [](shmkv::rdb::Entry&, std::string*) { return true; }, &why);
    if (!crc_left) {
      EXPECT_FALSE(ok) << "the CRC catches a changed byte";
    }
    if (!ok) {
      ++refused;
      EXPECT_FALSE(why.empty());
    }
  }
  EXPECT_GT(refused, 150u);
  // What shmkv does not hold is named, not skipped: a function library.
  std::string fn = file.substr(0, 9) + std::string(1, '\xf5') + file.substr(9);
  std::fill(fn.end() - 8, fn.end(), '\0');
  EXPECT_FALSE(shmkv::rdb::ReadFile(
      fn, kMax, [](shmkv::rdb::Entry&, std::string*) { return true; }, &why));
  EXPECT_NE(why.find("function library"), std::string::npos) << why;
}

// SAVE writes every database's keys to dir/dbfilename: the file passes
// redis-check-rdb and loads into redis-server equal, TTLs included;
// LASTSAVE is its time; a directory that cannot be written is an error
// that leaves the old file whole and no temporary file behind.
// SAVE inside MULTI is refused as it is queued, and EXEC then runs
// nothing, as in Redis (BGSAVE there runs: it is not refused).
TEST(DumpFamilyVsRedis, SaveIsRefusedInsideMulti) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  TempDir dir;
  CommandHarness h("savemulti");
  ASSERT_TRUE(h.ok()) << h.error();
  h.info()->dir = dir.path;
  Client rc(redis.port());
  ExpectSameAsRedis(&h, &rc, {
      {"MULTI"}, {"SET", "k", "v"}, {"SAVE"}, {"EXEC"}, {"EXISTS", "k"},
  });
  struct stat st;
  EXPECT_NE(stat((dir.path + "/dump.rdb").c_str(), &st), 0) << "it saved";
}

TEST(DumpFamilyVsRedis, SaveWritesAFileRedisLoadsEqual) {
  TempDir dir;
  CommandHarness h("savecmd");
  ASSERT_TRUE(h.ok()) << h.error();
  h.info()->dir = dir.path;
  h.info()->dbfilename = "s.rdb";
  const int64_t ttl_at = shmkv::NowMs() + 3600 * 1000;
  for (int db : {0, 3}) {
    ASSERT_EQ(h.Run({"SELECT", std::to_string(db)}), "+OK\r\n");
    for (const Sample& s : Samples()) {
      for (const auto& cmd : s.make) h.Run(cmd);
    }
    ASSERT_EQ(h.Run({"PEXPIREAT", Samples()[0].key, std::to_string(ttl_at)}),
              ":1\r\n");
  }
  ASSERT_EQ(h.Run({"SELECT", "0"}), "+OK\r\n");
  // A function library goes in the file too (before the databases).
  ASSERT_EQ(h.Run({"FUNCTION", "LOAD",
                   "#!lua name=saved\nredis.register_function('sv', "
                   "function() return 'from shmkv' end)"}),
            "$5\r\nsaved\r\n");
  ASSERT_EQ(h.Run({"SAVE"}), "+OK\r\n");
  const std::string path = dir.path + "/s.rdb";
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(h.Run({"LASTSAVE"}), ":" + std::to_string(st.st_mtime) + "\r\n");
  const std::string info = h.Run({"INFO", "persistence"});
  EXPECT_NE(info.find("# Persistence\r\nloading:0\r\n"), std::string::npos)
      << info;
  EXPECT_NE(info.find("rdb_last_save_time:" + std::to_string(st.st_mtime) +
                      "\r\n"),
            std::string::npos)
      << info;
  if (access("/usr/bin/redis-check-rdb", X_OK) == 0) {
    const std::string cmd = "/usr/bin/redis-check-rdb '" + path + "' > '" +
                            dir.path + "/check.txt' 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << ReadAll(dir.path + "/check.txt");
  }
  {
    RedisOracle redis({"--dir", dir.path, "--dbfilename", "s.rdb"});
    SKIP_WITHOUT_REDIS(redis);
    Client c(redis.port());
    EXPECT_EQ(c.Call({"FCALL", "sv", "0"}), "$10\r\nfrom shmkv\r\n");
    for (int db : {0, 3}) {
      c.Call({"SELECT", std::to_string(db)});
      EXPECT_EQ(c.Call({"DBSIZE"}),
                ":" + std::to_string(Samples().size()) + "\r\n");
      for (const Sample& s : Samples()) {
        Value v;
        bool ok = false;
        std::string why;
        ASSERT_TRUE(Undump(BulkOf(c.Call({"DUMP", s.key})), kMax, &v, &ok,
                           &why))
            << s.key << ": " << why;
        EXPECT_TRUE(Same(v, s.want)) << db << " " << s.key;
      }
      EXPECT_EQ(c.Call({"PEXPIRETIME", Samples()[0].key}),
                ":" + std::to_string(ttl_at) + "\r\n");
    }
  }
  // A directory SAVE cannot write: the error names the file, and the
  // previous file is left as it was.
  const std::string before = ReadAll(path);
  ASSERT_EQ(chmod(dir.path.c_str(), 0500), 0);
  if (access(dir.path.c_str(), W_OK) == 0) {  // root writes anyway
    h.info()->dir = dir.path + "/nosuchdir";
  }
  std::string reply = h.Run({"SAVE"});
  EXPECT_EQ(reply.rfind("-ERR SAVE failed: ", 0), 0u) << reply;
  chmod(dir.path.c_str(), 0700);
  EXPECT_EQ(ReadAll(path), before);
  std::string ls = dir.path + "/ls.txt";
  std::system(("ls '" + dir.path + "' > '" + ls + "'").c_str());
  EXPECT_EQ(ReadAll(ls).find("temp-"), std::string::npos) << ReadAll(ls);
}

// shmkv --load-rdb: a file redis-server SAVEs (every sample, two
// databases, a TTL, a key already expired) loads into an empty store and
// the server started on it answers as Redis does; a damaged file, or a
// store that holds keys, is refused with nothing written.
TEST(RdbVsRedis, LoadRdbFillsAnEmptyStoreFromRedissFile) {
  TempDir dir;
  RedisOracle redis({"--dir", dir.path, "--dbfilename", "r.rdb"});
  SKIP_WITHOUT_REDIS(redis);
  Client rc(redis.port());
  const int64_t ttl_at = shmkv::NowMs() + 3600 * 1000;
  for (int db : {0, 7}) {
    rc.Call({"SELECT", std::to_string(db)});
    for (const Sample& s : Samples()) {
      for (const auto& cmd : s.make) rc.Call(cmd);
    }
    rc.Call({"PEXPIREAT", Samples()[2].key, std::to_string(ttl_at)});
  }
  ASSERT_EQ(rc.Call({"SET", "soon", "x", "PX", "300"}), "+OK\r\n");
  // Redis's file holds a function library: it loads with the keys.
  ASSERT_EQ(rc.Call({"FUNCTION", "LOAD",
                     "#!lua name=fromredis\nredis.register_function('fr', "
                     "function(keys) return redis.call('dbsize') end)"}),
            "$9\r\nfromredis\r\n");
  ASSERT_EQ(rc.Call({"SAVE"}), "+OK\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const std::string file = dir.path + "/r.rdb";
  shmkv_test::Server s("loadrdb");
  auto load = [&](const std::string& f) {
    const std::string cmd = std::string(SHMKV_BIN) + " --name " + s.name() +
                            " --capacity 100000 --memory 64M --load-rdb '" +
                            f + "' > '" + dir.path + "/load.txt' 2>&1";
    return std::system(cmd.c_str());
  };
  // A damaged copy first: refused, and no key written.
  std::string bad = ReadAll(file);
  bad[bad.size() / 2] ^= 0x20;
  ASSERT_TRUE(WriteAll(dir.path + "/bad.rdb", bad));
  EXPECT_NE(load(dir.path + "/bad.rdb"), 0);
  EXPECT_NE(ReadAll(dir.path + "/load.txt").find("nothing was loaded"),
            std::string::npos)
      << ReadAll(dir.path + "/load.txt");
  ASSERT_EQ(load(file), 0) << ReadAll(dir.path + "/load.txt");
  EXPECT_NE(ReadAll(dir.path + "/load.txt")
                .find("loaded " + std::to_string(2 * Samples().size()) +
                      " keys from"),
            std::string::npos)
      << ReadAll(dir.path + "/load.txt");
  EXPECT_NE(ReadAll(dir.path + "/load.txt").find("(1 already expired"),
            std::string::npos)
      << ReadAll(dir.path + "/load.txt");
  // A second load into the now full store is refused.
  EXPECT_NE(load(file), 0);
  EXPECT_NE(ReadAll(dir.path + "/load.txt").find("empty store only"),
            std::string::npos)
      << ReadAll(dir.path + "/load.txt");
  ASSERT_TRUE(s.Start()) << s.log();
  Client kv(s.port());
  EXPECT_EQ(kv.Call({"FCALL", "fr", "0"}), rc.Call({"FCALL", "fr", "0"}));
  EXPECT_EQ(kv.Call({"FUNCTION", "LIST", "WITHCODE"}),
            rc.Call({"FUNCTION", "LIST", "WITHCODE"}));
  for (int db : {0, 7}) {
    const std::vector<std::string> sel = {"SELECT", std::to_string(db)};
    ASSERT_EQ(kv.Call(sel), rc.Call(sel));
    EXPECT_EQ(kv.Call({"DBSIZE"}), rc.Call({"DBSIZE"}));
    for (const Sample& smp : Samples()) {
      Value v;
      bool ok = false;
      std::string why;
      ASSERT_TRUE(Undump(BulkOf(kv.Call({"DUMP", smp.key})), kMax, &v, &ok,
                         &why))
          << smp.key << ": " << why;
      EXPECT_TRUE(Same(v, smp.want)) << db << " " << smp.key;
    }
    EXPECT_EQ(kv.Call({"PEXPIRETIME", Samples()[2].key}),
              rc.Call({"PEXPIRETIME", Samples()[2].key}));
  }
}

// MIGRATE from shmkv and from redis-server, each to a redis-server of
// its own, replies as Redis's (moves, NOKEY, COPY, BUSYKEY, REPLACE, the
// KEYS form into another database, the target's AUTH error, syntax,
// nothing listening) and leaves both sides as Redis's; and redis-server
// migrates into shmkv (its SELECT and RESTOREs of every type).
TEST(DumpFamilyVsRedis, MigrateMovesKeysAsRedis) {
  RedisOracle src;
  SKIP_WITHOUT_REDIS(src);
  RedisOracle to_redis, to_shmkv;
  CommandHarness h("migrate");
  ASSERT_TRUE(h.ok()) << h.error();
  Client rc(src.port()), tr(to_redis.port()), ts(to_shmkv.port());
  const std::string nobody = std::to_string(shmkv_test::FreePort());
  // The same command from both sources; {port} is each one's target.
  auto both = [&](std::vector<std::string> cmd) {
    std::vector<std::string> for_redis = cmd, for_shmkv = cmd;
    for (size_t i = 0; i < cmd.size(); ++i) {
      if (cmd[i] == "{port}") {
        for_redis[i] = std::to_string(to_redis.port());
        for_shmkv[i] = std::to_string(to_shmkv.port());
      }
    }
    const std::string want = rc.Call(for_redis);
    EXPECT_EQ(h.Run(for_shmkv), want) << cmd[0] << " " << cmd[3];
    return want;
  };
  // Both targets hold the same keys, equal.
  auto same_targets = [&](int db, const std::vector<std::string>& keys) {
    for (Client* t : {&tr, &ts}) t->Call({"SELECT", std::to_string(db)});
    for (const std::string& k : keys) {
      const std::string a = tr.Call({"DUMP", k}), b = ts.Call({"DUMP", k});
      Value va, vb;
      bool ok = false;
      std::string why;
      ASSERT_TRUE(Undump(BulkOf(a), kMax, &va, &ok, &why)) << k << " " << a;
      ASSERT_TRUE(Undump(BulkOf(b), kMax, &vb, &ok, &why)) << k << " " << b;
      EXPECT_TRUE(Same(va, vb)) << k;
      EXPECT_EQ(tr.Call({"PTTL", k}) == ":-1\r\n",
                ts.Call({"PTTL", k}) == ":-1\r\n") << k;
    }
  };
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{
           {"SET", "s", "v"},
           {"RPUSH", "l", "a", "b", "c"},
           {"HSET", "h", "f", "v", "g", "w"},
           {"ZADD", "z", "1", "a", "2.5", "b"},
           {"SADD", "st", "x", "y", "7"},
           {"SET", "ttl", "v", "PX", "100000"}}) {
    both(cmd);
  }
  EXPECT_EQ(both({"MIGRATE", "127.0.0.1", "{port}", "s", "0", "1000"}),
            "+OK\r\n");
  EXPECT_EQ(both({"EXISTS", "s"}), ":0\r\n");
  same_targets(0, {"s"});
  EXPECT_EQ(both({"MIGRATE", "127.0.0.1", "{port}", "nosuch", "0", "1000"}),
            "+NOKEY\r\n");
  EXPECT_EQ(both({"MIGRATE", "127.0.0.1", "{port}", "l", "0", "1000",
                  "COPY"}),
            "+OK\r\n");
  EXPECT_EQ(both({"EXISTS", "l"}), ":1\r\n");
  EXPECT_EQ(both({"MIGRATE", "127.0.0.1", "{port}", "l", "0", "1000"}),
            "-ERR Target instance replied with error: BUSYKEY Target key "
            "name already exists.\r\n");
  EXPECT_EQ(both({"EXISTS", "l"}), ":1\r\n");
  EXPECT_EQ(both({"MIGRATE", "127.0.0.1", "{port}", "l", "0", "1000",
                  "REPLACE"}),
            "+OK\r\n");
  EXPECT_EQ(both({"EXISTS", "l"}), ":0\r\n");
  same_targets(0, {"l"});
  EXPECT_EQ(both({"MIGRATE", "127.0.0.1", "{port}", "x", "3", "1000",
                  "KEYS", "h"}),
            "-ERR When using MIGRATE KEYS option, the key argument must be "
            "set to the empty string\r\n");
  EXPECT_EQ(both({"MIGRATE", "127.0.0.1", "{port}", "", "3", "1000", "KEYS",
                  "h", "z", "nosuch", "st", "ttl"}),
            "+OK\r\n");
  EXPECT_EQ(both({"DBSIZE"}), ":0\r\n");
  same_targets(3, {"h", "z", "st", "ttl"});
  EXPECT_NE(ts.Call({"PTTL", "ttl"}), ":-1\r\n");
  both({"SET", "a", "1"});
  both({"MIGRATE", "127.0.0.1", "{port}", "a", "0", "1000", "AUTH", "pw"});
  both({"MIGRATE", "127.0.0.1", "{port}", "a", "0", "1000", "AUTH2", "u",
        "pw"});
  both({"MIGRATE", "127.0.0.1", "{port}", "a", "0", "1000", "AUTH"});
  both({"MIGRATE", "127.0.0.1", "{port}", "a", "0", "1000", "BOGUS"});
  both({"MIGRATE", "127.0.0.1", "{port}", "a", "x", "1000"});
  both({"MIGRATE", "127.0.0.1", "{port}", "a", "0", "soon"});
  both({"MIGRATE", "127.0.0.1", nobody, "a", "0", "200"});
  both({"MIGRATE", "127.0.0.1", "{port}", "a"});
  EXPECT_EQ(both({"GET", "a"}), "$1\r\n1\r\n");

  // redis-server migrates every type into shmkv.
  shmkv_test::Server kv("migrate_into");
  ASSERT_TRUE(kv.Start()) << kv.log();
  Client kc(kv.port());
  for (const Sample& smp : Samples()) {
    for (const auto& cmd : smp.make) rc.Call(cmd);
    ASSERT_EQ(rc.Call({"MIGRATE", "127.0.0.1", std::to_string(kv.port()),
                       smp.key, "2", "1000"}),
              "+OK\r\n")
        << smp.key;
  }
  ASSERT_EQ(kc.Call({"SELECT", "2"}), "+OK\r\n");
  EXPECT_EQ(kc.Call({"DBSIZE"}), ":" + std::to_string(Samples().size()) + "\r\n");
  for (const Sample& smp : Samples()) {
    Value v;
    bool ok = false;
    std::string why;
    ASSERT_TRUE(Undump(BulkOf(kc.Call({"DUMP", smp.key})), kMax, &v, &ok,
                       &why))
        << smp.key << ": " << why;
    EXPECT_TRUE(Same(v, smp.want)) << smp.key;
  }
}

}  // namespace
