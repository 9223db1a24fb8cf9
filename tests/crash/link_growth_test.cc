// ShmLinkTable made with kGrowInSteps: the pool's memory is reserved a step
// at a time as values fill it, a reader attached before a step reads values
// placed after it, a handle into the unreserved part is refused without a
// byte of it touched, a writer killed inside a step is rolled forward, and a
// full tmpfs fails the step (kNoSpace) with every value kept, never SIGBUS.
//
// Its own translation unit with the test hooks compiled in
// (SHMC_CRASH_POINT), so that kill points can be chosen exactly.
#define SHMC_TEST_HOOKS 1

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "shmc/shm_array.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_sync_buf.h"
#include "tests/support/small_tmpfs.h"
#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace {

using shmc_test::ScopedCreateFlags;
using shmc_test::FileBlocks;
using shmc_test::ScopedKey;
using shmc_test::SmallTmpfs;

constexpr int kGrow = shmc::kCreateIfNotExist | shmc::kGrowInSteps;

template <class Alloc>
class LinkGrowth : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 16); }
  ScopedKey<Alloc> key_;
};
TYPED_TEST_SUITE(LinkGrowth, shmc_test::AllAllocs, shmc_test::AllocNames);

// Fills a table far past its first step: every value reads back, the
// reserved part grows by steps and never past what the values need, the
// pool ends exactly full, and the check finds nothing wrong.
TYPED_TEST(LinkGrowth, ReservesAStepAtATimeUntilFull) {
  ScopedCreateFlags grow(kGrow);
  shmc::ShmLinkTable<TypeParam> t;
  constexpr size_t kNodes = 100000;  // 72-byte nodes: 7.2 MB, 8 steps
  ASSERT_TRUE(t.InitForWrite(this->key_, 56, kNodes)) << t.last_error().message;
  // The first step is 64 KiB of nodes; later ones double up to 2 MiB.
  EXPECT_EQ(t.reserved_nodes(), (size_t{64} << 10) / 72);
  const size_t step = (size_t{2} << 20) / 72;
  EXPECT_EQ(t.free_nodes(), kNodes) << "unreserved nodes count as free";
  std::vector<shmc::link_buf_t> lbs;
  std::vector<size_t> steps_seen{t.reserved_nodes()};
  size_t used = 0;
  for (size_t i = 0;; ++i) {
    const size_t len = 1 + (i * 37) % 300;  // 1..6 nodes
    const std::string v = shmc_test::MakeValue(i, 7, len);
    shmc::link_buf_t lb = t.New(v.data(), v.size());
    if (!lb) {
      EXPECT_LT(t.free_nodes(), t.NodesFor(len))
          << "refused while room was left";
      break;
    }
    lbs.push_back(lb);
    used += t.NodesFor(len);
    ASSERT_EQ(t.free_nodes(), kNodes - used);
    if (t.reserved_nodes() != steps_seen.back()) {
      steps_seen.push_back(t.reserved_nodes());
      // Reserved only as the values needed it: the step came when the
      // list ran out, so at most one step (or one value) is spare; a
      // step is the pool linked so far (doubling it) or 2 MiB.
      EXPECT_LE(t.reserved_nodes(), used + step) << i;
      if (steps_seen.size() >= 2) {
        const size_t before = steps_seen[steps_seen.size() - 2];
        EXPECT_LE(t.reserved_nodes() - before,
                  std::max<size_t>(std::min(before, step), 6)) << i;
      }
    }
  }
  EXPECT_EQ(t.reserved_nodes(), kNodes);
  EXPECT_GE(steps_seen.size(), 8u);
  for (size_t i = 0; i < lbs.size(); ++i) {
    std::string out;
    ASSERT_TRUE(t.Read(lbs[i], &out)) << i;
    ASSERT_EQ(out, shmc_test::MakeValue(i, 7, 1 + (i * 37) % 300)) << i;
  }
  typename shmc::ShmLinkTable<TypeParam>::HealthStat hs;
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_EQ(hs.total_link_bufs, lbs.size());
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(hs.counter_mismatches, 0u);
  EXPECT_EQ(hs.bad_free_list, 0u);
  // Freed values go back to the list and are taken again.
  for (size_t i = 0; i < lbs.size(); i += 2) ASSERT_TRUE(t.Free(lbs[i]));
  EXPECT_TRUE(t.New("again", 5));
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(hs.counter_mismatches, 0u);
}

