// ShmDoubleTable: builds published whole, across processes and flips;
// pinned halves left alone; the checksum against damage; a killed updater;
// bad input.
#include "shmc/shm_double_table.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "shmc/hash.h"
#include "tests/support/raw_segment.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::ScopedKey;

struct Node {
  std::atomic<uint64_t> key;
  uint64_t val;
  std::pair<bool, uint64_t> Key() const volatile {
    uint64_t k = key.load(std::memory_order_acquire);
    return {k != 0, k};
  }
  void Set(uint64_t k, uint64_t v) volatile {
    val = v;
    key.store(k, std::memory_order_release);
  }
};

template <class Alloc>
using Dt = shmc::ShmDoubleTable<uint64_t, Node, Alloc>;

// Version v's value of key k: a half-built or mixed version cannot pass.
uint64_t ValueOf(uint64_t k, uint64_t v) { return shmc::Mix64(k * 31 + v); }

// Puts keys 1..n with version v's values into a build.
template <class Table>
bool Fill(Table* t, uint64_t n, uint64_t v) {
  for (uint64_t k = 1; k <= n; ++k) {
    bool found = false;
    volatile Node* node = t->FindOrAlloc(k, &found);
    if (node == nullptr) return false;
    node->Set(k, ValueOf(k, v));
  }
  return true;
}

template <class Alloc>
class ShmDoubleTableTest : public ::testing::Test {};
using Allocs = ::testing::Types<shmc::SVIPC, shmc::POSIX, shmc::MAPFILE>;
TYPED_TEST_SUITE(ShmDoubleTableTest, Allocs, shmc_test::AllocNames);

TYPED_TEST(ShmDoubleTableTest, BuildCommitFindEdit) {
  ScopedKey<TypeParam> key;
  Dt<TypeParam> w, r;
  ASSERT_TRUE(w.InitForWrite(key, 1000, 8)) << w.last_error().message;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  EXPECT_FALSE(r.Pin().ok()) << "nothing published yet";
  EXPECT_EQ(r.version(), 0u);
  EXPECT_GE(w.capacity(), 1000u);

  auto* t = w.BeginBuild(Dt<TypeParam>::kEmpty);
  ASSERT_NE(t, nullptr) << w.last_error().message;
  ASSERT_TRUE(Fill(t, 900, 1));
  EXPECT_FALSE(r.Pin().ok()) << "a build is not visible before Commit";
  ASSERT_EQ(w.Commit(), 1u);
  {
    auto p = r.Pin();
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.version(), 1u);
    for (uint64_t k = 1; k <= 900; ++k) {
      const volatile Node* n = p.Find(k);
      ASSERT_NE(n, nullptr) << k;
      EXPECT_EQ(n->val, ValueOf(k, 1));
    }
    EXPECT_EQ(p.Find(901), nullptr);
    uint64_t keys[3] = {5, 950, 7};
    const volatile Node* out[3];
    EXPECT_EQ(p.FindMany(keys, 3, out), 2u);
    EXPECT_EQ(out[1], nullptr);
  }

  // Copy-and-edit: change one value, erase one key, add one.
  t = w.BeginBuild();
  ASSERT_NE(t, nullptr) << w.last_error().message;
  EXPECT_EQ(t->Find(uint64_t{3})->val, ValueOf(3, 1)) << "starts as v1";
  t->Find(uint64_t{3})->val = 42;
  t->Find(uint64_t{4})->key.store(0);
  bool found = true;
  t->FindOrAlloc(uint64_t{1000}, &found)->Set(1000, 7);
  EXPECT_FALSE(found);
  ASSERT_EQ(w.Commit(), 2u);
  Node copy;
  ASSERT_TRUE(r.Get(3, &copy)) << "Get pins the newest version";
  EXPECT_EQ(copy.val, 42u);
  EXPECT_FALSE(r.Get(4, &copy));
  ASSERT_TRUE(r.Get(1000, &copy));
  EXPECT_EQ(copy.val, 7u);
  EXPECT_TRUE(r.Verify()) << r.last_error().message;
  // A second reader holds version 2 while the writer builds twice.
  Dt<TypeParam> r2;
  ASSERT_TRUE(r2.InitForRead(key)) << r2.last_error().message;
  auto v2 = r2.Pin();
  ASSERT_EQ(v2.version(), 2u);
  w.set_publish_wait_ms(100);
  ASSERT_NE(w.BeginBuild(), nullptr) << "v1's half is not pinned";
  ASSERT_EQ(w.Commit(), 3u);
  EXPECT_EQ(w.BeginBuild(), nullptr) << "v2's half is pinned";
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kTimeout);
  EXPECT_EQ(v2.Find(3)->val, 42u) << "the pinned version was not touched";
  v2.Release();
  ASSERT_NE(w.BeginBuild(), nullptr);
  EXPECT_EQ(w.Commit(), 4u);
  EXPECT_EQ(r.BeginBuild(), nullptr) << "a reader cannot build";
  EXPECT_EQ(r.last_error().code, shmc::ErrorCode::kNotInitialized);
}

