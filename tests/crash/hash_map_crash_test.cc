// Crash safety of ShmHashMap: a writer SIGKILLed at any instruction leaves a
// map that the next writer recovers in O(1) (intent record), with no leaked
// node, no wrong counter, and no value that is not whole.
//
// This program is its own translation unit with the test hooks compiled in
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
#include <set>
#include <random>
#include <string>

#include "shmc/shm_hash_map.h"
#include "tests/crash/map_crash_cases.h"
#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace {

using Map = shmc::ShmHashMap<uint64_t, shmc::POSIX>;
using shmc_test::MakeValue;
using shmc_test::ValidValue;

// The map's segments, named for this file's tests.
struct MapSegments : shmc_test::MapSegments {
  MapSegments() : shmc_test::MapSegments("crashmap") {}
};

// Checks the invariants a recovered map must satisfy.
void ExpectHealthy(Map* m) {
  Map::HealthStat hs;
  ASSERT_TRUE(m->HealthCheck(&hs, false));
  EXPECT_EQ(hs.bad_key_values, 0u);
  EXPECT_EQ(hs.leaked_values, 0u);
  EXPECT_EQ(hs.lt_stat.leaked_nodes, 0u);
  EXPECT_EQ(hs.lt_stat.bad_linked_link_bufs, 0u);
  EXPECT_EQ(hs.lt_stat.too_long_link_bufs, 0u);
  EXPECT_EQ(hs.lt_stat.too_short_link_bufs, 0u);
  EXPECT_EQ(hs.lt_stat.bad_free_list, 0u);
  EXPECT_EQ(hs.lt_stat.counter_mismatches, 0u);
  EXPECT_EQ(hs.total_key_values, m->size());
}

enum class Op { kInsert, kReplace, kErase };

// The map as each writer of these tests attaches it.
bool Attach(Map& m, const std::string& base) {
  return m.InitForWrite(base, 100, 64, 200);
}

int RunWriterToKill(const std::string& base, int id, int at,
                    const std::function<bool(Map&)>& op) {
  return shmc_test::RunWriterToKill<Map>(base, id, at, Attach, op);
}

// Every kill point of every operation, at its first three occurrences.
TEST(HashMapCrash, EveryKillPointRecovers) {
  const std::string v0 = MakeValue(1, 0, 300);  // 5 nodes of 64 bytes
  const std::string v1 = MakeValue(1, 1, 500);  // 8 nodes
  const std::string v2 = MakeValue(2, 1, 500);
  // Kill points each operation passes through (detail/link_layout.h and
  // shm_link_table.h): 1 intent, 2 per node filled, 3 cut recorded, 4 free
  // list advanced, 5 chain detached, 6-8 freeing, 9 counters, 10 published,
  // 11 erase committed.
  const std::map<Op, std::set<int>> expected = {
      {Op::kInsert, {1, 2, 3, 4, 5, 9, 10}},
      {Op::kReplace, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
      {Op::kErase, {1, 6, 7, 8, 9, 11}}};
  std::map<Op, std::set<int>> reached;
  for (Op op : {Op::kInsert, Op::kReplace, Op::kErase}) {
    for (int id = 1; id <= 11; ++id) {
      for (int at = 1; at <= 3; ++at) {
        MapSegments seg;
        {
          Map m;
          ASSERT_TRUE(m.InitForWrite(seg.base, 100, 64, 200));
          ASSERT_TRUE(m.Insert(1, v0));
          ASSERT_TRUE(m.Insert(3, MakeValue(3, 0, 100)));
        }
        int status = RunWriterToKill(seg.base, id, at, [&](Map& w) {
          return op == Op::kInsert    ? w.Insert(2, v2)
                 : op == Op::kReplace ? w.Replace(1, v1)
                                      : w.Erase(1);
        });
        ASSERT_NE(status, -1);
        bool was_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        ASSERT_TRUE(was_killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
            << "op " << static_cast<int>(op) << " point " << id;
        if (was_killed && at == 1) reached[op].insert(id);
        shmc_test::LogCapture log;
        Map m;
        ASSERT_TRUE(m.InitForWrite(seg.base, 100, 64, 200))
            << m.last_error().message;
        SCOPED_TRACE("op " + std::to_string(static_cast<int>(op)) +
                     " point " + std::to_string(id) + " hit " +
                     std::to_string(at));
        ExpectHealthy(&m);
        std::string out;
        if (op == Op::kInsert) {
          if (m.Find(2, &out)) {
            EXPECT_EQ(out, v2);
          }
          EXPECT_EQ(m.size(), m.Find(2, &out) ? 3u : 2u);
        } else if (op == Op::kReplace) {
          ASSERT_TRUE(m.Find(1, &out));
          EXPECT_TRUE(out == v0 || out == v1);
        } else if (m.Find(1, &out)) {
          EXPECT_EQ(out, v0);
        }
        ASSERT_TRUE(m.Find(3, &out));
        EXPECT_EQ(out, MakeValue(3, 0, 100));
        // The map is fully usable afterwards.
        ASSERT_TRUE(m.Replace(1, v1));
        ASSERT_TRUE(m.Replace(2, v2));
        ExpectHealthy(&m);
      }
    }
  }
  EXPECT_EQ(reached, expected) << "every kill point must be reached";
}

// The cases every pool goes through (tests/crash/map_crash_cases.h).
TEST(HashMapCrash, SharedWritersRecoverExplicitly) {
  shmc_test::SharedWritersRecoverExplicitly<Map, MapSegments>(
      {2, 4, 5, 7}, Attach,
      [](const Map::HealthStat& h) {
        return h.lt_stat.leaked_nodes + h.lt_stat.counter_mismatches +
               h.leaked_values;
      },
      ExpectHealthy);
}

TEST(HashMapCrash, RandomKillsWhileReading) {
  shmc_test::RandomKillsWhileReading<Map, MapSegments>(1000,
                                                       ExpectHealthy);
}

}  // namespace
