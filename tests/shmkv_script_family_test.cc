// The script family (server/commands/script_family.cc, script_lua.cc) in
// process, against redis-server: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO,
// SCRIPT, the redis library, the conversions both ways, the sandbox.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "server/commands/script_lua.h"
#include "tests/support/kill_worker.h"

#include "tests/support/diff_harness.h"
#include "server/commands/registry.h"
#include "tests/support/pinned_ids.h"
#include "tests/support/shmkv_server.h"

namespace {

using shmkv_test::CommandHarness;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::RedisOracle;
using shmkv_test::Client;
using shmkv_test::Server;

TEST(ScriptFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("script", {
      {"eval", 159}, {"evalsha", 160}, {"eval_ro", 161},
      {"evalsha_ro", 162}, {"script", 163},
  });
}

// EVAL's replies, errors and conversions, byte for byte as Redis's.
TEST(ScriptFamilyVsRedis, EvalRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("luadiff");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"FLUSHALL"},
      // Lua to Redis: each type, nested tables, the first nil ends an
      // array, numbers truncated, the special tables
      {"EVAL", "return 1", "0"},
      {"EVAL", "return {1,2,{3,'x'},nil,4}", "0"},
      {"EVAL", "return 3.99", "0"}, {"EVAL", "return -3.9", "0"},
      {"EVAL", "return 1e20", "0"}, {"EVAL", "return 0/0", "0"},
      {"EVAL", "return 1/0", "0"}, {"EVAL", "return -1/0", "0"},
      {"EVAL", "return true", "0"}, {"EVAL", "return false", "0"},
      {"EVAL", "return nil", "0"}, {"EVAL", "return", "0"},
      {"EVAL", "return 'a\\0b'", "0"}, {"EVAL", "return ''", "0"},
      {"EVAL", "return {}", "0"}, {"EVAL", "return {nil, 1}", "0"},
      {"EVAL", "return {ok='fine'}", "0"}, {"EVAL", "return {ok='a\\r\\nb'}", "0"},
      {"EVAL", "return {err='bad thing'}", "0"},
      {"EVAL", "return {err='bad\\r\\nthing'}", "0"},
      {"EVAL", "return {err=5}", "0"}, {"EVAL", "return {ok=5}", "0"},
      {"EVAL", "return {err='x', ok='y'}", "0"},
      {"EVAL", "return {1, {err='inner'}, {ok='s'}, true, false}", "0"},
      {"EVAL", "return {double=3.14}", "0"}, {"EVAL", "return {double=1/0}", "0"},
      {"EVAL", "return {double=-1/0}", "0"}, {"EVAL", "return {double='abc'}", "0"},
      {"EVAL", "return {double=2}", "0"},
      {"EVAL", "return {big_number='123'}", "0"},
      {"EVAL", "return {map={a=1}}", "0"}, {"EVAL", "return {set={a=true}}", "0"},
      {"EVAL", "return {verbatim_string={format='txt', string='v'}}", "0"},
      {"EVAL", "return {1.5, 2.5, -0.5}", "0"},
      {"EVAL", "return redis.error_reply('My Error')", "0"},
      {"EVAL", "return redis.error_reply('-My Error')", "0"},
      {"EVAL", "return redis.error_reply('oops')", "0"},
      {"EVAL", "return redis.error_reply('')", "0"},
      {"EVAL", "return redis.error_reply()", "0"},
      {"EVAL", "return redis.error_reply(1)", "0"},
      {"EVAL", "return redis.status_reply('FINE')", "0"},
      {"EVAL", "return redis.status_reply()", "0"},
      {"EVAL", "return redis.sha1hex('')", "0"},
      {"EVAL", "return redis.sha1hex(123)", "0"},
      {"EVAL", "return redis.sha1hex()", "0"},
      // KEYS and ARGV
      {"EVAL", "return {KEYS[1], ARGV[1], #KEYS, #ARGV}", "2", "a", "b", "c", "d"},
      {"EVAL", "return {#KEYS, #ARGV}", "0"},
      {"EVAL", "return ARGV", "0", "x", "", "y"},
      {"EVAL", "return 1", "-1"}, {"EVAL", "return 1", "2", "a"},
      {"EVAL", "return 1", "abc"}, {"EVAL", "return 1", "1.5", "a"},
      {"EVAL", "return 1"}, {"EVAL"},
      // Redis to Lua through redis.call and redis.pcall
      {"EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"},
      {"EVAL", "return redis.call('get', KEYS[1])", "1", "k"},
      {"EVAL", "return type(redis.call('get', 'nokey'))", "0"},
      {"EVAL", "return tostring(redis.call('get', 'nokey'))", "0"},
      {"EVAL", "return redis.call('incr', 'n')", "0"},
      {"EVAL", "return type(redis.call('incr', 'n'))", "0"},
      {"EVAL", "local t = redis.call('set', 'a', 1) return {type(t), t.ok}", "0"},
      {"EVAL", "redis.call('rpush', 'l', 'a', 'b', 'c') return redis.call('lrange', 'l', 0, -1)", "0"},
      {"EVAL", "return redis.call('mget', 'k', 'nokey', 'n')", "0"},
      {"EVAL", "return redis.call('set', 'f', 1.5)", "0"}, {"GET", "f"},
      {"EVAL", "return redis.call('set', 'f', 0.1)", "0"}, {"GET", "f"},
      {"EVAL", "return redis.call('set', 'f', 1e100)", "0"}, {"GET", "f"},
      {"EVAL", "return redis.call('set', 'f', -0)", "0"}, {"GET", "f"},
      {"EVAL", "return redis.call('set', 'f', 12345678901234567)", "0"}, {"GET", "f"},
      {"EVAL", "return redis.call('hset', 'h', 'a', 1, 'b', 2)", "0"},
      {"EVAL", "return redis.call('hgetall', 'h')", "0"},
      {"EVAL", "return redis.call('exec')", "0"},
      {"EVAL", "return redis.pcall('incr', 'k')", "0"},
      {"EVAL", "local t = redis.pcall('incr', 'k') return t.err", "0"},
      {"EVAL", "local t = redis.pcall('lpush', 'k', 1) return t.err", "0"},
      // Errors, where they happened
      {"EVAL", "return redis.call('incr', 'k')", "0"},
      {"EVAL", "local x = 1\nlocal y = redis.call('incr', 'k')\nreturn y", "0"},
      {"EVAL", "return redis.call('lpush', 'k', 1)", "0"},
      {"EVAL", "return redis.call('nosuch')", "0"},
      {"EVAL", "return redis.pcall('nosuch')", "0"},
      {"EVAL", "return redis.call('get')", "0"},
      {"EVAL", "return redis.call()", "0"}, {"EVAL", "return redis.pcall()", "0"},
      {"EVAL", "return redis.call(1)", "0"},
      {"EVAL", "return redis.call('set', 'a', {})", "0"},
      {"EVAL", "return redis.call('set', 'a', true)", "0"},
      {"EVAL", "return redis.call('set', 'a', nil)", "0"},
      {"EVAL", "return redis.call('multi')", "0"},
      {"EVAL", "return redis.call('eval', 'return 1', 0)", "0"},
      {"EVAL", "return redis.call('blpop', 'nol', 0)", "0"},
      {"EVAL", "return redis.call('script', 'load', 'return 1')", "0"},
      {"EVAL", "error('boom')", "0"}, {"EVAL", "error('x', 0)", "0"},
      {"EVAL", "error(123)", "0"}, {"EVAL", "error()", "0"},
      {"EVAL", "error({err='X boom'})", "0"}, {"EVAL", "error({err=5})", "0"},
      {"EVAL", "error({err='ERR with\\r\\nnewline'})", "0"},
      {"EVAL", "local function f()\n  error('deep')\nend\n\nf()", "0"},
      {"EVAL", "local t = {} ; t.x.y = 1", "0"},
      {"EVAL", "return 1 +", "0"}, {"EVAL", "return 'unfinished", "0"},
      {"EVAL", "local a = {} a[nil] = 1", "0"},
      {"EVAL", "return #nil", "0"},
      {"EVAL", "return assert(false, 'assertion')", "0"},
      {"EVAL", "return assert(false)", "0"},
      {"EVAL", "return redis.call('set', 'a', 'b', 'c')", "0"},
      // Globals, the sandbox's own texts
      {"EVAL", "return x", "0"}, {"EVAL", "x = 1", "0"},
      {"EVAL", "function f() end", "0"},
      {"EVAL", "redis = nil", "0"}, {"EVAL", "string.x = 1", "0"},
      {"EVAL", "redis.call = function() end", "0"},
      {"EVAL", "return type(_G)", "0"}, {"EVAL", "_G.x = 1", "0"},
      {"EVAL", "return _G.nosuch", "0"},
      {"EVAL", "return loadfile", "0"}, {"EVAL", "return dofile", "0"},
      {"EVAL", "return print", "0"}, {"EVAL", "return setfenv", "0"},
      {"EVAL", "return getfenv", "0"}, {"EVAL", "return require", "0"},
      {"EVAL", "return os", "0"}, {"EVAL", "return io", "0"},
      {"EVAL", "return debug", "0"}, {"EVAL", "return package", "0"},
      {"EVAL", "return newproxy", "0"}, {"EVAL", "return module", "0"},
      {"EVAL", "return {type(load), type(loadstring), type(pcall), type(unpack), type(coroutine), type(collectgarbage), type(gcinfo)}", "0"},
      {"EVAL", "return loadstring('return 1 + 1')()", "0"},
      {"EVAL", "return loadstring('y = 1')()", "0"},
      {"EVAL", "return string.format('%5.2f|%d|%s', 3.14159, 42, 'x')", "0"},
      {"EVAL", "return ('abc'):upper()", "0"},
      {"EVAL", "return {string.byte('A'), string.char(66), #string.rep('ab', 3)}", "0"},
      {"EVAL", "local t = {3,1,2} table.sort(t) return t", "0"},
      {"EVAL", "return table.concat({'a','b'}, ',')", "0"},
      {"EVAL", "return {math.floor(3.7), math.max(1, 5), math.huge > 0}", "0"},
      {"EVAL", "math.randomseed(0) return {math.random(), math.random(100), math.random(5, 10)}", "0"},
      {"EVAL", "math.randomseed(7) return {math.random(1000), math.random(1000)}", "0"},
      {"EVAL", "return math.random(0)", "0"},
      {"EVAL", "return cjson.encode({1, 2, 'x'})", "0"},
      {"EVAL", "return cjson.decode('[1,2,{\"a\":3}]')[3].a", "0"},
      {"EVAL", "return cjson.decode('{bad')", "0"},
      {"EVAL", "return {bit.band(7, 3), bit.bor(1, 2), bit.bxor(5, 1), bit.lshift(1, 4), bit.tohex(255)}", "0"},
      {"EVAL", "local co = coroutine.create(function() coroutine.yield(1) end) return {coroutine.resume(co)}", "0"},
      {"EVAL", "return pcall(error, 'caught')", "0"},
      {"EVAL", "return {pcall(error, 'caught')}", "0"},
      {"EVAL", "return select('#', 1, 2, 3)", "0"},
      {"EVAL", "return tonumber('0x10')", "0"},
      {"EVAL", "return tostring(12.5)", "0"},
      {"EVAL", "return _VERSION", "0"},
      // redis.* helpers' argument checks
      {"EVAL", "redis.log(redis.LOG_DEBUG, 'quiet')", "0"},
      {"EVAL", "return redis.log()", "0"},
      {"EVAL", "return redis.log('x', 'y')", "0"},
      {"EVAL", "return redis.log(9, 'y')", "0"},
      {"EVAL", "return redis.setresp(4)", "0"},
      {"EVAL", "return redis.setresp()", "0"},
      {"EVAL", "return redis.setresp(2)", "0"},
      {"EVAL", "return redis.set_repl(redis.REPL_ALL)", "0"},
      {"EVAL", "return redis.set_repl(9)", "0"},
      {"EVAL", "return redis.replicate_commands()", "0"},
      {"EVAL", "return {redis.LOG_WARNING, redis.REPL_ALL, redis.REPL_NONE}", "0"},
      // SELECT inside a script is the script's own
      {"EVAL", "redis.call('select', 1) return redis.call('set', 'indb1', '1')", "0"},
      {"GET", "indb1"}, {"SELECT", "1"}, {"GET", "indb1"}, {"SELECT", "0"},
      // Shebangs and read-only scripts
      {"EVAL", "#!lua flags=no-writes\nreturn redis.call('set','x','1')", "0"},
      {"EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", "0"},
      {"EVAL", "#!lua\nreturn redis.call('set','x','1')", "0"},
      {"EVAL", "#!lua flags=bogus\nreturn 1", "0"},
      {"EVAL", "#!luaX\nreturn 1", "0"}, {"EVAL", "#!lua name=x\nreturn 1", "0"},
      {"EVAL", "#!python\nreturn 1", "0"}, {"EVAL", "#!lua", "0"},
      {"EVAL", "#!lua flags=no-writes\nerror('l2')", "0"},
      {"EVAL", "#!lua flags=allow-oom,no-cluster\nreturn 2", "0"},
      {"EVAL", "#!lua\n\nreturn x", "0"},
      {"EVAL_RO", "return redis.call('set','x','1')", "0"},
      {"EVAL_RO", "return redis.call('get','k')", "0"},
      {"EVAL_RO", "return redis.pcall('del','k')", "0"},
      // A script that fails keeps the writes it made before
      {"EVAL", "redis.call('set', 'kept', '1') error('after')", "0"},
      {"GET", "kept"},
      // Deep tables
      {"EVAL", "local t = {} local c = t for i=1,100 do c[1] = {} c = c[1] end return t", "0"},
  });
}

