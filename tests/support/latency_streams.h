// Streams of latencies in nanoseconds for the quantile estimators' tests
// and their accuracy table (bench/percentile_bench.cc, docs/percentile.md):
// independent draws of several shapes, and the dependent streams real
// latency makes (bursts, regimes, a ramp, sorted input).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace shmc_test {

struct LatencyStream {
  std::string name;
  bool dependent;  // successive samples are not independent draws
  std::function<std::vector<uint64_t>(size_t n, uint64_t seed)> make;
};

inline uint64_t Ns(double v) {
  return v < 1 ? 1 : static_cast<uint64_t>(std::llround(std::min(v, 1e18)));
}

// n samples of draw(rng), in nanoseconds.
template <class Draw>
std::vector<uint64_t> Draws(size_t n, uint64_t seed, Draw draw) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> v(n);
  for (uint64_t& x : v) x = Ns(draw(rng));
  return v;
}

inline std::vector<LatencyStream> LatencyStreams() {
  using R = std::mt19937_64;
  auto lognormal = [](double median_ns, double sigma) {
    return [=](R& r) {
      return median_ns * std::exp(sigma * std::normal_distribution<>(0, 1)(r));
    };
  };
  return {
      {"Weibull(0.5), 100 us", false,
       [](size_t n, uint64_t s) {
         return Draws(n, s, [](R& r) {
           return std::weibull_distribution<>(0.5, 1e5)(r);
         });
       }},
      {"uniform 1-10 ms", false,
       [](size_t n, uint64_t s) {
         return Draws(n, s, [](R& r) {
           return std::uniform_real_distribution<>(1e6, 1e7)(r);
         });
       }},
      {"log-normal(0,2), 100 us", false,
       [=](size_t n, uint64_t s) { return Draws(n, s, lognormal(1e5, 2)); }},
      {"bimodal 200 us / 5 ms", false,
       [](size_t n, uint64_t s) {
         return Draws(n, s, [](R& r) {
           return std::bernoulli_distribution(0.9)(r)
                      ? std::normal_distribution<>(2e5, 2e4)(r)
                      : std::normal_distribution<>(5e6, 5e5)(r);
         });
       }},
      {"half-Cauchy, 1 ms", false,
       [](size_t n, uint64_t s) {
         return Draws(n, s, [](R& r) {
           return std::abs(std::cauchy_distribution<>(0, 1e6)(r));
         });
       }},
      // Bursts: log-normal whose log follows AR(1) with correlation 0.9.
      {"log-normal AR(1) 0.9", true,
       [](size_t n, uint64_t s) {
         R r(s);
         std::normal_distribution<> z(0, 1);
         double x = 0, keep = std::sqrt(1 - 0.81);
         std::vector<uint64_t> v(n);
         for (uint64_t& o : v) {
           x = 0.9 * x + keep * z(r);
           o = Ns(1e5 * std::exp(x));
         }
         return v;
       }},
      // Regimes: 1,000 samples at 1 ms, 1,000 at 3 ms, 1,000 at 10 ms,
      // 1,000 at 30 ms, again, each sample within a few % of its level.
      {"regimes of 1,000: 1/3/10/30 ms", true,
       [=](size_t n, uint64_t s) {
         R r(s);
         const double levels[] = {1e6, 3e6, 1e7, 3e7};
         std::vector<uint64_t> v(n);
         for (size_t i = 0; i < n; ++i) {
           v[i] = Ns(lognormal(levels[(i / 1000) % 4], 0.03)(r));
         }
         return v;
       }},
      // A slow ramp from 1 ms to 10 ms.
      {"ramp 1 ms -> 10 ms", true,
       [=](size_t n, uint64_t s) {
         R r(s);
         std::vector<uint64_t> v(n);
         for (size_t i = 0; i < n; ++i) {
           double level = 1e6 + 9e6 * static_cast<double>(i) / n;
           v[i] = Ns(lognormal(level, 0.05)(r));
         }
         return v;
       }},
      {"log-normal(0,1) sorted ascending", true,
       [=](size_t n, uint64_t s) {
         auto v = Draws(n, s, lognormal(1e5, 1));
         std::sort(v.begin(), v.end());
         return v;
       }},
      {"log-normal(0,1) sorted descending", true,
       [=](size_t n, uint64_t s) {
         auto v = Draws(n, s, lognormal(1e5, 1));
         std::sort(v.rbegin(), v.rend());
         return v;
       }},
  };
}

// The sample quantile the estimators are measured against: the sample of
// rank ceil(q n) - 1 in sorted order (the nearest rank), of `sorted`.
inline uint64_t NearestRank(const std::vector<uint64_t>& sorted, double q) {
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  if (k > 0) --k;
  if (k >= sorted.size()) k = sorted.size() - 1;
  return sorted[k];
}

// The quantiles every estimator is asked for.
inline std::vector<double> TableQuantiles() {
  return {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999};
}

}  // namespace shmc_test
