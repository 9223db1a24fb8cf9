// Cost of creating a 1 GiB segment, pages reserved (docs/design.md):
// POSIX reserves with posix_fallocate, SVIPC with MADV_POPULATE_WRITE.
// Build: g++ -O2 -std=c++17 -Iinclude bench/machine/create_cost.cc
#include "shmc/shm_array.h"
#include <chrono>
#include <cstdio>
struct Page { char b[4096]; };
template <class A> double Create(const char* key) {
  A().Unlink(key);
  auto t0 = std::chrono::steady_clock::now();
  { shmc::ShmArray<Page, A> a; if (!a.InitForWrite(key, 262144)) { puts(a.last_error().message.c_str()); return -1; } }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  A().Unlink(key); return s;
}
int main() { for (int i = 0; i < 3; ++i) printf("1 GiB create: POSIX %.3f s, SVIPC %.3f s\n", Create<shmc::POSIX>("/shmc_create_probe"), Create<shmc::SVIPC>("0x5cfe0001")); }