// redis.setresp(3): the script's commands reply in RESP3 and convert as
// Redis converts them (maps, sets, doubles, nulls, booleans, verbatim),
// and the script's RESP3 values reach the caller in its own protocol
// (this test runs in RESP2 and, as resp3.*, in RESP3).
TEST(ScriptFamilyVsRedis, Resp3InsideScriptsAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("luaresp3");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string r3 = "redis.setresp(3) ";
  ExpectSameAsRedis(&h, redis.port(), {
      {"FLUSHALL"},
      {"HSET", "h", "f", "v"}, {"SADD", "s", "m"}, {"SADD", "si", "1", "2", "3"},
      {"ZADD", "z", "1.5", "a", "2", "b"}, {"SET", "k", "v"}, {"RPUSH", "l", "x"},
      {"EVAL", r3 + "return redis.call('hgetall', 'h')", "0"},
      {"EVAL", r3 + "return redis.call('hgetall', 'h').map.f", "0"},
      {"EVAL", r3 + "return type(redis.call('hgetall', 'nosuch').map)", "0"},
      {"EVAL", r3 + "return redis.call('smembers', 's')", "0"},
      {"EVAL", r3 + "return redis.call('smembers', 'si')", "0"},
      {"EVAL", r3 + "return tostring(redis.call('smembers', 's').set.m)", "0"},
      {"EVAL", r3 + "return redis.call('zscore', 'z', 'a')", "0"},
      {"EVAL", r3 + "return tostring(redis.call('zscore', 'z', 'a').double)", "0"},
      {"EVAL", r3 + "return redis.call('zrange', 'z', 0, -1, 'withscores')", "0"},
      {"EVAL", r3 + "return redis.call('zpopmin', 'z', 1)", "0"},
      {"EVAL", r3 + "return redis.call('zincrby', 'z', 1, 'x')", "0"},
      {"EVAL", r3 + "return redis.call('get', 'nosuch')", "0"},
      {"EVAL", r3 + "return redis.call('get', 'nosuch') == nil", "0"},
      {"EVAL", r3 + "return redis.call('lpop', 'nosuch', 2) == nil", "0"},
      {"EVAL", r3 + "return {redis.call('get', 'k'), redis.call('llen', 'l')}", "0"},
      {"EVAL", r3 + "return redis.call('info', 'keyspace').verbatim_string.format", "0"},
      {"EVAL", r3 + "return redis.call('lcs', 'k', 'k', 'idx')", "0"},
      {"EVAL", r3 + "return redis.pcall('hgetall', 'k')", "0"},
      {"EVAL", r3 + "return true", "0"}, {"EVAL", r3 + "return false", "0"},
      {"EVAL", r3 + "return {true, false, 1}", "0"},
      {"EVAL", r3 + "return {map={a=1}}", "0"},
      {"EVAL", r3 + "return {set={a=true}}", "0"},
      {"EVAL", r3 + "return {double=2.5}", "0"},
      {"EVAL", r3 + "return {big_number='12345678901234567890'}", "0"},
      {"EVAL", r3 + "return {verbatim_string={format='txt', string='v'}}", "0"},
      {"EVAL", r3 + "return {verbatim_string={format='mkd', string='# t'}}", "0"},
      {"EVAL", r3 + "return nil", "0"},
      // Back to RESP2 in the same script, and RESP2 again in the next
      {"EVAL", r3 + "redis.setresp(2) return redis.call('hgetall', 'h')", "0"},
      {"EVAL", "return redis.call('hgetall', 'h')", "0"},
      {"EVAL", "return redis.call('zscore', 'z', 'b')", "0"},
      {"EVAL", "return {double=2.5}", "0"},
      {"EVAL", "return {big_number='123'}", "0"},
      {"EVAL", "return {map={a=1}}", "0"},
  });
}

