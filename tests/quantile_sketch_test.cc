// QuantileSketch (include/shmc/quantile_sketch.h): every quantile within
// 1% of the sample's own on independent and dependent streams, alone and
// merged, and its edges (empty, zeros, huge values, counts that overflow).
#include "shmc/quantile_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "shmc/percentile.h"
#include "tests/support/latency_streams.h"

namespace {

using shmc::QuantileSketch;

static_assert(sizeof(QuantileSketch) <= 8192, "the state is at most 8 KiB");

constexpr size_t kSamples = 1000000;

// The largest error, over TableQuantiles(), of `estimate(q)` against the
// stream's own quantiles.
template <class Estimate>
double WorstError(const std::vector<uint64_t>& samples, Estimate estimate,
                  double* at = nullptr) {
  std::vector<uint64_t> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  double worst = 0;
  for (double q : shmc_test::TableQuantiles()) {
    double exact = static_cast<double>(shmc_test::NearestRank(sorted, q));
    double err = std::abs(estimate(q) / exact - 1);
    if (err > worst) {
      worst = err;
      if (at != nullptr) *at = q;
    }
  }
  return worst;
}

TEST(QuantileSketch, EveryBucketAnswersItsValuesWithinTheBound) {
  for (int b = 0; b < QuantileSketch::kBuckets; ++b) {
    ASSERT_LE(QuantileSketch::Bound(b), QuantileSketch::kMaxRelativeError) << b;
  }
  // Every value up to 2^20, then random ones up to the last power.
  auto check = [](uint64_t v) {
    int b = QuantileSketch::Bucket(v);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, QuantileSketch::kBuckets);
    ASSERT_LE(std::abs(QuantileSketch::Answer(b) / static_cast<double>(v) - 1),
              QuantileSketch::kMaxRelativeError)
        << v;
  };
  for (uint64_t v = 1; v < (1u << 20); ++v) check(v);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    check((rng() >> (rng() % 20)) % (uint64_t{1} << 44) | 1);
  }
  // Buckets rise with values.
  for (uint64_t v = 1; v < (uint64_t{1} << 43); v = v * 3 / 2 + 1) {
    ASSERT_LE(QuantileSketch::Bucket(v), QuantileSketch::Bucket(v * 3 / 2 + 1));
  }
}

// The bar: within 1% at every quantile from p1 to p99.99 on every
// stream, independent or not, at 10^6 samples. QuantileEstimator, one per
// quantile, misses it on the dependent streams (docs/percentile.md).
TEST(QuantileSketch, WithinOnePercentOnEveryStream) {
  for (const auto& s : shmc_test::LatencyStreams()) {
    std::vector<uint64_t> v = s.make(kSamples, 11);
    QuantileSketch k;
    for (uint64_t x : v) k.Add(x);
    EXPECT_EQ(k.Count(), kSamples);
    double at = 0;
    double err = WorstError(v, [&](double q) { return k.Quantile(q); }, &at);
    EXPECT_LE(err, 0.01) << s.name << " at p" << 100 * at;
  }
}

// Four uneven parts of each stream (contiguous runs: each its own
// regime), sketched apart and merged: the same bound, and the same
// answers as one sketch of the whole.
TEST(QuantileSketch, MergedPartsAnswerAsTheWhole) {
  const size_t cut[5] = {0, kSamples / 100, kSamples / 10, kSamples / 2,
                         kSamples};
  for (const auto& s : shmc_test::LatencyStreams()) {
    std::vector<uint64_t> v = s.make(kSamples, 12);
    QuantileSketch whole, merged;
    for (uint64_t x : v) whole.Add(x);
    for (int p = 0; p < 4; ++p) {
      QuantileSketch part;
      for (size_t i = cut[p]; i < cut[p + 1]; ++i) part.Add(v[i]);
      merged.Merge(part);
    }
    EXPECT_EQ(merged.Count(), whole.Count());
    EXPECT_EQ(merged.Min(), whole.Min());
    EXPECT_EQ(merged.Max(), whole.Max());
    for (double q : shmc_test::TableQuantiles()) {
      EXPECT_EQ(merged.Quantile(q), whole.Quantile(q)) << s.name << " " << q;
    }
    EXPECT_LE(WorstError(v, [&](double q) { return merged.Quantile(q); }),
              0.01)
        << s.name;
  }
}

