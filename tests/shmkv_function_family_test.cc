// The function family (server/commands/function_family.cc) in process,
// against redis-server: FUNCTION LOAD|DELETE|FLUSH|LIST|STATS|KILL,
// FCALL, FCALL_RO, redis.register_function and the load-time sandbox;
// and the value the libraries are kept in, damaged.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "server/commands/function_family.h"
#include "server/commands/registry.h"
#include "server/commands/script_lua.h"
#include "server/rdb/codec.h"
#include "server/rdb/crc64.h"
#include "tests/support/diff_harness.h"
#include "tests/support/pinned_ids.h"

namespace {

using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;

TEST(FunctionFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("function", {
      {"function", 188}, {"fcall", 189}, {"fcall_ro", 190},
  });
}

std::string Lib(const std::string& name, const std::string& body) {
  return "#!lua name=" + name + "\n" + body;
}

// Replies and errors byte for byte as Redis's. (Libraries, and a
// library's functions, are listed in Redis's hash-table order, which no
// other server can follow: FUNCTION LIST is compared here where it
// names one library of one function.)
TEST(FunctionFamilyVsRedis, FunctionsReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("fndiff");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string echo =
      "redis.register_function('echo', function(keys, args) "
      "return {keys, args} end)";
  ExpectSameAsRedis(&h, redis.port(), {
      {"FLUSHALL"}, {"FUNCTION", "FLUSH"},
      {"FUNCTION", "LOAD", Lib("mylib", echo)},
      {"FCALL", "echo", "2", "k1", "k2", "a1"},
      {"FCALL", "ECHO", "0"},
      {"FCALL_RO", "echo", "0"},
      {"FUNCTION", "LOAD", Lib("mylib", echo)},
      {"FUNCTION", "LOAD", Lib("MYLIB", echo)},
      {"FUNCTION", "LOAD", Lib("other", echo)},
      {"FUNCTION", "LOAD", "REPLACE", Lib("mylib",
          "redis.register_function{function_name='setter', callback="
          "function(keys, args) return redis.call('set', keys[1], args[1]) "
          "end, description='sets', flags={'allow-oom', 'no-writes'}}")},
      {"FCALL", "echo", "0"},
      {"FCALL", "setter", "1", "k", "v"},
      {"FCALL_RO", "setter", "1", "k", "v"},
      {"FUNCTION", "LOAD", Lib("rw",
          "redis.register_function('put', function(keys, args) "
          "return redis.call('set', keys[1], args[1]) end)")},
      {"FCALL", "put", "1", "k", "v"},
      {"GET", "k"},
      {"FCALL_RO", "put", "1", "k", "v"},
      {"FUNCTION", "LIST", "LIBRARYNAME", "my*"},
      {"FUNCTION", "LIST", "LIBRARYNAME", "r?", "WITHCODE"},
      {"FUNCTION", "LIST", "LIBRARYNAME", "nomatch*", "WITHCODE"},
      {"FUNCTION", "LIST", "bad"},
      {"FUNCTION", "LIST", "LIBRARYNAME"},
      {"FUNCTION", "LIST", "WITHCODE", "WITHCODE"},
      {"FUNCTION", "STATS"},
      // FCALL's arguments
      {"FCALL", "put", "x"}, {"FCALL", "put", "5", "k"},
      {"FCALL", "put", "-1", "k"}, {"FCALL", "nosuch", "0"},
      {"FCALL", "put"}, {"FCALL_RO"},
      // the metadata line
      {"FUNCTION", "LOAD", "#!lua"}, {"FUNCTION", "LOAD", "#!lua\nx"},
      {"FUNCTION", "LOAD", "no shebang"},
      {"FUNCTION", "LOAD", "#!lua name=a name=b\nx"},
      {"FUNCTION", "LOAD", "#!lua name=a foo=b\nx"},
      {"FUNCTION", "LOAD", "#!js name=a\nx"},
      {"FUNCTION", "LOAD", "#!lua name=b-c\nx"},
      {"FUNCTION", "LOAD", "#!LUA NAME=upper\n"
          "redis.register_function('up', function() return 'up' end)"},
      {"FCALL", "up", "0"},
      {"FUNCTION", "LOAD", "foo", Lib("z", echo)},
      {"FUNCTION", "LOAD", "REPLACE"}, {"FUNCTION", "LOAD"},
      // what the code may do while it loads
      {"FUNCTION", "LOAD", Lib("bad", "return math.random()")},
      {"FUNCTION", "LOAD", Lib("bad", "return redis.call('ping')")},
      {"FUNCTION", "LOAD", Lib("bad", "return redis.setresp(3)")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function()")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function('f1')")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function('f1', function() end, 1)")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function(nil, function() end)")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function('f1', 'x')")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function('a-b', function() end)")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function('', function() end)")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function('ff', function() end)\n"
          "redis.register_function('ff', function() end)")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function{"
          "function_name='ff', callback=function() end, flags={'bad'}}")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function{"
          "function_name='ff', callback=function() end, flags='no-writes'}")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function{"
          "function_name='ff', callback=function() end, foo=1}")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function{"
          "function_name=1, callback=function() end}")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function{"
          "function_name='ff', callback=1}")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.register_function{"
          "function_name='ff', callback=function() end, description=1}")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function{callback=function() end}")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function{function_name='ff'}")},
      {"FUNCTION", "LOAD", Lib("bad", "local a = 1")},
      {"FUNCTION", "LOAD", Lib("bad", "bad code")},
      {"FUNCTION", "LOAD", Lib("bad", "error('boom')")},
      {"FUNCTION", "LOAD", Lib("bad", "foo = 1")},
      {"FUNCTION", "LOAD", Lib("bad", "redis.foo = 1")},
      {"FUNCTION", "LOAD", Lib("bad",
          "redis.register_function('echo2', function() return 1 end)\n"
          "redis.register_function('echo', function() return 1 end)")},
      {"FUNCTION", "LIST", "LIBRARYNAME", "bad"},
      // what a function may do when it runs
      {"FUNCTION", "LOAD", Lib("err",
          "redis.register_function('e1', function() "
          "return redis.call('nosuch') end)")},
      {"FCALL", "e1", "0"},
      {"FUNCTION", "LOAD", Lib("err2",
          "redis.register_function('e2', function() error('x') end)")},
      {"FCALL", "e2", "0"},
      {"FUNCTION", "LOAD", Lib("err3",
          "redis.register_function('e3', function() "
          "return redis.register_function('z', function() end) end)")},
      {"FCALL", "e3", "0"},
      {"FUNCTION", "LOAD", Lib("err4",
          "redis.register_function('e4', function() return KEYS end)")},
      {"FCALL", "e4", "0"},
      {"FUNCTION", "STATS"},
      {"FUNCTION", "DELETE", "upper"}, {"FUNCTION", "DELETE", "upper"},
      {"FUNCTION", "DELETE"}, {"FUNCTION", "DELETE", "a", "b"},
      {"FCALL", "up", "0"},
      {"FUNCTION", "KILL"}, {"FUNCTION", "KILL", "x"},
      {"FUNCTION", "STATS", "x"},
      {"FUNCTION", "FLUSH", "bad"}, {"FUNCTION", "FLUSH", "sync", "x"},
      {"FUNCTION", "NOSUCH"}, {"FUNCTION"},
      {"FUNCTION", "FLUSH", "ASYNC"},
      {"FUNCTION", "LIST"}, {"FUNCTION", "STATS"},
      {"FCALL", "echo", "0"},
  });
}

