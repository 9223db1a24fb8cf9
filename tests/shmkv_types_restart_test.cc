// Hot restarts under load over every type (docs/server.md, "Hot
// restart"): clients write and read hashes, lists, sets, sorted sets and
// streams, and queue workers wait in BRPOP, while SIGHUP replaces every
// worker twice. No request fails, every reply is the one the client's own
// history predicts, and every job reaches exactly one queue worker.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shmkv_server.h"

namespace {

using namespace shmkv_test;  // NOLINT: the server tests' helpers
using namespace std::chrono_literals;

std::string Int(long n) { return ":" + std::to_string(n) + "\r\n"; }

// One client's round on its own keys of one type: a write and reads whose
// replies follow from the rounds before. False at the first surprise.
bool Round(Client* c, int type, int t, long i, std::string* why) {
  const std::string n = std::to_string(i);
  const std::string k = std::to_string(t);
  auto expect = [&](const std::vector<std::string>& cmd,
                    const std::string& want) {
    std::string got = c->Call(cmd);
    if (got == want) return true;
    *why = cmd[0] + " " + cmd[1] + ": got [" + got + "] want [" + want + "]";
    return false;
  };
  switch (type) {
    case 0:  // a hash of up to 300 fields (past its packed form)
      return expect({"HSET", "h" + k, "f" + std::to_string(i % 300), n},
                    Int(i < 300 ? 1 : 0)) &&
             expect({"HGET", "h" + k, "f" + std::to_string(i % 300)},
                    Bulk(n)) &&
             expect({"HLEN", "h" + k}, Int(std::min<long>(i + 1, 300)));
    case 1:  // a list that grows by two and shrinks by one each round
      return expect({"RPUSH", "l" + k, n, n + "b"}, Int(i + 2)) &&
             expect({"LPOP", "l" + k}, Bulk(i % 2 == 0 ? std::to_string(i / 2)
                                                       : std::to_string(i / 2) + "b")) &&
             expect({"LLEN", "l" + k}, Int(i + 1));
    case 2:  // a set of integers, then of strings
      return expect({"SADD", "s" + k, i < 600 ? n : "m" + n}, Int(1)) &&
             expect({"SISMEMBER", "s" + k, i < 600 ? n : "m" + n}, Int(1)) &&
             expect({"SCARD", "s" + k}, Int(i + 1));
    case 4: {  // a stream, past its packed form (100 entries) in time
      const std::string id = std::to_string(i + 1) + "-1";
      return expect({"XADD", "x" + k, id, "f", n}, Bulk(id)) &&
             expect({"XLEN", "x" + k}, Int(i + 1)) &&
             expect({"XREVRANGE", "x" + k, "+", "-", "COUNT", "1"},
                    "*1\r\n*2\r\n" + Bulk(id) + "*2\r\n" + Bulk("f") +
                        Bulk(n));
    }
    default:  // a sorted set
      return expect({"ZADD", "z" + k, n, "m" + n}, Int(1)) &&
             expect({"ZSCORE", "z" + k, "m" + n}, Bulk(n)) &&
             expect({"ZRANK", "z" + k, "m" + n}, Int(i)) &&
             expect({"ZCARD", "z" + k}, Int(i + 1));
  }
}

TEST(ShmkvTypes, HotRestartsUnderLoadOfEveryTypeFailNothing) {
  Server s("typeshot");
  ASSERT_TRUE(s.Start()) << s.log();
  constexpr int kWriters = 10;  // two per type
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> ts;
  for (int t = 0; t < kWriters; ++t) {
    ts.emplace_back([&, t] {
      Client c(s.port());
      std::string why;
      for (long i = 0; !stop; ++i) {
        if (!Round(&c, t % 5, t, i, &why)) {
          std::lock_guard<std::mutex> l(mu);
          failures.push_back("writer " + std::to_string(t) + " round " +
                             std::to_string(i) + ": " + why);
          return;
        }
        ++rounds;
      }
    });
  }
  // Queue workers blocked in BRPOP most of the time (a job every few
  // milliseconds), and a producer.
  std::multiset<std::string> got;
  std::atomic<long> pushed{0}, taken{0};
  std::atomic<bool> drained{false};
  std::vector<std::thread> consumers;
  for (int w = 0; w < 3; ++w) {
    consumers.emplace_back([&] {
      Client c(s.port());
      while (!drained) {
        std::string r = c.Call({"BRPOP", "jobs", "0.2"});
        if (r == "*-1\r\n") continue;
        std::lock_guard<std::mutex> l(mu);
        if (r.rfind("*2\r\n", 0) != 0) {
          failures.push_back("BRPOP: [" + r + "]");
          return;
        }
        got.insert(r);
        ++taken;
      }
    });
  }
  ts.emplace_back([&] {
    Client c(s.port());
    for (long j = 0; !stop; ++j) {
      if (c.Call({"LPUSH", "jobs", "j" + std::to_string(j)}).empty()) {
        std::lock_guard<std::mutex> l(mu);
        failures.push_back("LPUSH failed");
        return;
      }
      ++pushed;
      std::this_thread::sleep_for(3ms);
    }
  });
  // Each reload comes under load, and traffic goes on through it: waited
  // for by progress (writer rounds and jobs), not by time, so a slow
  // machine (a sanitizer build, a busy host) only takes longer.
  auto progress = [&](long more_rounds, long more_jobs) {
    long r0 = rounds, p0 = pushed;
    for (int i = 0; i < 6000; ++i) {
      if (rounds >= r0 + more_rounds && pushed >= p0 + more_jobs) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  Client watcher(s.port());
  EXPECT_TRUE(progress(300, 50)) << "traffic before the first reload";
  s.Signal(SIGHUP);
  for (int i = 0; i < 6000 && InfoField(&watcher, "reloads") != "1"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(progress(500, 100)) << "traffic through the first reload";
  s.Signal(SIGHUP);
  for (int i = 0; i < 6000 && InfoField(&watcher, "reloads") != "2"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(progress(500, 100)) << "traffic through the second reload";
  stop = true;
  for (auto& t : ts) t.join();
  for (int i = 0; i < 500 && taken < pushed; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  drained = true;
  for (auto& t : consumers) t.join();
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(taken, pushed) << "every job taken";
  std::set<std::string> distinct(got.begin(), got.end());
  EXPECT_EQ(distinct.size(), got.size()) << "no job reached two workers";
  Client c(s.port());
  EXPECT_EQ(InfoField(&c, "reloads"), "2");
  EXPECT_EQ(c.Call({"EXISTS", "jobs"}), ":0\r\n");
}

}  // namespace
