// How fast can a lookup be on this machine, whatever the table? The floors
// under the table and map benchmarks' goals, measured in the same rotating rounds
// as the baselines the goals name and as the library.
//
// Table (hash_table_bench's workload: 2.1M random 64-bit keys, 16-byte nodes, room for
// 2.5M, lookups in shuffled order):
//   absl find          absl::flat_hash_map<uint64_t, uint64_t> reserved to
//                      2.5M, single finds (the goals' baseline);
//   one line           the least any table can do for a hit: the key's hash
//                      names one 64-byte line of a 40 MB shared mapping (4
//                      nodes, no tags, no second choice, no overflow: a key
//                      whose line is full is left out), the four keys are
//                      compared; single lookups, nothing requested ahead;
//   one line, THP      the same in private memory with transparent huge
//                      pages (what absl's heap gets; a POSIX segment can't);
//   one line / 16      each key's line requested 16 keys ahead (FindMany's
//                      floor for a one-line layout);
//   128-byte bucket    one bucket of 8 nodes on two adjacent lines, single
//                      and 16 ahead (a bigger bucket keeps more keys with
//                      one choice);
//   two lines / 16     both of a key's two lines (two choices, as
//                      ShmHashTable has) requested 16 ahead, then compared;
//   two lines          the same, single lookups, nothing requested ahead;
//   two lines + tag words  ShmHashTable's memory pattern with bare code: a
//                      4-byte word of 1-byte tags per bucket beside the
//                      lines; both lines requested, both tag words compared,
//                      the first match's node read (what Find does); then
//                      the same reading the node through its volatile Key(),
//                      and through a node pointer, null unless the key
//                      matched, that the loop then reads (Find's caller);
//                      and that with the node chosen by ShmHashTable's
//                      branch-free arithmetic select instead of a cmov;
//   tag words, then one line  the same without the lines requested first
//                      (the node waits for its tags);
//   ShmHashTable Find, FindMany (POSIX segment, 1024 keys a call).
// Map (hash_map_bench's workload: 1M keys, 100-byte values, lookups shuffled):
//   um find            std::unordered_map<uint64_t, std::string>, find and
//                      touch the value's first and last byte (the goal's
//                      baseline, as in hash_map_bench);
//   index + value      the least a map with values outside its index can
//                      do: one line of {key, value handle} from the hash,
//                      then the value at the handle (128-byte stride,
//                      written in key order as um's heap is);
//   value in line      the value kept in a 128-byte slot named by the hash
//                      with its key (one level; a taken slot leaves the
//                      key out);
//   each read three ways (see `Read`): touched in place, copied with a
//   plain memcpy and validated, copied with 8-byte atomic loads and
//   validated;
//   ShmHashMap Find    copy-free Find into a caller buffer, and Visit.
// The tables' contents are real (every lookup compares keys and reads what
// it finds; the share of keys each floor kept is printed), but nothing else is: no
// concurrency, no growth, no fill guarantee. The medians of each round's
// ratio to the baseline are what the rows say; results: bench/RESULTS.md
// ("the floors under a lookup").
//
// Build (from the repository root; one line), then run:
//   g++ -O2 -DNDEBUG -std=c++17 -I. -Iinclude bench/machine/lookup_floor.cc
//   -o lookup_floor -labsl_hash -labsl_city -labsl_low_level_hash
//   -labsl_raw_hash_set -lrt -pthread
//   ./lookup_floor [rounds]
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bench/bench_util.h"
#include "bench/floor_layouts.h"
#include "bench/lookup_loops.h"
#include "shmc/detail/prefetch.h"
#include "shmc/hash.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"

