// Pub/sub across worker processes (docs/server.md, "Pub/sub"), spoken to
// over sockets: replies and messages byte for byte as redis-server's with
// subscribers on both workers, 100,000 messages from publishers on both
// workers reaching every subscriber in order, Redis's output limit for a
// subscriber that does not read, and a worker killed with subscribers.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/pinned_ids.h"
#include "tests/support/pubsub_transcript.h"
#include "tests/support/redis_oracle.h"
#include "tests/support/shmkv_server.h"

namespace {

using shmkv_test::Client;
using shmkv_test::InfoField;
using shmkv_test::OnEachWorker;
using shmkv_test::ExpectSameAsRedis;
using shmkv_test::Received;
using shmkv_test::RedisOracle;
using shmkv_test::Server;
using namespace std::chrono_literals;

TEST(PubSubFamily, IdsArePinned) {
  shmkv_test::ExpectPinnedIds("pubsub", {
      {"subscribe", 164}, {"unsubscribe", 165}, {"psubscribe", 166},
      {"punsubscribe", 167}, {"ssubscribe", 168}, {"sunsubscribe", 169},
      {"publish", 170}, {"spublish", 171}, {"pubsub", 172},
  });
}

// True when the server closes `c` (what it sent before is read and
// dropped); false if it stays open 5 s with nothing to read.
bool ClosedByServer(Client* c) {
  char buf[1 << 16];
  for (;;) {
    struct pollfd p = {c->fd(), POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return false;
    if (recv(c->fd(), buf, sizeof(buf), 0) <= 0) return true;
  }
}

TEST(ShmkvPubSubVsRedis, RepliesAndMessagesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("pubsub_diff");
  ASSERT_TRUE(s.Start()) << s.log();
  ExpectSameAsRedis(s.port(), redis.port(), {
      {0, {"PUBLISH", "news", "nobody"}},
      {0, {"SUBSCRIBE", "news", "sport"}},
      {1, {"SUBSCRIBE", "news"}},
      {2, {"PUBLISH", "news", "hello"}},
      {2, {"PUBLISH", "sport", "goal"}},
      {2, {"PUBLISH", "weather", "rain"}},
      // (one pattern per message: Redis's order among several is its
      // table's, seeded at random)
      {1, {"PSUBSCRIBE", "n*", "s?ort", "[wx]eather"}},
      {2, {"PUBLISH", "news", "both"}},
      {2, {"PUBSUB", "NUMSUB", "news", "sport", "weather"}},
      {2, {"PUBSUB", "NUMPAT"}},
      {2, {"PUBSUB", "CHANNELS", "sp*"}},
      {2, {"PUBSUB", "NUMSUB"}},
      {2, {"PUBSUB"}}, {2, {"PUBSUB", "BOGUS"}},
      {2, {"PUBSUB", "NUMPAT", "x"}},
      {2, {"PUBSUB", "CHANNELS", "a", "b"}},
      // subscribed: only the subscription commands, PING and QUIT in
      // RESP2; anything in RESP3 (this test runs in both)
      {0, {"GET", "x"}}, {0, {"PING"}}, {0, {"PING", "hi"}},
      {0, {"PUBSUB", "NUMPAT"}}, {0, {"SET", "k"}}, {0, {"MULTI"}},
      {0, {"DISCARD"}}, {0, {"SET", "k", "v"}}, {0, {"HGETALL", "k"}},
      {0, {"SUBSCRIBE", "news"}}, {0, {"SUBSCRIBE"}},
      {0, {"UNSUBSCRIBE", "sport", "never"}},
      {2, {"PUBLISH", "sport", "missed"}},
      {2, {"PUBLISH", "weather", "sun"}},
      {1, {"PUNSUBSCRIBE", "n*", "s?ort"}},
      {2, {"PUBLISH", "news", "again"}},
      // (with one left: the order of several is each server's table's)
      {1, {"PUNSUBSCRIBE"}}, {1, {"PUNSUBSCRIBE"}},
      {1, {"UNSUBSCRIBE"}}, {1, {"UNSUBSCRIBE"}},
      {1, {"GET", "x"}},
      {2, {"PUBLISH", "news", "last"}},
      {0, {"UNSUBSCRIBE", "news"}}, {0, {"GET", "x"}},
      // binary channels and messages
      {0, {"SUBSCRIBE", std::string("b\0in", 4)}},
      {1, {"PUBLISH", std::string("b\0in", 4), std::string("\r\n\0", 3)}},
      {0, {"UNSUBSCRIBE"}},
      // shard channels count apart
      {1, {"SSUBSCRIBE", "s1", "s2"}},
      {2, {"SPUBLISH", "s1", "m1"}}, {2, {"PUBLISH", "s1", "plain"}},
      {2, {"PUBSUB", "SHARDNUMSUB", "s1", "s3"}},
      {2, {"PUBSUB", "SHARDCHANNELS", "s2"}},
      {1, {"SUBSCRIBE", "c"}}, {1, {"SUNSUBSCRIBE", "s2"}},
      {1, {"SUNSUBSCRIBE"}},
      {1, {"UNSUBSCRIBE"}}, {1, {"SPUBLISH", "s1", "x"}},
      {1, {"SSUBSCRIBE"}}, {1, {"SPUBLISH", "s1"}}, {1, {"PUBLISH", "a"}},
  });
}

// Two publishers, one on each worker, 50,000 messages each; four
// subscribers, two on each worker, one of them by pattern. Every
// subscriber gets all 100,000, each publisher's in the order sent, none
// twice; every PUBLISH counts the four.
TEST(ShmkvPubSub, ManyMessagesAcrossWorkersArriveInOrder) {
  Server s("pubsub_load");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 3);
  ASSERT_EQ(groups.size(), 2u);
  std::vector<Client*> subs = {groups[0][0].get(), groups[0][1].get(),
                               groups[1][0].get(), groups[1][1].get()};
  for (size_t i = 0; i < subs.size(); ++i) {
    std::vector<std::string> cmd = {i == 3 ? "PSUBSCRIBE" : "SUBSCRIBE",
                                    i == 3 ? "load.*" : "load.q"};
    ASSERT_EQ(subs[i]->Call(cmd).substr(0, 4), "*3\r\n");
  }
  constexpr int kEach = 50000;
  std::atomic<int> bad_counts{0};
  std::vector<std::thread> pubs;
  for (int p = 0; p < 2; ++p) {
    pubs.emplace_back([&, p] {
      Client* c = groups[p][2].get();
      constexpr int kBatch = 500;
      for (int i = 0; i < kEach; i += kBatch) {
        std::string req;
        for (int j = i; j < i + kBatch; ++j) {
          req += Client::Encode({"PUBLISH", "load.q",
                                 std::to_string(p) + ":" + std::to_string(j)});
        }
        c->SendRaw(req);
        for (int j = 0; j < kBatch; ++j) {
          if (c->Reply() != ":4\r\n") ++bad_counts;
        }
      }
    });
  }
  std::vector<std::thread> readers;
  std::vector<std::string> errors(subs.size());
  for (size_t i = 0; i < subs.size(); ++i) {
    readers.emplace_back([&, i] {
      int next[2] = {0, 0};
      for (int n = 0; n < 2 * kEach; ++n) {
        std::string m = subs[i]->Reply();
        size_t colon = m.rfind(':');
        size_t body = m.rfind("\r\n", m.size() - 3);
        if (m.empty() || colon == std::string::npos || body == std::string::npos) {
          errors[i] = "message " + std::to_string(n) + ": '" + m + "'";
          return;
        }
        int p = m[body + 2] - '0';
        int seq = std::stoi(m.substr(colon + 1));
        if ((p != 0 && p != 1) || seq != next[p]) {
          errors[i] = "publisher " + std::to_string(p) + " sent " +
                      std::to_string(next[p]) + " next, got " +
                      std::to_string(seq);
          return;
        }
        ++next[p];
      }
    });
  }
  for (auto& t : pubs) t.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad_counts, 0);
  for (size_t i = 0; i < subs.size(); ++i) {
    EXPECT_EQ(errors[i], "") << "subscriber " << i;
    EXPECT_FALSE(subs[i]->Answered(50)) << "subscriber " << i
                                        << " got more than was sent";
  }
}

