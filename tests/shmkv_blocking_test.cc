// Blocking commands end to end (docs/server.md, "Blocking commands"): a
// client blocked on one worker is served by a write on another, in the
// order the clients blocked across all workers; timeouts, disconnects,
// hot restarts and killed workers.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shmkv_server.h"
#include "tests/support/resp_reply.h"

namespace {

using namespace shmkv_test;  // NOLINT: the server tests' helpers
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds limit = 10000ms) {
  auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

std::string BlockedClients(int port) {
  Client c(port);
  return InfoField(&c, "blocked_clients");
}

bool BlockedAre(int port, int n) {
  return WaitFor([&] { return BlockedClients(port) == std::to_string(n); });
}

std::string Pair(const std::string& k, const std::string& v) {
  return "*2\r\n" + Bulk(k) + Bulk(v);
}

// Blocks `c` in `cmd` and waits until the server counts `n` blocked.
void BlockIn(Client* c, const std::vector<std::string>& cmd, int port, int n) {
  ASSERT_TRUE(c->SendRaw(Client::Encode(cmd)));
  ASSERT_TRUE(BlockedAre(port, n)) << BlockedClients(port);
}

// SIGHUP, then waits for the reload, for a worker other than the one of
// pid `before` to answer, and for the old workers to hand over.
::testing::AssertionResult HotRestart(Server* s, const std::string& before) {
  s->Signal(SIGHUP);
  Client probe(s->port());
  if (!WaitFor([&] { return InfoField(&probe, "reloads") == "1"; })) {
    return ::testing::AssertionFailure() << "no reload";
  }
  if (!WaitFor([&] {
        Client fresh(s->port());
        std::string pid = InfoField(&fresh, "process_id");
        return !pid.empty() && pid != before;
      })) {
    return ::testing::AssertionFailure() << "no new worker";
  }
  std::this_thread::sleep_for(300ms);  // the old workers hand over
  return ::testing::AssertionSuccess();
}

TEST(ShmkvBlocking, FirstBlockedIsFirstServedAcrossWorkers) {
  Server s("bfifo");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 3);
  ASSERT_EQ(groups.size(), 2u);
  std::vector<Client*> order;  // alternating between the two workers
  for (size_t i = 0; i < 3; ++i) {
    for (size_t w = 0; w < 2; ++w) order.push_back(groups[w][i].get());
  }
  for (size_t i = 0; i < order.size(); ++i) {
    BlockIn(order[i], {"BLPOP", "q", "0"}, s.port(), static_cast<int>(i + 1));
  }
  for (Client* c : order) EXPECT_FALSE(c->Answered(50));
  Client pusher(s.port());
  EXPECT_EQ(pusher.Call({"RPUSH", "q", "e0", "e1", "e2", "e3", "e4", "e5",
                         "e6"}),
            ":7\r\n");
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i]->Reply(), Pair("q", "e" + std::to_string(i))) << i;
  }
  EXPECT_EQ(pusher.Call({"LRANGE", "q", "0", "-1"}), "*1\r\n" + Bulk("e6"));
  EXPECT_TRUE(BlockedAre(s.port(), 0));
}