// EVALSHA, SCRIPT LOAD / EXISTS / FLUSH and their errors.
TEST(ScriptFamilyVsRedis, ScriptCacheRepliesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("luacache");
  ASSERT_TRUE(h.ok()) << h.error();
  ExpectSameAsRedis(&h, redis.port(), {
      {"SCRIPT", "FLUSH"},
      {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
      {"EVALSHA", "abc", "0"}, {"EVALSHA", "abc", "x"}, {"EVALSHA"},
      {"SCRIPT", "LOAD", "return 'hi'"},
      {"EVALSHA", "2f31ba2bb6d6a0f42cc159d2e2dad55440778de3", "0"},
      {"EVALSHA", "2F31BA2BB6D6A0F42CC159D2E2DAD55440778DE3", "0"},
      {"EVALSHA_RO", "2f31ba2bb6d6a0f42cc159d2e2dad55440778de3", "0"},
      {"SCRIPT", "EXISTS", "2f31ba2bb6d6a0f42cc159d2e2dad55440778de3",
       "2F31BA2BB6D6A0F42CC159D2E2DAD55440778DE3", "nope"},
      {"EVAL", "return 'via eval'", "0"},
      {"SCRIPT", "EXISTS", "5e3d36bd5bd6df6b3f9d9d5ab2e82c9b46c1bc24"},
      {"SCRIPT", "LOAD", "return 1 +"},
      {"SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn redis.call('set','a','b')"},
      {"EVALSHA", "a73b5b8fd35dd4e7d6bc33e9b4db6bb8e7b0a73e", "0"},
      {"SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"},
      {"SCRIPT", "FLUSH"}, {"SCRIPT", "EXISTS", "2f31ba2bb6d6a0f42cc159d2e2dad55440778de3"},
      {"EVALSHA", "2f31ba2bb6d6a0f42cc159d2e2dad55440778de3", "0"},
      {"SCRIPT", "FLUSH", "ASYNC"}, {"SCRIPT", "FLUSH", "sync"},
      {"SCRIPT", "FLUSH", "x"}, {"SCRIPT", "FLUSH", "sync", "extra"},
      {"SCRIPT"}, {"SCRIPT", "LOAD"}, {"SCRIPT", "LOAD", "a", "b"},
      {"SCRIPT", "EXISTS"}, {"SCRIPT", "BOGUS"}, {"SCRIPT", "KILL"},
      {"SCRIPT", "KILL", "x"},
      // inside MULTI: queued, run in EXEC's transaction
      {"MULTI"}, {"EVAL", "return redis.call('incr', 'm')", "0"},
      {"SCRIPT", "LOAD", "return 2"}, {"INCR", "m"}, {"EXEC"},
  });
}

// Time stands still through a command, as Redis samples it once: a key
// that expires while a script runs is still there for the script (its
// loop waits 150 ms past the key's 50), and gone for the next command.
// PTTL still reads the clock, as Redis 7.0's does: past its deadline it
// answers 0. Through the command harness and through a worker, which
// freezes the time from its own clock read.
TEST(ScriptFamilyVsRedis, TimeStandsStillThroughAScriptAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  const std::string wait =
      "local s = redis.call('TIME') local e repeat e = redis.call('TIME') "
      "until (e[1] - s[1]) * 1000000 + (e[2] - s[2]) > 150000 "
      "return {redis.call('EXISTS', KEYS[1]), redis.call('PTTL', KEYS[1]) > 0 "
      "and 1 or 0, redis.call('GET', KEYS[1])}";
  const std::vector<std::vector<std::string>> cmds = {
      {"SET", "k", "v", "PX", "50"}, {"EVAL", wait, "1", "k"},
      {"EXISTS", "k"}, {"SET", "k", "v", "PX", "50"},
      {"MULTI"}, {"EVAL", wait, "1", "k"}, {"GET", "k"}, {"EXEC"},
      {"GET", "k"}};
  // Each side runs the whole sequence on its own: interleaved, one
  // side's 150 ms script would age the other's key.
  auto run = [&](const std::function<std::string(
                     const std::vector<std::string>&)>& call) {
    std::vector<std::string> out;
    for (const auto& c : cmds) out.push_back(call(c));
    return out;
  };
  Client b(redis.port());
  const std::vector<std::string> want =
      run([&](const std::vector<std::string>& c) { return b.Call(c); });
  EXPECT_EQ(want[1], "*3\r\n:1\r\n:0\r\n$1\r\nv\r\n");
  CommandHarness h("frozen");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(run([&](const std::vector<std::string>& c) { return h.Run(c); }),
            want);
  Server s("frozenw");
  s.set_workers(1);
  ASSERT_TRUE(s.Start()) << s.log();
  Client a(s.port());
  EXPECT_EQ(run([&](const std::vector<std::string>& c) { return a.Call(c); }),
            want);
}

// The sandbox holds against the known ways out of Redis's Lua: loading
// bytecode, reaching a library that touches the system, changing what
// the next script runs. Each case answers its error and the server goes
// on.
TEST(ScriptSandbox, KnownEscapesAreClosed) {
  CommandHarness h("luasand");
  ASSERT_TRUE(h.ok()) << h.error();
  auto eval = [&](const std::string& body) {
    return h.Run({"EVAL", body, "0"});
  };
  // Bytecode: loadstring and load refuse a precompiled chunk.
  EXPECT_EQ(eval("local f, e = loadstring(string.dump(function() return 1 "
                 "end)) return {tostring(f), e}"),
            "*2\r\n$3\r\nnil\r\n$31\r\nbytecode loading is not allowed\r\n");
  EXPECT_EQ(eval("local s = string.dump(function() return 1 end) "
                 "local done = false local f, e = load(function() if done "
                 "then return nil end done = true return s end) "
                 "return {tostring(f), e}"),
            "*2\r\n$3\r\nnil\r\n$31\r\nbytecode loading is not allowed\r\n");
  EXPECT_EQ(eval("return loadstring('\\27Lua')"), "$-1\r\n");
  // Source still loads, and what it makes sees the same guarded globals.
  EXPECT_EQ(eval("return loadstring('return 40 + 2')()"), ":42\r\n");
  EXPECT_NE(eval("return loadstring('return os')()").find(
                "nonexistent global variable 'os'"),
            std::string::npos);
  // No way to the system: the libraries are not there, and the string
  // metatable does not lead to them either.
  for (const char* g : {"package", "io", "os", "debug", "require",
                        "dofile", "loadfile", "getfenv", "setfenv",
                        "newproxy", "module", "print"}) {
    EXPECT_NE(eval(std::string("return ") + g).find(
                  "Script attempted to access nonexistent global variable"),
              std::string::npos) << g;
  }
  EXPECT_EQ(eval("return getmetatable('')"), "$-1\r\n");
  EXPECT_EQ(eval("return getmetatable(_G)"), "$-1\r\n");
  EXPECT_NE(eval("return getmetatable('').__index").find("attempt to index"),
            std::string::npos);
  // Nothing a script does changes the next one.
  for (const char* body : {
           "rawset(_G, 'evil', 1)", "rawset(string, 'rep', nil)",
           "rawset(redis, 'call', function() return 'hijacked' end)",
           "setmetatable(_G, nil)", "setmetatable(string, {})",
           "string.rep = nil", "redis.call = nil", "cjson.encode = nil",
           "math.floor = nil", "_G.redis = nil", "bit.band = nil"}) {
    EXPECT_EQ(eval(body)[0], '-') << body;
  }
  EXPECT_EQ(eval("table.insert(string, 'junk') table.insert(_G, 'junk') "
                 "return rawget(_G, 1)"),
            "$4\r\njunk\r\n");  // inside the script that did it only
  EXPECT_EQ(eval("return {rawget(_G, 1), rawget(string, 1)}"), "*0\r\n");
  EXPECT_EQ(eval("return redis.call('set', 'still', 'works')"), "+OK\r\n");
  EXPECT_EQ(eval("return {string.rep('a', 2), math.floor(2.5), "
                 "bit.band(3, 1), cjson.encode({1})}"),
            "*4\r\n$2\r\naa\r\n:2\r\n:1\r\n$3\r\n[1]\r\n");
  // The collector stopped by one script runs again for the next.
  EXPECT_EQ(eval("collectgarbage('stop') return 1"), ":1\r\n");
  size_t before = shmkv::cmd::LuaScripts::Instance()->memory();
  for (int i = 0; i < 20; ++i) {
    eval("local t = {} for i = 1, 20000 do t[i] = 'x' .. i end return 1");
  }
  EXPECT_LT(shmkv::cmd::LuaScripts::Instance()->memory(),
            before + (16u << 20));
}

// A script that allocates without bound meets the state's cap and fails;
// the next script runs.
TEST(ScriptSandbox, MemoryIsCapped) {
  CommandHarness h("luamem");
  ASSERT_TRUE(h.ok()) << h.error();
  auto* lua = shmkv::cmd::LuaScripts::Instance();
  lua->set_memory_cap(32u << 20);
  std::string big = h.Run({"EVAL", "return #string.rep('x', 64 * 1024 * 1024)",
                           "0"});
  EXPECT_EQ(big.rfind("-ERR the script ran out of memory (the Lua state's "
                      "limit is 32 MiB) script: ", 0), 0u) << big;
  std::string grow = h.Run({"EVAL", "redis.call('set', 'before', '1') "
                           "local t = {} for i = 1, 1e9 do "
                           "t[i] = string.rep('y', 100) .. i end", "0"});
  EXPECT_EQ(grow.rfind("-ERR the script ran out of memory", 0), 0u) << grow;
  EXPECT_EQ(h.Run({"GET", "before"}), "$1\r\n1\r\n");  // kept, as in Redis
  EXPECT_EQ(h.Run({"EVAL", "return 'after'", "0"}), "$5\r\nafter\r\n");
  EXPECT_LT(lua->memory(), 16u << 20);
  lua->set_memory_cap(shmkv::cmd::LuaScripts::kMemoryCap);
}

// A worker killed at random points while it runs scripts leaves each
// script's writes all or nothing: ten counters a script raises together
// stay equal, and equal to the scripts acknowledged (or one more, the
// one in flight when it died). Half the calls go by EVALSHA.
TEST(ScriptFamily, KilledWorkerLeavesNoneOfAScript) {
  CommandHarness h("luakill", 16384, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string body =
      "for i = 1, 600 do redis.call('incr', KEYS[(i % #KEYS) + 1]) end "
      "redis.call('hset', 'h', 'f' .. ARGV[1], string.rep('v', 100)) "
      "redis.call('rpush', 'l', ARGV[1]) return 1";
  std::string sha = h.Run({"SCRIPT", "LOAD", body});
  ASSERT_EQ(sha.size(), 40u + 7u) << sha;
  sha = sha.substr(5, 40);
  std::vector<std::string> keys;
  for (int k = 0; k < 10; ++k) keys.push_back("c" + std::to_string(k));
  shmkv_test::AckedCount runs;
  ASSERT_TRUE(runs.ok());
  std::mt19937_64 rng(11);
  for (int round = 0; round < 25; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 7919 + 3, 20 + rng() % 120,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          std::vector<std::string> cmd = {r() % 2 ? "EVAL" : "EVALSHA",
                                          "", "10"};
          cmd[1] = cmd[0] == "EVAL" ? body : sha;
          cmd.insert(cmd.end(), keys.begin(), keys.end());
          cmd.push_back(std::to_string(r() % 100000));
          runs.Begin();
          if (w.Run(cmd) != ":1\r\n") _exit(91);
          runs.Acked();
        }));
    std::string first = h.Run({"GET", "c0"});
    for (const std::string& k : keys) {
      ASSERT_EQ(h.Run({"GET", k}), first) << "round " << round;
    }
    int64_t scripts = first == "$-1\r\n" ? 0
                      : std::stoll(first.substr(first.find("\r\n") + 2)) / 60;
    EXPECT_TRUE(runs.Settle(scripts)) << "round " << round << ": scripts";
    std::string llen = h.Run({"LLEN", "l"});
    EXPECT_EQ(llen, ":" + std::to_string(scripts) + "\r\n");
  }
}

