// PercentileEstimator and ShmPercentile: group sizes, accuracy on
// exponential data (the case the method is exact for), merging, bad input,
// and several writer processes feeding one shared estimate.
#include "shmc/percentile.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tests/support/test_util.h"

namespace {

using shmc::PercentileEstimator;

double ExactQuantile(std::vector<double> v, double p) {
  size_t k = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

TEST(Percentile, GroupSizes) {
  EXPECT_EQ(PercentileEstimator::GroupSize(0.99), 56u);
  // H_561 = 6.907828 >= -ln(0.001) = 6.907755 > H_560 (the approximation
  // ln n + 0.5772 gives ~562).
  EXPECT_EQ(PercentileEstimator::GroupSize(0.999), 561u);
  EXPECT_EQ(PercentileEstimator::GroupSize(0.5), 1u);
  EXPECT_EQ(PercentileEstimator::GroupSize(0.9), 6u);
  // Definition: H_n >= -ln(1-p) and H_(n-1) < -ln(1-p).
  for (double p : {0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999}) {
    uint64_t n = PercentileEstimator::GroupSize(p);
    double h = 0;
    for (uint64_t i = 1; i < n; ++i) h += 1.0 / i;
    EXPECT_LT(h, -std::log(1 - p)) << p;
    EXPECT_GE(h + 1.0 / n, -std::log(1 - p) - 1e-9) << p;
  }
  for (double bad : {0.0, 1.0, -0.5, 2.0, std::nan("")}) {
    EXPECT_EQ(PercentileEstimator::GroupSize(bad), 0u) << bad;
    PercentileEstimator e(bad);
    EXPECT_FALSE(e.valid());
    e.Add(1);
    EXPECT_TRUE(std::isnan(e.Estimate()));
  }
}

TEST(Percentile, ExponentialP99WithinThreePercent) {
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> d(1.0 / 250.0);  // mean 250 us
  PercentileEstimator e(0.99);
  std::vector<double> all;
  for (int i = 0; i < 1000000; ++i) {
    double x = d(rng);
    e.Add(x);
    all.push_back(x);
  }
  double exact = ExactQuantile(all, 0.99);
  EXPECT_NEAR(e.Estimate() / exact, 1.0, 0.03)
      << "estimate " << e.Estimate() << " exact " << exact;
  EXPECT_EQ(e.count(), 1000000u);
  EXPECT_EQ(e.groups(), 1000000u / 56);
}

TEST(Percentile, EmptyAndPartialGroups) {
  PercentileEstimator e(0.99);
  EXPECT_TRUE(std::isnan(e.Estimate()));
  e.Add(3);
  e.Add(7);
  e.Add(std::nan(""));  // ignored
  EXPECT_EQ(e.count(), 2u);
  EXPECT_EQ(e.Estimate(), 7) << "before a group completes: the max so far";
  for (int i = 0; i < 54; ++i) e.Add(1);
  EXPECT_EQ(e.groups(), 1u);
  EXPECT_EQ(e.Estimate(), 7);
}

TEST(Percentile, MergeEqualsOneStreamAtGroupBoundaries) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(0, 1);
  PercentileEstimator one(0.99), a(0.99), b(0.99);
  for (int i = 0; i < 56 * 1000; ++i) {
    double x = d(rng);
    one.Add(x);
    (i < 56 * 400 ? a : b).Add(x);
  }
  ASSERT_TRUE(a.Merge(b));
  EXPECT_EQ(a.count(), one.count());
  EXPECT_DOUBLE_EQ(a.Estimate(), one.Estimate());
  PercentileEstimator other_p(0.999);
  EXPECT_FALSE(a.Merge(other_p)) << "different p: refused";
  // Two open groups that together fill one close it.
  PercentileEstimator x(0.99), y(0.99);
  for (int i = 0; i < 30; ++i) x.Add(1);
  for (int i = 0; i < 30; ++i) y.Add(i == 5 ? 9 : 2);
  ASSERT_TRUE(x.Merge(y));
  EXPECT_EQ(x.groups(), 1u);
  EXPECT_EQ(x.Estimate(), 9);
}

template <class Alloc>
class ShmPercentileTest : public ::testing::Test {};
using Allocs = ::testing::Types<shmc::SVIPC, shmc::POSIX, shmc::MAPFILE>;
TYPED_TEST_SUITE(ShmPercentileTest, Allocs, shmc_test::AllocNames);

TYPED_TEST(ShmPercentileTest, WriterProcessesShareOneEstimate) {
  shmc_test::ScopedKey<TypeParam> key;
  constexpr int kWriters = 3;
  constexpr int kPerWriter = 56 * 2000;
  for (int w = 0; w < kWriters; ++w) {
    int rc = shmc_test::RunInChild([&] {
      shmc::ShmPercentile<TypeParam> sp;
      if (!sp.InitForWrite(key, 0.99, 8)) return 1;
      std::mt19937_64 rng(100 + w);
      std::exponential_distribution<double> d(1.0);
      for (int i = 0; i < kPerWriter; ++i) sp.Add(d(rng));
      return 0;
    });
    ASSERT_EQ(rc, 0) << "writer " << w;
  }
  shmc::ShmPercentile<TypeParam> reader;
  ASSERT_TRUE(reader.InitForRead(key)) << reader.last_error().message;
  EXPECT_EQ(reader.count(), static_cast<uint64_t>(kWriters * kPerWriter))
      << "the writers exited: their samples stay";
  EXPECT_NEAR(reader.Estimate(), std::log(100.0), 0.05 * std::log(100.0));
  EXPECT_DOUBLE_EQ(reader.p(), 0.99);
}

// A reader merging while a writer process adds: every snapshot is
// consistent (counts never go back, estimates are finite and within the
// samples' range), thanks to the per-slot sequence word.
TEST(ShmPercentile, ReaderDuringLiveWriterSeesConsistentStates) {
  shmc_test::ScopedKey<shmc::POSIX> key;
  {
    shmc::ShmPercentile<shmc::POSIX> create;
    ASSERT_TRUE(create.InitForWrite(key, 0.9, 2));
  }
  std::string k = key;
  constexpr int kSamples = 2000000;
  pid_t writer = fork();
  if (writer == 0) {
    shmc::ShmPercentile<shmc::POSIX> w;
    if (!w.InitForWrite(k, 0.9, 2)) _exit(1);
    for (int i = 0; i < kSamples; ++i) w.Add(1 + (static_cast<uint64_t>(i) * 7919) % 1000);
    _exit(0);
  }
  shmc::ShmPercentile<shmc::POSIX> r;
  ASSERT_TRUE(r.InitForRead(k));
  uint64_t last = 0, reads = 0, bad = 0;
  for (;;) {
    shmc::PercentileEstimator m = r.Merged();
    ++reads;
    if (m.count() < last) ++bad;
    last = m.count();
    if (m.count() > 0) {
      double e = m.Estimate();
      if (!(e >= 1 && e <= 1000)) ++bad;
    }
    if (m.count() == static_cast<uint64_t>(kSamples)) break;
    int st = 0;
    if (waitpid(writer, &st, WNOHANG) == writer) {
      writer = -1;
      m = r.Merged();
      EXPECT_EQ(m.count(), static_cast<uint64_t>(kSamples));
      break;
    }
  }
  if (writer > 0) waitpid(writer, nullptr, 0);
  EXPECT_EQ(bad, 0u) << "of " << reads << " snapshots";
}

// A slot whose sequence word stays odd while its owner looks alive (a
// damaged or forged segment) delays a reader by a bounded time, then is
// read as it is: Merged() never spins forever.
TEST(ShmPercentile, OddSlotOfLiveOwnerIsNotWaitedForForever) {
  shmc_test::ScopedKey<shmc::POSIX> key;
  shmc::ShmPercentile<shmc::POSIX> w;
  ASSERT_TRUE(w.InitForWrite(key, 0.99, 2));
  for (int i = 0; i < 100; ++i) w.Add(i);
  shmc::POSIX raw;
  size_t mapped = 0;
  char* base = static_cast<char*>(raw.Attach(key, 0, 0, &mapped));
  ASSERT_NE(base, nullptr);
  auto* h = reinterpret_cast<shmc::detail::SegmentHeader*>(base);
  auto* slot = reinterpret_cast<shmc::detail::PercentileSlot*>(
      base + h->header_size);
  ASSERT_EQ(slot->owner_pid.load(), static_cast<uint64_t>(getpid()));
  slot->seq.fetch_add(1);  // odd, and this process (its owner) is alive
  int rc = shmc_test::RunInChild(
      [&] {
        shmc::ShmPercentile<shmc::POSIX> r;
        if (!r.InitForRead(key)) return 1;
        return r.Merged().count() == 100 ? 0 : 2;
      },
      std::chrono::seconds(20));
  EXPECT_EQ(rc, 0) << (rc == -2 ? "the reader spun until killed" : "");
  slot->seq.fetch_add(1);
  raw.Detach(base, mapped);
}

TEST(ShmPercentile, SlotsPerLiveWriterAndBadInput) {
  shmc_test::ScopedKey<shmc::POSIX> key;
  shmc::ShmPercentile<shmc::POSIX> a;
  ASSERT_TRUE(a.InitForWrite(key, 0.99, 1));
  a.Add(5);
  int rc = shmc_test::RunInChild([&] {
    shmc::ShmPercentile<shmc::POSIX> b;
    if (b.InitForWrite(key, 0.99, 1)) return 1;
    return b.last_error().code == shmc::ErrorCode::kNoSlot ? 0 : 2;
  });
  EXPECT_EQ(rc, 0) << "one slot, held by a live process";
  shmc::ShmPercentile<shmc::POSIX> c;
  EXPECT_FALSE(c.InitForWrite(key, 0.999, 1)) << "another p";
  shmc::ShmPercentile<shmc::POSIX> d;
  EXPECT_FALSE(d.InitForWrite(key, 1.5, 1));
  EXPECT_EQ(d.last_error().code, shmc::ErrorCode::kInvalidArgument);
  // A writer that died keeps its samples and frees its slot for the next.
  shmc_test::ScopedKey<shmc::POSIX> key2("2");
  rc = shmc_test::RunInChild([&] {
    shmc::ShmPercentile<shmc::POSIX> w;
    if (!w.InitForWrite(key2, 0.99, 1)) return 1;
    for (int i = 0; i < 100; ++i) w.Add(i);
    _exit(0);  // no destructor: the slot stays owned by a dead pid
  });
  ASSERT_EQ(rc, 0);
  shmc::ShmPercentile<shmc::POSIX> next;
  ASSERT_TRUE(next.InitForWrite(key2, 0.99, 1)) << next.last_error().message;
  next.Add(1000);
  EXPECT_EQ(next.count(), 101u);
}

}  // namespace
