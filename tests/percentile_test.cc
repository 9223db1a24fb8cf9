// PercentileEstimator and ShmPercentile: group sizes, accuracy on
// exponential data (the case the method is exact for), merging, bad input,
// and several writer processes feeding one shared estimate.
#include "shmc/percentile.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// The distribution-free estimator: within 3% of the exact quantile for
// p50, p90, p99 and p99.9 on four distributions of 10^6 samples, for two
// seeds, alone and merged from four interleaved streams.
// The sample quantile as percentile_bench computes it: order statistic
// ceil(p * N).
double SampleQuantile(std::vector<double> v, double p) {
  size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  if (k > 0) --k;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k),
                   v.end());
  return v[k];
}

std::vector<double> Draw(int dist, uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) {
    switch (dist) {
      case 0: x = std::exponential_distribution<double>(1.0)(rng); break;
      case 1: x = std::normal_distribution<double>(100, 15)(rng); break;
      case 2: x = std::lognormal_distribution<double>(0, 1)(rng); break;
      default:
        x = std::pow(1 - std::uniform_real_distribution<double>(0, 1)(rng),
                     -1.0 / 1.5);  // Pareto(1.5)
    }
  }
  return v;
}

TEST(QuantileEstimator, WithinThreePercentOnAnyTailAloneAndMerged) {
  const char* names[4] = {"exponential", "normal", "log-normal", "pareto"};
  for (int dist = 0; dist < 4; ++dist) {
    for (uint64_t seed : {11u, 12u, 13u}) {
      std::vector<double> v = Draw(dist, seed, 1000000);
      for (double p : {0.5, 0.9, 0.99, 0.999}) {
        shmc::QuantileEstimator alone(p);
        std::vector<shmc::QuantileEstimator> part(4,
                                                  shmc::QuantileEstimator(p));
        for (size_t i = 0; i < v.size(); ++i) {
          alone.Add(v[i]);
          part[i % 4].Add(v[i]);
        }
        shmc::QuantileEstimator merged(p);
        for (const auto& e : part) ASSERT_TRUE(merged.Merge(e));
        double exact = SampleQuantile(v, p);
        EXPECT_NEAR(alone.Estimate() / exact, 1.0, 0.03)
            << names[dist] << " seed " << seed << " p " << p;
        EXPECT_NEAR(merged.Estimate() / exact, 1.0, 0.03)
            << names[dist] << " seed " << seed << " p " << p << " merged";
        EXPECT_EQ(merged.count(), alone.count());
      }
    }
  }
}

TEST(QuantileEstimator, GroupSizesStateAndBadInput) {
  EXPECT_EQ(shmc::QuantileEstimator::GroupSize(0.5), 3u);
  EXPECT_EQ(shmc::QuantileEstimator::GroupSize(0.9), 3u);
  EXPECT_EQ(shmc::QuantileEstimator::GroupSize(0.99), 17u);
  EXPECT_EQ(shmc::QuantileEstimator::GroupSize(0.999), 174u);
  static_assert(shmc::QuantileEstimator::kWords <= 64, "64 words at most");
  EXPECT_LE(sizeof(shmc::QuantileEstimator), 64 * sizeof(uint64_t));
  for (double p : {0.0, 1.0, -1.0, 2.0, std::nan("")}) {
    shmc::QuantileEstimator e(p);
    EXPECT_FALSE(e.valid()) << p;
    e.Add(1);
    EXPECT_TRUE(std::isnan(e.Estimate()));
  }
  shmc::QuantileEstimator e(0.99);
  EXPECT_TRUE(std::isnan(e.Estimate())) << "no samples";
  e.Add(3);
  e.Add(std::nan(""));
  e.Add(5);
  EXPECT_EQ(e.Estimate(), 5) << "before a group closes: the maximum so far";
  EXPECT_EQ(e.count(), 2u);
}

// The state travels as kWords words (shmkv's statistics segment): Load
// gives back the same estimate, and refuses words of another p or with
// impossible counts.
TEST(QuantileEstimator, SaveAndLoad) {
  std::vector<double> v = Draw(2, 5, 200000);
  // Scaled by 2, the powers of two the cells cover are the next ones: of
  // the other parity.
  for (double scale : {1.0, 2.0}) {
  for (size_t n : {size_t{100}, size_t{200000}}) {  // kept maxima; window
    shmc::QuantileEstimator e(0.9);  // groups of 3
    for (size_t i = 0; i < n; ++i) e.Add(v[i] * scale);
    uint64_t w[shmc::QuantileEstimator::kWords];
    e.Save(w);
    shmc::QuantileEstimator back(0.9);
    ASSERT_TRUE(back.Load(w));
    EXPECT_EQ(back.Estimate(), e.Estimate());
    EXPECT_EQ(back.count(), e.count());
    back.Add(1e9);
    e.Add(1e9);
    EXPECT_EQ(back.count(), e.count());
    uint64_t bad[shmc::QuantileEstimator::kWords];
    std::copy(w, w + shmc::QuantileEstimator::kWords, bad);
    bad[5] += 1;  // one maximum more than the cells hold (once placed)
    if (n > 1000) {
      EXPECT_FALSE(back.Load(bad));
    }
    std::copy(w, w + shmc::QuantileEstimator::kWords, bad);
    bad[3] = 3;  // as many samples in the open group as a group holds
    EXPECT_FALSE(back.Load(bad));
    std::copy(w, w + shmc::QuantileEstimator::kWords, bad);
    double other = 0.5;
    std::memcpy(&bad[0], &other, 8);
    bad[2] = 17;  // p 0.5 with p99's group size
    EXPECT_FALSE(back.Load(bad));
  }
  }
}