TEST(ShmkvBlocking, EachTypeIsWokenFromTheOtherWorker) {
  Server s("btypes");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client* waiter = groups[0][0].get();
  Client* writer = groups[1][0].get();
  struct Case {
    std::vector<std::string> wait, write;
    std::string reply;
  };
  const Case cases[] = {
      {{"BRPOP", "l1", "l2", "0"}, {"LPUSH", "l2", "x"}, Pair("l2", "x")},
      {{"BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"}, {"RPUSH", "src", "m"},
       Bulk("m")},
      {{"BRPOPLPUSH", "src2", "dst", "0"}, {"RPUSH", "src2", "n"}, Bulk("n")},
      {{"BLMPOP", "0", "2", "a1", "a2", "LEFT", "COUNT", "5"},
       {"RPUSH", "a2", "p", "q"},
       "*2\r\n" + Bulk("a2") + "*2\r\n" + Bulk("p") + Bulk("q")},
      {{"BZPOPMIN", "z1", "0"}, {"ZADD", "z1", "2", "b", "1", "a"},
       "*3\r\n" + Bulk("z1") + Bulk("a") + Bulk("1")},
      {{"BZPOPMAX", "z2", "0"}, {"ZADD", "z2", "2", "b", "1", "a"},
       "*3\r\n" + Bulk("z2") + Bulk("b") + Bulk("2")},
      {{"BZMPOP", "0", "1", "z3", "MIN", "COUNT", "2"},
       {"ZADD", "z3", "3", "c", "1.5", "a"},
       "*2\r\n" + Bulk("z3") + "*2\r\n*2\r\n" + Bulk("a") + Bulk("1.5") +
           "*2\r\n" + Bulk("c") + Bulk("3")},
  };
  for (const Case& k : cases) {
    BlockIn(waiter, k.wait, s.port(), 1);
    EXPECT_FALSE(waiter->Answered(30)) << k.wait[0];
    writer->Call(k.write);
    EXPECT_EQ(waiter->Reply(), k.reply) << k.wait[0];
    EXPECT_TRUE(BlockedAre(s.port(), 0));
  }
  EXPECT_EQ(writer->Call({"LRANGE", "dst", "0", "-1"}),
            "*2\r\n" + Bulk("n") + Bulk("m"));
  // A write inside MULTI/EXEC wakes too, once the whole EXEC is applied.
  BlockIn(waiter, {"BLPOP", "t", "0"}, s.port(), 1);
  writer->Call({"MULTI"});
  writer->Call({"RPUSH", "t", "1"});
  writer->Call({"RPUSH", "t", "2"});
  EXPECT_FALSE(waiter->Answered(30));
  EXPECT_EQ(writer->Call({"EXEC"}), "*2\r\n:1\r\n:2\r\n");
  EXPECT_EQ(waiter->Reply(), Pair("t", "1"));
}

