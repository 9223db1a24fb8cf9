// Timing helpers shared by the comparative benchmarks in bench/.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>

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

}  // namespace shmc_bench
