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

// Runs each of `bodies` (each performing `ops` operations) once per round,
// starting each round one body later, so that slow and fast periods of a
// shared machine fall on every body alike. Returns ns per op, indexed
// [body][round]; ratios are best taken within a round.
inline std::vector<std::vector<double>> Rounds(
    int rounds, size_t ops, const std::vector<std::function<void()>>& bodies) {
  std::vector<std::vector<double>> ns(bodies.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < bodies.size(); ++k) {
      size_t b = (k + static_cast<size_t>(r)) % bodies.size();
      double t0 = NowNs();
      bodies[b]();
      ns[b].push_back((NowNs() - t0) / static_cast<double>(ops));
    }
  }
  return ns;
}

}  // namespace shmc_bench
