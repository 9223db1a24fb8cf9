// Sorted sets in parts (server/commands/zset_tree.h): a tree of several
// levels grown, changed and shrunk against redis-server reply for reply,
// its parts accounted for, and damage to any of them answered.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "server/commands/kept_table.h"
#include "server/commands/packed.h"
#include "server/commands/zset_value.h"
#include "tests/support/command_harness.h"
#include "tests/support/diff_harness.h"
#include "tests/support/kill_worker.h"

namespace {

using shmkv::ValueType;
using shmkv_test::Client;
using shmkv_test::CommandHarness;
using shmkv_test::CommandLine;
using shmkv_test::RedisOracle;
using Cmd = std::vector<std::string>;

// The root of a sorted set in parts: {id, parts, buckets, nodes, top,
// free, height} (server/commands/zset_value.h).
struct Root {
  uint64_t w[7] = {};
  uint64_t id() const { return w[0]; }
  uint64_t nodes() const { return w[3]; }
  uint64_t height() const { return w[6]; }
};

bool ReadRoot(CommandHarness* h, const std::string& key, Root* r) {
  shmkv::Value v;
  if (!h->store()->Get(key, &v) || v.encoding != shmkv::cmd::kZSetTree ||
      v.bytes.size() != sizeof(r->w)) {
    return false;
  }
  std::memcpy(r->w, v.bytes.data(), sizeof(r->w));
  return true;
}

// The members of a ZSCAN walked to its end, and the calls it took.
std::set<std::string> ScanAll(CommandHarness* h, const std::string& key,
                              int* calls) {
  std::set<std::string> seen;
  std::string cursor = "0";
  *calls = 0;
  do {
    std::string r = h->Run({"ZSCAN", key, cursor, "COUNT", "50"});
    ++*calls;
    std::vector<std::string> parts;
    for (size_t at = 0; (at = r.find('$', at)) != std::string::npos;) {
      size_t end = r.find("\r\n", at);
      size_t len = std::stoul(r.substr(at + 1, end - at - 1));
      parts.push_back(r.substr(end + 2, len));
      at = end + 2 + len;
    }
    cursor = parts.at(0);
    for (size_t i = 1; i + 1 < parts.size(); i += 2) seen.insert(parts[i]);
  } while (cursor != "0" && *calls < 100000);
  return seen;
}

// A set of thousands grown, rewritten and cut down against Redis: every
// reply byte for byte (ZRANDMEMBER and ZSCAN by what they return), with
// the tree at three levels or more, cut down, its free nodes reused.
TEST(ZSetTreeVsRedis, LargeSetsReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("zsettree", 200000, 256ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  c.Call({"FLUSHALL"});
  std::mt19937_64 rng(44);
  const int spread = 9000;
  auto member = [&] { return "member:" + std::to_string(rng() % spread); };
  auto score = [&]() -> std::string {
    switch (rng() % 8) {
      case 0: return rng() % 2 ? "-inf" : "+inf";
      case 1: return std::to_string(static_cast<int>(rng() % 5));
      default: return std::to_string(static_cast<int>(rng() % 20000) - 10000);
    }
  };
  auto bound = [&] { return (rng() % 3 == 0 ? "(" : "") + score(); };
  auto same = [&](const Cmd& cmd, int step) {
    ASSERT_EQ(h.Run(cmd), c.Call(cmd))
        << "step " << step << ": " << CommandLine(cmd);
  };
  for (int i = 0; i < 60; ++i) {
    Cmd add = {"ZADD", "big"};
    for (int n = 0; n < 100; ++n) {
      add.push_back(score());
      add.push_back(member());
    }
    same(add, -1);
  }
  Root root;
  ASSERT_TRUE(ReadRoot(&h, "big", &root));
  EXPECT_GE(root.height(), 3u) << "the test reaches a tree of three levels";
  same({"OBJECT", "ENCODING", "big"}, -1);
  uint64_t most_nodes = root.nodes();
  for (int step = 0; step < 12000; ++step) {
    Cmd cmd;
    std::string at = std::to_string(static_cast<int>(rng() % 9000) - 4500);
    switch (rng() % 16) {
      case 0: case 1: case 2:
        cmd = {"ZADD", "big"};
        if (rng() % 5 == 0) cmd.push_back(rng() % 2 ? "GT" : "NX");
        if (rng() % 4 == 0) cmd.push_back("CH");
        for (int n = 1 + rng() % 12; n > 0; --n) {
          cmd.push_back(score());
          cmd.push_back(member());
        }
        break;
      case 3: cmd = {"ZINCRBY", "big", score(), member()}; break;
      case 4: cmd = {"ZREM", "big", member(), member(), member()}; break;
      case 5: cmd = {rng() % 2 ? "ZRANK" : "ZREVRANK", "big", member()}; break;
      case 6: cmd = {"ZSCORE", "big", member()}; break;
      case 7:
        cmd = {rng() % 2 ? "ZRANGE" : "ZREVRANGE", "big", at,
               std::to_string(std::stoi(at) + static_cast<int>(rng() % 12)),
               "WITHSCORES"};
        break;
      case 8:
        cmd = {"ZRANGEBYSCORE", "big", bound(), bound(), "WITHSCORES",
               "LIMIT", std::to_string(rng() % 40),
               std::to_string(static_cast<int>(rng() % 15) - 1)};
        break;
      case 9:
        cmd = {"ZREVRANGEBYSCORE", "big", bound(), bound(), "LIMIT",
               std::to_string(rng() % 40), "7"};
        break;
      case 10: cmd = {"ZCOUNT", "big", bound(), bound()}; break;
      case 11:
        cmd = {"ZREMRANGEBYRANK", "big", at,
               std::to_string(std::stoi(at) + static_cast<int>(rng() % 6))};
        break;
      case 12: {
        int lo = static_cast<int>(rng() % 20000) - 10000;
        cmd = {"ZREMRANGEBYSCORE", "big", std::to_string(lo),
               std::to_string(lo + static_cast<int>(rng() % 30))};
        break;
      }
      case 13:
        cmd = {rng() % 2 ? "ZPOPMIN" : "ZPOPMAX", "big",
               std::to_string(rng() % 6)};
        break;
      case 14: cmd = {"ZCARD", "big"}; break;
      default:
        cmd = {"ZRANGE", "big", bound(), bound(), "BYSCORE", "REV", "LIMIT",
               std::to_string(rng() % 10), "5"};
        std::swap(cmd[2], cmd[3]);
    }
    same(cmd, step);
    if (step % 2000 == 0) {
      ASSERT_TRUE(ReadRoot(&h, "big", &root)) << step;
      EXPECT_GE(root.height(), step < 6000 ? 3u : 1u) << step;
    }
    if (step == 6000) {
      // Cut to a few hundred: nodes empty, merge, and go to the free list.
      same({"ZREMRANGEBYRANK", "big", "150", "-150"}, step);
      ASSERT_TRUE(ReadRoot(&h, "big", &root));
      most_nodes = std::max(most_nodes, root.nodes());
    }
  }
  same({"ZRANGE", "big", "0", "-1", "WITHSCORES"}, -1);
  same({"ZCARD", "big"}, -1);
  ASSERT_TRUE(ReadRoot(&h, "big", &root));
  EXPECT_LE(root.nodes(), most_nodes + 8) << "freed nodes are reused";
  // A count past the size: the whole set, highest score first.
  same({"ZRANDMEMBER", "big", "100000", "WITHSCORES"}, -1);
  // ZRANDMEMBER picks members of the set, distinct for a positive count.
  std::string card = c.Call({"ZCARD", "big"});
  std::string picks = h.Run({"ZRANDMEMBER", "big", "20"});
  EXPECT_EQ(picks.substr(0, 4), "*20\r");
  picks = h.Run({"ZRANDMEMBER", "big", "-30", "WITHSCORES"});
  // (RESP3: 30 member/score pairs)
  EXPECT_EQ(picks.substr(0, 4),
            shmkv_test::TestProtocol() == 3 ? "*30\r" : "*60\r");
  // ZSCAN returns every member, in pages.
  int calls = 0;
  std::set<std::string> scanned = ScanAll(&h, "big", &calls);
  EXPECT_EQ(":" + std::to_string(scanned.size()) + "\r\n", card);
  EXPECT_GT(calls, 1);
  for (const std::string& m : scanned) {
    ASSERT_NE(h.Run({"ZSCORE", "big", m}), "$-1\r\n") << m;
  }
  // Every part leaves with the key.
  same({"ZUNIONSTORE", "copy", "1", "big"}, -1);
  same({"COPY", "big", "copy2"}, -1);
  same({"ZRANGE", "copy2", "0", "-1", "WITHSCORES"}, -1);
  same({"DEL", "big", "copy", "copy2"}, -1);
  for (int i = 0; i < 100; ++i) h.store()->Sweep(1 << 20);
  EXPECT_EQ(h.store()->Parts(), 0u);
}

// ZADDs members m0 .. m<n-1> to `key`, member k with score k * step, in
// ZADDs of 100.
void AddMembers(CommandHarness* h, const std::string& key, int n,
                int step = 1) {
  for (int i = 0; i < n; i += 100) {
    Cmd add = {"ZADD", key};
    for (int k = i; k < i + 100 && k < n; ++k) {
      add.push_back(std::to_string(k * step));
      add.push_back("m" + std::to_string(k));
    }
    ASSERT_EQ(h->Run(add), ":" + std::to_string(add.size() / 2 - 1) +
                               "\r\n");
  }
}

// A set drained from one end loses its emptied nodes and then its
// levels: a tree of four levels ends one leaf or two, and ZRANK still
// counts right on the way down.
TEST(ZSetTree, DrainedSetsLoseTheirLevels) {
  CommandHarness h("zsettreedrain", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  const int n = 6000;
  AddMembers(&h, "d", n);
  Root root;
  ASSERT_TRUE(ReadRoot(&h, "d", &root));
  uint64_t tall = root.height();
  EXPECT_GE(tall, 3u);
  for (int i = 0; i < n - 10; ++i) {
    ASSERT_EQ(h.Run({"ZREM", "d", "m" + std::to_string(i)}), ":1\r\n") << i;
    if (i % 500 == 0) {
      std::string last = "m" + std::to_string(n - 1);
      ASSERT_EQ(h.Run({"ZRANK", "d", last}),
                ":" + std::to_string(n - 2 - i) + "\r\n");
    }
  }
  ASSERT_TRUE(ReadRoot(&h, "d", &root));
  EXPECT_LE(root.height(), 2u) << "from " << tall;
  EXPECT_EQ(h.Run({"ZRANGE", "d", "0", "0"}), "*1\r\n$5\r\nm5990\r\n");
  EXPECT_EQ(h.Run({"ZCARD", "d"}), ":10\r\n");
}

// The members and scores ZRANGE WITHSCORES lists, in its order.
std::vector<std::pair<std::string, std::string>> Listed(const std::string& r) {
  std::vector<std::string> parts;
  for (size_t at = 0; (at = r.find('$', at)) != std::string::npos;) {
    size_t end = r.find("\r\n", at);
    size_t len = std::stoul(r.substr(at + 1, end - at - 1));
    parts.push_back(r.substr(end + 2, len));
    at = end + 2 + len;
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i + 1 < parts.size(); i += 2) {
    out.emplace_back(parts[i], parts[i + 1]);
  }
  return out;
}

// Workers SIGKILLed anywhere while they move members of a large sorted
// set between two of them (ZADD to one and ZREM from the other in one
// MULTI), rescore and trim: after each kill the two sets still hold the
// moved members exactly once between them, each set's ZCARD, ZRANGE,
// ZSCORE and ZRANK agree, and no part is left over once they go.
TEST(ZSetTree, KilledWorkersNeverShowHalfAChange) {
  CommandHarness h("zsettreekill", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  constexpr int kMoving = 400;
  for (int i = 0; i < 3000; i += 100) {
    Cmd add = {"ZADD", "a"};
    for (int k = i; k < i + 100; ++k) {
      add.push_back(std::to_string(k % 97));
      add.push_back((k < kMoving ? "mv" : "fill") + std::to_string(k));
    }
    ASSERT_EQ(h.Run(add), ":100\r\n");
  }
  std::mt19937_64 rng(7);
  bool moved_any = false;
  for (int round = 0; round < 12; ++round) {
    ASSERT_TRUE(shmkv_test::KillAWorker(
        &h, round * 7919 + 3, 30 + rng() % 150,
        [&](shmkv_test::CommandWorker& w, std::mt19937_64& r) {
          std::string m = "mv" + std::to_string(r() % kMoving);
          std::string score = std::to_string(r() % 5000);
          bool to_b = r() % 2;
          const char* from = to_b ? "a" : "b";
          const char* to = to_b ? "b" : "a";
          switch (r() % 4) {
            case 0: case 1:
              // Moved only from where it is: the MULTI is all or nothing.
              if (w.Run({"ZSCORE", from, m}) == "$-1\r\n") break;
              w.Run({"MULTI"});
              w.Run({"ZREM", from, m});
              w.Run({"ZADD", to, score, m});
              if (w.Run({"EXEC"}).rfind("*2\r\n", 0) != 0) _exit(91);
              break;
            case 2:
              w.Run({"ZADD", "a", "XX", score, "fill" + std::to_string(
                                                    kMoving + r() % 2600)});
              break;
            default: {
              // Scores no moving member has.
              std::string high = std::to_string(10000 + r() % 3000);
              w.Run({"ZADD", "a", high, "extra" + std::to_string(r() % 3000)});
              w.Run({"ZREMRANGEBYSCORE", "a", high, high});
            }
          }
        }));
    std::set<std::string> moving;
    for (const char* key : {"a", "b"}) {
      auto all = Listed(h.Run({"ZRANGE", key, "0", "-1", "WITHSCORES"}));
      ASSERT_EQ(h.Run({"ZCARD", key}),
                ":" + std::to_string(all.size()) + "\r\n") << key;
      for (size_t i = 0; i < all.size(); ++i) {
        const auto& [member, score] = all[i];
        if (member.rfind("mv", 0) == 0) {
          ASSERT_TRUE(moving.insert(member).second) << member << " twice";
        }
        if (i % 37 == 0) {
          ASSERT_EQ(h.Run({"ZSCORE", key, member}),
                    "$" + std::to_string(score.size()) + "\r\n" + score +
                        "\r\n");
          ASSERT_EQ(h.Run({"ZRANK", key, member}),
                    ":" + std::to_string(i) + "\r\n");
        }
      }
    }
    ASSERT_EQ(moving.size(), static_cast<size_t>(kMoving)) << round;
    moved_any = moved_any || h.Run({"EXISTS", "b"}) == ":1\r\n";
  }
  EXPECT_TRUE(moved_any);
  h.Run({"DEL", "a", "b"});
  for (int i = 0; i < 100; ++i) h.store()->Sweep(1 << 20);
  EXPECT_EQ(h.store()->Parts(), 0u);
}

// Inner nodes are kept parsed by each process while their parts' stamps
// hold (zset_tree.cc): a second store on the same segments (as another
// worker is) rescores, adds and removes members of a tree of three
// levels, and every answer of the first, whose kept nodes its own reads
// warmed, follows each change at once. Its own writes (a transaction's
// view) do too.
TEST(ZSetTree, KeptNodesFollowEveryWrite) {
  CommandHarness h("zsettreekept", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  shmkv_test::CommandWorker other(h.config());
  ASSERT_TRUE(other.ok());
  // The model: score -> member, both unique; score i * 10 at first.
  std::map<int, std::string> model;
  std::map<std::string, int> score_of;
  AddMembers(&h, "k", 6000, 10);
  for (int k = 0; k < 6000; ++k) {
    model[k * 10] = "m" + std::to_string(k);
    score_of["m" + std::to_string(k)] = k * 10;
  }
  Root root;
  ASSERT_TRUE(ReadRoot(&h, "k", &root));
  ASSERT_GE(root.height(), 3u);
  auto rank_of = [&](const std::string& m) {
    return std::distance(model.begin(), model.find(score_of[m]));
  };
  std::mt19937_64 rng(11);
  for (int step = 0; step < 3000; ++step) {
    // A member to move (one of the model's) and an unused score.
    auto pick = std::next(model.begin(),
                          static_cast<long>(rng() % model.size()));
    std::string m = pick->second;
    int to = 0;
    do {
      to = static_cast<int>(rng() % 120000) - 30000;
    } while (model.count(to) != 0);
    bool mine = step % 5 == 0;
    Cmd write;
    if (step % 7 == 3 && model.size() > 1000) {
      write = {"ZREM", "k", m};
      model.erase(score_of[m]);
      score_of.erase(m);
    } else {
      if (step % 7 == 5) m = "n" + std::to_string(step);  // a new one
      write = {"ZADD", "k", std::to_string(to), m};
      if (score_of.count(m) != 0) model.erase(score_of[m]);
      model[to] = m;
      score_of[m] = to;
    }
    std::string got = mine ? h.Run(write) : other.Run(write);
    ASSERT_EQ(got[0], ':') << got;
    // The first store's answers, through the nodes it keeps.
    auto probe = std::next(model.begin(),
                           static_cast<long>(rng() % model.size()));
    ASSERT_EQ(h.Run({"ZRANK", "k", probe->second}),
              ":" + std::to_string(rank_of(probe->second)) + "\r\n")
        << "step " << step;
    if (score_of.count(m) != 0) {
      ASSERT_EQ(h.Run({"ZRANK", "k", m}),
                ":" + std::to_string(rank_of(m)) + "\r\n")
          << "step " << step;
    }
    long r = static_cast<long>(rng() % model.size());
    std::string at = std::next(model.begin(), r)->second;
    ASSERT_EQ(h.Run({"ZRANGE", "k", std::to_string(r), std::to_string(r)}),
              "*1\r\n$" + std::to_string(at.size()) + "\r\n" + at +
                  "\r\n")
        << "step " << step;
    ASSERT_EQ(h.Run({"ZCOUNT", "k", "-inf", std::to_string(probe->first)}),
              ":" + std::to_string(rank_of(probe->second) + 1) + "\r\n")
        << "step " << step;
  }
  ASSERT_EQ(h.Run({"ZCARD", "k"}), ":" + std::to_string(model.size()) +
                                       "\r\n");
}

// The same while the other store runs in its own process, at once: it
// moves members (the count stays) as fast as it can while this one asks
// for ranks and ranges from the nodes it keeps. A kept node out of date
// would disagree with a child read fresh (the damaged-value error) or
// with the counts: the last member's rank is always the count less one.
// The table under the kept nodes and heads: a replaced entry's cost is
// given back, an entry past the bound empties the table first, one larger
// than the bound is refused, and a taken entry outlives its removal.
TEST(KeptTable, CountsReplacesAndStartsAgainWhenFull) {
  using Table = shmkv::cmd::KeptTable<std::string>;
  Table t(100);
  auto v = [](const char* s) { return std::make_shared<std::string>(s); };
  EXPECT_TRUE(t.Put({1, 2, 3}, v("a"), 40));
  EXPECT_TRUE(t.Put({1, 2, 4}, v("b"), 40));
  EXPECT_EQ(t.bytes(), 80u);
  // Another store, collection or item is another entry.
  EXPECT_EQ(t.Find({2, 2, 3}), nullptr);
  EXPECT_EQ(t.Find({1, 3, 3}), nullptr);
  ASSERT_NE(t.Find({1, 2, 3}), nullptr);
  EXPECT_EQ(*t.Find({1, 2, 3}), "a");
  // Replaced: its old cost is given back (40 + 50 fits; 80 + 50 would not).
  std::shared_ptr<std::string> held = t.Find({1, 2, 4});
  EXPECT_TRUE(t.Put({1, 2, 4}, v("c"), 50));
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.bytes(), 90u);
  EXPECT_EQ(*t.Find({1, 2, 4}), "c");
  EXPECT_EQ(*held, "b");
  // Past the bound: the table starts again with the new entry alone.
  EXPECT_TRUE(t.Put({1, 2, 5}, v("d"), 20));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.bytes(), 20u);
  EXPECT_EQ(t.Find({1, 2, 3}), nullptr);
  EXPECT_EQ(*t.Find({1, 2, 5}), "d");
  // Larger than the bound: not kept, and nothing else lost.
  EXPECT_FALSE(t.Put({1, 2, 6}, v("e"), 101));
  EXPECT_EQ(t.Find({1, 2, 6}), nullptr);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.bytes(), 20u);
  t.Clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.bytes(), 0u);
}

TEST(ZSetTree, KeptNodesHoldWhileAnotherProcessWrites) {
  CommandHarness h("zsettreekeptproc", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  constexpr int kMembers = 6000;
  AddMembers(&h, "k", kMembers);
  ASSERT_EQ(h.Run({"ZADD", "k", "1e9", "last"}), ":1\r\n");
  const std::string n = std::to_string(kMembers + 1);
  const std::string last_rank = ":" + std::to_string(kMembers) + "\r\n";
  pid_t pid = fork();
  if (pid == 0) {
    shmkv_test::CommandWorker w(h.config());
    if (!w.ok()) _exit(90);
    std::mt19937_64 rng(getpid());
    for (;;) {
      std::string m = "m" + std::to_string(rng() % kMembers);
      if (w.Run({"ZADD", "k", std::to_string(rng() % 1000000), m}) !=
          ":0\r\n") {
        _exit(91);
      }
    }
  }
  ASSERT_GT(pid, 0);
  std::mt19937_64 rng(5);
  int reads = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(h.Run({"ZRANK", "k", "last"}), last_rank) << reads;
    ASSERT_EQ(h.Run({"ZRANGE", "k", "-1", "-1"}), "*1\r\n$4\r\nlast\r\n")
        << reads;
    ASSERT_EQ(h.Run({"ZCOUNT", "k", "-inf", "+inf"}), ":" + n + "\r\n");
    std::string r =
        h.Run({"ZRANK", "k", "m" + std::to_string(rng() % kMembers)});
    ASSERT_EQ(r[0], ':') << r;
    ASSERT_LT(std::stol(r.substr(1)), kMembers) << r;
    ++reads;
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the writer stopped";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_GT(reads, 10);
}

// A change to a set in parts that leaves its root as it was (a score
// moved within one leaf) is a change to the key for WATCH; so is an
// expiry, and the expired set's parts go with it.
TEST(ZSetTree, WatchSeesAChangeBelowTheRoot) {
  CommandHarness h("zsettreewatch", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  for (int i = 0; i < 600; ++i) {
    ASSERT_EQ(h.Run({"ZADD", "w", std::to_string(i * 10), "m" + std::to_string(i)}),
              ":1\r\n");
  }
  Root before, after;
  ASSERT_TRUE(ReadRoot(&h, "w", &before));
  CommandHarness::Client other = h.NewClient();
  EXPECT_EQ(h.Run({"WATCH", "w"}), "+OK\r\n");
  EXPECT_EQ(h.RunAs(&other, {"ZADD", "w", "3001", "m300"}), ":0\r\n");
  ASSERT_TRUE(ReadRoot(&h, "w", &after));
  EXPECT_EQ(std::memcmp(before.w, after.w, sizeof(before.w)), 0)
      << "the root did not change";
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"ZADD", "w", "1", "mine"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}), "*-1\r\n");
  EXPECT_EQ(h.Run({"ZSCORE", "w", "mine"}), "$-1\r\n");
  EXPECT_EQ(h.Run({"ZSCORE", "w", "m300"}), "$4\r\n3001\r\n");
  EXPECT_EQ(h.Run({"PEXPIRE", "w", "1"}), ":1\r\n");
  usleep(5000);
  EXPECT_EQ(h.Run({"ZCARD", "w"}), ":0\r\n");
  for (int i = 0; i < 100; ++i) h.store()->Sweep(1 << 20);
  EXPECT_EQ(h.store()->Parts(), 0u);
}