// The shared cache has a bound: SCRIPT LOAD past it says so, EVAL still
// runs (uncached: EVALSHA answers NOSCRIPT), SCRIPT FLUSH makes room.
TEST(ScriptFamily, AFullCacheRefusesLoadsNotEval) {
  CommandHarness h("luafull");
  ASSERT_TRUE(h.ok()) << h.error();
  const std::string pad(600, 'x');
  int loaded = 0;
  std::string reply;
  for (; loaded < 20000; ++loaded) {
    reply = h.Run({"SCRIPT", "LOAD",
                   "return '" + pad + std::to_string(loaded) + "'"});
    if (reply[0] != '$') break;
  }
  EXPECT_GT(loaded, 5000);
  EXPECT_EQ(reply.rfind("-ERR the script cache is full (16384 scripts, 8 "
                        "MiB): SCRIPT FLUSH empties it", 0), 0u) << reply;
  std::string body = "return '" + pad + "not kept'";
  std::string not_kept = "$608\r\n" + pad + "not kept\r\n";
  EXPECT_EQ(h.Run({"EVAL", body, "0"}), not_kept);
  std::string sha = shmkv::cmd::Sha1Hex(body);
  EXPECT_EQ(h.Run({"EVALSHA", sha, "0"}),
            "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  EXPECT_EQ(h.Run({"EVALSHA", shmkv::cmd::Sha1Hex("return '" + pad + "7'"),
                   "0"}).substr(0, 5), "$601\r");
  EXPECT_EQ(h.Run({"SCRIPT", "FLUSH"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SCRIPT", "LOAD", body}), "$40\r\n" + sha + "\r\n");
  EXPECT_EQ(h.Run({"EVALSHA", sha, "0"}), not_kept);
}

// Random scripts over a small keyspace of every type, against Redis:
// each a few redis.call / redis.pcall of commands that succeed, fail
// (wrong type, not an integer) or write, returning what they saw; the
// keyspace is compared after each seed.
TEST(ScriptFamilyVsRedis, RandomScriptsReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  const char* calls[] = {
      "'set', @K, @V", "'get', @K", "'incr', @K", "'incrby', @K, @N",
      "'append', @K, @V", "'del', @K", "'exists', @K, @K", "'type', @K",
      "'lpush', @K, @V", "'rpop', @K", "'lrange', @K, 0, -1", "'llen', @K",
      "'hset', @K, @V, @N", "'hget', @K, @V", "'hgetall', @K", "'hincrby', @K, @V, @N",
      "'sadd', @K, @V", "'sismember', @K, @V", "'scard', @K", "'zadd', @K, @N, @V",
      "'zrange', @K, 0, -1, 'withscores'", "'zscore', @K, @V", "'expire', @K, @N",
      "'ttl', @K", "'mget', @K, @K", "'getdel', @K", "'rename', @K, @K",
  };
  for (uint64_t seed : shmkv_test::TestSeeds(1, 10)) {
    CommandHarness h("luarand");
    ASSERT_TRUE(h.ok()) << h.error();
    shmkv_test::Client oracle(redis.port());
    ASSERT_TRUE(oracle.ok());
    oracle.Call({"FLUSHALL"});
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 150; ++i) {
      std::string body = "local r = {} ";
      int n = 1 + static_cast<int>(rng() % 5);
      for (int j = 0; j < n; ++j) {
        std::string call = calls[rng() % std::size(calls)];
        auto fill = [&](const char* what, const std::string& with) {
          for (size_t at; (at = call.find(what)) != std::string::npos;) {
            call.replace(at, 2, with);
          }
        };
        fill("@K", "KEYS[" + std::to_string(1 + rng() % 3) + "]");
        fill("@V", "ARGV[" + std::to_string(1 + rng() % 2) + "]");
        fill("@N", std::to_string(static_cast<int>(rng() % 7) - 2));
        body += std::string("r[#r+1] = redis.") +
                (rng() % 3 == 0 ? "call" : "pcall") + "(" + call + ") ";
      }
      body += rng() % 4 == 0 ? "return redis.status_reply('DONE')"
                             : "return r";
      std::vector<std::string> cmd = {"EVAL", body, "3"};
      for (int k = 0; k < 3; ++k) cmd.push_back("k" + std::to_string(rng() % 4));
      cmd.push_back(rng() % 2 ? "v" : std::to_string(rng() % 100));
      cmd.push_back("f" + std::to_string(rng() % 3));
      std::string want = oracle.Call(cmd);
      std::string got = h.Run(cmd);
      if (got != want) {
        ADD_FAILURE() << "seed " << seed << " script " << i << ": " << body
                      << "\nshmkv: " << got << "\nredis: " << want;
        break;
      }
    }
    // What the scripts left: each key's type and contents (a set's
    // size: the order of a set of strings is each server's table's).
    for (const char* k : {"k0", "k1", "k2", "k3"}) {
      std::string type = oracle.Call({"TYPE", k});
      EXPECT_EQ(h.Run({"TYPE", k}), type) << "seed " << seed << " " << k;
      std::vector<std::string> show =
          type == "+string\r\n" ? std::vector<std::string>{"GET", k}
          : type == "+list\r\n" ? std::vector<std::string>{"LRANGE", k, "0", "-1"}
          : type == "+hash\r\n" ? std::vector<std::string>{"HGETALL", k}
          : type == "+set\r\n"  ? std::vector<std::string>{"SCARD", k}
          : std::vector<std::string>{"ZRANGE", k, "0", "-1", "WITHSCORES"};
      EXPECT_EQ(h.Run(show), oracle.Call(show)) << "seed " << seed << " " << k;
    }
  }
}

// Redis's "noscript" flag, command by command: a script may call what
// Redis lets it call and nothing else.
TEST(ScriptFamilyVsRedis, NoScriptFlagsAreRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  shmkv_test::Client client(redis.port());
  ASSERT_TRUE(client.ok());
  for (const auto* row : shmkv::cmd::Commands().rows()) {
    std::string info = client.Call({"COMMAND", "INFO", row->name});
    if (info == "*1\r\n*-1\r\n") continue;  // not one of Redis's
    // Containers whose subcommands Redis flags apart: checked subcommand
    // by subcommand (StandaloneVsRedis.ScriptsCallWhatRedisLetsThem).
    const std::string name = row->name;
    if (name == "cluster" || name == "module") continue;
    bool redis_no = info.find("+noscript\r\n") != std::string::npos;
    bool ours = (row->flags & shmkv::cmd::kNoScript) != 0;
    EXPECT_EQ(ours, redis_no) << row->name;
  }
}

}  // namespace
