// Throughput floor of batched lookups: cost per key of touching one or two
// random cache lines of a 48 MiB region, each requested D keys ahead with a
// prefetch and then loaded (no table logic at all). The third case pairs a
// random line with one from a 2 MiB region, like a tag array beside nodes.
// Build: g++ -O2 random_lines.cc; run: ./a.out [1: madvise hugepages]
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

static inline void Prefetch(const void* p) {
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
}

int main(int argc, char** argv) {
  const size_t bytes = size_t{48} << 20;
  const bool huge = argc > 1 && std::atoi(argv[1]) != 0;
  auto* mem = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mem == MAP_FAILED) return 1;
  if (huge) madvise(mem, bytes, MADV_HUGEPAGE);
  std::memset(mem, 1, bytes);
  const size_t lines = bytes / 64, n = 2000000;
  const uint64_t small_mask = (uint64_t{2} << 20) - 64;
  std::mt19937_64 rng(1);
  std::vector<uint64_t> a(n), b(n);
  for (auto& x : a) x = rng() % lines * 64;
  for (auto& x : b) x = rng() % lines * 64;
  const char* names[] = {"one line", "two lines", "one line + one in 2 MiB"};
  for (size_t ahead : {8, 16, 32}) {
    for (int mode = 0; mode < 3; ++mode) {
      auto second = [&](size_t i) {
        return mode == 1 ? b[i] : (b[i] & small_mask);
      };
      double best = 1e18;
      uint64_t sum = 0;
      for (int rep = 0; rep < 3; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        for (size_t i = 0; i < n; ++i) {
          if (i + ahead < n) {
            Prefetch(mem + a[i + ahead]);
            if (mode != 0) Prefetch(mem + second(i + ahead));
          }
          sum += static_cast<unsigned char>(mem[a[i]]);
          if (mode != 0) sum += static_cast<unsigned char>(mem[second(i)]);
        }
        double ns = std::chrono::duration<double, std::nano>(
                        std::chrono::steady_clock::now() - t0)
                        .count() / n;
        if (ns < best) best = ns;
      }
      std::printf("hugepages %d, %2zu ahead, %-24s %5.1f ns/key (%llu)\n",
                  huge, ahead, names[mode], best,
                  static_cast<unsigned long long>(sum & 1));
    }
  }
  munmap(mem, bytes);
  return 0;
}