// A large sorted set as the build before parts wrote it (one packed
// blob, encoding skiplist) reads as it is, and its first write makes it a
// tree: a hot upgrade keeps every member, its TTL included.
TEST(ZSetTree, APackedSetFromAnEarlierBuildBecomesATree) {
  CommandHarness h("zsettreeold", 20000, 64ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  std::vector<std::string> words;
  for (int i = 0; i < 300; ++i) {
    double score = i / 2;  // ties, ordered by member
    words.push_back("m" + std::to_string(1000 + i));
    words.emplace_back(reinterpret_cast<const char*>(&score), sizeof(score));
  }
  std::vector<std::string_view> views(words.begin(), words.end());
  std::string bytes;
  shmkv::Pack(views, &bytes);
  ASSERT_TRUE(h.WriteTyped("old", shmkv::ValueType::kZSet, bytes,
                           shmkv::cmd::kZSetSkiplist,
                           shmkv::NowMs() + 100000));
  EXPECT_EQ(h.Run({"ZCARD", "old"}), ":300\r\n");
  EXPECT_EQ(h.Run({"ZRANK", "old", "m1299"}), ":299\r\n");
  EXPECT_EQ(h.Run({"OBJECT", "ENCODING", "old"}), "$8\r\nskiplist\r\n");
  std::string before = h.Run({"ZRANGE", "old", "0", "-1", "WITHSCORES"});
  EXPECT_EQ(h.Run({"ZADD", "old", "-1", "first"}), ":1\r\n");
  Root root;
  ASSERT_TRUE(ReadRoot(&h, "old", &root)) << "a tree now";
  EXPECT_EQ(h.Run({"ZREM", "old", "first"}), ":1\r\n");
  EXPECT_EQ(h.Run({"ZRANGE", "old", "0", "-1", "WITHSCORES"}), before);
  EXPECT_EQ(h.Run({"ZSCORE", "old", "m1001"}), "$1\r\n0\r\n");
  std::string ttl = h.Run({"TTL", "old"});
  EXPECT_TRUE(ttl == ":100\r\n" || ttl == ":99\r\n") << ttl;
}

// Members of one score, ordered by their bytes: the lex commands over a
// tree of several levels, against Redis.
TEST(ZSetTreeVsRedis, LexRangesOverATree) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  CommandHarness h("zsettreelex", 100000, 128ULL << 20);
  ASSERT_TRUE(h.ok()) << h.error();
  Client c(redis.port());
  c.Call({"FLUSHALL"});
  std::mt19937_64 rng(45);
  auto word = [&] {
    std::string w;
    for (int n = 1 + rng() % 4; n > 0; --n) w += static_cast<char>('a' + rng() % 6);
    return w;
  };
  auto bound = [&]() -> std::string {
    switch (rng() % 8) {
      case 0: return "-";
      case 1: return "+";
      default: return (rng() % 2 ? "[" : "(") + word();
    }
  };
  for (int i = 0; i < 40; ++i) {
    Cmd add = {"ZADD", "lex"};
    for (int n = 0; n < 100; ++n) {
      add.push_back("0");
      add.push_back(word() + std::to_string(rng() % 100));
    }
    ASSERT_EQ(h.Run(add), c.Call(add));
  }
  Root root;
  ASSERT_TRUE(ReadRoot(&h, "lex", &root));
  EXPECT_GE(root.height(), 2u);
  for (int step = 0; step < 3000; ++step) {
    Cmd cmd;
    switch (rng() % 5) {
      case 0:
        cmd = {"ZRANGEBYLEX", "lex", bound(), bound(), "LIMIT",
               std::to_string(rng() % 20), std::to_string(rng() % 9)};
        break;
      case 1: cmd = {"ZREVRANGEBYLEX", "lex", bound(), bound()}; break;
      case 2: cmd = {"ZLEXCOUNT", "lex", bound(), bound()}; break;
      case 3:
        cmd = {"ZADD", "lex", "0", word() + std::to_string(rng() % 100)};
        break;
      default: cmd = {"ZREMRANGEBYLEX", "lex", bound(), bound()};
    }
    // A wide removal would empty the set: keep those narrow.
    if (cmd[0] == "ZREMRANGEBYLEX" && (cmd[2] == "-" || cmd[3] == "+")) {
      continue;
    }
    ASSERT_EQ(h.Run(cmd), c.Call(cmd)) << step << ": " << CommandLine(cmd);
  }
  Cmd all = {"ZRANGE", "lex", "0", "-1"};
  EXPECT_EQ(h.Run(all), c.Call(all));
}

}  // namespace
