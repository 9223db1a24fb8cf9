// Crash safety of ShmHashMap over ShmExtentTable: a writer SIGKILLed at
// any point of a write leaves a map that the next writer recovers (the
// intent record, then a rebuild of the free lists from the extents), with
// no leaked extent, no wrong counter, and no value that is not whole.
//
// Its own translation unit with the test hooks compiled in
// (SHMC_CRASH_POINT), so that kill points can be chosen exactly.
#define SHMC_TEST_HOOKS 1

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace {

using Map = shmc::ShmHashMap<uint64_t, shmc::POSIX,
                             shmc::ShmExtentTable<shmc::POSIX>>;
using shmc_test::MakeValue;
using shmc_test::ValidValue;

struct MapSegments : shmc_test::MapSegments {
  MapSegments() : shmc_test::MapSegments("crashext") {}
};

void ExpectHealthy(Map* m) {
  Map::HealthStat hs;
  ASSERT_TRUE(m->HealthCheck(&hs, false));
  EXPECT_EQ(hs.bad_key_values, 0u);
  EXPECT_EQ(hs.leaked_values, 0u);
  EXPECT_EQ(hs.lt_stat.broken_at, 0u);
  EXPECT_EQ(hs.lt_stat.bad_free_list, 0u);
  EXPECT_EQ(hs.lt_stat.counter_mismatches, 0u);
  EXPECT_EQ(hs.total_key_values, m->size());
}

int g_kill_id = 0;
int g_kill_at = 0;
int g_hits = 0;
void KillHook(int id) {
  if (id == g_kill_id && ++g_hits == g_kill_at) raise(SIGKILL);
}

enum class Op { kInsert, kReplace, kErase };

constexpr size_t kKeys = 100, kBytes = 64, kNodes = 400;  // 25,600 bytes

int RunWriterToKill(const std::string& base, int id, int at,
                    const std::function<bool(Map&)>& op) {
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    Map m;
    if (!m.InitForWrite(base, kKeys, kBytes, kNodes)) _exit(3);
    g_kill_id = id;
    g_kill_at = at;
    shmc::detail::CrashHook() = KillHook;
    _exit(op(m) ? 0 : 4);
  }
  int status = 0;
  return waitpid(child, &status, 0) == child ? status : -1;
}

