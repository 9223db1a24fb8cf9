// Simulates hash-table geometries: inserts random keys until the first insert
// fails and reports usable fill, where keys live, and cache lines touched per
// hit and per miss. Used to choose ShmHashTable's geometry
// (docs/hash_table.md). Build: g++ -O2 -std=c++17 geometry_sim.cc
// Run: ./a.out [slots in all] [slots per bucket] [group]; with group G > 0
// a key's row-1 bucket is drawn from the G buckets of b0's aligned group of
// G (the "tags in one line" layout tried in docs/hash_table.md); 0 (the
// default) draws it from the whole row, as ShmHashTable does. SEED in the
// environment changes the key stream (default 42).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

static uint64_t Mix(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33; return x;
}
static uint64_t Reduce(uint32_t h, uint64_t n) { return (uint64_t(h) * n) >> 32; }
static uint64_t group = 0;
static uint64_t SecondBucket(uint64_t h, uint64_t b0, uint64_t main_buckets) {
  if (group == 0) return Reduce(uint32_t(h >> 32), main_buckets);
  uint64_t first = b0 / group * group;
  uint64_t n = std::min<uint64_t>(group, main_buckets - first);
  return first + Reduce(uint32_t(h >> 32), n);
}

struct Geo {
  int slots;                   // per bucket
  uint64_t main_buckets;       // per main row (rows 0 and 1)
  std::vector<uint64_t> over;  // overflow rows, in buckets
};

static void Run(const char* name, const Geo& g, uint64_t seed) {
  std::vector<std::vector<uint8_t>> load;
  load.emplace_back(g.main_buckets, 0);
  load.emplace_back(g.main_buckets, 0);
  for (uint64_t n : g.over) load.emplace_back(n, 0);
  std::vector<uint8_t> ovf0(g.main_buckets), ovf1(g.main_buckets);
  uint64_t total = 2 * g.main_buckets * g.slots;
  for (uint64_t n : g.over) total += n * g.slots;
  std::vector<uint64_t> per_row(load.size());
  std::mt19937_64 rng(seed);
  uint64_t keys = 0; double hit_lines = 0;
  std::vector<uint64_t> inserted;
  for (;;) {
    uint64_t h = Mix(rng());
    uint64_t b0 = Reduce(uint32_t(h), g.main_buckets), b1 = SecondBucket(h, b0, g.main_buckets);
    int row = -1; uint64_t b = 0;
    if (load[0][b0] < g.slots || load[1][b1] < g.slots) {
      row = load[0][b0] <= load[1][b1] ? 0 : 1;
      b = row == 0 ? b0 : b1;
    } else {
      ovf0[b0] = ovf1[b1] = 1;
      for (size_t r = 2; r < load.size(); ++r) {
        uint64_t br = Reduce(uint32_t(Mix(h + r * 0x9e3779b97f4a7c15ULL)), load[r].size());
        if (load[r][br] < g.slots) { row = int(r); b = br; break; }
      }
    }
    if (row < 0) break;
    load[row][b]++; per_row[row]++; keys++;
    hit_lines += row < 2 ? 1 : row;  // rows 0+1 are one parallel step
  }
  // misses: step 1 always; overflow rows only when both bits are set
  uint64_t probes = 200000; double miss_steps = 0;
  for (uint64_t i = 0; i < probes; ++i) {
    uint64_t h = Mix(rng() ^ 0x5555);
    uint64_t b0 = Reduce(uint32_t(h), g.main_buckets), b1 = SecondBucket(h, b0, g.main_buckets);
    miss_steps += 1 + ((ovf0[b0] && ovf1[b1]) ? g.over.size() : 0);
  }
  std::printf("%-28s fill %.1f%%  main %.1f%%  steps/hit %.3f  steps/miss %.3f  slots %llu  rows:",
              name, 100.0 * keys / total, 100.0 * (per_row[0] + per_row[1]) / keys,
              hit_lines / keys, miss_steps / probes, (unsigned long long)total);
  for (auto c : per_row) std::printf(" %.2f", 100.0 * c / keys);
  std::printf("\n");
}

int main(int argc, char** argv) {
  uint64_t slots = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2800000;
  int only_b = argc > 2 ? std::atoi(argv[2]) : 4;
  group = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  uint64_t seed = std::getenv("SEED") ? std::strtoull(std::getenv("SEED"), nullptr, 10) : 42;
  for (int B : {only_b}) {
    for (double main_frac : {0.7, 0.8, 0.85, 0.88, 0.9, 0.92}) {
      for (int nover : {2, 3, 4, 6, 8}) {
        for (double ratio : {0.3, 0.4, 0.5, 0.6}) {
          Geo g; g.slots = B;
          uint64_t buckets = slots / B;
          g.main_buckets = uint64_t(buckets * main_frac / 2);
          uint64_t rest = buckets - 2 * g.main_buckets;
          // overflow rows: geometric, summing to `rest`
          double sum = 0, r = 1; for (int i = 0; i < nover; ++i) { sum += r; r *= ratio; }
          r = 1; for (int i = 0; i < nover; ++i) { g.over.push_back(std::max<uint64_t>(1, uint64_t(rest * r / sum))); r *= ratio; }
          char name[64]; std::snprintf(name, sizeof(name), "B%d main%.2f over%d r%.1f", B, main_frac, nover, ratio);
          Run(name, g, seed);
        }
      }
    }
  }
}
