// Scripts across worker processes (docs/server.md, "Scripts"), spoken to
// over sockets: the shared script cache, a hot restart, a script that
// runs too long (BUSY, SCRIPT KILL, UNKILLABLE) and a worker killed in
// the middle of one.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "tests/support/shmkv_server.h"

namespace {

using shmkv_test::Client;
using shmkv_test::InfoField;
using shmkv_test::OnEachWorker;
using shmkv_test::Server;
using namespace std::chrono_literals;

std::string ShaOf(Client* c, const std::string& body) {
  std::string r = c->Call({"SCRIPT", "LOAD", body});
  return r.size() == 47 ? r.substr(5, 40) : r;
}

// SCRIPT LOAD through one worker, EVALSHA through the other; SCRIPT
// FLUSH through one empties the cache for both; a SIGHUP reload keeps it.
TEST(ShmkvScripts, CacheIsSharedByWorkersAndOutlivesThem) {
  Server s("scripts_cache");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client* a = groups[0][0].get();
  Client* b = groups[1][0].get();
  std::string sha = ShaOf(a, "return 'loaded on a'");
  ASSERT_EQ(sha.size(), 40u) << sha;
  EXPECT_EQ(b->Call({"EVALSHA", sha, "0"}), "$11\r\nloaded on a\r\n");
  EXPECT_EQ(a->Call({"EVALSHA", sha, "0"}), "$11\r\nloaded on a\r\n");
  // EVAL caches too.
  EXPECT_EQ(a->Call({"EVAL", "return redis.call('incr', KEYS[1])", "1", "n"}),
            ":1\r\n");
  std::string incr = ShaOf(b, "return redis.call('incr', KEYS[1])");
  EXPECT_EQ(b->Call({"SCRIPT", "EXISTS", incr, sha}), "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(b->Call({"EVALSHA", incr, "1", "n"}), ":2\r\n");
  // A flush through b: a, which compiled both, answers NOSCRIPT.
  EXPECT_EQ(b->Call({"SCRIPT", "FLUSH"}), "+OK\r\n");
  EXPECT_EQ(a->Call({"EVALSHA", sha, "0"}),
            "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  EXPECT_EQ(a->Call({"EVALSHA", incr, "1", "n"}),
            "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  // Loaded again, it survives a reload of every worker.
  ASSERT_EQ(ShaOf(a, "return 'loaded on a'"), sha);
  std::string pid = InfoField(a, "process_id");
  s.Signal(SIGHUP);
  for (int i = 0; i < 500 && InfoField(a, "reloads") != "1"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(InfoField(a, "reloads"), "1") << s.log();
  EXPECT_NE(InfoField(a, "process_id"), pid);
  EXPECT_EQ(a->Call({"EVALSHA", sha, "0"}), "$11\r\nloaded on a\r\n");
  Client fresh(s.port());
  EXPECT_EQ(fresh.Call({"EVALSHA", sha, "0"}), "$11\r\nloaded on a\r\n");
}

// Waits (up to 10 s) until `c`'s GET answers BUSY.
bool BusyFrom(Client* c) {
  for (int i = 0; i < 1000; ++i) {
    std::string r = c->Call({"GET", "probe"});
    if (r.rfind("-BUSY ", 0) == 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A script that loops: after 5 s the other worker answers BUSY, SCRIPT
// KILL from there stops it (the script's client gets Redis's error), and
// everything answers again. One that wrote first cannot be killed; a
// SIGKILL of its worker then drops its write whole.
TEST(ShmkvScripts, BusyScriptIsKilledFromAnotherWorker) {
  Server s("scripts_busy");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client* a = groups[0][0].get();
  Client* b = groups[1][0].get();
  EXPECT_EQ(b->Call({"SCRIPT", "KILL"}),
            "-NOTBUSY No scripts in execution right now.\r\n");
  ASSERT_TRUE(a->SendRaw(Client::Encode({"EVAL", "while true do end", "0"})));
  ASSERT_TRUE(BusyFrom(b));
  EXPECT_EQ(b->Call({"GET", "probe"}),
            "-BUSY Redis is busy running a script. You can only call SCRIPT "
            "KILL or SHUTDOWN NOSAVE.\r\n");
  EXPECT_EQ(b->Call({"SCRIPT", "KILL"}), "+OK\r\n");
  std::string killed = a->Reply();
  EXPECT_EQ(killed.rfind("-ERR Script killed by user with SCRIPT KILL... "
                         "script: ", 0), 0u) << killed;
  EXPECT_EQ(b->Call({"SET", "probe", "1"}), "+OK\r\n");
  EXPECT_EQ(a->Call({"GET", "probe"}), "$1\r\n1\r\n");

  // It wrote: UNKILLABLE, until its worker is killed, which takes the
  // whole script with it.
  std::string worker = InfoField(a, "process_id");
  ASSERT_TRUE(a->SendRaw(Client::Encode(
      {"EVAL", "redis.call('set', 'w', '1') while true do end", "0"})));
  ASSERT_TRUE(BusyFrom(b));
  EXPECT_EQ(b->Call({"SCRIPT", "KILL"}),
            "-UNKILLABLE Sorry the script already executed write commands "
            "against the dataset. You can either wait the script termination "
            "or kill the server in a hard way using the SHUTDOWN NOSAVE "
            "command.\r\n");
  kill(std::stoi(worker), SIGKILL);
  std::string after;
  for (int i = 0; i < 500; ++i) {
    after = b->Call({"EXISTS", "w"});
    if (after.rfind("-BUSY", 0) != 0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(after, ":0\r\n");
  EXPECT_EQ(b->Call({"SCRIPT", "KILL"}),
            "-NOTBUSY No scripts in execution right now.\r\n");
  Client fresh(s.port());
  EXPECT_EQ(fresh.Call({"EVAL", "return redis.call('exists', 'w')", "0"}),
            ":0\r\n");
}

// A library loaded through one worker is called through the other; a
// delete through one is seen by both; libraries outlive a reload of
// every worker, and SCRIPT FLUSH and FLUSHALL leave them.
TEST(ShmkvScripts, FunctionsAreSharedByWorkersAndOutliveThem) {
  Server s("scripts_functions");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client* a = groups[0][0].get();
  Client* b = groups[1][0].get();
  const std::string lib =
      "#!lua name=shared\n"
      "redis.register_function('bump', function(keys, args) "
      "return redis.call('incrby', keys[1], args[1]) end)";
  EXPECT_EQ(a->Call({"FUNCTION", "LOAD", lib}), "$6\r\nshared\r\n");
  EXPECT_EQ(b->Call({"FCALL", "bump", "1", "n", "5"}), ":5\r\n");
  EXPECT_EQ(a->Call({"FCALL", "bump", "1", "n", "2"}), ":7\r\n");
  EXPECT_EQ(b->Call({"FUNCTION", "LOAD", lib}),
            "-ERR Library 'shared' already exists\r\n");
  // Replaced through b: a calls the new code.
  EXPECT_EQ(b->Call({"FUNCTION", "LOAD", "REPLACE",
                     "#!lua name=shared\n"
                     "redis.register_function('bump', function() "
                     "return 'new' end)"}),
            "$6\r\nshared\r\n");
  EXPECT_EQ(a->Call({"FCALL", "bump", "0"}), "$3\r\nnew\r\n");
  EXPECT_EQ(a->Call({"FUNCTION", "DELETE", "shared"}), "+OK\r\n");
  EXPECT_EQ(b->Call({"FCALL", "bump", "0"}), "-ERR Function not found\r\n");
  EXPECT_EQ(a->Call({"FUNCTION", "LOAD", lib}), "$6\r\nshared\r\n");
  EXPECT_EQ(b->Call({"SCRIPT", "FLUSH"}), "+OK\r\n");
  EXPECT_EQ(b->Call({"FLUSHALL"}), "+OK\r\n");
  std::string pid = InfoField(a, "process_id");
  s.Signal(SIGHUP);
  for (int i = 0; i < 500 && InfoField(a, "reloads") != "1"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(InfoField(a, "reloads"), "1") << s.log();
  EXPECT_NE(InfoField(a, "process_id"), pid);
  Client fresh(s.port());
  EXPECT_EQ(fresh.Call({"FCALL", "bump", "1", "m", "3"}), ":3\r\n");
  EXPECT_EQ(fresh.Call({"FUNCTION", "FLUSH"}), "+OK\r\n");
  EXPECT_EQ(a->Call({"FCALL", "bump", "1", "m", "3"}),
            "-ERR Function not found\r\n");
}

// A function that loops, seen from the other worker as Redis shows it:
// BUSY naming FUNCTION KILL, FUNCTION STATS with its name and command,
// SCRIPT KILL refused, FUNCTION KILL stops it. A looping EVAL is the
// other way round.
TEST(ShmkvScripts, BusyFunctionIsKilledFromAnotherWorker) {
  Server s("scripts_busy_function");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client* a = groups[0][0].get();
  Client* b = groups[1][0].get();
  ASSERT_EQ(b->Call({"CONFIG", "SET", "busy-reply-threshold", "10"}),
            "+OK\r\n");
  ASSERT_EQ(a->Call({"FUNCTION", "LOAD",
                     "#!lua name=loop\n"
                     "redis.register_function('spin', function() "
                     "local n = 0 while true do n = n + 1 end end)"}),
            "$4\r\nloop\r\n");
  EXPECT_EQ(b->Call({"FUNCTION", "KILL"}),
            "-NOTBUSY No scripts in execution right now.\r\n");
  ASSERT_TRUE(a->SendRaw(Client::Encode({"FCALL", "spin", "0", "x"})));
  ASSERT_TRUE(BusyFrom(b));
  EXPECT_EQ(b->Call({"GET", "probe"}),
            "-BUSY Redis is busy running a script. You can only call "
            "FUNCTION KILL or SHUTDOWN NOSAVE.\r\n");
  std::string stats = b->Call({"FUNCTION", "STATS"});
  EXPECT_EQ(stats.rfind("*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\n"
                        "name\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*4\r\n"
                        "$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n0\r\n$1\r\n"
                        "x\r\n$11\r\nduration_ms\r\n:", 0),
            0u) << stats;
  EXPECT_EQ(b->Call({"SCRIPT", "KILL"}),
            "-BUSY Redis is busy running a script. You can only call "
            "FUNCTION KILL or SHUTDOWN NOSAVE.\r\n");
  EXPECT_EQ(b->Call({"FUNCTION", "KILL"}), "+OK\r\n");
  std::string killed = a->Reply();
  EXPECT_EQ(killed.rfind("-ERR Script killed by user with SCRIPT KILL...", 0),
            0u) << killed;
  EXPECT_EQ(b->Call({"PING"}), "+PONG\r\n");

  ASSERT_TRUE(a->SendRaw(Client::Encode({"EVAL", "while true do end", "0"})));
  ASSERT_TRUE(BusyFrom(b));
  EXPECT_EQ(b->Call({"FUNCTION", "KILL"}),
            "-BUSY Redis is busy running a script. You can only call SCRIPT "
            "KILL or SHUTDOWN NOSAVE.\r\n");
  EXPECT_EQ(b->Call({"FUNCTION", "STATS"}),
            "-BUSY Redis is busy running a script. You can only call SCRIPT "
            "KILL or SHUTDOWN NOSAVE.\r\n");
  EXPECT_EQ(b->Call({"SCRIPT", "KILL"}), "+OK\r\n");
  a->Reply();
  EXPECT_EQ(b->Call({"PING"}), "+PONG\r\n");
}

// One worker: the client of a looping script and the others share it.
// Past busy-reply-threshold the worker answers them from inside the
// script, as Redis does: BUSY, FUNCTION STATS, QUIT, and the kill that
// stops it (a function by FUNCTION KILL, an EVAL by SCRIPT KILL).
TEST(ShmkvScripts, ALongScriptIsKilledFromItsOwnWorker) {
  Server s("scripts_busy_same");
  s.set_workers(1);
  ASSERT_TRUE(s.Start()) << s.log();
  Client a(s.port()), b(s.port()), q(s.port());
  ASSERT_EQ(b.Call({"CONFIG", "SET", "busy-reply-threshold", "10"}),
            "+OK\r\n");
  ASSERT_EQ(a.Call({"FUNCTION", "LOAD",
                    "#!lua name=loop\n"
                    "redis.register_function('spin', function() "
                    "while true do end end)"}),
            "$4\r\nloop\r\n");
  ASSERT_TRUE(a.SendRaw(Client::Encode({"FCALL", "spin", "0"})));
  ASSERT_TRUE(BusyFrom(&b));
  EXPECT_EQ(b.Call({"PING"}),
            "-BUSY Redis is busy running a script. You can only call "
            "FUNCTION KILL or SHUTDOWN NOSAVE.\r\n");
  // A pipeline: each command answered, in order.
  ASSERT_TRUE(b.SendRaw(Client::Encode({"GET", "x"}) +
                        Client::Encode({"SCRIPT", "KILL"})));
  EXPECT_EQ(b.Reply(), "-BUSY Redis is busy running a script. You can only "
                       "call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n");
  EXPECT_EQ(b.Reply(), "-BUSY Redis is busy running a script. You can only "
                       "call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n");
  std::string stats = b.Call({"FUNCTION", "STATS"});
  EXPECT_EQ(stats.rfind("*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\n"
                        "name\r\n$4\r\nspin\r\n", 0), 0u) << stats;
  EXPECT_NE(stats.find("$15\r\nlibraries_count\r\n:1\r\n"),
            std::string::npos) << stats;
  EXPECT_EQ(q.Call({"QUIT"}), "+OK\r\n");
  EXPECT_EQ(b.Call({"FUNCTION", "KILL"}), "+OK\r\n");
  std::string killed = a.Reply();
  EXPECT_EQ(killed.rfind("-ERR Script killed by user with SCRIPT KILL...", 0),
            0u) << killed;
  EXPECT_EQ(b.Call({"PING"}), "+PONG\r\n");
  EXPECT_EQ(a.Call({"PING"}), "+PONG\r\n");

  ASSERT_TRUE(a.SendRaw(Client::Encode({"EVAL", "while true do end", "0"})));
  ASSERT_TRUE(BusyFrom(&b));
  EXPECT_EQ(b.Call({"FUNCTION", "KILL"}),
            "-BUSY Redis is busy running a script. You can only call SCRIPT "
            "KILL or SHUTDOWN NOSAVE.\r\n");
  EXPECT_EQ(b.Call({"SCRIPT", "KILL"}), "+OK\r\n");
  killed = a.Reply();
  EXPECT_EQ(killed.rfind("-ERR Script killed by user with SCRIPT KILL...", 0),
            0u) << killed;
  EXPECT_EQ(b.Call({"PING"}), "+PONG\r\n");
}

// Whether process `pid` is gone (or only a zombie left to reap).
bool Gone(pid_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(),
                            "r");
  if (f == nullptr) return true;
  char state = 0;
  int got = std::fscanf(f, "%*d %*s %c", &state);
  std::fclose(f);
  return got == 1 && state == 'Z';
}

// A worker looping in a script outlives no master: killed, the master
// leaves nobody to stop the script, and the worker goes by itself.
TEST(ShmkvScripts, ALoopingWorkerGoesWithItsMaster) {
  Server s("scripts_orphan");
  s.set_workers(1);
  ASSERT_TRUE(s.Start()) << s.log();
  Client a(s.port()), b(s.port());
  ASSERT_EQ(b.Call({"CONFIG", "SET", "busy-reply-threshold", "10"}),
            "+OK\r\n");
  const pid_t worker = std::stoi(InfoField(&b, "process_id"));
  ASSERT_TRUE(a.SendRaw(Client::Encode({"EVAL", "while true do end", "0"})));
  ASSERT_TRUE(BusyFrom(&b));
  kill(s.pid(), SIGKILL);
  bool gone = false;
  for (int i = 0; i < 500 && !(gone = Gone(worker)); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "worker " << worker << " still runs";
  if (!gone) kill(worker, SIGKILL);
  s.KillAll();
}

// FUNCTION LOAD under workers killed at random points: the libraries
// are always one whole value (FCALL answers the last acknowledged
// version, or the one in flight when its worker died; never damage), and
// loads go on through the restarted workers.
TEST(ShmkvScripts, KilledWorkersLeaveTheLibrariesWhole) {
  Server s("scripts_functions_kill");
  ASSERT_TRUE(s.Start()) << s.log();
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  auto lib = [](int v) {
    return "#!lua name=versioned\n"
           "redis.register_function('version', function() return '" +
           std::to_string(v) + "' end)\n" +
           std::string(static_cast<size_t>(200 + v % 7 * 300), '-') + "\n";
  };
  int acked = -1, kills = 0;
  for (int round = 0; round < 12; ++round) {
    // A worker killed within a second of its start counts toward the
    // master giving up on it: each is let live past that first.
    std::this_thread::sleep_for(1200ms);
    Client c(s.port());
    int in_flight = -1;
    std::thread killer([&] {
      std::this_thread::sleep_for(
          std::chrono::microseconds(rng() % 3000));
      std::vector<pid_t> w = shmkv_test::WorkerPids(s.pid());
      if (!w.empty()) {
        kill(w[rng() % w.size()], SIGKILL);
        ++kills;
      }
    });
    for (int i = 0; i < 60; ++i) {
      const int v = round * 100 + i;
      in_flight = v;
      std::string r = c.Call({"FUNCTION", "LOAD", "REPLACE", lib(v)});
      if (r != "$9\r\nversioned\r\n") break;  // its worker died
      acked = v;
      in_flight = -1;
    }
    killer.join();
    // Whatever a fresh client's worker reads is whole.
    std::string got;
    for (int i = 0; i < 500; ++i) {
      Client f(s.port());
      got = f.Call({"FCALL", "version", "0"});
      if (!got.empty()) break;
      std::this_thread::sleep_for(10ms);
    }
    // (Nothing acked yet: a kill that came before the first load's
    // reply leaves no library at all.)
    const std::string want_acked =
        acked < 0 ? "-ERR Function not found\r\n"
                  : "$" + std::to_string(std::to_string(acked).size()) +
                        "\r\n" + std::to_string(acked) + "\r\n";
    const std::string want_flight =
        "$" + std::to_string(std::to_string(in_flight).size()) + "\r\n" +
        std::to_string(in_flight) + "\r\n";
    ASSERT_TRUE(got == want_acked || (in_flight >= 0 && got == want_flight))
        << "round " << round << ": " << got << " (acked " << acked
        << ", in flight " << in_flight << ")\n" << s.log();
    // What was in flight and applied is now the last word.
    if (in_flight >= 0 && got == want_flight) acked = in_flight;
  }
  EXPECT_GE(kills, 10);
  Client f(s.port());
  EXPECT_EQ(f.Call({"FUNCTION", "LIST", "LIBRARYNAME", "nomatch"}),
            "*0\r\n");
  EXPECT_EQ(f.Call({"FUNCTION", "FLUSH"}), "+OK\r\n");
}

// busy-reply-threshold (lua-time-limit) is the store's: a script running
// under a threshold it has not reached leaves the other worker free;
// lowered there below the time the script has run, the next command is
// BUSY at once.
TEST(ShmkvScripts, BusyThresholdIsASettingOfTheStore) {
  Server s("scripts_busy_threshold");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client* a = groups[0][0].get();
  Client* b = groups[1][0].get();
  ASSERT_EQ(b->Call({"CONFIG", "SET", "lua-time-limit", "1000000000"}),
            "+OK\r\n");
  EXPECT_EQ(a->Call({"CONFIG", "GET", "busy-reply-threshold"}),
            "*2\r\n$20\r\nbusy-reply-threshold\r\n$10\r\n1000000000\r\n");
  ASSERT_TRUE(a->SendRaw(Client::Encode({"EVAL", "while true do end", "0"})));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(b->Call({"GET", "probe"}), "$-1\r\n") << "under the threshold";
  ASSERT_EQ(b->Call({"CONFIG", "SET", "busy-reply-threshold", "100"}),
            "+OK\r\n");
  EXPECT_EQ(b->Call({"GET", "probe"}),
            "-BUSY Redis is busy running a script. You can only call SCRIPT "
            "KILL or SHUTDOWN NOSAVE.\r\n");
  EXPECT_EQ(b->Call({"SCRIPT", "KILL"}), "+OK\r\n");
  std::string killed = a->Reply();
  EXPECT_EQ(killed.rfind("-ERR Script killed by user", 0), 0u) << killed;
  EXPECT_EQ(b->Call({"GET", "probe"}), "$-1\r\n");
}

// A transaction meets a busy script as in Redis: a command refused with
// BUSY dooms it (EXEC then answers EXECABORT ... previous errors), and an
// EXEC refused with BUSY discards it and says why; either way nothing of
// it runs and the connection leaves MULTI.
TEST(ShmkvScripts, TransactionsMeetABusyScriptAsRedis) {
  Server s("scripts_busy_multi");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* a = groups[0][0].get();
  Client* b = groups[1][0].get();
  const std::string busy =
      "BUSY Redis is busy running a script. You can only call SCRIPT KILL "
      "or SHUTDOWN NOSAVE.";
  ASSERT_EQ(b->Call({"CONFIG", "SET", "lua-time-limit", "10"}), "+OK\r\n");
  ASSERT_EQ(b->Call({"SET", "xx", "1"}), "+OK\r\n");
  Client& c = *groups[1].back();  // b's worker too: sees the script busy
  for (bool exec_while_busy : {true, false}) {
    ASSERT_EQ(b->Call({"MULTI"}), "+OK\r\n");
    ASSERT_EQ(b->Call({"INCR", "xx"}), "+QUEUED\r\n");
    ASSERT_TRUE(
        a->SendRaw(Client::Encode({"EVAL", "while true do end", "0"})));
    // (PING, not queued in MULTI, tells when the script is busy.)
    std::string ping;
    for (int i = 0; i < 1000 && ping.rfind("-BUSY", 0) != 0; ++i) {
      std::this_thread::sleep_for(10ms);
      ping = c.Call({"PING"});
    }
    ASSERT_EQ(ping, "-" + busy + "\r\n");
    EXPECT_EQ(b->Call({"INCR", "xx"}), "-" + busy + "\r\n");
    if (exec_while_busy) {
      EXPECT_EQ(b->Call({"EXEC"}),
                "-EXECABORT Transaction discarded because of: " + busy +
                    "\r\n");
    }
    EXPECT_EQ(c.Call({"SCRIPT", "KILL"}), "+OK\r\n");  // (b would queue it)
    a->Reply();  // the script's error
    if (!exec_while_busy) {
      EXPECT_EQ(b->Call({"EXEC"}),
                "-EXECABORT Transaction discarded because of previous "
                "errors.\r\n");
    }
    EXPECT_EQ(b->Call({"GET", "xx"}), "$1\r\n1\r\n");
    EXPECT_EQ(b->Call({"PING", "asdf"}), "$4\r\nasdf\r\n") << "out of MULTI";
  }
}

// MULTI, WATCH, UNWATCH and DISCARD run while a script is busy, as
// Redis's "allow-busy" commands do, whether the client is on the
// script's own worker or another; the replies are redis-server 7.0's to
// the same sequence (a refused command still dooms the transaction).
TEST(ShmkvScripts, TransactionCommandsRunWhileAScriptIsBusy) {
  Server s("scripts_busy_allowed");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 3);
  ASSERT_EQ(groups.size(), 2u);
  Client* a = groups[0][0].get();
  const std::string busy =
      "-BUSY Redis is busy running a script. You can only call SCRIPT KILL "
      "or SHUTDOWN NOSAVE.\r\n";
  ASSERT_EQ(a->Call({"CONFIG", "SET", "lua-time-limit", "10"}), "+OK\r\n");
  for (int where : {1, 0}) {  // the other worker, then the script's own
    Client* x = groups[where][1].get();
    Client* probe = groups[where][2].get();
    SCOPED_TRACE(where == 0 ? "the script's own worker" : "another worker");
    ASSERT_EQ(x->Call({"SET", "xx", "1"}), "+OK\r\n");
    ASSERT_TRUE(a->SendRaw(Client::Encode({"EVAL", "while true do end", "0"})));
    ASSERT_TRUE(BusyFrom(probe));
    const std::vector<std::pair<std::vector<std::string>, std::string>> seq = {
        {{"PING"}, busy},
        {{"MULTI"}, "+OK\r\n"},
        {{"INCR", "xx"}, busy},
        {{"WATCH", "k"}, "-ERR WATCH inside MULTI is not allowed\r\n"},
        {{"MULTI"}, "-ERR MULTI calls can not be nested\r\n"},
        {{"UNWATCH"}, "+QUEUED\r\n"},
        {{"DISCARD"}, "+OK\r\n"},
        {{"WATCH", "xx"}, "+OK\r\n"},
        {{"MULTI"}, "+OK\r\n"},
        {{"GET", "xx"}, busy},
        {{"EXEC"}, "-EXECABORT Transaction discarded because of: " +
                       busy.substr(1)},
        {{"WATCH", "xx"}, "+OK\r\n"},
        {{"MULTI"}, "+OK\r\n"},
        {{"HELLO", "2"}, "+QUEUED\r\n"},
    };
    for (const auto& [cmd, want] : seq) {
      EXPECT_EQ(x->Call(cmd), want) << cmd[0];
    }
    // The transaction begun (and its key watched) while the script ran
    // runs once it is gone: HELLO's reply and INCR's.
    EXPECT_EQ(probe->Call({"SCRIPT", "KILL"}), "+OK\r\n");
    a->Reply();
    EXPECT_EQ(x->Call({"INCR", "xx"}), "+QUEUED\r\n");
    EXPECT_EQ(x->Call({"EXEC"}).substr(0, 4), "*2\r\n");
    EXPECT_EQ(x->Call({"GET", "xx"}), "$1\r\n2\r\n");
    EXPECT_EQ(x->Call({"PING", "asdf"}), "$4\r\nasdf\r\n");
  }
}

}  // namespace