// The segment's memory follows the values: a POSIX segment's file holds
// blocks for the reserved steps only, not its whole size.
TEST(LinkGrowthPosix, SharedMemoryInUseFollowsTheValues) {
  ScopedCreateFlags grow(kGrow);
  ScopedKey<shmc::POSIX> key;
  const std::string path = "/dev/shm" + key.str();
  shmc::ShmLinkTable<shmc::POSIX> t;
  constexpr size_t kNodes = 2000000;  // 144 MB of nodes
  ASSERT_TRUE(t.InitForWrite(key, 56, kNodes)) << t.last_error().message;
  const long long total = static_cast<long long>(
      shmc::ShmLinkTable<shmc::POSIX>::NodeCost(56) * (kNodes + 1));
  long long at_start = FileBlocks(path);
  ASSERT_GT(at_start, 0);
  EXPECT_LE(at_start, static_cast<long long>(t.reserved_bytes()) + 4096);
  EXPECT_LT(at_start, total / 32) << "reserved the whole pool at creation";
  // 20 MB of values: the file grows to about that, a step at most more.
  std::string v(1000, 'v');
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(t.New(v.data(), v.size())) << i;
  long long after = FileBlocks(path);
  const long long step = 2 << 20;
  EXPECT_GE(after, 20000LL * 1000);
  EXPECT_LE(after, 20000LL * 18 * 72 + step + 4096 + 1024);
  EXPECT_LE(after, static_cast<long long>(t.reserved_bytes()) + 4096);
}

// A reader attached before the table grew reads values in nodes linked
// after it attached; a handle into nodes not yet reserved is refused by
// every call, and the file gains no block from it.
TEST(LinkGrowthPosix, ReadersFollowTheStepsAndNeverTouchTheRest) {
  ScopedCreateFlags grow(kGrow);
  ScopedKey<shmc::POSIX> key;
  const std::string path = "/dev/shm" + key.str();
  shmc::ShmLinkTable<shmc::POSIX> w, r;
  constexpr size_t kNodes = 400000;
  ASSERT_TRUE(w.InitForWrite(key, 56, kNodes)) << w.last_error().message;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  const size_t first_step = w.reserved_nodes();
  const uint32_t beyond = static_cast<uint32_t>(kNodes - 10);
  const long long blocks = FileBlocks(path);
  std::string out;
  char buf[16];
  size_t n = sizeof(buf);
  uint32_t len = 0;
  for (uint32_t tag : {1u, 2u, 77u}) {
    shmc::link_buf_t lb(beyond, tag);
    EXPECT_FALSE(r.Read(lb, &out));
    EXPECT_FALSE(r.Read(lb, buf, &n));
    EXPECT_FALSE(r.HeadLength(lb, &len));
    EXPECT_FALSE(w.Overwrite(lb, 0, "x", 1));
    EXPECT_FALSE(w.Free(lb));
    r.Prefetch(lb);
  }
  EXPECT_EQ(FileBlocks(path), blocks) << "a refused handle reserved memory";
  std::vector<shmc::link_buf_t> lbs;
  std::string v(500, 'a');
  while (w.reserved_nodes() < 3 * first_step) {
    v[0] = static_cast<char>('a' + lbs.size() % 26);
    lbs.push_back(w.New(v.data(), v.size()));
    ASSERT_TRUE(lbs.back());
  }
  ASSERT_GT(lbs.back().head(), first_step) << "the last value is past step 1";
  for (size_t i = 0; i < lbs.size(); ++i) {
    ASSERT_TRUE(r.Read(lbs[i], &out)) << i;
    ASSERT_EQ(out[0], static_cast<char>('a' + i % 26));
  }
  size_t travelled = 0;
  r.Travel([&](shmc::link_buf_t) { ++travelled; });
  EXPECT_EQ(travelled, lbs.size());
}