// A subscriber that never reads is closed at Redis's 32 MiB limit;
// publishing never waits for it, and another subscriber gets everything.
TEST(ShmkvPubSub, ASubscriberThatDoesNotReadIsClosed) {
  Server s("pubsub_slow");
  ASSERT_TRUE(s.Start()) << s.log();
  Client slow(s.port()), fast(s.port()), pub(s.port());
  ASSERT_EQ(slow.Call({"SUBSCRIBE", "big"}).substr(0, 4), "*3\r\n");
  ASSERT_EQ(fast.Call({"SUBSCRIBE", "big"}).substr(0, 4), "*3\r\n");
  const std::string payload(64 << 10, 'x');
  std::atomic<bool> done{false};
  std::atomic<int> got{0};
  std::thread reader([&] {
    while (!done || fast.Answered(200)) {
      if (!fast.Answered(200)) continue;
      if (fast.Reply().empty()) return;
      ++got;
    }
  });
  int sent = 0;
  for (; sent < 1200; ++sent) {  // 75 MiB, never more than 8 MiB ahead
    while (sent - got > 128) std::this_thread::sleep_for(1ms);
    std::string r = pub.Call({"PUBLISH", "big", payload});
    ASSERT_TRUE(r == ":2\r\n" || r == ":1\r\n") << r;
  }
  // The slow subscriber's worker may still be taking the last messages
  // from the ring when the publisher is done (delivery to another
  // worker is asynchronous): it is closed once it has, within seconds.
  std::string numsub;
  for (int i = 0; i < 1000; ++i) {
    numsub = pub.Call({"PUBSUB", "NUMSUB", "big"});
    if (numsub == "*2\r\n$3\r\nbig\r\n:1\r\n") break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(numsub, "*2\r\n$3\r\nbig\r\n:1\r\n");
  done = true;
  reader.join();
  EXPECT_EQ(got, sent);
  EXPECT_TRUE(ClosedByServer(&slow));
  EXPECT_NE(s.log().find("passed the limit"), std::string::npos) << s.log();
}

// A worker stopped while more than the ring (64 MiB) is published for
// its subscriber: when it runs again it has lost messages, and closes
// the subscriber instead of leaving a silent gap; publishing never
// waited for it, and a subscriber on the other worker got everything.
TEST(ShmkvPubSub, AWorkerThatFellARingBehindClosesItsSubscribers) {
  Server s("pubsub_behind");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* stopped_sub = groups[0][0].get();
  Client* pub = groups[1][0].get();
  Client* live_sub = groups[1][1].get();
  ASSERT_EQ(stopped_sub->Call({"SUBSCRIBE", "far"}).substr(0, 4), "*3\r\n");
  ASSERT_EQ(live_sub->Call({"SUBSCRIBE", "far"}).substr(0, 4), "*3\r\n");
  pid_t stopped = std::stoi(InfoField(groups[0][1].get(), "process_id"));
  ASSERT_EQ(kill(stopped, SIGSTOP), 0);
  const std::string payload(64 << 10, 'y');
  std::atomic<int> got{0};
  std::thread reader([&] {
    while (got < 1200 && !live_sub->Reply().empty()) ++got;
  });
  for (int i = 0; i < 1200; ++i) {  // 75 MiB through the ring
    while (i - got > 64) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(pub->Call({"PUBLISH", "far", payload}), ":2\r\n");
  }
  reader.join();
  EXPECT_EQ(got, 1200);
  kill(stopped, SIGCONT);
  EXPECT_TRUE(ClosedByServer(stopped_sub));
  EXPECT_NE(s.log().find("fell behind the pub/sub ring"), std::string::npos)
      << s.log();
}

// The payload of a message (its last bulk string), "" if it is none.
std::string Payload(const std::string& reply) {
  if (reply.empty() || (reply[0] != '*' && reply[0] != '>')) return "";
  size_t end = reply.size() - 2;  // the CRLF after the payload
  size_t start = reply.rfind("\r\n", end - 1);
  return start == std::string::npos ? "" : reply.substr(start + 2, end - start - 2);
}

// A hot restart while a publisher sends: each subscriber (by channel and
// by pattern, RESP2 and RESP3, on both workers) moves to the new workers
// with its subscriptions, keeps its connection, and receives every
// message once, in order; every PUBLISH counts all four; afterwards no
// old worker's registration is left.
TEST(ShmkvPubSub, HotRestartMovesSubscribersWithoutLoss) {
  Server s("pubsub_hot");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* subs[4] = {groups[0][0].get(), groups[0][1].get(),
                     groups[1][0].get(), groups[1][1].get()};
  ASSERT_EQ(subs[1]->Call({"HELLO", "3"}).substr(0, 4), "%7\r\n");
  std::string pid_before = InfoField(subs[1], "process_id");
  ASSERT_FALSE(pid_before.empty());
  ASSERT_FALSE(subs[0]->Call({"SUBSCRIBE", "ch"}).empty());
  ASSERT_FALSE(subs[1]->Call({"PSUBSCRIBE", "c?"}).empty());
  ASSERT_FALSE(subs[2]->Call({"PSUBSCRIBE", "c*"}).empty());
  ASSERT_FALSE(subs[3]->Call({"SUBSCRIBE", "ch", "other"}).empty());
  ASSERT_FALSE(subs[3]->Reply().empty());  // (one reply per channel)
  constexpr int kMessages = 30000;
  std::atomic<int> sent{0};
  std::atomic<int> bad_counts{0};
  std::thread publisher([&] {
    Client pub(s.port());
    constexpr int kBatch = 100;
    for (int i = 0; i < kMessages; i += kBatch) {
      std::string batch;
      for (int j = i; j < i + kBatch; ++j) {
        batch += Client::Encode({"PUBLISH", "ch", std::to_string(j)});
      }
      if (!pub.SendRaw(batch)) return;
      for (int j = 0; j < kBatch; ++j) {
        if (pub.Reply() != ":4\r\n") ++bad_counts;
      }
      sent = i + kBatch;
    }
  });
  for (int reload = 1; reload <= 2; ++reload) {
    while (sent < reload * kMessages / 3) std::this_thread::sleep_for(1ms);
    s.Signal(SIGHUP);
  }
  publisher.join();
  EXPECT_EQ(bad_counts, 0) << "a PUBLISH did not count the four subscribers";
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < kMessages; ++i) {
      std::string r = subs[k]->Reply();
      ASSERT_FALSE(r.empty()) << "subscriber " << k << " lost its connection "
                              << "or messages after " << i << ": " << s.log();
      ASSERT_EQ(Payload(r), std::to_string(i)) << "subscriber " << k << ": " << r;
    }
  }
  // Moved, not reconnected: the RESP3 subscriber's worker is a new one.
  std::string pid_after = InfoField(subs[1], "process_id");
  EXPECT_NE(pid_after, pid_before);
  EXPECT_FALSE(pid_after.empty());
  // Each still subscribed, counted once.
  Client admin(s.port());
  EXPECT_EQ(admin.Call({"PUBSUB", "NUMSUB", "ch", "other"}),
            "*4\r\n$2\r\nch\r\n:2\r\n$5\r\nother\r\n:1\r\n");
  EXPECT_EQ(admin.Call({"PUBSUB", "NUMPAT"}), ":2\r\n");
  EXPECT_EQ(admin.Call({"PUBLISH", "ch", "after"}), ":4\r\n");
  for (int k = 0; k < 4; ++k) EXPECT_EQ(Payload(subs[k]->Reply()), "after");
}