// A pin held while the same reader object pins again (Get, Verify, a
// second Pin) stays: the nested pins share its version, and the updater
// still cannot rewrite that half until the last of them goes. Abort drops
// a build unpublished.
TEST(ShmDoubleTable, NestedPinsKeepTheOuterOne) {
  ScopedKey<shmc::POSIX> key;
  Dt<shmc::POSIX> w, r;
  ASSERT_TRUE(w.InitForWrite(key, 100, 4));
  w.set_publish_wait_ms(100);
  auto* t = w.BeginBuild(Dt<shmc::POSIX>::kEmpty);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(Fill(t, 10, 1));
  ASSERT_EQ(w.Commit(), 1u);
  ASSERT_TRUE(r.InitForRead(key));
  auto outer = r.Pin();
  ASSERT_EQ(outer.version(), 1u);
  ASSERT_NE(w.BeginBuild(), nullptr);
  ASSERT_EQ(w.Commit(), 2u);
  Node copy;
  ASSERT_TRUE(r.Get(3, &copy));
  EXPECT_EQ(copy.val, ValueOf(3, 1)) << "nested: the outer pin's version";
  EXPECT_TRUE(r.Verify()) << r.last_error().message;
  {
    auto inner = r.Pin();
    EXPECT_EQ(inner.version(), 1u);
  }
  EXPECT_EQ(w.BeginBuild(), nullptr) << "version 1's half is still pinned";
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kTimeout);
  EXPECT_EQ(outer.Find(3)->val, ValueOf(3, 1));
  outer.Release();
  t = w.BeginBuild();
  ASSERT_NE(t, nullptr) << w.last_error().message;
  w.Abort();
  EXPECT_EQ(w.Commit(), 0u) << "an aborted build is not committed";
  EXPECT_EQ(r.version(), 2u);
  ASSERT_TRUE(r.Get(3, &copy));
  EXPECT_EQ(copy.val, ValueOf(3, 1)) << "version 2 copied version 1";
}