// Every kill point of every operation, at its first two passes, with the
// new value taken each way a write takes one: an exact free extent, a
// larger one split, and the top.
TEST(ExtentMapCrash, EveryKillPointRecovers) {
  const std::string v0 = MakeValue(1, 0, 300);
  const std::string v1 = MakeValue(1, 1, 500);
  const std::string v2 = MakeValue(2, 1, 500);
  // 30 intent recorded, 31 extent placed, 32 value tagged, 33 published,
  // 34 old value freed, 35 erase committed; inside a free: 36 the free
  // extent above unlinked, 37 the one below, 38 the top lowered over the
  // freed space; 39 a free extent listed, its footer and mark not yet
  // written (a split's rest, a freed value's merged space).
  const std::map<Op, std::set<int>> expected = {
      {Op::kInsert, {30, 31, 32, 33, 34, 39}},
      {Op::kReplace, {30, 31, 32, 33, 34, 36, 37, 39}},
      {Op::kErase, {35, 36, 37, 38, 39}}};
  std::map<Op, std::set<int>> reached;
  for (int free_shape = 0; free_shape < 5; ++free_shape) {
    for (Op op : {Op::kInsert, Op::kReplace, Op::kErase}) {
      for (int id = 30; id <= 39; ++id) {
        for (int at = 1; at <= 2; ++at) {
          MapSegments seg;
          {
            Map m;
            ASSERT_TRUE(m.InitForWrite(seg.base, kKeys, kBytes, kNodes));
            // 3: key 1's value between two free extents (a free merges
            // both); 4: key 1's value last, a free extent below it.
            if (free_shape == 4) {
              ASSERT_TRUE(m.Insert(3, MakeValue(3, 0, 100)));
            }
            if (free_shape >= 3) {
              ASSERT_TRUE(m.Insert(8, MakeValue(8, 0, 50)));
            }
            ASSERT_TRUE(m.Insert(1, v0));
            if (free_shape == 3) {
              ASSERT_TRUE(m.Insert(9, MakeValue(9, 0, 60)));
            }
            if (free_shape != 4) {
              ASSERT_TRUE(m.Insert(3, MakeValue(3, 0, 100)));
            }
            if (free_shape >= 3) {
              ASSERT_TRUE(m.Erase(8));
            }
            if (free_shape == 3) {
              ASSERT_TRUE(m.Erase(9));
            }
            // 0: nothing free; 1: a free extent of 500 bytes' size;
            // 2: a free extent of 4,000 bytes (split).
            if (free_shape == 1 || free_shape == 2) {
              ASSERT_TRUE(m.Insert(9, MakeValue(9, 0,
                                                free_shape == 1 ? 500 : 4000)));
              ASSERT_TRUE(m.Insert(10, MakeValue(10, 0, 10)));
              ASSERT_TRUE(m.Erase(9));
            }
          }
          int status = RunWriterToKill(seg.base, id, at, [&](Map& w) {
            return op == Op::kInsert    ? w.Insert(2, v2)
                   : op == Op::kReplace ? w.Replace(1, v1)
                                        : w.Erase(1);
          });
          ASSERT_NE(status, -1);
          bool was_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
          ASSERT_TRUE(was_killed ||
                      (WIFEXITED(status) && WEXITSTATUS(status) == 0))
              << "op " << static_cast<int>(op) << " point " << id;
          if (was_killed && at == 1) reached[op].insert(id);
          shmc_test::LogCapture log;
          Map m;
          ASSERT_TRUE(m.InitForWrite(seg.base, kKeys, kBytes, kNodes))
              << m.last_error().message;
          SCOPED_TRACE("shape " + std::to_string(free_shape) + " op " +
                       std::to_string(static_cast<int>(op)) + " point " +
                       std::to_string(id) + " hit " + std::to_string(at));
          ExpectHealthy(&m);
          std::string out;
          if (op == Op::kInsert) {
            if (m.Find(2, &out)) {
              EXPECT_EQ(out, v2);
            }
          } else if (op == Op::kReplace) {
            ASSERT_TRUE(m.Find(1, &out));
            EXPECT_TRUE(out == v0 || out == v1);
          } else if (m.Find(1, &out)) {
            EXPECT_EQ(out, v0);
          }
          ASSERT_TRUE(m.Find(3, &out));
          EXPECT_EQ(out, MakeValue(3, 0, 100));
          // Every granule is a value's or free: nothing was lost.
          const auto& p = m.link_table();
          Map::HealthStat hs;
          ASSERT_TRUE(m.HealthCheck(&hs, false));
          EXPECT_EQ(hs.lt_stat.total_free_nodes + [&] {
                      size_t used = 0;
                      p.Travel([&](shmc::link_buf_t lb) {
                        uint32_t len = 0;
                        ASSERT_TRUE(p.HeadLength(lb, &len));
                        used += shmc::ShmExtentTable<shmc::POSIX>::NodesFor(len);
                      });
                      return used;
                    }(),
                    p.used_nodes());
          ASSERT_TRUE(m.Replace(1, v1));
          ASSERT_TRUE(m.Replace(2, v2));
          ExpectHealthy(&m);
        }
      }
    }
  }
  EXPECT_EQ(reached, expected) << "every kill point must be reached";
}

// Writers that share the map (kSharedWriters, serialized by the program)
// never take a dead writer's lease over, so the survivor runs Recover()
// itself: the map is whole again, and was not before.
TEST(ExtentMapCrash, SharedWritersRecoverExplicitly) {
  const std::string v0 = MakeValue(1, 0, 300);
  const std::string v1 = MakeValue(1, 1, 500);
  for (int id : {31, 32, 33}) {
    SCOPED_TRACE("kill point " + std::to_string(id));
    MapSegments seg;
    auto shared = std::make_unique<shmc_test::ScopedCreateFlags>(
        shmc::kCreateIfNotExist | shmc::kSharedWriters);
    Map m;
    ASSERT_TRUE(m.InitForWrite(seg.base, kKeys, kBytes, kNodes));
    ASSERT_TRUE(m.Insert(1, v0));
    int status = RunWriterToKill(seg.base, id, 1,
                                 [&](Map& w) { return w.Replace(1, v1); });
    ASSERT_NE(status, -1);
    shared.reset();
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer must die mid-write";
    Map::HealthStat before;
    ASSERT_TRUE(m.HealthCheck(&before, false));
    EXPECT_GT(before.lt_stat.bad_free_list +
                  before.lt_stat.counter_mismatches + before.leaked_values,
              0u) << "a half-done write is visible before recovery";
    m.Recover();
    ExpectHealthy(&m);
    std::string out;
    ASSERT_TRUE(m.Find(1, &out));
    EXPECT_TRUE(out == v0 || out == v1);
    m.Recover();  // nothing pending: a no-op
    ExpectHealthy(&m);
  }
}