// XREAD BLOCK waits for entries past its IDs ("$": the last ID when it
// blocked) and is woken by an XADD on the other worker; every waiter on
// a key is served (an XREAD takes nothing), one waiting past an ID no
// entry has reached yet goes on waiting, a wait ends at its timeout with
// a null, and waits survive a hot restart with "$" still the ID it was.
TEST(ShmkvBlocking, XReadWaitsAcrossWorkersAndRestarts) {
  Server s("bxread");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 3);
  ASSERT_EQ(groups.size(), 2u);
  Client* writer = groups[1][0].get();
  ASSERT_EQ(writer->Call({"XADD", "s", "5-0", "a", "0"}), Bulk("5-0"));
  Client* dollar = groups[0][0].get();
  Client* high = groups[1][1].get();
  Client* other = groups[0][1].get();
  Client* timed = groups[1][2].get();
  BlockIn(dollar, {"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, s.port(), 1);
  BlockIn(high, {"XREAD", "BLOCK", "0", "STREAMS", "s", "99-0"}, s.port(), 2);
  BlockIn(other, {"XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "t", "s",
                  "$", "$"}, s.port(), 3);
  auto t0 = Clock::now();
  BlockIn(timed, {"XREAD", "BLOCK", "300", "STREAMS", "none", "$"}, s.port(),
          4);
  const std::string entry6 =
      "*1\r\n*2\r\n" + Bulk("s") + "*1\r\n*2\r\n" + Bulk("6-0") +
      "*2\r\n" + Bulk("a") + Bulk("1");
  writer->Call({"XADD", "s", "6-0", "a", "1"});
  EXPECT_EQ(dollar->Reply(), entry6);
  EXPECT_EQ(other->Reply(), entry6);
  EXPECT_FALSE(high->Answered(50));
  EXPECT_EQ(timed->Reply(), "*-1\r\n");
  EXPECT_GE(Clock::now() - t0, 300ms);
  // A waiter behind one that an entry does not serve, on the same
  // worker, is served by it.
  BlockIn(timed, {"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, s.port(), 2);
  writer->Call({"XADD", "s", "7-0", "a", "2"});
  EXPECT_EQ(timed->Reply(), "*1\r\n*2\r\n" + Bulk("s") +
                                "*1\r\n*2\r\n" + Bulk("7-0") + "*2\r\n" +
                                Bulk("a") + Bulk("2"));
  EXPECT_FALSE(high->Answered(50));
  // Through a hot restart: "$" stays 7-0, so the entry added while the
  // workers change is not missed.
  BlockIn(dollar, {"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, s.port(), 2);
  const std::string before = InfoField(writer, "process_id");
  ASSERT_TRUE(HotRestart(&s, before));
  Client probe(s.port());
  EXPECT_EQ(BlockedClients(s.port()), "2");
  probe.Call({"XADD", "s", "100-0", "b", "2"});
  const std::string entry100 =
      "*1\r\n*2\r\n" + Bulk("s") + "*1\r\n*2\r\n" + Bulk("100-0") +
      "*2\r\n" + Bulk("b") + Bulk("2");
  EXPECT_EQ(high->Reply(), entry100);
  EXPECT_EQ(dollar->Reply(), entry100);
  EXPECT_TRUE(BlockedAre(s.port(), 0));
}

// XREADGROUP BLOCK across workers: the first client of a group to block
// takes the next entry, a client of another group is not held back by
// one that found nothing, a wait survives a hot restart, and a group
// destroyed under a waiter answers Redis's NOGROUP.
TEST(ShmkvBlocking, XReadGroupWaitsAcrossWorkersAndRestarts) {
  Server s("bxgroup");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* writer = groups[0][1].get();
  ASSERT_EQ(writer->Call({"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"}),
            "+OK\r\n");
  ASSERT_EQ(writer->Call({"XGROUP", "CREATE", "s", "h", "$"}), "+OK\r\n");
  Client* a = groups[0][0].get();
  // b and x on one worker, b first: when b finds nothing, x (another
  // group) is still tried.
  Client* b = groups[1][0].get();
  Client* x = groups[1][1].get();
  BlockIn(a, {"XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s",
              ">"}, s.port(), 1);
  BlockIn(b, {"XREADGROUP", "GROUP", "g", "b", "BLOCK", "0", "STREAMS", "s",
              ">"}, s.port(), 2);
  BlockIn(x, {"XREADGROUP", "GROUP", "h", "x", "BLOCK", "0", "STREAMS", "s",
              ">"}, s.port(), 3);
  auto entry = [](const std::string& id, const std::string& v) {
    return "*1\r\n*2\r\n" + Bulk("s") + "*1\r\n*2\r\n" + Bulk(id) +
           "*2\r\n" + Bulk("f") + Bulk(v);
  };
  writer->Call({"XADD", "s", "1-0", "f", "1"});
  EXPECT_EQ(a->Reply(), entry("1-0", "1"));
  EXPECT_EQ(x->Reply(), entry("1-0", "1"));
  EXPECT_FALSE(b->Answered(50));
  writer->Call({"XADD", "s", "2-0", "f", "2"});
  EXPECT_EQ(b->Reply(), entry("2-0", "2"));
  EXPECT_EQ(writer->Call({"XPENDING", "s", "g"}),
            "*4\r\n:2\r\n" + Bulk("1-0") + Bulk("2-0") + "*2\r\n*2\r\n" +
                Bulk("a") + Bulk("1") + "*2\r\n" + Bulk("b") + Bulk("1"));
  // Through a hot restart.
  BlockIn(a, {"XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s",
              ">"}, s.port(), 1);
  const std::string before = InfoField(writer, "process_id");
  ASSERT_TRUE(HotRestart(&s, before));
  Client probe(s.port());
  EXPECT_EQ(BlockedClients(s.port()), "1");
  probe.Call({"XADD", "s", "3-0", "f", "3"});
  EXPECT_EQ(a->Reply(), entry("3-0", "3"));
  // The group destroyed under a waiter.
  BlockIn(b, {"XREADGROUP", "GROUP", "g", "b", "BLOCK", "0", "STREAMS", "s",
              ">"}, s.port(), 1);
  EXPECT_EQ(probe.Call({"XGROUP", "DESTROY", "s", "g"}), ":1\r\n");
  EXPECT_EQ(b->Reply(), "-NOGROUP the consumer group this client was "
                        "blocked on no longer exists\r\n");
  // The stream deleted, or flushed, under a waiter.
  const std::string gone = "-UNBLOCKED the stream key no longer exists\r\n";
  for (const std::vector<std::string>& drop :
       {std::vector<std::string>{"DEL", "s"},
        std::vector<std::string>{"FLUSHALL"}}) {
    probe.Call({"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"});
    BlockIn(b, {"XREADGROUP", "GROUP", "g", "b", "BLOCK", "0", "STREAMS",
                "s", ">"}, s.port(), 1);
    probe.Call(drop);
    EXPECT_EQ(b->Reply(), gone) << drop[0];
  }
  EXPECT_TRUE(BlockedAre(s.port(), 0));
}

TEST(ShmkvBlocking, TimeoutsAnswerNullNoSooner) {
  Server s("btime");
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  for (const char* cmd : {"BLPOP", "BZPOPMAX"}) {
    auto t0 = Clock::now();
    EXPECT_EQ(c.Call({cmd, "none", "0.25"}), "*-1\r\n");
    EXPECT_GE(Clock::now() - t0, 250ms) << cmd;
  }
  auto t0 = Clock::now();
  EXPECT_EQ(c.Call({"BLMOVE", "none", "d", "LEFT", "LEFT", "0.1"}), "*-1\r\n");
  EXPECT_GE(Clock::now() - t0, 100ms);
  EXPECT_EQ(c.Call({"EXISTS", "d"}), ":0\r\n");
  EXPECT_TRUE(BlockedAre(s.port(), 0));
  // Each timed-out call counts once in commandstats (published within
  // 100 ms).
  for (const char* cmd : {"blpop", "bzpopmax", "blmove"}) {
    EXPECT_TRUE(WaitFor([&] {
      return InfoField(&c, std::string("cmdstat_") + cmd).rfind("calls=1,", 0) == 0;
    })) << cmd << ": " << InfoField(&c, std::string("cmdstat_") + cmd);
  }
  // Inside MULTI a blocking command answers at once.
  c.Call({"MULTI"});
  c.Call({"BLPOP", "none", "0"});
  EXPECT_EQ(c.Call({"EXEC"}), "*1\r\n*-1\r\n");
}

// --timeout closes idle clients, not blocked ones (as Redis): a client
// waiting in BLPOP 0 past the idle timeout is still served.
TEST(ShmkvBlocking, AnIdleTimeoutDoesNotEndAWait) {
  Server s("bidle");
  ASSERT_TRUE(s.Start({"--timeout", "1"})) << s.log();
  Client waiter(s.port());
  BlockIn(&waiter, {"BLPOP", "k", "0"}, s.port(), 1);
  EXPECT_FALSE(waiter.Answered(2500)) << "neither answered nor closed";
  Client pusher(s.port());
  EXPECT_EQ(pusher.Call({"RPUSH", "k", "v"}), ":1\r\n");
  EXPECT_EQ(waiter.Reply(), Pair("k", "v"));
}

// CLIENT UNBLOCK ends a wait of a client of the same worker as its
// timeout would (a null) or with the UNBLOCKED error; the client's next
// commands then run, and the key it waited on keeps what comes later.
TEST(ShmkvBlocking, ClientUnblockEndsAWaitAsRedis) {
  Server s("bunblock");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client& waiter = *groups[0][0];
  Client& admin = *groups[0][1];
  std::string id = waiter.Call({"CLIENT", "ID"});
  ASSERT_EQ(id[0], ':') << id;
  id = id.substr(1, id.size() - 3);
  EXPECT_EQ(admin.Call({"CLIENT", "UNBLOCK", id}), ":0\r\n") << "not blocked";
  ASSERT_TRUE(waiter.SendRaw(Client::Encode({"BLPOP", "k", "0"}) +
                             Client::Encode({"PING"})));
  ASSERT_TRUE(BlockedAre(s.port(), 1));
  EXPECT_EQ(admin.Call({"CLIENT", "UNBLOCK", id, "maybe"}),
            "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n");
  EXPECT_EQ(admin.Call({"CLIENT", "UNBLOCK", id}), ":1\r\n");
  EXPECT_EQ(waiter.Reply(), "*-1\r\n");
  EXPECT_EQ(waiter.Reply(), "+PONG\r\n");
  EXPECT_TRUE(BlockedAre(s.port(), 0));
  EXPECT_EQ(admin.Call({"CLIENT", "UNBLOCK", id}), ":0\r\n");
  // ERROR, asked inside a transaction: the wait ends after EXEC.
  ASSERT_TRUE(waiter.SendRaw(Client::Encode({"BZPOPMIN", "z", "0"})));
  ASSERT_TRUE(BlockedAre(s.port(), 1));
  admin.Call({"MULTI"});
  EXPECT_EQ(admin.Call({"CLIENT", "UNBLOCK", id, "ERROR"}), "+QUEUED\r\n");
  EXPECT_EQ(admin.Call({"EXEC"}), "*1\r\n:1\r\n");
  EXPECT_EQ(waiter.Reply(),
            "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
  EXPECT_TRUE(BlockedAre(s.port(), 0));
  EXPECT_EQ(admin.Call({"RPUSH", "k", "v"}), ":1\r\n");
  EXPECT_EQ(admin.Call({"LLEN", "k"}), ":1\r\n") << "nobody waits any more";
}

TEST(ShmkvBlocking, CommandsPipelinedBehindABlockedOneWait) {
  Server s("bpipe");
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  ASSERT_TRUE(c.SendRaw(Client::Encode({"BLPOP", "k", "0"}) +
                        Client::Encode({"SET", "after", "1"}) +
                        Client::Encode({"PING"})));
  ASSERT_TRUE(BlockedAre(s.port(), 1));
  Client other(s.port());
  EXPECT_EQ(other.Call({"EXISTS", "after"}), ":0\r\n") << "SET waits";
  EXPECT_EQ(other.Call({"RPUSH", "k", "v"}), ":1\r\n");
  EXPECT_EQ(c.Reply(), Pair("k", "v"));
  EXPECT_EQ(c.Reply(), "+OK\r\n");
  EXPECT_EQ(c.Reply(), "+PONG\r\n");
}

TEST(ShmkvBlocking, ClientsThatLeaveLeaveTheLine) {
  Server s("bleave");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  BlockIn(groups[0][0].get(), {"BLPOP", "k", "0"}, s.port(), 1);
  BlockIn(groups[1][0].get(), {"BLPOP", "k", "0"}, s.port(), 2);
  BlockIn(groups[0][1].get(), {"BLPOP", "k", "0"}, s.port(), 3);
  groups[0][0].reset();  // the first in line hangs up
  ASSERT_TRUE(BlockedAre(s.port(), 2));
  Client pusher(s.port());
  pusher.Call({"RPUSH", "k", "a"});
  EXPECT_EQ(groups[1][0]->Reply(), Pair("k", "a"));
  EXPECT_FALSE(groups[0][1]->Answered(50));
  pusher.Call({"RPUSH", "k", "b"});
  EXPECT_EQ(groups[0][1]->Reply(), Pair("k", "b"));
  EXPECT_TRUE(BlockedAre(s.port(), 0));
}

// SIGHUP replaces both workers while clients wait: each connection moves
// still blocked, keeps its place in line and its deadline.
TEST(ShmkvBlocking, BlockedClientsSurviveAHotRestart) {
  Server s("bhot");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  std::string before = InfoField(groups[0][0].get(), "process_id");
  std::vector<Client*> order = {groups[1][0].get(), groups[0][0].get(),
                                groups[1][1].get()};
  for (size_t i = 0; i < order.size(); ++i) {
    BlockIn(order[i], {"BRPOP", "jobs", "0"}, s.port(),
            static_cast<int>(i + 1));
  }
  Client* timed = groups[0][1].get();
  auto t0 = Clock::now();
  BlockIn(timed, {"BLPOP", "never", "2"}, s.port(), 4);
  ASSERT_TRUE(HotRestart(&s, before));
  Client probe(s.port());
  EXPECT_EQ(BlockedClients(s.port()), "4");
  for (Client* c : order) EXPECT_FALSE(c->Answered(10));
  probe.Call({"LPUSH", "jobs", "j0", "j1", "j2"});
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i]->Reply(), Pair("jobs", "j" + std::to_string(i))) << i;
  }
  EXPECT_EQ(timed->Reply(), "*-1\r\n");
  EXPECT_GE(Clock::now() - t0, 2s);
  EXPECT_LT(Clock::now() - t0, 9s) << "the deadline moved with the client";
  EXPECT_EQ(order[0]->Call({"PING"}), "+PONG\r\n");
  EXPECT_NE(InfoField(order[0], "process_id"), before);
}

// A client blocked in database 2 is woken by a push to its key in
// database 2 from the other worker, not by one to the same name in
// database 0; after a hot restart every connection is still in the
// database it SELECTed, blocked or not.
TEST(ShmkvBlocking, WaitsAndConnectionsKeepTheirDatabase) {
  Server s("bdbs");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* waiter = groups[0][0].get();
  Client* pusher = groups[1][0].get();
  Client* idle = groups[1][1].get();
  EXPECT_EQ(waiter->Call({"SELECT", "2"}), "+OK\r\n");
  EXPECT_EQ(idle->Call({"SELECT", "5"}), "+OK\r\n");
  EXPECT_EQ(idle->Call({"SET", "where", "five"}), "+OK\r\n");
  BlockIn(waiter, {"BLPOP", "q", "0"}, s.port(), 1);
  EXPECT_EQ(pusher->Call({"LPUSH", "q", "in-db0"}), ":1\r\n");
  EXPECT_FALSE(waiter->Answered(100)) << "woken from another database";
  s.Signal(SIGHUP);
  Client probe(s.port());
  ASSERT_TRUE(WaitFor([&] { return InfoField(&probe, "reloads") == "1"; }));
  std::this_thread::sleep_for(500ms);  // the old workers hand over
  EXPECT_EQ(BlockedClients(s.port()), "1");
  EXPECT_EQ(pusher->Call({"SELECT", "2"}), "+OK\r\n");
  EXPECT_EQ(pusher->Call({"LPUSH", "q", "in-db2"}), ":1\r\n");
  EXPECT_EQ(waiter->Reply(), Pair("q", "in-db2"));
  EXPECT_EQ(idle->Call({"GET", "where"}), Bulk("five"));
  EXPECT_EQ(idle->Call({"CLIENT", "INFO"}).find(" db=5 ") != std::string::npos,
            true);
  EXPECT_EQ(waiter->Call({"LLEN", "q"}), ":0\r\n");
  EXPECT_EQ(probe.Call({"LLEN", "q"}), ":1\r\n");
}

// SWAPDB brings a waiter's key a list from the other database: the waiter
// is served at once, as Redis serves it, here from a SWAPDB on the other
// worker (a wake to every worker with a blocked client), long before its
// timeout. Before that wake it waited for the once-a-second retry.
TEST(ShmkvBlocking, SwapdbServesWaitersAtOnce) {
  Server s("bswap");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* waiter = groups[0][0].get();
  Client* local = groups[0][1].get();
  Client* swapper = groups[1][0].get();
  EXPECT_EQ(waiter->Call({"SELECT", "1"}), "+OK\r\n");
  EXPECT_EQ(local->Call({"SELECT", "3"}), "+OK\r\n");
  EXPECT_EQ(swapper->Call({"SELECT", "2"}), "+OK\r\n");
  for (int round = 0; round < 3; ++round) {
    std::string v = "v" + std::to_string(round);
    BlockIn(waiter, {"BLPOP", "q", "0.3"}, s.port(), 1);
    EXPECT_EQ(swapper->Call({"RPUSH", "q", v}), ":1\r\n");
    EXPECT_EQ(swapper->Call({"SWAPDB", "1", "2"}), "+OK\r\n");
    EXPECT_EQ(waiter->Reply(), Pair("q", v)) << "round " << round;
    // The same from a SWAPDB on the waiter's own worker.
    BlockIn(waiter, {"BLPOP", "q", "0.3"}, s.port(), 1);
    EXPECT_EQ(local->Call({"RPUSH", "q", v}), ":1\r\n");
    EXPECT_EQ(local->Call({"SWAPDB", "3", "1"}), "+OK\r\n");
    EXPECT_EQ(waiter->Reply(), Pair("q", v)) << "round " << round;
  }
  EXPECT_TRUE(BlockedAre(s.port(), 0));
}

// A worker killed while its clients wait takes no element with it, and
// its place in line does not hold up the clients of other workers.
TEST(ShmkvBlocking, AKilledWorkerLosesNoElement) {
  Server s("bkill");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  pid_t dead = std::stoi(InfoField(groups[0][0].get(), "process_id"));
  BlockIn(groups[0][0].get(), {"BLPOP", "q", "0"}, s.port(), 1);
  BlockIn(groups[0][1].get(), {"BLMOVE", "q", "d", "LEFT", "LEFT", "0"},
          s.port(), 2);
  BlockIn(groups[1][0].get(), {"BLPOP", "q", "0"}, s.port(), 3);
  ASSERT_EQ(kill(dead, SIGKILL), 0);
  EXPECT_TRUE(groups[0][0]->Closed());
  EXPECT_TRUE(groups[0][1]->Closed());
  Client pusher(s.port());
  EXPECT_EQ(pusher.Call({"RPUSH", "q", "a", "b", "c"}), ":3\r\n");
  EXPECT_EQ(groups[1][0]->Reply(), Pair("q", "a"));
  EXPECT_EQ(pusher.Call({"LRANGE", "q", "0", "-1"}),
            "*2\r\n" + Bulk("b") + Bulk("c"));
  EXPECT_EQ(pusher.Call({"EXISTS", "d"}), ":0\r\n");
  EXPECT_TRUE(BlockedAre(s.port(), 0));
}

// Clients move elements back and forth between two lists with BLMOVE
// while workers are killed at random: every element is always in exactly
// one of the two lists (a move is one commit, and an element leaves a
// list only in the command that answers).
TEST(ShmkvBlocking, KilledWorkersNeverLoseOrDuplicateAMovedElement) {
  Server s("bring");
  ASSERT_TRUE(s.Start()) << s.log();
  std::vector<std::string> all;
  std::vector<std::string> push = {"RPUSH", "a"};
  for (int i = 0; i < 200; ++i) {
    all.push_back("e" + std::to_string(i));
    push.push_back(all.back());
  }
  {
    Client c(s.port());
    ASSERT_EQ(c.Call(push), ":200\r\n");
  }
  std::atomic<bool> stop{false};
  std::atomic<long> moves{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      while (!stop) {
        Client c(s.port());
        if (!c.ok()) continue;
        for (int i = 0; !stop; ++i) {
          bool ab = (i + t) % 2 == 0;
          std::string r = c.Call({"BLMOVE", ab ? "a" : "b", ab ? "b" : "a",
                                  "RIGHT", "LEFT", "0.05"});
          if (r.empty()) break;  // its worker was killed: reconnect
          if (r[0] == '$') ++moves;
        }
      }
    });
  }
  // A kill a little over a second apart: the master restarts a worker
  // killed sooner after its start only so many times.
  for (int k = 0; k < 5; ++k) {
    std::this_thread::sleep_for(1100ms);
    Client c(s.port());
    std::string pid = InfoField(&c, "process_id");
    if (!pid.empty()) kill(std::stoi(pid), SIGKILL);
  }
  std::this_thread::sleep_for(200ms);
  stop = true;
  for (auto& t : ts) t.join();
  EXPECT_GT(moves, 100);
  Client c(s.port());
  std::vector<std::string> seen;
  for (const char* key : {"a", "b"}) {
    for (std::string& e : BulkElements(c.Call({"LRANGE", key, "0", "-1"}))) {
      seen.push_back(std::move(e));
    }
  }
  std::sort(seen.begin(), seen.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(seen, all) << "every element once, in a or in b";
  EXPECT_TRUE(BlockedAre(s.port(), 0));
}

}  // namespace
