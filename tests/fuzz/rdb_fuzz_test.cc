// RDB files and DUMP payloads, fuzzed: seed files of every encoding
// (one redis-server 7 writes, when it is installed, and one shmkv's
// writer makes) are cut short, bit-flipped, given lengths that lie (6,
// 14, 32 and 64-bit lengths, LZF headers), grown and shrunk at random
// places, with the CRC fixed up half the time so the decoder itself is
// reached. rdb::ReadFile must refuse each with a reason or read it
// whole into sane values, never crash or read out of bounds (the asan
// preset runs the short suite; CI's asan-stress the long one). A file
// whose CRC was left wrong is always refused. The values of the seeds,
// as DUMP payloads, are fuzzed the same way through rdb::Undump.
// SHMKV_FUZZ_INPUTS sets the inputs per seed (default 300; the stress
// label's long run: 3000).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "server/rdb/codec.h"
#include "server/rdb/crc64.h"
#include "tests/support/redis_oracle.h"
#include "tests/support/shmkv_server.h"
#include "tests/support/temp_files.h"

#ifndef SHMKV_FUZZ_DEFAULT_INPUTS
#define SHMKV_FUZZ_DEFAULT_INPUTS 300
#endif
#include "tests/support/fuzz_suite.h"

namespace {

using shmkv::rdb::Entry;
using shmkv::rdb::Value;
using shmkv_test::Client;

constexpr size_t kMax = 1 << 20;

// A file of every type and encoding from redis-server ("" without it):
// listpacks and hash tables, an intset and a set of strings, a
// quicklist, integer-encoded and LZF strings, TTLs, two databases.
std::string RedisSeed() {
  shmkv_test::TempDir dir;
  shmkv_test::RedisOracle redis({"--dir", dir.path, "--dbfilename", "f.rdb"});
  if (!redis.ok()) return "";
  Client c(redis.port());
  for (int db : {0, 4}) {
    c.Call({"SELECT", std::to_string(db)});
    c.Call({"SET", "int", "12345"});
    c.Call({"SET", "neg", "-7"});
    c.Call({"SET", "lzf", std::string(300, 'a') + "tail"});
    c.Call({"SET", "ttl", "v", "PX", "100000000"});
    for (int i = 0; i < 5; ++i) {
      const std::string n = std::to_string(i);
      c.Call({"HSET", "hsmall", "f" + n, n});
      c.Call({"ZADD", "zsmall", n + ".5", "m" + n});
      c.Call({"SADD", "ints", n});
      c.Call({"SADD", "strs", "s" + n});
      c.Call({"RPUSH", "list", "e" + n, n});
    }
    for (int i = 0; i < 200; ++i) {
      const std::string n = std::to_string(i);
      c.Call({"HSET", "hbig", "field" + n, std::string(70, 'x') + n});
      c.Call({"ZADD", "zbig", n, std::string(70, 'm') + n});
      c.Call({"SADD", "sbig", "member" + n});
    }
  }
  if (c.Call({"SAVE"}) != "+OK\r\n") return "";
  return shmkv_test::ReadAll(dir.path + "/f.rdb");
}

// A file shmkv's writer makes, of its plain forms.
std::string ShmkvSeed() {
  std::string out;
  shmkv::rdb::FileWriter w([&](std::string_view b) {
    out.append(b.data(), b.size());
    return true;
  });
  EXPECT_TRUE(w.Begin(1764000000, 1 << 20));
  EXPECT_TRUE(w.Database(0, 5, 1));
  Value s;
  s.str = std::string(100, 'z') + "123";
  EXPECT_TRUE(w.Key("str", s, 4102444800000));
  Value l;
  l.kind = Value::kList;
  l.items = {"a", "bb", "12", std::string(40, 'q')};
  EXPECT_TRUE(w.Key("list", l, 0));
  Value st;
  st.kind = Value::kSet;
  st.items = {"x", "y", "3"};
  EXPECT_TRUE(w.Key("set", st, 0));
  Value h;
  h.kind = Value::kHash;
  h.pairs = {{"f", "v"}, {"g", std::string(30, 'w')}};
  EXPECT_TRUE(w.Key("hash", h, 0));
  Value z;
  z.kind = Value::kZSet;
  z.scored = {{"a", 1.5}, {"b", -2}, {"c", 1e300}};
  EXPECT_TRUE(w.Key("zset", z, 0));
  EXPECT_TRUE(w.Finish());
  return out;
}

// `in` damaged one way, chosen by rng.
std::string Mutate(const std::string& in, std::mt19937_64& rng) {
  std::string s = in;
  if (s.empty()) return s;
  auto at = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  switch (rng() % 6) {
    case 0:  // cut short
      s.resize(at(s.size()));
      break;
    case 1:  // bits flipped
      for (int k = 1 + static_cast<int>(rng() % 8); k > 0; --k) {
        s[at(s.size())] ^= static_cast<char>(1u << (rng() % 8));
      }
      break;
    case 2: {  // a length that lies
      static const std::vector<std::string> lies = {
          std::string("\x80\xff\xff\xff\xff", 5),
          std::string("\x81\x7f\xff\xff\xff\xff\xff\xff\xff", 9),
          std::string("\x81\xff\xff\xff\xff\xff\xff\xff\xff", 9),
          std::string("\x7f\xff", 2),
          std::string("\x3f", 1),
          std::string("\xc3\x80\xff\xff\xff\xff\x80\xff\xff\xff\xff", 11),
          std::string("\xc3\x05\x80\x10\x00\x00\x00", 7),
          std::string("\xc2\xff\xff\xff\x7f", 5)};
      const std::string& lie = lies[at(lies.size())];
      const size_t p = at(s.size());
      s.replace(p, std::min(lie.size(), s.size() - p), lie);
      break;
    }
    case 3: {  // bytes inserted
      std::string junk(1 + at(16), '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      s.insert(at(s.size()), junk);
      break;
    }
    case 4: {  // a range removed
      const size_t p = at(s.size());
      s.erase(p, 1 + at(std::min<size_t>(64, s.size() - p)));
      break;
    }
    default: {  // a slice copied elsewhere
      const size_t from = at(s.size());
      const size_t n = 1 + at(std::min<size_t>(64, s.size() - from));
      const std::string slice = s.substr(from, n);
      s.insert(at(s.size()), slice);
      break;
    }
  }
  return s;
}

// `s` with its last 8 bytes the CRC-64 of the rest, as a writer makes it.
std::string WithCrc(std::string s) {
  if (s.size() < 8) return s;
  const uint64_t crc = shmkv::rdb::Crc64(0, s.data(), s.size() - 8);
  for (int k = 0; k < 8; ++k) s[s.size() - 8 + k] = static_cast<char>(crc >> (8 * k));
  return s;
}

bool Sane(const Value& v) {
  for (const auto& [m, score] : v.scored) {
    if (std::isnan(score)) return false;
  }
  return v.str.size() <= kMax;
}

void FuzzFile(const std::string& seed, uint64_t salt) {
  ASSERT_FALSE(seed.empty());
  std::string why;
  size_t keys = 0;
  ASSERT_TRUE(shmkv::rdb::ReadFile(
      seed, kMax, [&](Entry&, std::string*) { return ++keys, true; }, &why))
      << why;
  std::mt19937_64 rng(salt);
  size_t refused = 0, read = 0;
  std::vector<std::string> payloads;
  shmkv::rdb::ReadFile(
      seed, kMax,
      [&](Entry& e, std::string*) {
        payloads.push_back(shmkv::rdb::Dump(e.value));
        return true;
      },
      &why);
  for (uint64_t i = 0; i < shmkv_test::FuzzInputs(); ++i) {
    std::string bad = Mutate(seed, rng);
    const bool crc_fixed = rng() % 2 == 0;
    if (crc_fixed) bad = WithCrc(bad);
    if (bad == seed) continue;
    why.clear();
    bool sane = true;
    const bool ok = shmkv::rdb::ReadFile(
        bad, kMax,
        [&](Entry& e, std::string*) {
          sane = sane && Sane(e.value) && e.db < 16;
          return true;
        },
        &why);
    if (ok) {
      ++read;
      EXPECT_TRUE(sane) << "input " << i;
      EXPECT_TRUE(crc_fixed) << "a wrong CRC read as whole, input " << i;
    } else {
      ++refused;
      EXPECT_FALSE(why.empty()) << "input " << i;
    }
    // The same damage on one value's DUMP payload.
    const std::string& p = payloads[i % payloads.size()];
    std::string badp = Mutate(p, rng);
    if (crc_fixed && badp.size() >= 10) {
      const uint64_t crc = shmkv::rdb::Crc64(0, badp.data(), badp.size() - 8);
      for (int k = 0; k < 8; ++k) {
        badp[badp.size() - 8 + k] = static_cast<char>(crc >> (8 * k));
      }
    }
    Value v;
    bool checksum_ok = false;
    if (shmkv::rdb::Undump(badp, kMax, &v, &checksum_ok, &why)) {
      EXPECT_TRUE(Sane(v));
    }
  }
  EXPECT_GT(refused, read) << "most damage is refused";
}

TEST(SHMKV_FUZZ_NAME(RdbFuzz, SHMKV_FUZZ_SUITE), RedisFilesDamagedAreRefusedOrReadWhole) {
  const std::string seed = RedisSeed();
  if (seed.empty()) {
    if (shmkv_test::InCi()) FAIL() << "redis-server is missing in CI";
    GTEST_SKIP() << "redis-server is not installed";
  }
  FuzzFile(seed, 17);
}

TEST(SHMKV_FUZZ_NAME(RdbFuzz, SHMKV_FUZZ_SUITE), ShmkvFilesDamagedAreRefusedOrReadWhole) {
  FuzzFile(ShmkvSeed(), 29);
}

}  // namespace
