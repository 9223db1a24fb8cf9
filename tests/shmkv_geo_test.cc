// Geospatial commands (server/commands/geo.h, geo_family.cc) against
// redis-server: every command with its options and errors, RESP2 and
// RESP3, and random searches (circles and boxes, from points and members,
// sorted, counted, ANY, stored) over point sets from a city block to the
// whole globe, the poles' and the 180th meridian's edges included.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

TEST(GeoFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("geo", {
      {"geoadd", 214}, {"geodist", 215}, {"geohash", 216}, {"geopos", 217},
      {"georadius", 218}, {"georadius_ro", 219}, {"georadiusbymember", 220},
      {"georadiusbymember_ro", 221}, {"geosearch", 222},
      {"geosearchstore", 223},
  });
}

TEST(GeoVsRedis, EveryCommandRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  shmkv_test::ForBothProtocols(
      redis, "geodiff", [&](CommandHarness* hp, Client* cp) {
    CommandHarness& h = *hp;
    Client& c = *cp;
    ExpectSameAsRedis(&h, &c, {
        {"GEOADD", "Sicily", "13.361389", "38.115556", "Palermo",
         "15.087269", "37.502669", "Catania"},
        {"GEOADD", "Sicily", "CH", "13.361389", "38.115556", "Palermo",
         "13.5", "38", "Agrigento"},
        {"GEOADD", "Sicily", "XX", "CH", "13.6", "38", "Agrigento", "1", "1",
         "Nowhere"},
        {"GEOADD", "Sicily", "NX", "1", "1", "Agrigento", "2", "2", "Elsewhere"},
        {"GEOADD", "Sicily", "NX", "XX", "1", "1", "x"},
        {"GEOADD", "Sicily", "GT", "1", "1", "x"},
        {"GEOADD", "Sicily", "1", "1"}, {"GEOADD", "Sicily", "NX", "CH", "CH"},
        {"GEOADD", "Sicily", "181", "10", "x"},
        {"GEOADD", "Sicily", "10", "86", "x"},
        {"GEOADD", "Sicily", "a", "10", "x"},
        {"GEOADD", "Sicily", "10", "10", "ok", "10", "90", "bad"},
        {"GEOADD", "edges", "180", "85.05112878", "ne", "-180",
         "-85.05112878", "sw", "0", "0", "zero", "-0", "-0", "negzero"},
        {"ZRANGE", "Sicily", "0", "-1", "WITHSCORES"},
        {"ZRANGE", "edges", "0", "-1", "WITHSCORES"},
        {"GEOPOS", "edges", "ne", "sw", "zero", "negzero", "none"},
        {"GEOHASH", "edges", "ne", "sw", "zero", "none"},
        {"GEOHASH", "Sicily", "Palermo", "Catania"},
        {"GEOPOS", "Sicily", "Palermo", "Catania", "none"},
        {"GEOPOS", "nokey", "a"}, {"GEOHASH", "nokey", "a"},
        {"GEOPOS", "Sicily"}, {"GEOHASH", "Sicily"},
        {"GEODIST", "Sicily", "Palermo", "Catania"},
        {"GEODIST", "Sicily", "Palermo", "Catania", "km"},
        {"GEODIST", "Sicily", "Palermo", "Catania", "MI"},
        {"GEODIST", "Sicily", "Palermo", "Catania", "ft"},
        {"GEODIST", "Sicily", "Palermo", "Catania", "yd"},
        {"GEODIST", "Sicily", "Palermo", "Catania", "km", "x"},
        {"GEODIST", "Sicily", "Palermo", "none"},
        {"GEODIST", "Sicily", "Palermo", "Palermo"},
        {"GEODIST", "nokey", "a", "b"},
        {"GEODIST", "edges", "ne", "sw"},
        // Scores no GEOADD wrote.
        {"ZADD", "odd", "-1", "neg", "+inf", "inf", "-inf", "ninf",
         "4503599627370496", "big", "1e300", "huge", "0.5", "half"},
        {"GEOPOS", "odd", "neg", "inf", "ninf", "big", "huge", "half"},
        {"GEOHASH", "odd", "neg", "inf", "ninf", "big", "huge", "half"},
        {"GEODIST", "odd", "neg", "huge"},
        // Searches and their options.
        {"GEORADIUS", "Sicily", "15", "37", "200", "km"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST",
         "WITHCOORD", "WITHHASH", "ASC"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "DESC", "COUNT", "1"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1", "ANY"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "ANY"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "0"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "x"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT"},
        {"GEORADIUS", "Sicily", "15", "37", "x", "km"},
        {"GEORADIUS", "Sicily", "15", "37", "-1", "km"},
        {"GEORADIUS", "Sicily", "15", "37", "1", "yd"},
        {"GEORADIUS", "Sicily", "200", "37", "1", "km"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "FOO"},
        {"GEORADIUS", "Sicily", "15", "37", "0", "km"},
        {"GEORADIUS", "Sicily", "15", "37", "inf", "km"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst"},
        {"ZRANGE", "dst", "0", "-1", "WITHSCORES"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "dst"},
        {"ZRANGE", "dst", "0", "-1", "WITHSCORES"},
        {"GEORADIUS", "Sicily", "15", "37", "1", "km", "STORE", "dst"},
        {"EXISTS", "dst"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst",
         "WITHDIST"},
        {"GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "dst"},
        {"GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "WITHDIST"},
        {"GEORADIUS", "nokey", "15", "37", "200", "km"},
        {"GEORADIUS", "nokey", "15", "37", "200", "km", "STORE", "Sicily2"},
        {"GEORADIUSBYMEMBER", "Sicily", "Agrigento", "100", "km", "WITHDIST"},
        {"GEORADIUSBYMEMBER", "Sicily", "none", "100", "km"},
        {"GEORADIUSBYMEMBER", "nokey", "none", "x", "km"},
        {"GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "300", "km", "DESC"},
        {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200",
         "km", "ASC", "WITHDIST"},
        {"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "400", "400",
         "km", "ASC", "WITHCOORD"},
        {"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "-1", "400",
         "km"},
        {"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "x", "400",
         "km"},
        {"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "y",
         "km"},
        {"GEOSEARCH", "Sicily", "FROMMEMBER", "none", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMLONLAT", "1",
         "1", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "Sicily", "BYRADIUS", "1", "km"},
        {"geosearch", "Sicily", "FROMLONLAT", "1", "1"},
        {"GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km",
         "BYBOX", "1", "1", "km"},
        {"GEOSEARCH", "Sicily", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km",
         "STORE", "x"},
        {"GEOSEARCH", "nokey", "FROMMEMBER", "x", "BYRADIUS", "1", "km"},
        {"GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37",
         "BYRADIUS", "200", "km", "STOREDIST"},
        {"ZRANGE", "dst", "0", "-1", "WITHSCORES"},
        {"GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37",
         "BYBOX", "200", "200", "km", "COUNT", "1"},
        {"ZRANGE", "dst", "0", "-1", "WITHSCORES"},
        {"GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37",
         "BYRADIUS", "200", "km", "WITHDIST"},
        {"GEOSEARCHSTORE", "dst", "nokey", "FROMLONLAT", "15", "37",
         "BYRADIUS", "200", "km"},
        {"EXISTS", "dst"},
        {"SET", "str", "x"}, {"GEOADD", "str", "1", "1", "a"},
        {"GEOPOS", "str", "a"}, {"GEOHASH", "str", "a"},
        {"GEODIST", "str", "a", "b"},
        {"GEORADIUS", "str", "1", "1", "1", "km"},
        {"GEOSEARCH", "str", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"},
        {"GEOSEARCHSTORE", "dst", "str", "FROMLONLAT", "1", "1", "BYRADIUS",
         "1", "km"},
        {"GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "str"},
        {"TYPE", "str"},
        {"GEOADD"}, {"GEODIST", "a", "b"}, {"GEOPOS"}, {"GEOSEARCH", "a"},
        {"COMMAND", "GETKEYS", "GEORADIUS", "k", "1", "1", "1", "km",
         "STOREDIST", "b", "STORE", "a"},
        {"COMMAND", "GETKEYS", "GEORADIUSBYMEMBER", "k", "m", "1", "km",
         "STORE", "x", "STORE", "y"},
        {"COMMAND", "GETKEYS", "GEORADIUS", "k", "1", "1", "1", "km"},
        {"COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m",
         "BYRADIUS", "1", "km"},
        {"MULTI"}, {"GEOADD", "tx", "1", "1", "a"},
        {"GEORADIUS", "tx", "1", "1", "10", "km", "WITHDIST"}, {"EXEC"},
    });
  });
}

// A random point set and random searches over it; every reply as Redis's.
// Points are distinct (tied distances with COUNT are ordered otherwise:
// docs/server.md, "Geospatial").
TEST(GeoVsRedis, RandomSearchesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  for (uint64_t seed : shmkv_test::TestSeeds(1, 20)) {
    CommandHarness h("georand", 8192, 32ULL << 20);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    auto uniform = [&](double lo, double hi) {
      return lo + (hi - lo) * (static_cast<double>(rng() >> 11) / 9007199254740992.0);
    };
    auto text = [](double v) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", v);
      return std::string(buf);
    };
    const double spreads[] = {0.01, 0.5, 5, 60, 400};
    const double spread = spreads[rng() % 5];
    double clon = uniform(-170, 170), clat = uniform(-80, 80);
    if (spread > 5) clon = clat = 0;
    const int sizes[] = {5, 50, 200, 1000};
    const int n = sizes[rng() % 4];
    Cmd add = {"GEOADD", "g"};
    for (int i = 0; i < n; ++i) {
      add.push_back(text(uniform(std::max(-180.0, clon - spread),
                                 std::min(180.0, clon + spread))));
      add.push_back(text(uniform(std::max(-85.05, clat - spread),
                                 std::min(85.05, clat + spread))));
      add.push_back("m" + std::to_string(i));
    }
    ASSERT_EQ(h.Run(add), c.Call(add)) << "seed " << seed;
    const char* units[] = {"m", "km", "ft", "mi"};
    const double per[] = {1, 1000, 0.3048, 1609.34};
    const double radii[] = {0, 1, 100, 1000, 50000, 500000, 5000000};
    for (int step = 0; step < 40; ++step) {
      const int u = static_cast<int>(rng() % 4);
      const double radius = radii[rng() % 7] / per[u] * uniform(0, 1);
      Cmd opts;
      for (const char* o : {"WITHDIST", "WITHCOORD", "WITHHASH", "ASC", "DESC"}) {
        if (rng() % 10 < 3) opts.push_back(o);
      }
      if (rng() % 10 < 4) {
        opts.push_back("COUNT");
        opts.push_back(std::to_string(1 + rng() % 20));
        if (rng() % 10 < 3) opts.push_back("ANY");
      }
      double plon = std::max(-180.0, std::min(180.0, clon + uniform(-spread, spread)));
      double plat = std::max(-85.05, std::min(85.05, clat + uniform(-spread, spread)));
      if (rng() % 10 == 0) plon = (rng() % 3 - 1.0) * 180;
      if (rng() % 10 == 0) plat = (rng() % 3 - 1.0) * 85.05112878;
      const std::string member = "m" + std::to_string(rng() % n);
      Cmd cmd;
      const uint64_t kind = rng() % 10;
      if (kind < 3) {
        cmd = {"GEORADIUS", "g", text(plon), text(plat), text(radius), units[u]};
      } else if (kind < 5) {
        cmd = {"GEORADIUSBYMEMBER", "g", member, text(radius), units[u]};
      } else if (kind < 8) {
        cmd = {"GEOSEARCH", "g"};
        if (rng() % 2) {
          cmd.insert(cmd.end(), {"FROMMEMBER", member});
        } else {
          cmd.insert(cmd.end(), {"FROMLONLAT", text(plon), text(plat)});
        }
        if (rng() % 2) {
          cmd.insert(cmd.end(), {"BYRADIUS", text(radius), units[u]});
        } else {
          cmd.insert(cmd.end(), {"BYBOX", text(radius * uniform(0.2, 3)),
                                 text(radius * uniform(0.2, 3)), units[u]});
        }
      } else if (kind < 9) {
        cmd = {"GEODIST", "g", member, "m" + std::to_string(rng() % (n + 2)),
               units[u]};
        opts.clear();
      } else {
        cmd = {"GEOSEARCHSTORE", "dst", "g", "FROMLONLAT", text(plon),
               text(plat), "BYRADIUS", text(radius), units[u]};
        Cmd kept;
        for (const std::string& o : opts) {
          if (o != "WITHDIST" && o != "WITHCOORD" && o != "WITHHASH") {
            kept.push_back(o);
          }
        }
        opts = kept;
        if (rng() % 2) opts.push_back("STOREDIST");
      }
      cmd.insert(cmd.end(), opts.begin(), opts.end());
      ASSERT_EQ(h.Run(cmd), c.Call(cmd))
          << "seed " << seed << " step " << step << ": " << CommandLine(cmd);
      if (cmd[0] == "GEOSEARCHSTORE") {
        Cmd look = {"ZRANGE", "dst", "0", "-1", "WITHSCORES"};
        ASSERT_EQ(h.Run(look), c.Call(look))
            << "seed " << seed << " step " << step << ": " << CommandLine(cmd);
      }
    }
  }
}

}  // namespace