// Where a quantile sits against the powers of two must not matter. The
// same samples, scaled so that each p's sample quantile lands just below
// or just above 4 (a boundary between two powers of two), stay within 3%.
// The estimator once kept its cells one power of two away when the
// estimate sat in the top eighth of its power's count, and interpolated
// evenly in log scale there: up to 5.5% off.
TEST(QuantileEstimator, QuantileNextToAPowerOfTwo) {
  const char* names[4] = {"exponential", "normal", "log-normal", "pareto"};
  for (int dist = 0; dist < 4; ++dist) {
    std::vector<double> v = Draw(dist, 31 + dist, 1000000);
    for (double p : {0.5, 0.9, 0.99, 0.999}) {
      double exact = SampleQuantile(v, p);
      for (double off : {-0.1, -0.03, -0.01, 0.01, 0.03, 0.1}) {
        double scale = 4 * (1 + off) / exact;
        shmc::QuantileEstimator e(p);
        for (double x : v) e.Add(x * scale);
        EXPECT_NEAR(e.Estimate() / (exact * scale), 1.0, 0.03)
            << names[dist] << " p " << p << " at 4 x " << 1 + off;
      }
    }
  }
}

// Words from a damaged or hostile segment: the powers of two in them are
// checked before any arithmetic on them, and Load refuses them whole.
TEST(QuantileEstimator, LoadRefusesWildPowersOfTwo) {
  shmc::QuantileEstimator e(0.99);
  for (int i = 0; i < 100000; ++i) e.Add(1 + i % 1000);
  uint64_t w[shmc::QuantileEstimator::kWords];
  e.Save(w);
  const uint64_t wild[] = {uint64_t{1} << 63, ~uint64_t{0}, uint64_t{1} << 62,
                           2047, 5000};
  for (uint64_t low : wild) {
    for (uint64_t at : wild) {
      uint64_t bad[shmc::QuantileEstimator::kWords];
      std::copy(w, w + shmc::QuantileEstimator::kWords, bad);
      bad[6] = low;
      bad[7] = at;
      shmc::QuantileEstimator back(0.99);
      EXPECT_FALSE(back.Load(bad)) << low << " " << at;
      bad[6] = w[6];  // a good lowest power, a wild window
      EXPECT_FALSE(back.Load(bad)) << at;
    }
  }
  // Random words over the saved state: whatever Load accepts is usable
  // (sanitizer builds check that no access or arithmetic goes wrong).
  std::mt19937_64 rng(3);
  for (int round = 0; round < 20000; ++round) {
    uint64_t bad[shmc::QuantileEstimator::kWords];
    std::copy(w, w + shmc::QuantileEstimator::kWords, bad);
    for (int k = 0; k < 3; ++k) {
      size_t at = 3 + rng() % (shmc::QuantileEstimator::kWords - 3);
      bad[at] = rng() % 2 ? rng() : rng() % 64;
    }
    shmc::QuantileEstimator back(0.99);
    if (back.Load(bad)) {
      back.Add(5);
      shmc::QuantileEstimator sum(0.99);
      ASSERT_TRUE(sum.Merge(back));
      ASSERT_TRUE(sum.Merge(e));
      (void)sum.Estimate();
    }
  }
  shmc::QuantileEstimator back(0.99);
  ASSERT_TRUE(back.Load(w));
  EXPECT_EQ(back.Estimate(), e.Estimate());
}

// Any distribution, not only the four above: an iid mixture of two levels
// x100 apart (5% slow), whose quantiles sit in a gap or in the rare mode.
TEST(QuantileEstimator, BimodalMixture) {
  std::vector<double> v = Draw(0, 21, 1000000);
  std::mt19937_64 rng(22);
  for (double& x : v) {
    if (rng() % 20 == 0) x = 100 + 10 * x;
  }
  for (double p : {0.5, 0.9, 0.99, 0.999}) {
    shmc::QuantileEstimator e(p);
    for (double x : v) e.Add(x);
    EXPECT_NEAR(e.Estimate() / SampleQuantile(v, p), 1.0, 0.03) << p;
  }
}

// A stream whose level jumps x100 is not iid, and no max-of-n method
// estimates its quantiles then; what holds is that the estimator follows
// the new level: its counts per power of two stay exact, and the estimate
// stays between the two levels' quantiles, never off to a far power of
// two (the window version of this estimator ran to 1e7 here).
TEST(QuantileEstimator, LevelJumpStaysBetweenTheLevels) {
  std::vector<double> low = Draw(0, 9, 50000);
  std::vector<double> high = Draw(0, 10, 1000000);
  for (double& x : high) x *= 100;
  for (double p : {0.5, 0.99, 0.999}) {
    shmc::QuantileEstimator e(p);
    for (double x : low) e.Add(x);
    for (double x : high) e.Add(x);
    double a = SampleQuantile(low, p), b = SampleQuantile(high, p);
    EXPECT_GE(e.Estimate(), 0.97 * a) << p;
    EXPECT_LE(e.Estimate(), 1.03 * b) << p;
  }
}

}  // namespace