struct Shared {
  std::atomic<int> stop;
  std::atomic<uint64_t> reads;
};

// A writer doing random Replace/Erase is SIGKILLed at random moments, over
// and over, while a reader process validates everything it reads.
TEST(ExtentMapCrash, RandomKillsWhileReading) {
  constexpr int kKills = 400;
  constexpr uint64_t kKeys = 300;
  MapSegments seg;
  {
    Map m;
    ASSERT_TRUE(m.InitForWrite(seg.base, kKeys * 2, 64, 40000));
    for (uint64_t k = 1; k <= kKeys; ++k) {
      ASSERT_TRUE(m.Replace(k, MakeValue(k, 0, 16 + k % 800)));
    }
  }
  auto* shared = static_cast<Shared*>(mmap(nullptr, sizeof(Shared),
                                           PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  shared->stop.store(0);
  shared->reads.store(0);
  pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    Map r;
    if (!r.InitForRead(seg.base)) _exit(10);
    std::string v;
    std::mt19937_64 rng(getpid());
    while (shared->stop.load() == 0) {
      uint64_t k = rng() % kKeys + 1;
      if (r.Find(k, &v)) {
        if (!ValidValue(k, v, nullptr)) _exit(11);  // torn or mixed
        shared->reads.fetch_add(1, std::memory_order_relaxed);
      }
    }
    _exit(0);
  }
  std::mt19937_64 rng(42);
  int refused = 0;
  for (int cycle = 0; cycle < kKills; ++cycle) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t writer = fork();
    ASSERT_GE(writer, 0);
    if (writer == 0) {
      close(ready[0]);
      Map m;
      if (!m.InitForWrite(seg.base, kKeys * 2, 64, 40000)) _exit(20);
      (void)!write(ready[1], "r", 1);
      std::mt19937_64 wr(static_cast<uint64_t>(cycle) * 7919 + 1);
      for (uint64_t ver = 1;; ++ver) {
        uint64_t k = wr() % kKeys + 1;
        if (wr() % 5 == 0) {
          m.Erase(k);
        } else {
          m.Replace(k, MakeValue(k, static_cast<uint64_t>(cycle) << 32 | ver,
                                 16 + wr() % 885));
        }
      }
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1) << "writer " << cycle
                                        << " could not take over the lease";
    close(ready[0]);
    {
      Map second;  // a second live writer is refused, every time
      if (!second.InitForWrite(seg.base, kKeys * 2, 64, 40000) &&
          second.last_error().code == shmc::ErrorCode::kWriterBusy) {
        ++refused;
      }
    }
    usleep(static_cast<useconds_t>(rng() % 3000));
    kill(writer, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(writer, &status, 0), writer);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited: " << status;
    if (cycle % 100 == 99) {
      Map m;
      ASSERT_TRUE(m.InitForWrite(seg.base, kKeys * 2, 64, 40000));
      SCOPED_TRACE("after cycle " + std::to_string(cycle));
      ExpectHealthy(&m);
    }
  }
  EXPECT_EQ(refused, kKills);
  shared->stop.store(1);
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "11: the reader saw a torn value";
  EXPECT_GT(shared->reads.load(), 1000u);
  Map m;
  ASSERT_TRUE(m.InitForWrite(seg.base, kKeys * 2, 64, 40000));
  ExpectHealthy(&m);
  size_t whole = 0;
  m.Travel([&](const uint64_t& k, const std::string& v) {
    EXPECT_TRUE(ValidValue(k, v, nullptr)) << k;
    ++whole;
  });
  EXPECT_EQ(whole, m.size());
  std::printf("kills %d, reader reads %llu, keys %zu\n", kKills,
              static_cast<unsigned long long>(shared->reads.load()), m.size());
  munmap(shared, sizeof(Shared));
}

}  // namespace