// Damage to the count of unlinked nodes: reported; the fix reserves and
// links the whole pool, after which every value still reads.
TEST(LinkGrowthPosix, DamagedUnlinkedCountIsReportedAndFixed) {
  ScopedCreateFlags grow(kGrow);
  ScopedKey<shmc::POSIX> key;
  shmc::ShmLinkTable<shmc::POSIX> t;
  constexpr size_t kNodes = 100000;
  ASSERT_TRUE(t.InitForWrite(key, 56, kNodes));
  shmc::link_buf_t lb = t.New("kept", 4);
  ASSERT_TRUE(lb);
  // The header's unlinked count: the segment header, then the table's
  // header, whose fifth word it is (docs/layout/link_table.md).
  {
    shmc::POSIX a;
    size_t mapped = 0;
    void* p = a.Attach(key, 0, 0, &mapped);
    ASSERT_NE(p, nullptr);
    auto* words = reinterpret_cast<uint64_t*>(
        static_cast<char*>(p) + sizeof(shmc::detail::SegmentHeader) + 32);
    *words = kNodes + 5;
    a.Detach(p, mapped);
  }
  EXPECT_FALSE(t.New("more", 4)) << "a damaged count must stop growth";
  typename shmc::ShmLinkTable<shmc::POSIX>::HealthStat hs;
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_GE(hs.counter_mismatches, 1u);
  ASSERT_TRUE(t.HealthCheck(&hs, true));
  EXPECT_EQ(t.reserved_nodes(), kNodes);
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_EQ(hs.counter_mismatches, 0u);
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(hs.total_free_nodes, kNodes - 1);
  std::string out;
  ASSERT_TRUE(t.Read(lb, &out));
  EXPECT_EQ(out, "kept");
  EXPECT_TRUE(t.New("more", 4));
}

int g_kill_id = 0;
int g_kill_at = 0;
int g_hits = 0;
void KillHook(int id) {
  if (id == g_kill_id && ++g_hits == g_kill_at) raise(SIGKILL);
}

using Map = shmc::ShmHashMap<uint64_t, shmc::POSIX>;

// A map writer killed at each point of a growth step (the record written;
// the nodes linked; the list's head moved), on its first step and a later
// one: the next writer rolls the step forward, every value acknowledged
// before reads back, the pool's counts agree, and inserts go on to fill
// the map.
TEST(LinkGrowthCrash, WriterKilledInAStepIsRolledForward) {
  for (int id : {12, 13, 14}) {
    for (int at : {1, 2}) {
      SCOPED_TRACE("kill point " + std::to_string(id) + " pass " +
                   std::to_string(at));
      shmc_test::MapSegments seg("grow" + std::to_string(id * 10 + at));
      const std::string& base = seg.base;
      // The child reports each acknowledged key through a pipe.
      int fds[2];
      ASSERT_EQ(pipe(fds), 0);
      pid_t child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        close(fds[0]);
        shmc::SetDefaultCreateFlags(kGrow);
        Map m;
        if (!m.InitForWrite(base, 20000, 64, 200000)) _exit(3);
        g_kill_id = id;
        g_kill_at = at;
        shmc::detail::CrashHook() = KillHook;
        std::string v(700, 'x');
        for (uint64_t k = 1; k < 20000; ++k) {
          v[0] = static_cast<char>(k);
          if (!m.Insert(k, v)) _exit(4);
          if (write(fds[1], &k, sizeof(k)) != sizeof(k)) _exit(5);
        }
        _exit(0);
      }
      close(fds[1]);
      std::vector<uint64_t> acked;
      uint64_t k;
      while (read(fds[0], &k, sizeof(k)) == sizeof(k)) acked.push_back(k);
      close(fds[0]);
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, 0), child);
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
          << "the writer was not killed at the point (status " << status << ")";
      ASSERT_GT(acked.size(), 0u);
      {
        ScopedCreateFlags grow(kGrow);
        Map m;
        ASSERT_TRUE(m.InitForWrite(base, 20000, 64, 200000))
            << m.last_error().message;
        Map::HealthStat hs;
        ASSERT_TRUE(m.HealthCheck(&hs, false));
        EXPECT_EQ(hs.lt_stat.leaked_nodes, 0u);
        EXPECT_EQ(hs.lt_stat.counter_mismatches, 0u);
        EXPECT_EQ(hs.lt_stat.bad_free_list, 0u);
        EXPECT_EQ(hs.leaked_values, 0u);
        for (uint64_t key : acked) {
          std::string out;
          ASSERT_TRUE(m.Find(key, &out)) << key;
          ASSERT_EQ(out.size(), 700u);
          ASSERT_EQ(out[0], static_cast<char>(key));
        }
        // The rolled-forward step serves the next inserts.
        std::string v(700, 'y');
        for (uint64_t key = 30000; key < 33000; ++key) {
          ASSERT_TRUE(m.Insert(key, v)) << key;
        }
        ASSERT_TRUE(m.HealthCheck(&hs, false));
        EXPECT_EQ(hs.lt_stat.leaked_nodes, 0u);
        EXPECT_EQ(hs.lt_stat.counter_mismatches, 0u);
      }
    }
  }
}

