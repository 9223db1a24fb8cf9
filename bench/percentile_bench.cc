// The percentile estimators, max-of-n (PercentileEstimator),
// distribution-free (QuantileEstimator) and the order-free QuantileSketch:
// accuracy against exact quantiles (each alone, and QuantileEstimator
// merged from 4 streams; all three on the latency streams of
// tests/support/latency_streams.h, dependent ones included), and the cost
// of Add against two baselines measured in the same run:
//   exact     - keep every sample, nth_element at the end (cost per sample
//               includes the final selection);
//   histogram - 1,920 fixed log-linear buckets (32 per power of two over
//               2^-20..2^40): increment one counter per sample.
//
//   percentile_bench [--accuracy] [--streams] [--speed] [--samples N]
//                    [--spread SEEDS]
// --streams: the latency-stream tables alone.
// --spread: the distribution-free estimator's rms and largest error over
// SEEDS draws (not part of the default run).
// Prints markdown tables (committed in docs/percentile.md and
// bench/RESULTS.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "shmc/percentile.h"
#include "shmc/quantile_sketch.h"
#include "tests/support/latency_streams.h"

namespace {

double Exact(std::vector<double> v, double p) {
  size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  if (k > 0) --k;
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

struct Dist {
  const char* name;
  std::function<double(std::mt19937_64&)> draw;
};

std::vector<Dist> Dists() {
  return {
      {"exponential", [](std::mt19937_64& r) {
         return std::exponential_distribution<double>(1.0)(r);
       }},
      {"normal(100,15)", [](std::mt19937_64& r) {
         return std::normal_distribution<double>(100, 15)(r);
       }},
      {"log-normal(0,1)", [](std::mt19937_64& r) {
         return std::lognormal_distribution<double>(0, 1)(r);
       }},
      {"pareto(a=1.5)", [](std::mt19937_64& r) {
         double u = std::uniform_real_distribution<double>(0, 1)(r);
         return std::pow(1 - u, -1.0 / 1.5);
       }},
  };
}

// Error of an estimate relative to the exact quantile of the same samples,
// per distribution and sample count, for each p: a table row per case.
// `estimate(samples, p)` returns the estimator's answer.
void AccuracyTable(
    const char* title,
    const std::function<double(const std::vector<double>&, double)>& estimate) {
  const double ps[] = {0.5, 0.9, 0.99, 0.999};
  std::printf("%s\n\n", title);
  std::printf("| distribution | samples | p50 | p90 | p99 | p99.9 |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Dist& d : Dists()) {
    for (size_t n : {size_t{10000}, size_t{100000}, size_t{1000000}}) {
      std::mt19937_64 rng(1234 + n);
      std::vector<double> all(n);
      for (double& x : all) x = d.draw(rng);
      std::printf("| %s | 10^%d |", d.name,
                  static_cast<int>(std::lround(std::log10(n))));
      for (double p : ps) {
        double exact = Exact(all, p);
        std::printf(" %+.1f%% |",
                    100.0 * (estimate(all, p) - exact) / exact);
      }
      std::printf("\n");
    }
  }
  std::printf("\n");
}

template <class E>
double Alone(const std::vector<double>& all, double p) {
  E e(p);
  for (double x : all) e.Add(x);
  return e.Estimate();
}

// Four streams (the samples dealt out in turn, as four workers would see
// them), each estimated alone, then merged.
double MergedOfFour(const std::vector<double>& all, double p) {
  std::vector<shmc::QuantileEstimator> part(4, shmc::QuantileEstimator(p));
  for (size_t i = 0; i < all.size(); ++i) part[i % 4].Add(all[i]);
  shmc::QuantileEstimator merged(p);
  for (const auto& e : part) merged.Merge(e);
  return merged.Estimate();
}

// "(group sizes n = 1, 6, 56, 561" for estimator E at p50..p99.9.
template <class E>
void PrintGroupSizes() {
  std::printf("(group sizes n =");
  for (double p : {0.5, 0.9, 0.99, 0.999}) {
    std::printf("%s %llu", p == 0.5 ? "" : ",",
                static_cast<unsigned long long>(E::GroupSize(p)));
  }
}

void Accuracy() {
  AccuracyTable("max-of-n (PercentileEstimator): mean of group maxima",
                Alone<shmc::PercentileEstimator>);
  PrintGroupSizes<shmc::PercentileEstimator>();
  std::printf(")\n\n");
  AccuracyTable("distribution-free (QuantileEstimator): the p^n quantile "
                "of group maxima", Alone<shmc::QuantileEstimator>);
  AccuracyTable("distribution-free, 4 streams merged", MergedOfFour);
  PrintGroupSizes<shmc::QuantileEstimator>();
  std::printf("; state %zu words)\n", shmc::QuantileEstimator::kWords);
}

// The distribution-free estimator's spread over seeds: per distribution,
// sample count and p, the root mean square and the largest of its errors
// against the exact quantile, over `seeds` draws (a quarter as many at
// 10^6). One seed's error (the tables above) says little at p50, where
// errors are small; this says how far a run may land.
void Spread(int seeds) {
  const double ps[] = {0.5, 0.9, 0.99, 0.999};
  std::printf("distribution-free: error over seeds, rms / largest\n\n");
  std::printf("| distribution | samples | seeds | p50 | p90 | p99 | p99.9 |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Dist& d : Dists()) {
    for (size_t n : {size_t{10000}, size_t{100000}, size_t{1000000}}) {
      int runs = n >= 1000000 ? (seeds + 3) / 4 : seeds;
      double sq[4] = {}, worst[4] = {};
      for (int seed = 0; seed < runs; ++seed) {
        std::mt19937_64 rng(7000 + 97 * seed + n);
        std::vector<double> all(n);
        for (double& x : all) x = d.draw(rng);
        for (int k = 0; k < 4; ++k) {
          double exact = Exact(all, ps[k]);
          double e = Alone<shmc::QuantileEstimator>(all, ps[k]) / exact - 1;
          sq[k] += e * e;
          worst[k] = std::max(worst[k], std::fabs(e));
        }
      }
      std::printf("| %s | 10^%d | %d |", d.name,
                  static_cast<int>(std::lround(std::log10(n))), runs);
      for (int k = 0; k < 4; ++k) {
        std::printf(" %.2f%% / %.2f%% |", 100 * std::sqrt(sq[k] / runs),
                    100 * worst[k]);
      }
      std::printf("\n");
    }
  }
  PrintGroupSizes<shmc::QuantileEstimator>();
  std::printf(")\n");
}

// Each estimator on each latency stream (10^6 samples): error at every
// quantile of the table against the stream's own. QuantileEstimator and
// PercentileEstimator need one estimator per quantile; the sketch answers
// all from one state.
void Streams() {
  const std::vector<double> qs = shmc_test::TableQuantiles();
  const auto streams = shmc_test::LatencyStreams();
  struct Row {
    std::string stream;
    std::vector<double> err[3];
  };
  std::vector<Row> rows;
  for (const auto& st : streams) {
    std::vector<uint64_t> v = st.make(1000000, 11);
    std::vector<uint64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    Row row{st.name + (st.dependent ? " (dependent)" : ""), {}};
    shmc::QuantileSketch sketch;
    for (uint64_t x : v) sketch.Add(x);
    for (double q : qs) {
      double exact = static_cast<double>(shmc_test::NearestRank(sorted, q));
      shmc::QuantileEstimator free(q);
      shmc::PercentileEstimator maxn(q);
      for (uint64_t x : v) {
        free.Add(static_cast<double>(x));
        maxn.Add(static_cast<double>(x));
      }
      row.err[0].push_back(sketch.Quantile(q) / exact - 1);
      row.err[1].push_back(free.valid() ? free.Estimate() / exact - 1 : NAN);
      row.err[2].push_back(maxn.valid() ? maxn.Estimate() / exact - 1 : NAN);
    }
    rows.push_back(row);
  }
  const char* names[3] = {
      "QuantileSketch (one state for every quantile)",
      "QuantileEstimator (one per quantile)",
      "PercentileEstimator (one per quantile)"};
  for (int e = 0; e < 3; ++e) {
    std::printf("%s, 10^6 samples: error against the sample quantile\n\n",
                names[e]);
    std::printf("| stream |");
    for (double q : qs) std::printf(" p%g |", 100 * q);
    std::printf("\n|---|");
    for (size_t i = 0; i < qs.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (const Row& r : rows) {
      std::printf("| %s |", r.stream.c_str());
      for (double x : r.err[e]) {
        if (std::isnan(x)) {
          std::printf(" - |");
        } else {
          std::printf(" %+.1f%% |", 100 * x);
        }
      }
      std::printf("\n");
    }
    std::printf("\n");
  }
}

class LogHistogram {
 public:
  static constexpr int kSub = 32, kMinExp = -20, kMaxExp = 40;
  LogHistogram() : counts_((kMaxExp - kMinExp) * kSub, 0) {}
  void Add(double x) {
    int e = 0;
    double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
    int idx;
    if (!(x > 0) || e <= kMinExp) {
      idx = 0;
    } else if (e > kMaxExp) {
      idx = static_cast<int>(counts_.size()) - 1;
    } else {
      idx = (e - kMinExp - 1) * kSub + static_cast<int>((m - 0.5) * 2 * kSub);
    }
    ++counts_[idx];
    ++total_;
  }
  double Quantile(double p) const {
    uint64_t want = static_cast<uint64_t>(std::ceil(p * total_));
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= want) {
        int e = static_cast<int>(i) / kSub + kMinExp + 1;
        double m = 0.5 + (static_cast<double>(i % kSub) + 0.5) / (2 * kSub);
        return std::ldexp(m, e);
      }
    }
    return 0;
  }

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
};

double NsPer(const std::function<double()>& body, size_t n) {
  auto t0 = std::chrono::steady_clock::now();
  volatile double sink = body();
  (void)sink;
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

void Speed(size_t n) {
  std::mt19937_64 rng(99);
  std::vector<double> samples(n);
  for (double& x : samples) x = std::exponential_distribution<double>(1)(rng);
  // The same samples as microseconds in nanoseconds, for the sketch.
  std::vector<uint64_t> ns(n);
  for (size_t i = 0; i < n; ++i) ns[i] = shmc_test::Ns(samples[i] * 1000);
  std::printf("| run | p | max-of-n Add ns | distribution-free Add ns | "
              "sketch Add ns | exact (store + select) ns | histogram Add ns | "
              "distribution-free / max-of-n |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (int run = 1; run <= 3; ++run) {
    for (double p : {0.5, 0.99, 0.999}) {
      double est = NsPer([&] {
        shmc::PercentileEstimator e(p);
        for (double x : samples) e.Add(x);
        return e.Estimate();
      }, n);
      double free = NsPer([&] {
        shmc::QuantileEstimator e(p);
        for (double x : samples) e.Add(x);
        return e.Estimate();
      }, n);
      double sketch = NsPer([&] {
        shmc::QuantileSketch k;
        for (uint64_t x : ns) k.Add(x);
        return k.Quantile(p);
      }, n);
      double exact = NsPer([&] {
        std::vector<double> kept;
        for (double x : samples) kept.push_back(x);
        size_t k = static_cast<size_t>(static_cast<double>(kept.size()) * p);
        std::nth_element(kept.begin(), kept.begin() + k, kept.end());
        return kept[k];
      }, n);
      double hist = NsPer([&] {
        LogHistogram h;
        for (double x : samples) h.Add(x);
        return h.Quantile(p);
      }, n);
      std::printf("| %d | %g | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx |\n",
                  run, p, est, free, sketch, exact, hist, free / est);
    }
  }
  std::printf("\n(%zu exponential samples per run)\n", n);
}

}  // namespace

int main(int argc, char** argv) {
  bool accuracy = false, speed = false, streams = false;
  int spread = 0;
  size_t n = 10000000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--accuracy")) accuracy = true;
    else if (!std::strcmp(argv[i], "--streams")) streams = true;
    else if (!std::strcmp(argv[i], "--speed")) speed = true;
    else if (!std::strcmp(argv[i], "--samples") && i + 1 < argc)
      n = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--spread") && i + 1 < argc)
      spread = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: percentile_bench [--accuracy] [--streams] "
                   "[--speed] [--samples N] [--spread SEEDS]\n");
      return 2;
    }
  }
  if (spread > 0) {
    Spread(spread);
    if (!accuracy && !speed) return 0;
  }
  if (streams && !accuracy && !speed) {
    Streams();
    return 0;
  }
  if (!accuracy && !speed) accuracy = speed = true;
  if (accuracy) Accuracy();
  if (accuracy) Streams();
  if (accuracy && speed) std::printf("\n");
  if (speed) Speed(n);
  return 0;
}
