// Latency of a dependent load over working sets of growing size (random
// cyclic permutation of cache lines). Build: g++ -O2 pointer_chase.cc
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
#include <algorithm>
int main() {
  for (size_t bytes : {32u<<10, 256u<<10, 1u<<20, 8u<<20, 64u<<20, 512u<<20}) {
    size_t n = bytes / 64; std::vector<size_t> idx(n); for (size_t i = 0; i < n; ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), std::mt19937_64(1));
    std::vector<size_t> next(n * 8);
    for (size_t i = 0; i < n; ++i) next[idx[i] * 8] = idx[(i + 1) % n] * 8;
    size_t p = 0, steps = 20000000;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t s = 0; s < steps; ++s) p = next[p];
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / steps;
    printf("%8zu KiB: %.1f ns per dependent load (%zu)\n", bytes >> 10, ns, p & 1);
  }
}