namespace {

using shmc::detail::PrefetchLine;
using shmc::detail::ReduceRange;  // the library's range reduction
using shmc_bench::FindManyLoop;
using shmc_bench::Keep;
using shmc_bench::MapFindLoop;
using shmc_bench::MapVisitLoop;
using shmc_bench::UmFindLoop;
using shmc_bench::Median;

using shmc_bench::Bucket;
using shmc_bench::Buckets;
using shmc_bench::kAhead;
using shmc_bench::Lines;
using shmc_bench::Map;
using shmc_bench::MemoryKind;
using shmc_bench::Node;
using shmc_bench::Scan;

using shmc_bench::IndexValueFloor;
using shmc_bench::kTouch;
using shmc_bench::kValueBytes;
using shmc_bench::kVector;
using shmc_bench::kWords;
using shmc_bench::Read;
using shmc_bench::ReadValue;
using shmc_bench::Value;
using shmc_bench::WriteValue;

template <Read kRead>
using ReadKind = std::integral_constant<Read, kRead>;

struct Way {
  const char* name;
  std::function<void()> body;
};

// Runs `ways` in rotating rounds of `ops` lookups each and prints, per way,
// the median ns per lookup and the median and range of its ratio to way 0
// (baseline time / way's time: above 1 is faster than the baseline).
void Report(const char* title, const std::vector<Way>& ways, size_t ops,
            int rounds) {
  std::vector<std::function<void()>> bodies;
  for (const Way& w : ways) bodies.push_back(w.body);
  std::vector<std::vector<double>> ns =
      shmc_bench::Rounds(rounds, ops, bodies);
  std::printf("\n%s, %d rounds\n| way | ns (median) | x %s (median) | "
              "range |\n|---|---:|---:|---:|\n",
              title, rounds, ways[0].name);
  for (size_t w = 0; w < ways.size(); ++w) {
    shmc_bench::Spread ratio = shmc_bench::RoundRatios(ns[0], ns[w]);
    std::printf("| %s | %.1f | %.2f | %.2f-%.2f |\n", ways[w].name,
                Median(ns[w]), ratio.median, ratio.min, ratio.max);
  }
}

std::vector<uint64_t> RandomKeys(size_t n, std::mt19937_64* rng) {
  std::vector<uint64_t> keys(n);
  for (uint64_t& k : keys) k = (*rng)() | 1;
  return keys;
}

std::vector<uint64_t> Shuffled(std::vector<uint64_t> v, std::mt19937_64* rng) {
  std::shuffle(v.begin(), v.end(), *rng);
  return v;
}

void TableFloors(int rounds) {
  const size_t nkeys = 2100000, capacity = 2500000;
  std::mt19937_64 rng(1);
  const std::vector<uint64_t> keys = RandomKeys(nkeys, &rng);
  const std::vector<uint64_t> lookups = Shuffled(keys, &rng);

  absl::flat_hash_map<uint64_t, uint64_t> absl_map;
  absl_map.reserve(capacity);
  for (uint64_t k : keys) absl_map.emplace(k, k);
  Lines one(capacity, MemoryKind::kShared);
  Lines one_thp(capacity, MemoryKind::kThp);
  Lines two(capacity, MemoryKind::kShared);
  Buckets<8> wide(capacity, MemoryKind::kShared);
  size_t in_one = 0, in_two = 0, in_wide = 0;
  for (uint64_t k : keys) {
    in_one += one.Insert(k, k, false);
    one_thp.Insert(k, k, false);
    in_two += two.Insert(k, k, true);
    in_wide += wide.Insert(k, k, false);
  }
  const char* seg = "/shmc_lookup_floor";
  shmc::POSIX().Unlink(seg);
  auto table =
      std::make_unique<shmc::ShmHashTable<uint64_t, Node, shmc::POSIX>>();
  if (!table->InitForWrite(seg, capacity)) {
    std::fprintf(stderr, "lookup_floor: %s\n",
                 table->last_error().message.c_str());
    std::exit(1);
  }
  for (uint64_t k : keys) {
    bool found;
    volatile Node* n = table->FindOrAlloc(k, &found);
    n->key = k;
    n->val = k;
  }
  const auto& t = *table;
  std::printf("table: %zu keys, room for %zu; keys kept (the rest left "
              "out) by one line %.1f%%, two lines %.1f%%, one 128-byte "
              "bucket %.1f%%\n",
              nkeys, capacity, 100.0 * in_one / nkeys, 100.0 * in_two / nkeys,
              100.0 * in_wide / nkeys);

  // ShmHashTable's memory pattern with none of its code: one 4-byte word
  // of 1-byte tags per bucket of `two` (the library's tag function), both
  // lines requested, both tag words compared, the first match's node read.
  auto* tag_words = static_cast<uint32_t*>(
      Map(two.size() * sizeof(uint32_t), MemoryKind::kShared));
  for (uint64_t b = 0; b < two.size(); ++b) {
    for (uint32_t s = 0; s < 4; ++s) {
      uint64_t key = two.At(b).node[s].key;
      if (key != 0) {
        tag_words[b] |= shmc::detail::TagOf(shmc::Mix64(key)) << (8 * s);
      }
    }
  }
  // kRead: 0 compares the key in place and adds its value; 1 does it
  // through the node's volatile Key(); 2 as 1, through a node pointer that
  // is null unless the key matched (what a caller of Find does); 3 as 2,
  // the node chosen as ShmHashTable::Candidate chooses it.
  auto tagged = [&](bool lines, auto read) {
    constexpr int kRead = decltype(read)::value;
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      uint64_t h = shmc::Mix64(k);
      const Bucket<4>& b0 = two.First(h);
      const Bucket<4>& b1 = two.Second(h);
      if (lines) {
        PrefetchLine(&b0);
        PrefetchLine(&b1);
      }
      uint64_t pair = tag_words[&b0 - &two.At(0)] |
                      uint64_t{tag_words[&b1 - &two.At(0)]} << 32;
      uint32_t m = shmc::detail::MatchTagPair(pair, shmc::detail::TagOf(h));
      uint32_t first = static_cast<uint32_t>(__builtin_ctz(m | 0x80u));
      const volatile Node* np = &(first < 4 ? b0 : b1).node[first & 3];
      if constexpr (kRead == 3) {
        uintptr_t a0 = reinterpret_cast<uintptr_t>(&b0);
        uintptr_t a1 = reinterpret_cast<uintptr_t>(&b1);
        uintptr_t pick1 = 0 - static_cast<uintptr_t>(first >> 2);
        asm("" : "+r"(pick1));
        np = reinterpret_cast<const volatile Node*>(
            (a0 ^ ((a0 ^ a1) & pick1)) + (first & 3) * sizeof(Node));
      }
      const volatile Node& n = *np;
      if constexpr (kRead == 0) {
        const Node& plain = const_cast<const Node&>(n);
        sum += plain.key == k ? plain.val : 0;
      } else if constexpr (kRead == 1) {
        auto kv = n.Key();
        sum += kv.first && kv.second == k ? n.val : 0;
      } else {
        auto kv = n.Key();
        const volatile Node* r = kv.first && kv.second == k ? &n : nullptr;
        sum += r ? r->val : 0;
      }
    }
    Keep(sum);
  };
  auto single = [&](const auto& buckets) {
    shmc_bench::OneBucketLoop(buckets, lookups);
  };
  // Each key's bucket (all its lines) requested kAhead keys before use.
  auto ahead = [&](const auto& buckets) {
    using B = std::remove_reference_t<decltype(buckets.First(0))>;
    uint64_t sum = 0;
    const B* ring[kAhead];
    auto request = [&](size_t slot, uint64_t key) {
      ring[slot] = &buckets.First(shmc::Mix64(key));
      for (size_t off = 0; off < sizeof(B); off += 64)
        PrefetchLine(reinterpret_cast<const char*>(ring[slot]) + off);
    };
    for (size_t i = 0; i < kAhead; ++i) request(i, lookups[i]);
    for (size_t i = 0; i < lookups.size(); ++i) {
      const B* b = ring[i % kAhead];
      if (i + kAhead < lookups.size()) request(i % kAhead, lookups[i + kAhead]);
      sum += Scan(*b, lookups[i]);
    }
    Keep(sum);
  };
  std::vector<const volatile Node*> out(1024);
  std::vector<Way> ways = {
      {"absl find", [&] { shmc_bench::U64FindLoop(absl_map, lookups); }},
      {"one line", [&] { single(one); }},
      {"one line, THP", [&] { single(one_thp); }},
      {"one line / 16", [&] { ahead(one); }},
      {"128-byte bucket", [&] { single(wide); }},
      {"128-byte bucket / 16", [&] { ahead(wide); }},
      {"two lines / 16",
       [&] { shmc_bench::TwoLinesAheadLoop(two, lookups); }},
      {"two lines",
       [&] {
         uint64_t sum = 0;
         for (uint64_t k : lookups) {
           uint64_t h = shmc::Mix64(k);
           sum += Scan(two.First(h), k) + Scan(two.Second(h), k);
         }
         Keep(sum);
       }},
      {"two lines + tag words",
       [&] { tagged(true, std::integral_constant<int, 0>()); }},
      {"  the same, through Key()",
       [&] { tagged(true, std::integral_constant<int, 1>()); }},
      {"  the same, through a node pointer",
       [&] { tagged(true, std::integral_constant<int, 2>()); }},
      {"  the same, arithmetic select",
       [&] { tagged(true, std::integral_constant<int, 3>()); }},
      {"tag words, then one line",
       [&] { tagged(false, std::integral_constant<int, 0>()); }},
      {"ShmHashTable Find", [&] { shmc_bench::TableFindLoop(t, lookups); }},
      {"ShmHashTable FindMany", [&] { FindManyLoop(t, lookups, &out); }},
  };
  Report("hits, ns per lookup", ways, lookups.size(), rounds);
  table.reset();
  shmc::POSIX().Unlink(seg);
}