TEST(QuantileSketch, EmptyZerosAndValuesPastTheLastPower) {
  QuantileSketch k;
  EXPECT_TRUE(std::isnan(k.Quantile(0.5)));
  EXPECT_EQ(k.Count(), 0u);
  EXPECT_EQ(k.Min(), 0u);
  k.Add(0);
  k.Add(0);
  k.Add(1000);
  EXPECT_EQ(k.Quantile(0.5), 0);
  EXPECT_NEAR(k.Quantile(1), 1000, 1000 * QuantileSketch::kMaxRelativeError);
  EXPECT_LE(k.Quantile(1), 1000);  // never past the exact maximum
  EXPECT_TRUE(std::isnan(k.Quantile(-0.1)));
  EXPECT_TRUE(std::isnan(k.Quantile(1.5)));
  EXPECT_TRUE(std::isnan(k.Quantile(std::nan(""))));
  // Past 2^44 - 1 every value is in the last bucket: its answers are
  // held between the exact minimum and maximum, no closer.
  QuantileSketch big;
  big.Add(UINT64_MAX);
  big.Add(uint64_t{1} << 50);
  EXPECT_EQ(big.Max(), UINT64_MAX);
  EXPECT_EQ(big.Quantile(0), static_cast<double>(uint64_t{1} << 50));
  EXPECT_EQ(big.Quantile(1), static_cast<double>(uint64_t{1} << 50));
}

// A bucket's count at 2^32 - 1 halves every count before the next sample:
// the ranks' proportions and every answer stay; Count stays exact.
TEST(QuantileSketch, CountsThatWouldOverflowAreHalved) {
  // Build 2^31 and 2^31 - 1 samples of 1000 by doubling, then 3 samples
  // of 10^6 (a rank far from them).
  QuantileSketch one, acc, x;
  one.Add(1000);
  x = one;
  for (int k = 0; k < 31; ++k) {
    acc.Merge(x);  // acc: 2^(k+1) - 1
    x.Merge(x);    // x: 2^(k+1)
  }
  ASSERT_EQ(acc.Count(), (uint64_t{1} << 31) - 1);
  ASSERT_EQ(x.Count(), uint64_t{1} << 31);
  x.Merge(acc);  // one bucket at exactly 2^32 - 1
  ASSERT_EQ(x.Count(), (uint64_t{1} << 32) - 1);
  x.Add(1000000);  // the bucket is full: halved first
  x.Add(1000000);
  x.Add(1000);
  EXPECT_EQ(x.Count(), (uint64_t{1} << 32) + 2);
  EXPECT_NEAR(x.Quantile(0.5), 1000, 1000 * QuantileSketch::kMaxRelativeError);
  EXPECT_NEAR(x.Quantile(1), 1000000,
              1000000 * QuantileSketch::kMaxRelativeError);
  // And through Merge: two full sketches make one with halved counts.
  QuantileSketch y = x;
  y.Merge(x);
  EXPECT_EQ(y.Count(), 2 * x.Count());
  EXPECT_NEAR(y.Quantile(0.99), 1000, 1000 * QuantileSketch::kMaxRelativeError);
}

// What the sketch replaces: QuantileEstimator, one per quantile, on a
// stream of bursts misses the 1% bar by far (the table in
// docs/percentile.md); this pins the reason the sketch exists.
TEST(QuantileSketch, QuantileEstimatorDriftsOnBurstsWhereTheSketchDoesNot) {
  const auto streams = shmc_test::LatencyStreams();
  auto it = std::find_if(streams.begin(), streams.end(),
                         [](const auto& s) { return s.name == "log-normal AR(1) 0.9"; });
  ASSERT_NE(it, streams.end());
  std::vector<uint64_t> v = it->make(kSamples, 13);
  std::vector<uint64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  shmc::QuantileEstimator p50(0.5);
  QuantileSketch k;
  for (uint64_t x : v) {
    p50.Add(static_cast<double>(x));
    k.Add(x);
  }
  double exact = static_cast<double>(shmc_test::NearestRank(sorted, 0.5));
  EXPECT_GT(std::abs(p50.Estimate() / exact - 1), 0.05);
  EXPECT_LE(std::abs(k.Quantile(0.5) / exact - 1), 0.01);
}

}  // namespace
