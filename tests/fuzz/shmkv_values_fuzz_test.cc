// Damaged collection values, fuzzed: every encoding of the four types
// (packed and in parts) is built, then its root blob or one of its parts
// is overwritten with mutated bytes (bits flipped, cut short, lengthened,
// random words at random places), and every command of the type, and the
// key commands, run on it. Each must answer one well-formed RESP reply
// (the damaged-value error or a reply it could make of the bytes), never
// crash or read out of bounds (the asan preset runs this file too), and
// DEL must remove what is left. SHMKV_FUZZ_INPUTS sets the inputs per
// shape (default 24; the stress label's long run: 120).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "server/store/blob.h"
#include "tests/support/command_harness.h"

#ifndef SHMKV_FUZZ_DEFAULT_INPUTS
#define SHMKV_FUZZ_DEFAULT_INPUTS 24
#endif
#include "tests/support/fuzz_suite.h"

namespace {

using shmkv_test::CommandHarness;
using Cmd = std::vector<std::string>;

// The length of the one RESP reply at s[p...], or 0 when it is not one.
size_t ReplyLength(const std::string& s, size_t p, int depth = 0) {
  if (p >= s.size() || depth > 8) return 0;
  size_t e = s.find("\r\n", p);
  if (e == std::string::npos) return 0;
  char kind = s[p];
  if (kind == '+' || kind == '-' || kind == ':') return e + 2 - p;
  if (kind != '$' && kind != '*') return 0;
  long n = std::strtol(s.c_str() + p + 1, nullptr, 10);
  if (n < 0) return e + 2 - p;
  size_t q = e + 2;
  if (kind == '$') {
    if (q + static_cast<size_t>(n) + 2 > s.size()) return 0;
    return q + static_cast<size_t>(n) + 2 - p;
  }
  for (long i = 0; i < n; ++i) {
    size_t len = ReplyLength(s, q, depth + 1);
    if (len == 0) return 0;
    q += len;
  }
  return q - p;
}

struct Shape {
  const char* name;
  Cmd build;                   // repeated with __i__ replaced by 0..times-1
  int times;
  std::vector<Cmd> commands;   // K is the key
  std::vector<Cmd> then = {};  // after the builds, once
};

// ZADD K of `n` members at score __i__ (one commit for many members: a
// tree of three levels is built in few commands).
Cmd ZAddMany(int n) {
  Cmd c = {"ZADD", "K"};
  for (int k = 0; k < n; ++k) {
    c.push_back("__i__");
    c.push_back(std::string(1, static_cast<char>('a' + k)) + "__i__");
  }
  return c;
}

std::vector<Shape> Shapes() {
  const std::vector<Cmd> hash = {
      {"HGET", "K", "f1"}, {"HMGET", "K", "f1", "zz"}, {"HLEN", "K"},
      {"HEXISTS", "K", "f3"}, {"HSTRLEN", "K", "f2"}, {"HGETALL", "K"},
      {"HKEYS", "K"}, {"HVALS", "K"}, {"HSCAN", "K", "0", "COUNT", "50"},
      {"HRANDFIELD", "K", "-7", "WITHVALUES"}, {"HRANDFIELD", "K", "5"},
      {"HINCRBY", "K", "n", "1"}, {"HINCRBYFLOAT", "K", "n", "1.5"},
      {"HSET", "K", "f1", "new", "g", "h"}, {"HSETNX", "K", "f9", "x"},
      {"HDEL", "K", "f2", "f4", "zz"}};
  const std::vector<Cmd> list = {
      {"LLEN", "K"}, {"LINDEX", "K", "3"}, {"LINDEX", "K", "-1"},
      {"LRANGE", "K", "0", "-1"}, {"LRANGE", "K", "-5", "100"},
      {"LPOS", "K", "v3", "COUNT", "0"}, {"LSET", "K", "2", "s"},
      {"LINSERT", "K", "BEFORE", "v5", "ins"}, {"LREM", "K", "-2", "v7"},
      {"LPUSH", "K", "a", "b"}, {"RPUSH", "K", "c"}, {"LPOP", "K", "2"},
      {"RPOP", "K"}, {"LMOVE", "K", "K", "LEFT", "RIGHT"},
      {"LTRIM", "K", "1", "-2"}, {"LMPOP", "1", "K", "RIGHT", "COUNT", "3"}};
  const std::vector<Cmd> set = {
      {"SCARD", "K"}, {"SISMEMBER", "K", "7"}, {"SMISMEMBER", "K", "1", "m2"},
      {"SMEMBERS", "K"}, {"SRANDMEMBER", "K", "-9"}, {"SRANDMEMBER", "K", "4"},
      {"SSCAN", "K", "0", "COUNT", "40"}, {"SINTER", "K", "K"},
      {"SUNION", "K", "none"}, {"SDIFF", "K", "none"},
      {"SINTERCARD", "1", "K"}, {"SADD", "K", "99999", "word"},
      {"SREM", "K", "3", "m5"}, {"SPOP", "K", "2"},
      {"SMOVE", "K", "other", "4"}, {"SUNIONSTORE", "dst", "K"}};
  const std::vector<Cmd> zset = {
      {"ZCARD", "K"}, {"ZSCORE", "K", "m3"}, {"ZMSCORE", "K", "m1", "zz"},
      {"ZRANK", "K", "m5"}, {"ZREVRANK", "K", "m5"},
      {"ZCOUNT", "K", "-inf", "+inf"}, {"ZLEXCOUNT", "K", "-", "+"},
      {"ZRANGE", "K", "0", "-1", "WITHSCORES"},
      {"ZRANGE", "K", "(1", "50", "BYSCORE", "LIMIT", "1", "5"},
      {"ZRANGE", "K", "[m1", "(m9", "BYLEX"},
      {"ZRANDMEMBER", "K", "-5", "WITHSCORES"},
      {"ZSCAN", "K", "0"}, {"ZADD", "K", "GT", "CH", "7", "m1", "1", "new"},
      {"ZINCRBY", "K", "2.5", "m2"}, {"ZREM", "K", "m4"},
      {"ZPOPMIN", "K", "2"}, {"ZPOPMAX", "K"},
      {"ZREMRANGEBYRANK", "K", "0", "1"},
      {"ZUNIONSTORE", "dst", "1", "K"}, {"ZMPOP", "1", "K", "MAX"}};
  const std::vector<Cmd> stream = {
      {"XLEN", "K"}, {"XRANGE", "K", "-", "+"},
      {"XRANGE", "K", "(1-3", "+", "COUNT", "4"},
      {"XREVRANGE", "K", "+", "-", "COUNT", "7"},
      {"XREAD", "COUNT", "3", "STREAMS", "K", "1-5"}, {"XDEL", "K", "1-3"},
      {"XTRIM", "K", "MAXLEN", "5"}, {"XADD", "K", "*", "f", "v"},
      {"XADD", "K", "MINID", "1-9", "*", "g", "w"},
      {"XSETID", "K", "99999999999999-0"}, {"DUMP", "K"}};
  std::vector<Cmd> groups = stream;
  groups.insert(groups.end(), {
      {"XINFO", "GROUPS", "K"}, {"XINFO", "CONSUMERS", "K", "g"},
      {"XINFO", "STREAM", "K", "FULL"}, {"XPENDING", "K", "g"},
      {"XPENDING", "K", "g", "-", "+", "10", "c1"},
      {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "K", "0"},
      {"XREADGROUP", "GROUP", "g", "c3", "COUNT", "5", "STREAMS", "K", ">"},
      {"XACK", "K", "g", "1-5", "1-6"}, {"XCLAIM", "K", "g", "c3", "0", "1-7",
                                         "1-8", "FORCE"},
      {"XAUTOCLAIM", "K", "g", "c4", "0", "-", "COUNT", "5"},
      {"XGROUP", "DELCONSUMER", "K", "g", "c2"},
      {"XGROUP", "DESTROY", "K", "h"}, {"COPY", "K", "K2"}});
  const std::vector<Cmd> grouped = {
      {"XGROUP", "CREATE", "K", "g", "0"}, {"XGROUP", "CREATE", "K", "h", "$"},
      {"XREADGROUP", "GROUP", "g", "c1", "COUNT", "40", "STREAMS", "K", ">"},
      {"XREADGROUP", "GROUP", "g", "c2", "COUNT", "40", "STREAMS", "K", ">"},
      {"XACK", "K", "g", "1-3"}};
  return {
      {"stream with groups", {"XADD", "K", "1-__i__", "f", "v__i__"}, 150,
       groups, grouped},
      {"packed stream", {"XADD", "K", "1-__i__", "f", "v__i__"}, 30, stream},
      {"stream in parts", {"XADD", "K", "1-__i__", "f", "v__i__", "g", "w"},
       400, stream},
      {"packed hash", {"HSET", "K", "f__i__", "v__i__"}, 20, hash},
      {"hash in buckets", {"HSET", "K", "f__i__", "v__i__"}, 700, hash},
      {"packed list", {"RPUSH", "K", "v__i__"}, 30, list},
      {"list in chunks", {"RPUSH", "K", "v__i__"}, 600, list},
      {"intset", {"SADD", "K", "__i__"}, 40, set},
      {"set in buckets", {"SADD", "K", "m__i__"}, 700, set},
      {"listpack zset", {"ZADD", "K", "__i__", "m__i__"}, 30, zset},
      {"zset in parts", {"ZADD", "K", "__i__", "m__i__"}, 300, zset},
      {"zset of three levels", ZAddMany(20), 160, zset},
  };
}

Cmd WithKey(const Cmd& c, const std::string& i) {
  Cmd out = c;
  for (std::string& a : out) {
    size_t p = a.find("__i__");
    if (p != std::string::npos) a.replace(p, 5, i);
  }
  return out;
}

std::string Mutate(std::string b, std::mt19937_64* rng) {
  switch ((*rng)() % 5) {
    case 0:  // flip a few bits
      for (int k = 0; k < 3 && !b.empty(); ++k) {
        b[(*rng)() % b.size()] ^= static_cast<char>(1 << ((*rng)() % 8));
      }
      break;
    case 1:  // cut short
      b.resize(b.empty() ? 0 : (*rng)() % b.size());
      break;
    case 2:  // lengthen with junk
      for (uint64_t k = (*rng)() % 64; k > 0; --k) {
        b.push_back(static_cast<char>((*rng)()));
      }
      break;
    case 3:  // a random word where a count or length would be
      if (b.size() >= 8) {
        uint64_t w = (*rng)() % 2 ? (*rng)() : (*rng)() % 1024;
        size_t at = ((*rng)() % (b.size() - 7)) & ~size_t{3};
        std::memcpy(&b[at], &w, (*rng)() % 2 ? 8 : 4);
      }
      break;
    default:  // all junk
      for (char& c : b) c = static_cast<char>((*rng)());
  }
  return b;
}

TEST(SHMKV_FUZZ_NAME(ShmkvValuesFuzz, SHMKV_FUZZ_SUITE),
     DamagedValuesGetAnswersNeverCrashes) {
  const uint64_t inputs = shmkv_test::FuzzInputs();
  CommandHarness h("valuesfuzz", 50000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  std::mt19937_64 rng(0x5eed);
  const Cmd generic[] = {{"TYPE", "K"},   {"OBJECT", "ENCODING", "K"},
                         {"COPY", "K", "K2"}, {"RENAME", "K2", "K3"},
                         {"EXPIRE", "K", "100"}, {"DEL", "K3"}};
  uint64_t damaged_replies = 0, runs = 0, refused = 0;
  for (const Shape& shape : Shapes()) {
    for (uint64_t input = 0; input < inputs; ++input) {
      ASSERT_EQ(h.Run({"FLUSHALL"}), "+OK\r\n");
      for (int i = 0; i < shape.times; ++i) {
        h.Run(WithKey(shape.build, std::to_string(i)));
      }
      for (const Cmd& c : shape.then) h.Run(c);
      shmkv::Value root;
      ASSERT_TRUE(h.store()->Get("K", &root)) << shape.name;
      {
        auto t = h.store()->Begin();
        bool parts = (root.encoding & shmkv::kEncodingParts) != 0 &&
                     root.bytes.size() >= sizeof(shmkv::PartsRoot);
        if (parts && rng() % 3 != 0) {
          shmkv::PartsRoot pr;
          std::memcpy(&pr, root.bytes.data(), sizeof(pr));
          std::string part;
          uint64_t index = rng() % 8;
          if (t->ReadPart(pr.id, index, &part) != shmkv::Store::Status::kOk) {
            index = 0;
            t->ReadPart(pr.id, index, &part);
          }
          ASSERT_EQ(t->WritePart(pr.id, index, Mutate(part, &rng)),
                    shmkv::Store::Status::kOk);
        } else {
          ASSERT_EQ(t->Write("K", root.type, root.encoding,
                             Mutate(root.bytes, &rng), 0),
                    shmkv::Store::Status::kOk);
        }
        // The store refuses some roots outright (a count of parts past
        // what the map can hold): nothing to run commands on.
        if (t->Commit() != shmkv::Store::Status::kOk) {
          ++refused;
          continue;
        }
      }
      std::vector<Cmd> all = shape.commands;
      all.insert(all.end(), std::begin(generic), std::end(generic));
      for (const Cmd& cmd : all) {
        std::string r = h.Run(cmd);
        ++runs;
        ASSERT_EQ(ReplyLength(r, 0), r.size())
            << shape.name << " input " << input << ": " << cmd[0]
            << " answered [" << r.substr(0, 200) << "]";
        damaged_replies += r.find("damaged") != std::string::npos;
      }
      ASSERT_EQ(h.Run({"DEL", "K", "K2", "K3", "dst", "other"}).substr(0, 1),
                ":");
      EXPECT_EQ(h.Run({"EXISTS", "K"}), ":0\r\n");
    }
  }
  std::printf("%llu commands on damaged values, %llu damaged-value replies, %llu inputs refused by the store\n", static_cast<unsigned long long>(runs), static_cast<unsigned long long>(damaged_replies), static_cast<unsigned long long>(refused));
  EXPECT_GT(damaged_replies, runs / 20) << "the damage was seen";
  EXPECT_LT(refused, inputs * Shapes().size() / 4) << "most damage landed";
  ASSERT_EQ(h.Run({"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(h.store()->Parts(), 0u) << "DEL and FLUSHALL leave no part";
}

}  // namespace