// The shebang is split as Redis splits it (quotes resolved), and
// redis.register_function is refused at run time after any load, one
// that failed included.
TEST(FunctionFamilyVsRedis, ShebangAndRegistrationOutsideALoadAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("fnshebang");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string one = "\nredis.register_function('one', function() "
                          "return 1 end)";
  ExpectSameAsRedis(&h, redis.port(), {
      {"FUNCTION", "FLUSH"},
      {"FUNCTION", "LOAD", "#!lua name=\"q1\"" + one},
      {"FUNCTION", "LOAD", "REPLACE", "#!\"lua\" 'name=q1'" + one},
      {"FUNCTION", "LOAD", "REPLACE", "#!lua name=\"q\\x31\"" + one},
      {"FUNCTION", "LOAD", "#!lua name=\"q2" + one},
      {"FUNCTION", "LOAD", "#!lua name=\"q2\"x" + one},
      {"FUNCTION", "LOAD", "#!lua \"name=q3\"  \t" + one},
      {"FUNCTION", "LOAD", "#!lua name=''" + one},
      {"FUNCTION", "LOAD", "REPLACE", Lib("lib1",
          "local lib = redis\n"
          "lib.register_function('f2', function() "
          "lib.register_function('f9', function() return 9 end) end)")},
      {"FCALL", "f2", "0"},
      {"FUNCTION", "LOAD", Lib("lib2", "redis.math.random()")},
      {"FCALL", "f2", "0"},
      {"FUNCTION", "LOAD", Lib("lib3", "local x = 1")},
      {"FCALL", "f2", "0"},
      {"FUNCTION", "LOAD", Lib("lib1", "redis.register_function('f8', "
                                       "function() return 8 end)")},
      {"FCALL", "f2", "0"}, {"FCALL", "f9", "0"}, {"FCALL", "f8", "0"},
      // One library a listing: Redis lists several in its hash's order.
      {"FUNCTION", "LIST", "LIBRARYNAME", "lib1"},
      {"FUNCTION", "LIST", "LIBRARYNAME", "q1"},
  });
}

