// Where FindMany's time goes: hash_table_bench's table (2.1M random keys, capacity
// 2.5M, 16-byte nodes, POSIX segment, lookups shuffled) timed through the
// public pipeline steps, one stage added at a time, beside the same node
// lines touched with no table logic. Every figure is ns per key, best of
// three rounds. Results: docs/hash_table.md.
//   stage 1        PrefetchTags only (hash, request two tag words)
//   stages 1+2     + PrefetchCandidate kStage keys later (tags compared,
//                  the candidate node requested; nothing waits for it)
//   FindMany       all three stages (FindCandidate reads the node)
//   node lines     the same nodes (addresses found beforehand), each
//                  requested kStage keys ahead, then its key read
// Build (from the repository root), one line:
//   g++ -O2 -DNDEBUG -std=c++17 -I. -Iinclude bench/machine/findmany_parts.cc
//   -lrt -pthread
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "bench/lookup_loops.h"
#include "shmc/detail/prefetch.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_hash_table.h"

namespace {

using shmc_bench::Node;
using Table = shmc::ShmHashTable<uint64_t, Node, shmc::POSIX>;
using shmc_bench::Measure;  // best of 3 rounds, ns per key

}  // namespace

int main() {
  const char* seg = "/shmc_findmany_parts";
  shmc::POSIX().Unlink(seg);
  Table t;
  if (!t.InitForWrite(seg, 2500000)) {
    std::fprintf(stderr, "%s\n", t.last_error().message.c_str());
    return 1;
  }
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(2100000);
  for (uint64_t& k : keys) {
    k = rng() | 1;
    bool found;
    volatile Node* n = t.FindOrAlloc(k, &found);
    if (n == nullptr) return 1;
    n->key = k;
    n->val = k;
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  const Table& ct = t;
  std::vector<const volatile Node*> nodes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) nodes[i] = ct.Find(keys[i]);

  const size_t n = keys.size();
  constexpr size_t kAhead = 16, kRing = 64;
  uint64_t sink = 0;
  double s1 = Measure(3, n, [&] {
    for (size_t j = 0; j < n; ++j) sink += t.PrefetchTags(keys[j]);
  });
  double s12 = Measure(3, n, [&] {
    uint64_t h[kRing];
    for (size_t j = 0; j < n + kAhead; ++j) {
      if (j < n) h[j % kRing] = t.PrefetchTags(keys[j]);
      if (j >= kAhead) {
        sink += reinterpret_cast<uintptr_t>(
            t.PrefetchCandidate(h[(j - kAhead) % kRing]));
      }
    }
  });
  std::vector<const volatile Node*> out(1024);
  double many = Measure(3, n, [&] {
    for (size_t i = 0; i < n; i += out.size()) {
      sink += t.FindMany(&keys[i], std::min(out.size(), n - i), out.data());
    }
  });
  double lines = Measure(3, n, [&] {
    for (size_t j = 0; j < n; ++j) {
      if (j + kAhead < n) {
        shmc::detail::PrefetchLine(const_cast<const Node*>(nodes[j + kAhead]));
      }
      sink += nodes[j]->key;
    }
  });
  std::printf("stage 1 %.1f | stages 1+2 %.1f | FindMany %.1f | node lines "
              "%.1f ns/key (%llu)\n",
              s1, s12, many, lines, static_cast<unsigned long long>(sink & 1));
  shmc::POSIX().Unlink(seg);
  return 0;
}