// A pool larger than its tmpfs: creation reserves the first step only, the
// step that does not fit fails the write (kNoSpace) with nothing changed,
// and every value written before reads back; no SIGBUS anywhere.
TEST(LinkGrowthFull, FullTmpfsFailsTheStepAndKeepsEveryValue) {
  // 9 MiB: the steps reach 8 MiB of nodes (64 KiB doubling to 2 MiB,
  // then 2 MiB each), so the next step fails halfway, and what it took
  // must be given back.
  SmallTmpfs fs("9m");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  ScopedCreateFlags grow(kGrow);
  const std::string key = fs.dir() + "/pool.seg";
  shmc::ShmLinkTable<shmc::MAPFILE> t;
  constexpr size_t kNodes = 1000000;  // 72 MB, eight times the tmpfs
  ASSERT_TRUE(t.InitForWrite(key, 56, kNodes)) << t.last_error().message;
  std::vector<shmc::link_buf_t> lbs;
  std::string v(1000, 'f');
  for (;;) {
    v[0] = static_cast<char>('a' + lbs.size() % 26);
    shmc::link_buf_t lb = t.New(v.data(), v.size());
    if (!lb) break;
    lbs.push_back(lb);
    ASSERT_LT(lbs.size(), 100000u) << "the tmpfs never filled";
  }
  EXPECT_EQ(t.last_error().code, shmc::ErrorCode::kNoSpace)
      << t.last_error().message;
  // What the failed step took before it stopped was given back.
  struct statvfs vfs;
  ASSERT_EQ(statvfs(fs.dir().c_str(), &vfs), 0);
  EXPECT_GE(static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize,
            512ULL << 10);
  EXPECT_GT(lbs.size(), 3000u) << "stopped well before the tmpfs was full";
  EXPECT_GT(t.free_nodes(), kNodes / 2) << "the pool itself is far from full";
  for (size_t i = 0; i < lbs.size(); ++i) {
    std::string out;
    ASSERT_TRUE(t.Read(lbs[i], &out)) << i;
    ASSERT_EQ(out[0], static_cast<char>('a' + i % 26));
  }
  typename shmc::ShmLinkTable<shmc::MAPFILE>::HealthStat hs;
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(hs.counter_mismatches, 0u);
  // Room made by freeing values is used again without a new step.
  for (size_t i = 0; i < 100; ++i) ASSERT_TRUE(t.Free(lbs[i]));
  for (size_t i = 0; i < 100; ++i) ASSERT_TRUE(t.New(v.data(), v.size())) << i;
  // A pool whose first step does not fit is not made at all (the room
  // the failed step gave back taken first).
  ASSERT_EQ(statvfs(fs.dir().c_str(), &vfs), 0);
  const int filler = open((fs.dir() + "/filler").c_str(),
                          O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(filler, 0);
  EXPECT_EQ(posix_fallocate(filler, 0,
                            static_cast<off_t>(vfs.f_bavail * vfs.f_frsize)),
            0);
  close(filler);
  shmc::ShmLinkTable<shmc::MAPFILE> t2;
  EXPECT_FALSE(t2.InitForWrite(fs.dir() + "/second.seg", 56, kNodes));
  EXPECT_EQ(t2.last_error().code, shmc::ErrorCode::kNoSpace);
  struct stat st;
  EXPECT_NE(stat((fs.dir() + "/second.seg").c_str(), &st), 0)
      << "a failed creation left its file";
  shmc::MAPFILE().Unlink(key);
}

// An array made with only its first nodes reserved holds blocks for what
// was reserved; Reserve takes a range anywhere in it (kNoSpace on a full
// tmpfs, with the array still usable), and refuses a range out of it.
TEST(LinkGrowthFull, ArrayReservedByRange) {
  ScopedKey<shmc::POSIX> key;
  const std::string path = "/dev/shm" + key.str();
  shmc::ShmArray<uint64_t, shmc::POSIX> a;
  constexpr size_t kSize = 10000000;  // 80 MB
  ASSERT_TRUE(a.InitForWrite(key, kSize, 1000)) << a.last_error().message;
  const long long start = FileBlocks(path);
  EXPECT_LT(start, 64 << 10) << "reserved more than its first nodes";
  ASSERT_TRUE(a.Reserve(5000000, 1000));
  a[5000000] = 7;
  a[5000999] = 9;
  EXPECT_LE(FileBlocks(path), start + 16 * 4096);
  EXPECT_FALSE(a.Reserve(kSize - 10, 11)) << "past the end";
  EXPECT_FALSE(a.Reserve(kSize + 1, 0));
  EXPECT_EQ(a[5000000], 7u);

  SmallTmpfs fs("4m");
  if (!fs.mounted()) return;
  shmc::ShmArray<uint64_t, shmc::MAPFILE> f;
  ASSERT_TRUE(f.InitForWrite(fs.dir() + "/arr.seg", kSize, 1000))
      << f.last_error().message;
  EXPECT_FALSE(f.Reserve(0, kSize)) << "80 MB reserved in a 4 MB tmpfs";
  EXPECT_EQ(f.last_error().code, shmc::ErrorCode::kNoSpace);
  ASSERT_TRUE(f.Reserve(0, 1000));
  f[999] = 3;
  EXPECT_EQ(f[999], 3u);
  shmc::MAPFILE().Unlink(fs.dir() + "/arr.seg");
}

// A ShmSyncBuf made with kGrowInSteps reserves its index and ring as
// records reach them: a few steps for the first megabytes, all of it once
// the ring wraps; on a full tmpfs a Push fails (kNoSpace) and the records
// before it read back.
TEST(LinkGrowthFull, SyncBufReservesAsRecordsArrive) {
  ScopedCreateFlags grow(kGrow);
  ScopedKey<shmc::POSIX> key;
  const std::string path = "/dev/shm" + key.str();
  shmc::ShmSyncBuf<shmc::POSIX> b;
  ASSERT_TRUE(b.InitForWrite(key, 64 << 20)) << b.last_error().message;
  EXPECT_LT(FileBlocks(path), 64 << 10);
  std::string rec(1000, 'r');
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(b.Push(rec)) << i;
  EXPECT_LE(FileBlocks(path), 2 * (2 << 20) + (1 << 20));
  for (int i = 0; i < 200000; ++i) ASSERT_TRUE(b.Push(rec)) << i;
  EXPECT_GE(FileBlocks(path), 64LL << 20) << "the ring wrapped: all reserved";
  shmc::SyncIter it;
  ASSERT_TRUE(b.FindBySeq(201000, &it));
  std::string out;
  ASSERT_EQ(b.Read(it, nullptr, &out), 1);
  EXPECT_EQ(out, rec);

  SmallTmpfs fs("12m");
  if (!fs.mounted()) return;
  shmc::ShmSyncBuf<shmc::MAPFILE> f;
  ASSERT_TRUE(f.InitForWrite(fs.dir() + "/ring.seg", 64 << 20))
      << f.last_error().message;
  int pushed = 0;
  while (f.Push(rec)) ASSERT_LT(++pushed, 100000);
  EXPECT_EQ(f.last_error().code, shmc::ErrorCode::kNoSpace);
  EXPECT_GT(pushed, 1000);
  ASSERT_TRUE(f.FindBySeq(pushed, &it));
  ASSERT_EQ(f.Read(it, nullptr, &out), 1);
  EXPECT_EQ(out, rec);
  shmc::MAPFILE().Unlink(fs.dir() + "/ring.seg");
}

}  // namespace