// An updater process rebuilds (copy and edit every value) as fast as it
// can while two reader processes look up 1.2M keys in all through pins,
// some held long: every answer is the pinned version's, none from a
// mixed or half-built one. Fails when BeginBuild does not wait for pins.
TEST(ShmDoubleTable, ReadersNeverSeeAMixAcrossFlips) {
  constexpr uint64_t kKeys = 2000;
  ScopedKey<shmc::POSIX> key;
  auto* shared = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  std::atomic<uint64_t>& done = shared[0];
  std::atomic<uint64_t>& versions_seen = shared[1];
  done.store(0);
  versions_seen.store(0);
  {
    Dt<shmc::POSIX> init;
    ASSERT_TRUE(init.InitForWrite(key, kKeys));
    auto* t = init.BeginBuild(Dt<shmc::POSIX>::kEmpty);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(Fill(t, kKeys, 1));
    ASSERT_EQ(init.Commit(), 1u);
  }
  pid_t writer = fork();
  if (writer == 0) {
    Dt<shmc::POSIX> w;
    if (!w.InitForWrite(key, kKeys)) _exit(1);
    w.set_publish_wait_ms(10000);
    while (done.load() == 0) {
      uint64_t v = w.version() + 1;
      auto* t = w.BeginBuild();
      if (t == nullptr) _exit(2);
      for (uint64_t k = 1; k <= kKeys; ++k) t->Find(k)->val = ValueOf(k, v);
      if (w.Commit() != v) _exit(3);
    }
    _exit(0);
  }
  pid_t readers[2];
  for (int i = 0; i < 2; ++i) {
    readers[i] = fork();
    if (readers[i] == 0) {
      Dt<shmc::POSIX> r;
      if (!r.InitForRead(key)) _exit(4);
      std::mt19937_64 rng(static_cast<uint64_t>(getpid()));
      uint64_t bad = 0, last = 0, seen = 0;
      for (uint64_t lookups = 0, batch = 0; lookups < 600000; ++batch) {
        auto p = r.Pin();
        if (!p.ok()) _exit(5);
        if (p.version() != last) {
          last = p.version();
          ++seen;
        }
        // Every 64th pin is held across a pause, long enough for the
        // updater to want this half back.
        int rounds = batch % 64 == 0 ? 2 : 1;
        for (int round = 0; round < rounds; ++round) {
          for (int j = 0; j < 64; ++j, ++lookups) {
            uint64_t k = 1 + rng() % kKeys;
            const volatile Node* n = p.Find(k);
            bad += n == nullptr || n->val != ValueOf(k, p.version());
          }
          if (rounds == 2 && round == 0) usleep(300);
        }
      }
      versions_seen.fetch_add(seen);
      _exit(bad == 0 ? 0 : 6);
    }
  }
  int failed = 0;
  for (pid_t p : readers) {
    int st = 0;
    waitpid(p, &st, 0);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "reader status "
                                                       << st;
  }
  done.store(1);  // after the readers, however they ended
  int st = 0;
  waitpid(writer, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "writer status " << st;
  EXPECT_EQ(failed, 0) << "a reader saw a mixed or half-built version";
  EXPECT_GE(versions_seen.load(), 40u) << "each reader saw >= 20 flips";
  std::printf("versions seen by the two readers: %llu\n",
              static_cast<unsigned long long>(versions_seen.load()));
  munmap(shared, 4096);
}

// Offsets of a double table's parts, read from its header the way the
// library and the tool do.
shmc::detail::DoubleTableLayout LayoutOf(const shmc_test::RawSegment& raw) {
  shmc::detail::DoubleTableLayout lay;
  std::string why;
  EXPECT_TRUE(shmc::detail::DoubleTableLayout::FromHeader(
      *raw.at<shmc::detail::SegmentHeader>(0), &lay, &why))
      << why;
  return lay;
}

TEST(ShmDoubleTable, ChecksumCatchesAFlippedByte) {
  ScopedKey<shmc::POSIX> key;
  Dt<shmc::POSIX> w;
  ASSERT_TRUE(w.InitForWrite(key, 500));
  auto* t = w.BeginBuild(Dt<shmc::POSIX>::kEmpty);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(Fill(t, 400, 1));
  ASSERT_EQ(w.Commit(), 1u);  // half 1 is current
  shmc_test::RawSegment raw(key);
  ASSERT_TRUE(raw.ok());
  shmc::detail::DoubleTableLayout lay = LayoutOf(raw);
  // Flip one bit of some node's value (in use or not, it is summed).
  for (uint64_t slot : {uint64_t{0}, uint64_t{37}, lay.table().slots() - 1}) {
    char* b = raw.base() + lay.half_offset(1) +
              lay.table().node_offset(slot) + 9;
    *b ^= 0x10;
    Dt<shmc::POSIX> r;
    EXPECT_FALSE(r.InitForRead(key)) << "slot " << slot;
    EXPECT_EQ(r.last_error().code, shmc::ErrorCode::kCorrupted);
    EXPECT_NE(r.last_error().message.find("checksum"), std::string::npos)
        << r.last_error().message;
    *b ^= 0x10;
  }
  Dt<shmc::POSIX> ok;
  ASSERT_TRUE(ok.InitForRead(key)) << ok.last_error().message;
  // Damage found after attach: Verify says so; a copy-and-edit build
  // refuses to start from it, an empty build replaces it.
  raw.base()[lay.half_offset(1) + lay.table().node_offset(3) + 2] ^= 1;
  EXPECT_FALSE(ok.Verify());
  EXPECT_EQ(ok.last_error().code, shmc::ErrorCode::kCorrupted);
  EXPECT_EQ(w.BeginBuild(), nullptr);
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kCorrupted);
  t = w.BeginBuild(Dt<shmc::POSIX>::kEmpty);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(Fill(t, 10, 2));
  ASSERT_EQ(w.Commit(), 2u);
  EXPECT_TRUE(ok.Verify()) << ok.last_error().message;
  // A half header naming another version than the state word.
  auto* hh = raw.at<shmc::detail::DoubleTableHalf>(lay.half_offset(0));
  hh->sealed.store(7);
  Dt<shmc::POSIX> r;
  EXPECT_FALSE(r.InitForRead(key));
  EXPECT_EQ(r.last_error().code, shmc::ErrorCode::kCorrupted);
  EXPECT_NE(r.last_error().message.find("says version 7"), std::string::npos)
      << r.last_error().message;
}

