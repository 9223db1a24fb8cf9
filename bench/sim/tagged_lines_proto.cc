// Prototype of the "tagged line" layout measured in docs/hash_table.md (not
// the library): 64-byte buckets holding a tag word (one byte per slot: 7 hash
// bits + in-use) and three 16-byte nodes; two-choice placement; lookups match
// the two tag words with SWAR and verify one node. Optional look-ahead
// prefetch of 16 keys. Run: ./a.out (4 KiB pages) or ./a.out huge (needs
// free hugepages). Build: g++ -O2 -std=c++17 -Iinclude tagged_lines_proto.cc
#include "shmc/hash.h"
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include <algorithm>
#include <sys/mman.h>
struct Node { uint64_t key; uint64_t val; };
struct alignas(64) Bucket { uint64_t tags; uint64_t pad; Node n[3]; };
static inline uint64_t Match(uint64_t w, uint64_t tag) {
  uint64_t x = w ^ (tag * 0x0101010101010101ULL);
  return (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
}
int main(int argc, char** argv) {
  bool huge = argc > 1;
  const size_t nkeys = 2100000; const uint64_t slots = 2800000; const uint64_t nb = slots / 3 / 2;
  size_t bytes = (2 * nb * sizeof(Bucket) + (2 << 20)) & ~size_t((2 << 20) - 1);
  Bucket* b = (Bucket*)mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : 0), -1, 0);
  if (b == MAP_FAILED) { perror("mmap"); return 1; }
  memset(b, 0, bytes);
  std::vector<uint64_t> keys(nkeys); std::mt19937_64 rng(1); for (auto& k : keys) k = rng() | 1;
  size_t placed = 0;
  for (auto k : keys) { uint64_t h = shmc::Mix64(k); uint64_t tag = 0x80 | (h & 0x7f);
    Bucket* b0 = &b[((h & 0xffffffff) * nb) >> 32]; Bucket* b1 = &b[nb + (((h >> 32) * nb) >> 32)];
    int u0 = __builtin_popcountll(b0->tags & 0x808080), u1 = __builtin_popcountll(b1->tags & 0x808080);
    Bucket* t = u0 <= u1 ? b0 : b1; if ((u0 <= u1 ? u0 : u1) >= 3) continue;
    for (int i = 0; i < 3; ++i) if (!((t->tags >> (8 * i)) & 0x80)) { t->tags |= tag << (8 * i); t->n[i] = {k, k}; ++placed; break; } }
  std::shuffle(keys.begin(), keys.end(), rng);
  for (int rep = 0; rep < 3; ++rep) {
    uint64_t sum = 0; auto t0 = std::chrono::steady_clock::now();
    for (size_t j = 0; j < keys.size(); ++j) { uint64_t k = keys[j];
      if (j + 16 < keys.size()) { uint64_t hh = shmc::Mix64(keys[j + 16]);
        asm volatile("prefetcht0 %0" : : "m"(b[((hh & 0xffffffff) * nb) >> 32]));
        asm volatile("prefetcht0 %0" : : "m"(b[nb + (((hh >> 32) * nb) >> 32)])); }
      uint64_t h = shmc::Mix64(k); uint64_t tag = 0x80 | (h & 0x7f);
      const volatile Bucket* b0 = &b[((h & 0xffffffff) * nb) >> 32]; const volatile Bucket* b1 = &b[nb + (((h >> 32) * nb) >> 32)];
      uint64_t m0 = Match(b0->tags, tag), m1 = Match(b1->tags, tag);
      uint64_t pick1 = -uint64_t(m0 == 0); asm("" : "+r"(pick1));
      uintptr_t base = (uintptr_t)b0 ^ (((uintptr_t)b0 ^ (uintptr_t)b1) & pick1);
      uint64_t m = (m0 | m1);
      const volatile Node* n = &((const volatile Bucket*)base)->n[__builtin_ctzll(m | (1ULL << 63)) >> 3];
      if (m && n->key == k) sum += n->val; }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / nkeys;
    printf("%s tagged lines + prefetch: %.1f ns/hit (placed %zu, sum %lu)\n", huge ? "huge" : "4K", ns, placed, sum & 1);
  }
}
