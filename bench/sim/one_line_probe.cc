// Prototype (not the library): how fast can a single hit be on this machine
// if it touches one cache line? 64-byte lines holding a tag word and three
// 16-byte nodes, one home line per key (no second choice), linear probing
// to the next line when full; a lookup matches the home line's tags with
// SWAR, verifies the node, and stops at a line with a free slot. Measured
// against absl::flat_hash_map in the same process, on hash_table_bench's workload
// (single finds; and batched: each home line requested 16 keys ahead)
// (2.1M random keys, sized for 2.5M, lookups shuffled). Segment-like memory:
// MAP_SHARED anonymous, 4 KiB pages. Results: docs/hash_table.md.
// Build (from the repository root), one line:
//   g++ -O2 -DNDEBUG -std=c++17 -Iinclude bench/sim/one_line_probe.cc
//   -labsl_hash -labsl_city -labsl_low_level_hash -labsl_raw_hash_set
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "shmc/hash.h"

namespace {

struct Node {
  uint64_t key;
  uint64_t val;
};
struct alignas(64) Line {
  uint8_t tag[4];  // tag of slot i, 0 = free; byte 3 unused
  uint8_t unused[12];
  Node node[3];
};
static_assert(sizeof(Line) == 64, "one line");

// Bytes of a 3-byte tag word equal to zero / to t: bit 7 of each such byte.
uint32_t ZeroBytes(uint32_t w) { return (w - 0x010101u) & ~w & 0x808080u; }

class OneLineTable {
 public:
  explicit OneLineTable(uint64_t slots) : lines_n_((slots + 2) / 3) {
    void* p = mmap(nullptr, lines_n_ * sizeof(Line), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    lines_ = static_cast<Line*>(p == MAP_FAILED ? nullptr : p);
  }
  bool ok() const { return lines_ != nullptr; }
  bool Insert(uint64_t key, uint64_t val) {
    uint64_t h = shmc::Mix64(key);
    uint64_t l = Home(h);
    for (uint64_t probes = 0; probes < lines_n_; ++probes) {
      Line& line = lines_[l];
      for (int s = 0; s < 3; ++s) {
        if (line.tag[s] == 0) {
          line.tag[s] = Tag(h);
          line.node[s] = Node{key, val};
          return true;
        }
      }
      l = l + 1 == lines_n_ ? 0 : l + 1;
    }
    return false;
  }
  const Node* Find(uint64_t key) const { return Find(key, shmc::Mix64(key)); }
  // Batched lookups: request the key's home line, find it some keys later.
  void Prefetch(uint64_t h) const { __builtin_prefetch(&lines_[Home(h)]); }
  const Node* Find(uint64_t key, uint64_t h) const {
    uint32_t t = Tag(h);
    for (uint64_t l = Home(h);; l = l + 1 == lines_n_ ? 0 : l + 1) {
      const Line& line = lines_[l];
      uint32_t w = 0;
      std::memcpy(&w, line.tag, 4);
      w &= 0xffffffu;
      for (uint32_t m = ZeroBytes(w ^ (t * 0x010101u)); m != 0; m &= m - 1) {
        const Node* n = &line.node[__builtin_ctz(m) / 8];
        if (n->key == key) return n;
      }
      if (ZeroBytes(w) != 0) return nullptr;  // a free slot ends the run
    }
  }

 private:
  static uint8_t Tag(uint64_t h) {
    uint8_t t = static_cast<uint8_t>(h >> 56);
    return static_cast<uint8_t>(t + (t == 0));
  }
  uint64_t Home(uint64_t h) const { return ((h & 0xffffffffu) * lines_n_) >> 32; }

  uint64_t lines_n_;
  Line* lines_;
};


}  // namespace

int main() {
  const size_t nkeys = 2100000, capacity = 2500000;
  std::mt19937_64 rng(12345);
  std::vector<uint64_t> keys(nkeys), absent(nkeys);
  for (auto& k : keys) k = rng() | 1;
  for (auto& k : absent) k = (rng() & ~1ULL) | 2;
  std::vector<uint64_t> lookups = keys;
  std::shuffle(lookups.begin(), lookups.end(), rng);

  OneLineTable table(capacity * 10 / 9);  // ShmHashTable's slot count
  if (!table.ok()) return 1;
  for (uint64_t k : keys) {
    if (!table.Insert(k, k)) return 1;
  }
  absl::flat_hash_map<uint64_t, uint64_t> absl_map;
  absl_map.reserve(capacity);
  for (uint64_t k : keys) absl_map.emplace(k, k);

  auto time_ns = [&](auto&& body) {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t sum = body();
    double ns = std::chrono::duration<double, std::nano>(
                    std::chrono::steady_clock::now() - t0)
                    .count() / nkeys;
    if (sum == 42) std::puts("");
    return ns;
  };
  for (int round = 0; round < 5; ++round) {
    double one = time_ns([&] {
      uint64_t s = 0;
      for (uint64_t k : lookups) {
        const Node* n = table.Find(k);
        s += n ? n->val : 0;
      }
      return s;
    });
    double ab = time_ns([&] {
      uint64_t s = 0;
      for (uint64_t k : lookups) {
        auto it = absl_map.find(k);
        s += it == absl_map.end() ? 0 : it->second;
      }
      return s;
    });
    double many = time_ns([&] {
      constexpr size_t kAhead = 16;  // a power of two
      uint64_t hashes[kAhead];
      uint64_t s = 0;
      size_t n = lookups.size();
      for (size_t j = 0; j < n + kAhead; ++j) {
        if (j >= kAhead) {
          size_t i = j - kAhead;
          const Node* node = table.Find(lookups[i], hashes[i % kAhead]);
          s += node ? node->val : 0;
        }
        if (j < n) {
          hashes[j % kAhead] = shmc::Mix64(lookups[j]);
          table.Prefetch(hashes[j % kAhead]);
        }
      }
      return s;
    });
    double miss = time_ns([&] {
      uint64_t s = 0;
      for (uint64_t k : absent) s += table.Find(k) != nullptr;
      return s;
    });
    std::printf("one-line hit %.1f ns, absl hit %.1f ns: %.2fx absl; "
                "one-line batched hit %.1f ns: %.2fx absl's single hit; "
                "one-line miss %.1f ns\n", one, ab, ab / one, many, ab / many,
                miss);
  }
  return 0;
}