void MapFloors(int rounds) {
  const size_t nkeys = 1000000, slots = nkeys * 5 / 4;
  std::mt19937_64 rng(1);
  const std::vector<uint64_t> keys = RandomKeys(nkeys, &rng);
  const std::vector<uint64_t> lookups = Shuffled(keys, &rng);
  const std::string value(kValueBytes, 'v');

  std::unordered_map<uint64_t, std::string> um;
  um.reserve(nkeys);
  for (uint64_t k : keys) um.emplace(k, value);

  // Index + value: handles in the nodes' val, values in key order.
  IndexValueFloor by_index_floor(keys, value);
  size_t kept_by_index = by_index_floor.kept();
  // Value in line: one 128-byte slot per hash, 1.25 slots per key.
  auto* inline_slots =
      static_cast<Value*>(Map(slots * sizeof(Value), MemoryKind::kShared));
  size_t kept_in_line = 0;
  for (size_t i = 0; i < nkeys; ++i) {
    uint64_t h = shmc::Mix64(keys[i]);
    Value& slot = inline_slots[ReduceRange(static_cast<uint32_t>(h), slots)];
    if (slot.key == 0) {
      WriteValue(&slot, keys[i], value);
      ++kept_in_line;
    }
  }

  const char* seg = "/shmc_lookup_floor_map";
  shmc::POSIX().Unlink(std::string(seg) + "0");
  shmc::POSIX().Unlink(std::string(seg) + "1");
  auto map = std::make_unique<shmc::ShmHashMap<uint64_t, shmc::POSIX>>();
  if (!map->InitForWrite(seg, slots, (kValueBytes + 7) / 8 * 8, slots)) {
    std::fprintf(stderr, "lookup_floor: %s\n",
                 map->last_error().message.c_str());
    std::exit(1);
  }
  for (uint64_t k : keys) map->Replace(k, value);
  const auto& m = *map;
  std::printf("\nmap: %zu keys, %zu-byte values; keys kept by the "
              "index + value floor %.1f%%, by the value-in-line floor %.1f%%\n",
              nkeys, kValueBytes, 100.0 * kept_by_index / nkeys,
              100.0 * kept_in_line / nkeys);

  char buf[128];
  // A floor's lookup loop: find each key's value, read it as `kind` says.
  auto by_index = [&](auto kind) {
    return [&, kind] { by_index_floor.Loop<kind.value>(lookups); };
  };
  auto in_line = [&](auto kind) {
    return [&, kind] {
      uint64_t sum = 0;
      for (uint64_t k : lookups) {
        const Value& v =
            inline_slots[ReduceRange(static_cast<uint32_t>(shmc::Mix64(k)), slots)];
        if (v.key == k) sum += ReadValue<kind.value>(v, buf);
      }
      Keep(sum);
    };
  };
  std::vector<Way> ways = {
      {"um find", [&] { UmFindLoop(um, lookups); }},
      {"index + value, touched", by_index(ReadKind<kTouch>())},
      {"index + value, vector copy", by_index(ReadKind<kVector>())},
      {"index + value, word copy", by_index(ReadKind<kWords>())},
      {"value in line, touched", in_line(ReadKind<kTouch>())},
      {"value in line, vector copy", in_line(ReadKind<kVector>())},
      {"value in line, word copy", in_line(ReadKind<kWords>())},
      {"ShmHashMap Find", [&] { MapFindLoop(m, lookups, buf, sizeof(buf)); }},
      {"ShmHashMap Visit", [&] { MapVisitLoop(m, lookups); }},
  };
  Report("finds of 100-byte values, ns per lookup", ways, lookups.size(),
         rounds);
  map.reset();
  shmc::POSIX().Unlink(std::string(seg) + "0");
  shmc::POSIX().Unlink(std::string(seg) + "1");
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  if (rounds < 1 || argc > 2) {
    std::fprintf(stderr, "usage: %s [rounds]\n", argv[0]);
    return 2;
  }
  TableFloors(rounds);
  MapFloors(rounds);
  return 0;
}
