// Timing helpers shared by the comparative benchmarks in bench/.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

namespace shmc_bench {

// Keeps the optimizer from deleting the computation of `v`.
template <class T>
inline void Keep(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}

inline double NowNs() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Best-of-reps ns per op of `body`, which performs `ops` operations; `setup`
// (if any) runs untimed before each repetition.
inline double Measure(int reps, size_t ops,
                      const std::function<void()>& setup,
                      const std::function<void()>& body) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    if (setup) setup();
    double t0 = NowNs();
    body();
    best = std::min(best, (NowNs() - t0) / static_cast<double>(ops));
  }
  return best;
}

inline double Measure(int reps, size_t ops,
                      const std::function<void()>& body) {
  return Measure(reps, ops, nullptr, body);
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Calls measure(k) for every k < count once per round, starting each round
// one k later, so that slow and fast periods of a shared machine fall on
// every k alike. Returns what measure returned, indexed [k][round]; ratios
// are best taken within a round (RoundRatios).
template <class F>
std::vector<std::vector<double>> RotatingRounds(int rounds, size_t count,
                                                F&& measure) {
  std::vector<std::vector<double>> got(count);
  for (int r = 0; r < rounds; ++r) {
    for (size_t j = 0; j < count; ++j) {
      size_t k = (j + static_cast<size_t>(r)) % count;
      got[k].push_back(measure(k));
    }
  }
  return got;
}

// Runs each of `bodies` (each performing `ops` operations) once per round,
// in rotating order; returns ns per op, indexed [body][round].
inline std::vector<std::vector<double>> Rounds(
    int rounds, size_t ops, const std::vector<std::function<void()>>& bodies) {
  return RotatingRounds(rounds, bodies.size(), [&](size_t b) {
    double t0 = NowNs();
    bodies[b]();
    return (NowNs() - t0) / static_cast<double>(ops);
  });
}

struct Spread {
  double median, min, max;
};

// The median and range of each round's own ratio num[r] / den[r].
inline Spread RoundRatios(const std::vector<double>& num,
                          const std::vector<double>& den) {
  std::vector<double> r;
  for (size_t i = 0; i < num.size() && i < den.size(); ++i) {
    r.push_back(num[i] / den[i]);
  }
  if (r.empty()) return {0, 0, 0};
  auto mm = std::minmax_element(r.begin(), r.end());
  return {Median(r), *mm.first, *mm.second};
}

}  // namespace shmc_bench
