// Core clock estimate: four dependent 1-cycle adds per iteration.
// Build: g++ -O2 clock.cc
#include <chrono>
#include <cstdio>
int main() {
  unsigned long x = 0, n = 1000000000;
  auto t0 = std::chrono::steady_clock::now();
  for (unsigned long i = 0; i < n; ++i) { asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x)); }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("%.2f GHz (dependent adds)\n", 4.0 * n / s / 1e9);
}