// A payload of raw bytes with a good footer (version 10, its CRC).
std::string WithFooter(std::string body) {
  body.push_back(10);
  body.push_back(0);
  uint64_t crc = shmkv::rdb::Crc64(0, body.data(), body.size());
  for (int k = 0; k < 8; ++k) body.push_back(static_cast<char>(crc >> (8 * k)));
  return body;
}

// FUNCTION DUMP's payload byte for byte, and FUNCTION RESTORE's policies
// and errors, as Redis's.
TEST(FunctionFamilyVsRedis, DumpAndRestoreAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("fndump");
  ASSERT_TRUE(h.ok()) << h.error();
  auto fn = [](const std::string& lib, const std::string& f,
               const std::string& ret) {
    return Lib(lib, "redis.register_function('" + f +
                        "', function() return '" + ret + "' end)");
  };
  using shmkv::rdb::DumpFunctions;
  const std::string one = DumpFunctions({fn("lib1", "f1", "one")});
  const std::string two =
      DumpFunctions({fn("lib1", "f1", "two"), fn("lib2", "f2", "two")});
  ExpectSameAsRedis(&h, redis.port(), {
      {"FUNCTION", "FLUSH"},
      {"FUNCTION", "DUMP"},
      {"FUNCTION", "LOAD", fn("lib1", "f1", "loaded")},
      {"FUNCTION", "DUMP"},
      {"FUNCTION", "RESTORE", one},
      {"FUNCTION", "RESTORE", one, "APPEND"},
      {"FUNCTION", "RESTORE", one, "REPLACE"},
      {"FCALL", "f1", "0"},
      {"FUNCTION", "RESTORE", two, "REPLACE"},
      {"FCALL", "f1", "0"}, {"FCALL", "f2", "0"},
      {"FUNCTION", "RESTORE", one, "FLUSH"},
      {"FCALL", "f1", "0"}, {"FCALL", "f2", "0"},
      {"FUNCTION", "LOAD", fn("other", "f2", "other")},
      {"FUNCTION", "RESTORE", two, "REPLACE"},
      {"FCALL", "f2", "0"},
      {"FUNCTION", "RESTORE", one, "bad"},
      {"FUNCTION", "RESTORE", one, "FLUSH", "x"},
      {"FUNCTION", "RESTORE"},
      {"FUNCTION", "RESTORE", "bad_payload"},
      {"FUNCTION", "RESTORE", one.substr(0, one.size() - 1) + "x"},
      {"FUNCTION", "RESTORE", WithFooter("")},
      {"FUNCTION", "RESTORE", WithFooter(std::string("\0\x01x", 3))},
      {"FUNCTION", "RESTORE", WithFooter(std::string("\xf5\x05" "ab", 4))},
      {"FUNCTION", "RESTORE",
       DumpFunctions({fn("dup", "d1", "x"), fn("dup", "d2", "y")}), "FLUSH"},
      {"FUNCTION", "RESTORE",
       DumpFunctions({fn("d1", "same", "x"), fn("d2", "same", "y")}),
       "FLUSH"},
      {"FUNCTION", "RESTORE", DumpFunctions({Lib("bad", "bad code")})},
      {"FUNCTION", "RESTORE", DumpFunctions({"no shebang"})},
      {"FUNCTION", "RESTORE", DumpFunctions({Lib("none", "local a = 1")})},
      {"FCALL", "f1", "0"},
      {"FUNCTION", "DUMP", "x"},
  });
}

