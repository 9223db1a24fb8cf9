// How much a lookup loop's speed depends on its instruction count, not its
// misses: std::unordered_map<uint64_t, std::string> find + copy of a
// 100-byte value over 1M shuffled keys, with N register-only instructions
// (four independent add chains, kept by inline asm) added to each
// iteration. Independent lookups overlap only as far as the core's
// out-of-order window reaches, so if the time per lookup grows with N
// long before N adds could cost that much themselves, a lookup with more
// instructions (ShmHashMap::Find) loses to one with fewer for that reason.
// Build (from the repository root): g++ -O2 -std=c++17 -I.
// bench/machine/window_pad.cc; run: ./a.out [rounds]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/bench_util.h"

namespace {

using Map = std::unordered_map<uint64_t, std::string>;

template <int N>
inline void Pad(uint64_t* x) {
  uint64_t a = *x, b = a + 1, c = a + 2, d = a + 3;
#pragma GCC unroll 512
  for (int i = 0; i < N / 4; ++i) {
    asm volatile("add $1, %0\n\tadd $1, %1\n\tadd $1, %2\n\tadd $1, %3"
                 : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  }
  *x = a ^ b ^ c ^ d;
}

// ns per lookup with N added instructions.
template <int N>
double Run(const Map& m, const std::vector<uint64_t>& keys) {
  char buf[256];
  uint64_t sum = 0, x = 0;
  double t0 = shmc_bench::NowNs();
  for (uint64_t k : keys) {
    const std::string& s = m.find(k)->second;
    std::memcpy(buf, s.data(), s.size());
    sum += static_cast<unsigned char>(buf[0]);
    Pad<N>(&x);
  }
  double ns = (shmc_bench::NowNs() - t0) / static_cast<double>(keys.size());
  shmc_bench::Keep(sum);
  shmc_bench::Keep(x);
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const size_t n = 1000000;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> keys(n);
  Map m;
  m.reserve(n * 5 / 4);
  for (auto& k : keys) {
    k = rng() | 1;
    m[k] = std::string(100, 'v');
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  std::printf("ns per find + copy, by instructions added per lookup\n");
  std::printf("| round | +0 | +50 | +100 | +200 | +500 |\n|---|---:|---:|---:|---:|---:|\n");
  for (int r = 0; r < rounds; ++r) {
    std::printf("| %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", r + 1,
                Run<0>(m, keys), Run<50>(m, keys), Run<100>(m, keys),
                Run<200>(m, keys), Run<500>(m, keys));
  }
  return 0;
}
