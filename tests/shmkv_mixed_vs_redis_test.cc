// Every family at once, in process, against redis-server: random command
// sequences over a few keys, each reply compared byte for byte.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/support/diff_harness.h"

namespace {

using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using shmkv_test::Client;

// Random sequences of string, hash, list, set, sorted-set, key, expiry
// and transaction commands over six keys (and two of their own for
// lexicographic ranges), each sent to both servers, every reply
// byte-identical. The
// arguments are drawn where shmkv and Redis parted before: zero bytes,
// leading zeros and signs, int64's ends, floats, options in any order.
// What depends on the clock or on table order is left out (TTL, SCAN,
// RANDOMKEY, KEYS of several keys; expiry is absolute and far away, or
// in the past), and so is DBSIZE: Redis removes an expired key when a
// command touches it, shmkv when its sweep or a write does, and both
// count it until then. Each seed stops at its first difference, naming
// it and the commands since the last MULTI.
std::vector<std::string> RandomCommand(std::mt19937_64& rng) {
  auto pick = [&](std::initializer_list<const char*> l) {
    return std::string(*(l.begin() + rng() % l.size()));
  };
  auto key = [&] { return "k" + std::to_string(rng() % 6); };
  auto num = [&] {
    return pick({"0", "1", "-1", "2", "7", "100", "-3", "2147483648",
                 "9223372036854775807", "-9223372036854775808", "01", "+1",
                 "-0", "12345678901234", "x"});
  };
  auto val = [&]() -> std::string {
    switch (rng() % 6) {
      case 0: return std::to_string(static_cast<int>(rng() % 41) - 20);
      case 1: return pick({"9223372036854775807", "-9223372036854775808",
                           "9223372036854775808", "0", "1.5", "-2.25e1"});
      case 2: return "";
      default: {
        std::string v;
        const char bytes[] = "abxyz019 \0\xff";
        for (size_t n = 1 + rng() % 10; n > 0; --n) {
          v += bytes[rng() % (sizeof(bytes) - 1)];
        }
        return v;
      }
    }
  };
  auto when = [&] {
    return pick({"4102444800", "4102444801", "1", "0", "-5", "x", "04102444800"});
  };
  auto field = [&] { return "f" + std::to_string(rng() % 5); };
  auto score = [&] {
    return pick({"0", "1", "-1", "1.5", "-2.25e1", "-inf", "+inf", "inf",
                 "nan", "x", "1e3", "-0", " 1", "(1", "9007199254740993"});
  };
  auto bound = [&] {
    return pick({"-inf", "+inf", "0", "(0", "1.5", "(1.5", "-1", "x", "(",
                 "nan"});
  };
  auto lex = [&] {
    return pick({"-", "+", "[a", "(a", "[", "(", "a", "[\xff", "(9"});
  };
  if (rng() % 20 == 0) {
    // Lexicographic ranges are defined only where every score is the
    // same (Redis leaves the rest unspecified): on keys of their own,
    // always given score 0.
    const std::string lk = "lz" + std::to_string(rng() % 2);
    switch (rng() % 5) {
      case 0: return {"ZADD", lk, "0", val(), "0", val()};
      case 1: return {"ZLEXCOUNT", lk, lex(), lex()};
      case 2: return {pick({"ZRANGEBYLEX", "ZREVRANGEBYLEX"}), lk, lex(),
                      lex(), "LIMIT", num(), num()};
      case 3: return {"ZREMRANGEBYLEX", lk, lex(), lex()};
      default: return {"ZRANGE", lk, lex(), lex(), "BYLEX",
                       pick({"REV", "LIMIT"}), "0", "2"};
    }
  }
  if (rng() % 25 == 0) {
    // SORT, relative expiry (its reply and errors, and a deadline already
    // past: one ahead would make EXPIRETIME depend on the clock) and OBJECT
    // ENCODING (Redis's names for each shape). SORT sorts the keys of
    // every type by number (an order Redis fixes whatever the source:
    // equal scores go by the elements' bytes), and lists of their own
    // (sl0, sl1) any way: by ALPHA and by BY patterns too, where equal
    // elements or weights keep the source's order, which only a list
    // fixes (a set's or sorted set's is its table's), and BY with LIMIT
    // is left out (Redis's partial sort leaves equal weights unordered).
    // GET and BY patterns reach the keys k<element> and their fields.
    const std::string sl = "sl" + std::to_string(rng() % 2);
    auto get = [&] { return pick({"#", "k*", "k*->f0", "k"}); };
    switch (rng() % 5) {
      case 0: {
        std::vector<std::string> c = {pick({"SORT", "SORT_RO"}), key()};
        for (int i = rng() % 4; i > 0; --i) {
          switch (rng() % 4) {
            case 0: c.push_back(pick({"ASC", "DESC", "x"})); break;
            case 1: c.insert(c.end(), {"LIMIT", num(), num()}); break;
            case 2: c.insert(c.end(), {"GET", get()}); break;
            default: c.insert(c.end(), {"STORE", key()});
          }
        }
        return c;
      }
      case 1: {
        std::vector<std::string> c = {pick({"SORT", "SORT_RO"}), sl};
        bool by = false, limit = false;
        for (int i = rng() % 5; i > 0; --i) {
          switch (rng() % 5) {
            case 0: c.push_back(pick({"ASC", "DESC", "ALPHA", "ALPHA"}));
                    break;
            case 1:
              if (by) break;
              limit = true;
              c.insert(c.end(), {"LIMIT", num(), num()});
              break;
            case 2:
              if (limit) break;
              by = true;
              c.insert(c.end(), {"BY", pick({"k*", "k*->f1", "nosort",
                                             "nokey_*"})});
              break;
            case 3: c.insert(c.end(), {"GET", get()}); break;
            default:
              c.insert(c.end(), {"STORE", "sl" + std::to_string(rng() % 2)});
          }
        }
        return c;
      }
      case 2: return {pick({"RPUSH", "LPUSH"}), sl, val(), val(), val()};
      case 3: {
        std::vector<std::string> c = {pick({"EXPIRE", "PEXPIRE"}), key(),
                                      pick({"0", "-1", "-100", "x", "00",
                                            "9223372036854775807",
                                            "-9223372036854775808"})};
        if (rng() % 2) c.push_back(pick({"NX", "XX", "GT", "LT", "YY"}));
        return c;
      }
      default: return {"OBJECT", pick({"ENCODING", "ENCODING", "FREQ"}),
                       key()};
    }
  }
  if (rng() % 6 == 0) {
    // Sorted sets, on the same keys (the members from val(): the empty
    // one, zero bytes, numbers that are not scores).
    switch (rng() % 14) {
      case 0: return {"ZADD", key(), score(), val(), score(), val()};
      case 1: {
        std::vector<std::string> c = {"ZADD", key()};
        for (int i = rng() % 3; i > 0; --i) {
          c.push_back(pick({"NX", "XX", "GT", "LT", "CH", "INCR"}));
        }
        c.push_back(score());
        c.push_back(val());
        return c;
      }
      case 2: return {"ZINCRBY", key(), score(), val()};
      case 3: return {"ZREM", key(), val(), val()};
      case 4: return {pick({"ZSCORE", "ZRANK", "ZREVRANK"}), key(), val()};
      case 5: return {"ZMSCORE", key(), val(), val()};
      case 6: return {"ZCARD", key()};
      case 7: return {"ZCOUNT", key(), bound(), bound()};
      case 8: {
        std::vector<std::string> c = {"ZRANGE", key()};
        switch (rng() % 2) {
          case 0: c.insert(c.end(), {num(), num()}); break;
          default: c.insert(c.end(), {bound(), bound(), "BYSCORE"}); break;
        }
        if (rng() % 2) c.push_back("REV");
        if (rng() % 3 == 0) c.insert(c.end(), {"LIMIT", num(), num()});
        if (rng() % 2) c.push_back("WITHSCORES");
        return c;
      }
      case 9: return {pick({"ZRANGEBYSCORE", "ZREVRANGEBYSCORE"}), key(),
                       bound(), bound(), "WITHSCORES"};
      case 10: return {pick({"ZREMRANGEBYRANK", "ZREMRANGEBYSCORE"}), key(),
                       num(), num()};
      case 11: return {pick({"ZPOPMIN", "ZPOPMAX"}), key(),
                       pick({"1", "2", "0", "-1", "x"})};
      case 12: return {pick({"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"}),
                       key(), "2", key(), key()};
      default: return {"ZRANGESTORE", key(), key(), num(), num()};
    }
  }
  if (rng() % 5 == 0) {
    // Sets, on the same keys (replies whose order Redis's table decides
    // are left out).
    switch (rng() % 7) {
      case 0: return {"SADD", key(), val(), val()};
      case 1: return {"SREM", key(), val()};
      case 2: return {pick({"SISMEMBER", "SMISMEMBER"}), key(), val()};
      case 3: return {"SCARD", key()};
      case 4: return {"SMOVE", key(), key(), val()};
      case 5: return {pick({"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"}),
                      key(), key(), key()};
      default: return {"SINTERCARD", "2", key(), key()};
    }
  }
  if (rng() % 4 == 0) {
    // Lists, on the same keys.
    switch (rng() % 12) {
      case 8: return {"LINSERT", key(), pick({"BEFORE", "AFTER", "X"}),
                      val(), val()};
      case 9: return {"LPOS", key(), val(), pick({"RANK", "COUNT", "MAXLEN"}),
                      num()};
      case 10: return {"LTRIM", key(), num(), num()};
      case 11: return {pick({"RPOPLPUSH", "LMPOP"}), key(), key()};
      case 0: return {pick({"LPUSH", "RPUSH"}), key(), val(), val()};
      case 1: return {pick({"LPOP", "RPOP"}), key()};
      case 2: return {pick({"LPOP", "RPOP"}), key(), pick({"0", "2", "-1"})};
      case 3: return {"LRANGE", key(), num(), num()};
      case 4: return {"LMOVE", key(), key(), pick({"LEFT", "RIGHT"}),
                      pick({"LEFT", "RIGHT"})};
      case 5: return {"LREM", key(), pick({"0", "1", "-1"}), val()};
      case 6: return {pick({"LLEN", "LINDEX"}), key(), "0"};
      default: return {"LSET", key(), pick({"0", "-1", "5"}), val()};
    }
  }
  if (rng() % 16 == 0) {
    // HyperLogLogs (strings: APPEND and SETRANGE damage them) and
    // geospatial sets (sorted sets) on the same keys as the others. One
    // element per PFADD: on a damaged value Redis keeps what a PFADD of
    // several raised before the damage stopped it (docs/server.md).
    const std::string lon = pick({"0", "13.36", "-179.9", "180", "200"});
    const std::string lat = pick({"0", "38.11", "85.05", "-85.06", "x"});
    switch (rng() % 9) {
      case 0: case 1: return {"PFADD", key(), val()};
      case 2: return {"PFCOUNT", key()};
      case 3: return {"PFCOUNT", key(), key()};
      case 4: return {"PFMERGE", key(), key()};
      case 5: return {"GEOADD", key(), lon, lat, field()};
      case 6: return {pick({"GEOPOS", "GEOHASH"}), key(), field(), field()};
      case 7: return {"GEOSEARCH", key(), "FROMLONLAT", lon, "0", "BYRADIUS",
                      pick({"100", "20000"}), "km", "WITHDIST", "ASC"};
      default: return {"GEODIST", key(), field(), field(), "km"};
    }
  }
  if (rng() % 10 == 0) {
    // Streams, on the same keys as the strings and hashes (WRONGTYPE both
    // ways), with IDs that often do not rise (the same error in both).
    auto sid = [&] {
      return std::to_string(rng() % 40) + pick({"-*", "-1", "", "-0"});
    };
    switch (rng() % 12) {
      // Consumer groups (two groups, three consumers).
      case 7: return {"XGROUP", "CREATE", key(), pick({"g", "h"}),
                      pick({"$", "0", "3"}), "MKSTREAM"};
      case 8: return {"XREADGROUP", "GROUP", pick({"g", "h"}),
                      pick({"c1", "c2", "c3"}), "COUNT", pick({"1", "2"}),
                      "STREAMS", key(), pick({">", ">", "0"})};
      case 9: return {"XACK", key(), pick({"g", "h"}), sid(), sid()};
      case 10: return {"XAUTOCLAIM", key(), pick({"g", "h"}),
                       pick({"c1", "c2", "c3"}), "0", "-", "COUNT", "2",
                       "JUSTID"};
      case 11:
        if (rng() % 2) return {"XPENDING", key(), pick({"g", "h"})};
        return {"XINFO", "GROUPS", key()};
      case 0: case 1: return {"XADD", key(), sid(), field(), val()};
      case 2: return {"XRANGE", key(), pick({"-", "(3", "5"}), "+", "COUNT",
                      pick({"1", "3", "0"})};
      case 3: return {"XREVRANGE", key(), "+", pick({"-", "(3", "5"})};
      case 4: return {pick({"XLEN", "TYPE"}), key()};
      case 5: return {"XDEL", key(), sid()};
      default: return {"XTRIM", key(), pick({"MAXLEN", "MINID"}),
                       pick({"=", "~"}), pick({"0", "2", "10"})};
    }
  }
  if (rng() % 3 == 0) {
    // Hashes, on the same keys as the strings (WRONGTYPE both ways).
    switch (rng() % 12) {
      case 0: return {"HSET", key(), field(), val(), field(), val()};
      case 1: return {"HSET", key(), field(), val()};
      case 2: return {"HGET", key(), field()};
      case 3: return {"HDEL", key(), field(), field()};
      case 4: return {"HINCRBY", key(), field(), num()};
      case 5: return {"HINCRBYFLOAT", key(), field(),
                      pick({"1.5", "-0.25", "3", "1e3", "abc", "inf", ""})};
      case 6: return {"HGETALL", key()};
      case 7: return {pick({"HLEN", "HKEYS", "HVALS"}), key()};
      case 8: return {"HMGET", key(), field(), field()};
      case 9: return {"HSETNX", key(), field(), val()};
      case 10: return {pick({"HEXISTS", "HSTRLEN"}), key(), field()};
      default: return {"HSCAN", key(), "0", "MATCH", pick({"*", "f[12]", "x"})};
    }
  }
  switch (rng() % 30) {
    case 0: return {"SET", key(), val()};
    case 1: {
      std::vector<std::string> c = {"SET", key(), val()};
      for (int i = rng() % 3; i > 0; --i) {
        c.push_back(pick({"NX", "XX", "GET", "KEEPTTL", "EXAT", "PXAT"}));
        if (c.back() == "EXAT" || c.back() == "PXAT") c.push_back(when());
      }
      return c;
    }
    case 2: return {"GET", key()};
    case 3: return {"DEL", key(), key()};
    case 4: return {pick({"INCR", "DECR"}), key()};
    case 5: return {pick({"INCRBY", "DECRBY"}), key(), num()};
    case 6: return {"APPEND", key(), val()};
    case 7: return {pick({"GETRANGE", "SUBSTR"}), key(), num(), num()};
    case 8: return {"SETRANGE", key(), pick({"0", "1", "3", "-1", "01"}), val()};
    case 9: return {"STRLEN", key()};
    case 10: return {"MSET", key(), val(), key(), val()};
    case 11: return {"MGET", key(), key(), key()};
    case 12: return {"EXISTS", key(), key()};
    case 13: return {pick({"GETSET", "SETNX", "MSETNX"}), key(), val()};
    case 14: return {"GETDEL", key()};
    case 15: return {"INCRBYFLOAT", key(),
                     pick({"1.5", "-0.25", "3", "1e3", "abc", "inf", "", " 1"})};
    case 16: return {pick({"RENAME", "RENAMENX"}), key(), key()};
    case 17: return {"COPY", key(), key(), pick({"REPLACE", "DB"})};
    case 18: return {"SETBIT", key(), pick({"0", "7", "8", "100", "-1"}),
                     pick({"0", "1", "2"})};
    case 19: return {"BITCOUNT", key(), num(), num(), pick({"BYTE", "BIT"})};
    case 20: return {"BITPOS", key(), pick({"0", "1"}), num()};
    case 21: return {"LCS", key(), key(), pick({"LEN", "IDX", "FOO"})};
    case 22: return {pick({"EXPIREAT", "PEXPIREAT"}), key(), when(),
                     pick({"NX", "XX", "GT", "LT", "NX"})};
    case 23: return {pick({"EXPIRETIME", "PEXPIRETIME", "PERSIST", "TYPE"}),
                     key()};
    case 24: return {"GETEX", key(), pick({"EXAT", "PXAT", "PERSIST"}),
                     when()};
    case 25: return {pick({"SETEX", "PSETEX"}), key(),
                     pick({"0", "-1", "x", "01"}), val()};
    case 26: return {pick({"MULTI", "EXEC", "DISCARD", "UNWATCH"})};
    case 27: return {pick({"WATCH", "EXEC"}), key()};
    case 28: return {"FLUSHALL"};
    default: return {"KEYS", key()};  // one key at most
  }
}

// Whether some key is a sorted set Redis holds as a skiplist where shmkv
// holds it packed: what Redis's SORT leaves behind.
bool SortReencoded(CommandHarness* h, Client* b) {
  for (const char* k : {"k0", "k1", "k2", "k3", "k4", "k5", "sl0", "sl1"}) {
    if (b->Call({"OBJECT", "ENCODING", k}) == "$8\r\nskiplist\r\n" &&
        h->Run({"OBJECT", "ENCODING", k}) == "$8\r\nlistpack\r\n") {
      return true;
    }
  }
  return false;
}

TEST(MixedVsRedis, RandomCommandSequencesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("fuzz");
  ASSERT_TRUE(h.ok()) << h.error();
  for (uint64_t seed : shmkv_test::TestSeeds(1, 10)) {
    Client b(redis.port());
    ASSERT_TRUE(b.ok());
    h.Run({"FLUSHALL"});
    b.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    std::string recent;  // the commands since the last MULTI, for a failure
    bool sorted = false;  // a SORT ran
    for (int i = 0; i < 3000; ++i) {
      std::vector<std::string> cmd = RandomCommand(rng);
      std::string line;
      for (const std::string& w : cmd) line += w + " ";
      if (cmd[0] == "MULTI") recent.clear();
      recent += line + "\n";
      std::string ra = h.Run(cmd), rb = b.Call(cmd);
      if (cmd[0].rfind("SORT", 0) == 0) sorted = true;
      // Redis's SORT turns a small sorted set it reads into a skiplist,
      // which shows in OBJECT ENCODING and in a score of -0 (a listpack
      // keeps it as 0); shmkv keeps the compact form (docs/server.md,
      // "Differences"). A seed that has come to that ends at its first
      // difference.
      if (ra != rb && sorted && SortReencoded(&h, &b)) break;
      if (ra != rb) {
        ADD_FAILURE() << "seed " << seed << " command " << i << ": " << line
                      << "\nshmkv: " << ra << "\nredis: " << rb
                      << "\nsince the last MULTI:\n" << recent;
        break;
      }
    }
    // The next seed's Redis connection is new: so is the harness's state.
    h.Run({"DISCARD"});
    h.Run({"UNWATCH"});
  }
}

}  // namespace