// An updater killed in the middle of a build publishes nothing; the next
// one takes over and builds again.
TEST(ShmDoubleTable, KilledUpdaterLeavesTheLastVersion) {
  ScopedKey<shmc::POSIX> key;
  {
    Dt<shmc::POSIX> w;
    ASSERT_TRUE(w.InitForWrite(key, 1000));
    auto* t = w.BeginBuild(Dt<shmc::POSIX>::kEmpty);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(Fill(t, 800, 1));
    ASSERT_EQ(w.Commit(), 1u);
  }
  pid_t child = fork();
  if (child == 0) {
    Dt<shmc::POSIX> w;
    if (!w.InitForWrite(key, 1000)) _exit(1);
    auto* t = w.BeginBuild();
    if (t == nullptr) _exit(2);
    for (uint64_t k = 1; k <= 400; ++k) t->Find(k)->val = ValueOf(k, 2);
    raise(SIGKILL);
  }
  int st = 0;
  waitpid(child, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  Dt<shmc::POSIX> r;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  auto p = r.Pin();
  ASSERT_EQ(p.version(), 1u);
  for (uint64_t k = 1; k <= 800; ++k) ASSERT_EQ(p.Find(k)->val, ValueOf(k, 1));
  p.Release();
  Dt<shmc::POSIX> w;
  ASSERT_TRUE(w.InitForWrite(key, 1000)) << w.last_error().message;
  auto* t = w.BeginBuild();
  ASSERT_NE(t, nullptr) << w.last_error().message;
  EXPECT_EQ(t->Find(uint64_t{5})->val, ValueOf(5, 1))
      << "the build starts from version 1, not the killed build";
  EXPECT_EQ(w.Commit(), 2u);
}

TEST(ShmDoubleTable, DeadPinnerDoesNotBlockTheUpdater) {
  ScopedKey<shmc::POSIX> key;
  Dt<shmc::POSIX> w;
  ASSERT_TRUE(w.InitForWrite(key, 100, 4));
  w.set_publish_wait_ms(200);
  ASSERT_NE(w.BeginBuild(), nullptr);
  ASSERT_EQ(w.Commit(), 1u);
  pid_t child = fork();
  if (child == 0) {
    Dt<shmc::POSIX> r;
    if (!r.InitForRead(key)) _exit(1);
    auto p = r.Pin();
    raise(SIGKILL);
  }
  int st = 0;
  waitpid(child, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  for (uint64_t v = 2; v <= 4; ++v) {
    ASSERT_NE(w.BeginBuild(), nullptr) << w.last_error().message;
    ASSERT_EQ(w.Commit(), v);
  }
}

struct OtherNode {
  uint64_t key;
  uint32_t val[4];
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};

TEST(ShmDoubleTable, BadInputAndOtherLayouts) {
  ScopedKey<shmc::POSIX> key;
  Dt<shmc::POSIX> w;
  EXPECT_FALSE(w.InitForWrite(key, 0));
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kInvalidArgument);
  EXPECT_FALSE(w.InitForWrite(key, 10, 0));
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.BeginBuild(), nullptr);
  EXPECT_EQ(w.Commit(), 0u);
  Dt<shmc::POSIX> none;
  EXPECT_FALSE(none.InitForRead(key));
  EXPECT_EQ(none.last_error().code, shmc::ErrorCode::kNotFound);
  ASSERT_TRUE(w.InitForWrite(key, 100, 1));
  EXPECT_EQ(w.Commit(), 0u) << "no build in progress";
  Dt<shmc::POSIX> r1, r2;
  ASSERT_TRUE(r1.InitForRead(key));
  EXPECT_FALSE(r2.InitForRead(key));
  EXPECT_EQ(r2.last_error().code, shmc::ErrorCode::kNoSlot);
  shmc::ShmDoubleTable<uint64_t, OtherNode, shmc::POSIX> other;
  EXPECT_FALSE(other.InitForRead(key));
  EXPECT_EQ(other.last_error().code, shmc::ErrorCode::kLayoutMismatch);
  int rc = shmc_test::RunInChild([&] {
    Dt<shmc::POSIX> w2;
    if (w2.InitForWrite(key, 100, 1)) return 1;
    return w2.last_error().code == shmc::ErrorCode::kWriterBusy ? 0 : 2;
  });
  EXPECT_EQ(rc, 0) << "a second live updater is refused";
  rc = shmc_test::RunInChild([&] {
    Dt<shmc::POSIX> w2;
    if (w2.InitForWrite(key, 100000, 1)) return 1;
    return w2.last_error().code == shmc::ErrorCode::kSizeMismatch ? 0 : 2;
  });
  EXPECT_EQ(rc, 0) << "another capacity is another geometry";
  // A plain hash table is another kind.
  ScopedKey<shmc::POSIX> plain_key("plain");
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> plain;
  ASSERT_TRUE(plain.InitForWrite(plain_key, 100));
  Dt<shmc::POSIX> wrong;
  EXPECT_FALSE(wrong.InitForRead(plain_key));
  EXPECT_EQ(wrong.last_error().code, shmc::ErrorCode::kLayoutMismatch);
}

}  // namespace
