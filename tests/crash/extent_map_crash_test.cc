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
#include "tests/crash/map_crash_cases.h"
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

enum class Op { kInsert, kReplace, kErase };

constexpr size_t kKeys = 100, kBytes = 64, kNodes = 400;  // 25,600 bytes

// The map as each writer of these tests attaches it.
bool Attach(Map& m, const std::string& base) {
  return m.InitForWrite(base, kKeys, kBytes, kNodes);
}

int RunWriterToKill(const std::string& base, int id, int at,
                    const std::function<bool(Map&)>& op) {
  return shmc_test::RunWriterToKill<Map>(base, id, at, Attach, op);
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

// The cases every pool goes through (tests/crash/map_crash_cases.h).
TEST(ExtentMapCrash, SharedWritersRecoverExplicitly) {
  shmc_test::SharedWritersRecoverExplicitly<Map, MapSegments>(
      {31, 32, 33}, Attach,
      [](const Map::HealthStat& h) {
        return h.lt_stat.bad_free_list + h.lt_stat.counter_mismatches +
               h.leaked_values;
      },
      ExpectHealthy);
}

TEST(ExtentMapCrash, RandomKillsWhileReading) {
  shmc_test::RandomKillsWhileReading<Map, MapSegments>(400,
                                                       ExpectHealthy);
}

}  // namespace
