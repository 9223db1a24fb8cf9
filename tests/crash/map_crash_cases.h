// The crash cases every value pool of ShmHashMap goes through
// (tests/crash/hash_map_crash_test.cc: ShmLinkTable; extent_map_crash_test.cc:
// ShmExtentTable): a writer forked and SIGKILLed at a chosen kill point, a
// survivor of shared writers recovering by hand, and a writer killed at
// random moments over and over while a reader process checks every value.
//
// Each test file compiles the hooks in (SHMC_TEST_HOOKS before any shmc
// header) and gives its map type, its segments and what "healthy" means
// for its pool.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace shmc_test {

// The kill point a forked writer dies at, and at which of its passes.
struct KillArm {
  int id = 0;
  int at = 0;
  int hits = 0;
};
inline KillArm& Armed() {
  static KillArm arm;
  return arm;
}
inline void KillAtArmedPoint(int id) {
  KillArm& a = Armed();
  if (id == a.id && ++a.hits == a.at) raise(SIGKILL);
}

// Forks a writer that attaches the map at `base` (`attach`: the file's
// InitForWrite), arms kill point `id` for its `at`-th pass and runs `op`
// (exit 0, or 4 if op fails, 3 if it cannot attach); returns its wait
// status, or -1 if it could not be run.
template <class Map>
int RunWriterToKill(const std::string& base, int id, int at,
                    const std::function<bool(Map&, const std::string&)>& attach,
                    const std::function<bool(Map&)>& op) {
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    Map m;
    if (!attach(m, base)) _exit(3);
    Armed() = KillArm{id, at, 0};
    shmc::detail::CrashHook() = KillAtArmedPoint;
    _exit(op(m) ? 0 : 4);
  }
  int status = 0;
  return waitpid(child, &status, 0) == child ? status : -1;
}

// Writers that share the map (kSharedWriters, serialized by the program)
// never take a dead writer's lease over, so the survivor runs Recover()
// itself: the map is whole again, and was not before (`damage` counts
// what the pool's health check finds of a half-done Replace).
template <class Map, class Segments>
void SharedWritersRecoverExplicitly(
    const std::vector<int>& kill_points,
    const std::function<bool(Map&, const std::string&)>& attach,
    const std::function<uint64_t(const typename Map::HealthStat&)>& damage,
    const std::function<void(Map*)>& expect_healthy) {
  const std::string v0 = MakeValue(1, 0, 300);
  const std::string v1 = MakeValue(1, 1, 500);
  for (int id : kill_points) {
    SCOPED_TRACE("kill point " + std::to_string(id));
    Segments seg;
    auto shared = std::make_unique<ScopedCreateFlags>(
        shmc::kCreateIfNotExist | shmc::kSharedWriters);
    Map m;
    ASSERT_TRUE(attach(m, seg.base));
    ASSERT_TRUE(m.Insert(1, v0));
    int status = RunWriterToKill<Map>(
        seg.base, id, 1, attach, [&](Map& w) { return w.Replace(1, v1); });
    ASSERT_NE(status, -1);
    shared.reset();
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer must die mid-write";
    typename Map::HealthStat before;
    ASSERT_TRUE(m.HealthCheck(&before, false));
    EXPECT_GT(damage(before), 0u)
        << "a half-done write is visible before recovery";
    m.Recover();
    expect_healthy(&m);
    std::string out;
    ASSERT_TRUE(m.Find(1, &out));
    EXPECT_TRUE(out == v0 || out == v1);
    m.Recover();  // nothing pending: a no-op
    expect_healthy(&m);
  }
}

// A writer doing random Replace/Erase is SIGKILLed at random moments,
// `kills` times, while a reader process validates everything it reads;
// each next writer takes the lease over (a second live one is refused).
template <class Map, class Segments>
void RandomKillsWhileReading(int kills,
                             const std::function<void(Map*)>& expect_healthy) {
  constexpr uint64_t kKeys = 300;
  struct Shared {
    std::atomic<int> stop;
    std::atomic<uint64_t> reads;
  };
  auto attach = [](Map& m, const std::string& base) {
    return m.InitForWrite(base, kKeys * 2, 64, 40000);
  };
  Segments seg;
  {
    Map m;
    ASSERT_TRUE(attach(m, seg.base));
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
  for (int cycle = 0; cycle < kills; ++cycle) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t writer = fork();
    ASSERT_GE(writer, 0);
    if (writer == 0) {
      close(ready[0]);
      Map m;
      if (!attach(m, seg.base)) _exit(20);
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
      if (!attach(second, seg.base) &&
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
      ASSERT_TRUE(attach(m, seg.base));
      SCOPED_TRACE("after cycle " + std::to_string(cycle));
      expect_healthy(&m);
    }
  }
  EXPECT_EQ(refused, kills);
  shared->stop.store(1);
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "11: the reader saw a torn value";
  EXPECT_GT(shared->reads.load(), 1000u);
  Map m;
  ASSERT_TRUE(attach(m, seg.base));
  expect_healthy(&m);
  size_t whole = 0;
  m.Travel([&](const uint64_t& k, const std::string& v) {
    EXPECT_TRUE(ValidValue(k, v, nullptr)) << k;
    ++whole;
  });
  EXPECT_EQ(whole, m.size());
  std::printf("kills %d, reader reads %llu, keys %zu\n", kills,
              static_cast<unsigned long long>(shared->reads.load()), m.size());
  munmap(shared, sizeof(Shared));
}

}  // namespace shmc_test