// A hot restart while a subscriber that does not read has megabytes of
// messages waiting in its worker (far more than one handoff message
// holds): they go along in pieces, and it reads every one, in order,
// then what was published after, from the new worker.
TEST(ShmkvPubSub, HotRestartMovesASubscribersLongBacklog) {
  Server s("pubsub_backlog");
  ASSERT_TRUE(s.Start()) << s.log();
  Client sub(s.port()), pub(s.port());
  ASSERT_EQ(sub.Call({"HELLO", "3"}).substr(0, 4), "%7\r\n");
  pid_t before = std::stoi(InfoField(&sub, "process_id"));
  ASSERT_EQ(sub.Call({"SUBSCRIBE", "big"}).substr(0, 4), ">3\r\n");
  auto payload = [](int i) {
    std::string p = std::to_string(i) + ":";
    p.resize(16 << 10, 'b');
    return p;
  };
  constexpr int kBefore = 1500;  // 24 MiB: under Redis's 32 MiB limit
  for (int i = 0; i < kBefore; ++i) {
    ASSERT_EQ(pub.Call({"PUBLISH", "big", payload(i)}), ":1\r\n");
  }
  s.Signal(SIGHUP);
  // The old worker is gone only when it has handed everything over (or
  // closed what it could not, at the drain's end).
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (kill(before, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_NE(kill(before, 0), 0) << "the old worker did not end: " << s.log();
  constexpr int kAfter = 100;
  for (int i = kBefore; i < kBefore + kAfter; ++i) {
    ASSERT_EQ(pub.Call({"PUBLISH", "big", payload(i)}), ":1\r\n");
  }
  for (int i = 0; i < kBefore + kAfter; ++i) {
    std::string r = sub.Reply();
    ASSERT_FALSE(r.empty()) << "lost the connection after " << i
                            << " messages: " << s.log();
    ASSERT_EQ(Payload(r), payload(i)) << "message " << i;
  }
  EXPECT_NE(std::stoi(InfoField(&sub, "process_id")), before);
  EXPECT_EQ(s.log().find("damaged"), std::string::npos) << s.log();
}

// A worker killed while it holds subscribers: the next worker of its
// place (or any worker) drops its registrations, and publishing counts
// only the live subscribers.
TEST(ShmkvPubSub, AKilledWorkersSubscribersAreForgotten) {
  Server s("pubsub_kill");
  ASSERT_TRUE(s.Start()) << s.log();
  auto groups = OnEachWorker(s.port(), 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* doomed = groups[0][0].get();
  Client* live = groups[1][0].get();
  ASSERT_EQ(doomed->Call({"SUBSCRIBE", "k"}).substr(0, 4), "*3\r\n");
  ASSERT_EQ(live->Call({"SUBSCRIBE", "k"}).substr(0, 4), "*3\r\n");
  Client* pub = groups[1][1].get();
  EXPECT_EQ(pub->Call({"PUBLISH", "k", "1"}), ":2\r\n");
  kill(std::stoi(InfoField(groups[0][1].get(), "process_id")), SIGKILL);
  EXPECT_TRUE(ClosedByServer(doomed));
  std::string n;
  for (int i = 0; i < 500; ++i) {
    n = pub->Call({"PUBLISH", "k", "2"});
    if (n == ":1\r\n") break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(n, ":1\r\n") << s.log();
  EXPECT_EQ(pub->Call({"PUBSUB", "NUMSUB", "k"}), "*2\r\n$1\r\nk\r\n:1\r\n");
}

}  // namespace