// A multi-function library's listing holds what Redis's holds, in any
// order of its functions.
TEST(FunctionFamily, ListingNamesEveryFunctionWithItsFlags) {
  CommandHarness h("fnlist");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_EQ(h.Run({"FUNCTION", "LOAD", Lib("two",
                "redis.register_function{function_name='b', callback="
                "function() return 1 end, flags={'no-writes', 'no-cluster'}}\n"
                "redis.register_function('a', function() return 2 end)")}),
            "$3\r\ntwo\r\n");
  std::string list = h.Run({"FUNCTION", "LIST"});
  EXPECT_NE(list.find("$4\r\nname\r\n$1\r\nb\r\n$11\r\ndescription\r\n$-1"
                      "\r\n$5\r\nflags\r\n*2\r\n+no-writes\r\n+no-cluster\r\n"),
            std::string::npos) << list;
  EXPECT_NE(list.find("$4\r\nname\r\n$1\r\na\r\n$11\r\ndescription\r\n$-1"
                      "\r\n$5\r\nflags\r\n*0\r\n"),
            std::string::npos) << list;
  EXPECT_EQ(h.Run({"FCALL_RO", "b", "0"}), ":1\r\n");
  EXPECT_EQ(h.Run({"FCALL", "a", "0"}), ":2\r\n");
}

// The value the libraries are kept in: what is written reads back, and
// any damage (every truncation, random bytes, lengths past the end)
// reads as not a value, never past its end.
TEST(FunctionFamily, DamagedLibrariesValueIsAnError) {
  using shmkv::cmd::Library;
  std::vector<Library> libs = {{"a", "#!lua name=a\nx"}, {"bb", ""}};
  std::string v = shmkv::cmd::SerializeLibraries(7, libs);
  uint64_t gen = 0;
  std::vector<Library> back;
  ASSERT_TRUE(shmkv::cmd::ParseLibraries(v, &gen, &back));
  EXPECT_EQ(gen, 7u);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].code, libs[0].code);
  EXPECT_EQ(back[1].name, "bb");
  EXPECT_TRUE(shmkv::cmd::ParseLibraries("", &gen, &back));
  EXPECT_EQ(gen, 0u);
  EXPECT_TRUE(back.empty());
  for (size_t n = 1; n < v.size(); ++n) {
    EXPECT_FALSE(shmkv::cmd::ParseLibraries(v.substr(0, n), &gen, &back))
        << n;
  }
  EXPECT_FALSE(shmkv::cmd::ParseLibraries(v + "x", &gen, &back));
  std::mt19937_64 rng(44);
  size_t parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string d = v;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
      d[rng() % d.size()] = static_cast<char>(rng());
    }
    // ASan and the checks above: no read past the value.
    parsed += shmkv::cmd::ParseLibraries(std::string_view(d), &gen, &back);
  }
  EXPECT_LT(parsed, 20000u);
}

// The record a long script publishes for the other workers: read back
// as written; every truncation and random damage reads as no record.
TEST(FunctionFamily, DamagedRunningRecordIsNoRecord) {
  shmkv::cmd::RunningScript r;
  r.busy = 0x1234567890ULL;
  r.function = true;
  r.name = "spin";
  r.command = {"FCALL", "spin", "0", std::string("a\0b", 3)};
  std::string v = shmkv::cmd::EncodeRunning(r);
  shmkv::cmd::RunningScript back;
  ASSERT_TRUE(shmkv::cmd::DecodeRunning(v, &back));
  EXPECT_EQ(back.busy, r.busy);
  EXPECT_TRUE(back.function);
  EXPECT_EQ(back.name, "spin");
  EXPECT_EQ(back.command, r.command);
  for (size_t n = 0; n < v.size(); ++n) {
    EXPECT_FALSE(shmkv::cmd::DecodeRunning(v.substr(0, n), &back)) << n;
  }
  std::mt19937_64 rng(45);
  for (int i = 0; i < 20000; ++i) {
    std::string d = v;
    d[rng() % d.size()] = static_cast<char>(rng());
    shmkv::cmd::DecodeRunning(std::string_view(d), &back);
  }
}

}  // namespace
