// hash_table_bench: ShmHashTable against absl::flat_hash_map and
// std::unordered_map (the baselines), ShmHashTableM and a model of the
// reference's multi-row design, on the same keys in the same run; and the
// floors of the goals (bench/floor_layouts.h), also in the same run: one
// line named by the hash with its 4 keys compared (Find's floor), and two
// lines requested 16 keys ahead (FindMany's), in the same kind of memory
// as the table (shared 4 KiB pages, or hugetlb pages with --huge).
//
//   hash_table_bench [--keys N] [--capacity C] [--reps R] [--rounds R]
//                    [--huge] [--no-models]
//
// Workload: N random 64-bit keys, 16-byte nodes, a table sized for
// C, lookups in shuffled order. Each figure of the table is the best of R
// repetitions in ns/op; ratios are baseline_time / shmc_time (higher is
// better for shmc). The goals' ratios come last, from their own rounds
// (--rounds, default 7) that rotate Find, FindMany, absl's find and the
// floors, each ratio the median of the rounds' own.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "bench/bench_util.h"
#include "bench/floor_layouts.h"
#include "bench/lookup_loops.h"

namespace {

using shmc_bench::Keep;
using shmc_bench::Measure;
using shmc_bench::NowNs;

using shmc_bench::Node;
static_assert(sizeof(Node) == 16, "the workload asks for 16-byte nodes");

// The reference's ShmHashTable design, modelled in process memory: rows of
// prime sizes shrinking by 0.6, cut to min(x, 3*sqrt(x)) rows, one probe per
// row at std::hash(key) % prime, first empty node on the way taken on insert.
class RefDesign {
 public:
  explicit RefDesign(size_t capacity) {
    size_t alloc = capacity < 10000 ? capacity * 3 / 2 : capacity * 5 / 4;
    size_t first = alloc * 40 / 100;
    std::vector<size_t> sizes;
    for (size_t s = first; s >= 2 && sizes.size() < 100; s = s * 60 / 100) {
      size_t p = s;
      while (!shmc::detail::IsPrime(p)) --p;
      sizes.push_back(p);
    }
    size_t cut = static_cast<size_t>(std::sqrt(9.0 * sizes.size()));
    if (cut < sizes.size()) sizes.resize(cut);
    size_t base = 0;
    for (size_t s : sizes) {
      mods_.push_back(s);
      first_.push_back(base);
      base += s;
    }
    nodes_.assign(base, Node{0, 0});
  }
  size_t slots() const { return nodes_.size(); }
  Node* Find(uint64_t key) {
    size_t h = std::hash<uint64_t>()(key);
    for (size_t r = 0; r < mods_.size(); ++r) {
      Node* n = &nodes_[first_[r] + h % mods_[r]];
      if (n->key == key) return n;
    }
    return nullptr;
  }
  Node* FindOrAlloc(uint64_t key) {
    size_t h = std::hash<uint64_t>()(key);
    Node* empty = nullptr;
    for (size_t r = 0; r < mods_.size(); ++r) {
      Node* n = &nodes_[first_[r] + h % mods_[r]];
      if (n->key == key) return n;
      if (n->key == 0 && empty == nullptr) empty = n;
    }
    return empty;
  }

 private:
  std::vector<size_t> mods_, first_;
  std::vector<Node> nodes_;
};

struct Row {
  std::string name;
  double insert = 0, hit = 0, miss = 0, many = 0, fill = 0;
};

// Hit and miss lookups of one table, measured by the same loops for every
// table: find(k) returns a pointer to k's value, or nullptr.
template <class FindFn>
void MeasureFinds(Row* row, int reps, const std::vector<uint64_t>& lookups,
                  const std::vector<uint64_t>& absent, const FindFn& find) {
  row->hit = Measure(reps, lookups.size(), nullptr, [&] {
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      auto v = find(k);
      sum += v ? *v : 0;
    }
    Keep(sum);
  });
  row->miss = Measure(reps, absent.size(), nullptr, [&] {
    uint64_t sum = 0;
    for (uint64_t k : absent) sum += find(k) != nullptr;
    Keep(sum);
  });
}

// Inserts every key into a shmc table (key and value k); a key that finds
// no room is skipped (ShmHashTableM's rows can fill first).
template <class Table>
void InsertAll(Table* t, const std::vector<uint64_t>& keys) {
  bool found;
  for (uint64_t k : keys) {
    volatile Node* n = t->FindOrAlloc(k, &found);
    if (n == nullptr) continue;
    n->key = k;
    n->val = k;
  }
}

// Hit and miss times of a shmc table's Find.
template <class Table>
void MeasureTableFinds(Row* row, int reps,
                       const std::vector<uint64_t>& lookups,
                       const std::vector<uint64_t>& absent, const Table& t) {
  MeasureFinds(row, reps, lookups, absent, [&](uint64_t k) {
    const volatile Node* n = t.Find(k);
    return n ? &n->val : nullptr;
  });
}

template <class Alloc>
Row RunShmc(const std::string& seg, const std::vector<uint64_t>& keys,
            const std::vector<uint64_t>& lookups,
            const std::vector<uint64_t>& absent, size_t capacity, int reps) {
  Row row;
  row.name = "ShmHashTable";
  auto table = std::make_unique<shmc::ShmHashTable<uint64_t, Node, Alloc>>();
  auto fresh = [&] {
    table = std::make_unique<shmc::ShmHashTable<uint64_t, Node, Alloc>>();
    Alloc().Unlink(seg);
    if (!table->InitForWrite(seg, capacity)) {
      std::fprintf(stderr, "%s\n", table->last_error().message.c_str());
      std::exit(1);
    }
  };
  row.insert = Measure(reps, keys.size(), fresh,
                       [&] { InsertAll(table.get(), keys); });
  const auto& t = *table;
  MeasureTableFinds(&row, reps, lookups, absent, t);
  std::vector<const volatile Node*> out(1024);
  row.many = Measure(reps, lookups.size(), nullptr,
                     [&] { shmc_bench::FindManyLoop(t, lookups, &out); });
  // Usable fill: insert more random keys until the first failure.
  std::mt19937_64 rng(99);
  size_t n = keys.size();
  bool found;
  for (;;) {
    uint64_t k = rng() | 1;
    volatile Node* node = table->FindOrAlloc(k, &found);
    if (node == nullptr) break;
    if (!found) {
      node->key = k;
      ++n;
    }
  }
  row.fill = 100.0 * n / table->ideal_capacity();
  table.reset();
  Alloc().Unlink(seg);
  return row;
}

template <class Map>
Row RunStdLike(const char* name, const std::vector<uint64_t>& keys,
               const std::vector<uint64_t>& lookups,
               const std::vector<uint64_t>& absent, size_t capacity,
               int reps) {
  Row row;
  row.name = name;
  auto m = std::make_unique<Map>();
  row.insert = Measure(
      reps, keys.size(),
      [&] {
        m = std::make_unique<Map>();
        m->reserve(capacity);
      },
      [&] {
        for (uint64_t k : keys) m->emplace(k, k);
      });
  const Map& cm = *m;
  MeasureFinds(&row, reps, lookups, absent, [&](uint64_t k) {
    auto it = cm.find(k);
    return it == cm.end() ? nullptr : &it->second;
  });
  return row;
}

Row RunRefDesign(const std::vector<uint64_t>& keys,
                 const std::vector<uint64_t>& lookups,
                 const std::vector<uint64_t>& absent, size_t capacity,
                 int reps) {
  Row row;
  row.name = "reference design (model)";
  std::unique_ptr<RefDesign> t;
  size_t placed = 0;
  row.insert = Measure(
      reps, keys.size(), [&] { t = std::make_unique<RefDesign>(capacity); },
      [&] {
        placed = 0;
        for (uint64_t k : keys) {
          Node* n = t->FindOrAlloc(k);
          if (n == nullptr) continue;
          n->key = k;
          n->val = k;
          ++placed;
        }
      });
  MeasureFinds(&row, reps, lookups, absent, [&](uint64_t k) {
    Node* n = t->Find(k);
    return n ? &n->val : nullptr;
  });
  std::mt19937_64 rng(99);
  for (;;) {
    uint64_t k = rng() | 1;
    Node* n = t->FindOrAlloc(k);
    if (n == nullptr) break;
    if (n->key == 0) {
      n->key = k;
      ++placed;
    }
  }
  row.fill = 100.0 * placed / t->slots();
  return row;
}

// The floors, on the same keys and lookups as the table: `hit` is the one
// line's single lookups, `many` the two lines requested ahead, `fill` the
// share of keys one line kept (the rest are left out and looked up as
// misses in their line, at the same cost). Empty (name "") when hugetlb
// memory cannot be had.
Row RunFloors(const std::vector<uint64_t>& keys,
              const std::vector<uint64_t>& lookups, size_t capacity,
              bool huge, int reps) {
  using shmc_bench::Lines;
  using shmc_bench::MemoryKind;
  MemoryKind kind = huge ? MemoryKind::kHugeTlb : MemoryKind::kShared;
  Lines one(capacity, kind), two(capacity, kind);
  Row row;
  if (!one.ok() || !two.ok()) return row;
  row.name = "floor: one line / two lines ahead";
  size_t kept = 0;
  for (uint64_t k : keys) {
    kept += one.Insert(k, k, false);
    two.Insert(k, k, true);
  }
  row.fill = 100.0 * kept / keys.size();
  row.hit = Measure(reps, lookups.size(), nullptr,
                    [&] { shmc_bench::OneBucketLoop(one, lookups); });
  row.many = Measure(reps, lookups.size(), nullptr,
                     [&] { shmc_bench::TwoLinesAheadLoop(two, lookups); });
  return row;
}

// The goals' ratios: ShmHashTable's Find and FindMany, absl's find and
// the two floors, each once per round in rotating order (bench_util.h),
// so that a slow spell of the shared machine falls on all of them alike;
// each ratio is the median of the rounds' own, with their range. Fresh
// structures on the same keys, in the table's kind of memory.
template <class Alloc>
void GoalRounds(const std::string& seg, const std::vector<uint64_t>& keys,
                const std::vector<uint64_t>& lookups, size_t capacity,
                bool huge, int rounds) {
  using shmc_bench::Lines;
  using shmc_bench::RoundRatios;
  using shmc_bench::Spread;
  Alloc().Unlink(seg);
  auto t = std::make_unique<shmc::ShmHashTable<uint64_t, Node, Alloc>>();
  if (!t->InitForWrite(seg, capacity)) {
    std::fprintf(stderr, "%s\n", t->last_error().message.c_str());
    std::exit(1);
  }
  InsertAll(t.get(), keys);
  const auto& ct = *t;
  absl::flat_hash_map<uint64_t, uint64_t> am;
  am.reserve(capacity);
  for (uint64_t k : keys) am.emplace(k, k);
  auto kind = huge ? shmc_bench::MemoryKind::kHugeTlb
                   : shmc_bench::MemoryKind::kShared;
  Lines one(capacity, kind), two(capacity, kind);
  bool floors = one.ok() && two.ok();
  for (uint64_t k : keys) {
    if (!floors) break;
    one.Insert(k, k, false);
    two.Insert(k, k, true);
  }
  std::vector<const volatile Node*> out(1024);
  std::vector<std::function<void()>> bodies = {
      [&] { shmc_bench::U64FindLoop(am, lookups); },
      [&] { shmc_bench::TableFindLoop(ct, lookups); },
      [&] { shmc_bench::FindManyLoop(ct, lookups, &out); }};
  if (floors) {
    bodies.push_back([&] { shmc_bench::OneBucketLoop(one, lookups); });
    bodies.push_back([&] { shmc_bench::TwoLinesAheadLoop(two, lookups); });
  }
  auto ns = shmc_bench::Rounds(rounds, lookups.size(), bodies);
  std::printf("\ngoals, x absl single find: median of %d rotating rounds' "
              "own ratios (range),\nbeside the floor measured in the same "
              "rounds\n", rounds);
  auto goal = [&](const char* what, size_t mine, size_t fl, double want) {
    Spread r = RoundRatios(ns[0], ns[mine]);
    std::printf("  %-9s %.2fx (%.2f-%.2f)", what, r.median, r.min, r.max);
    if (floors) {
      Spread f = RoundRatios(ns[0], ns[fl]);
      Spread of = RoundRatios(ns[fl], ns[mine]);
      std::printf("  floor %.2fx (%.2f-%.2f)  %.0f%% of the floor", f.median,
                  f.min, f.max, 100.0 * of.median);
    } else {
      std::printf("  floor not measured (no hugetlb memory)");
    }
    std::printf("  [goal >= %.2f]\n", want);
  };
  goal("Find", 1, 3, huge ? 1.0 : 0.85);
  goal("FindMany", 2, 4, 1.45);
  const char* names[] = {"absl find", "Find", "FindMany", "floor: one line",
                         "floor: two lines ahead"};
  std::printf("  median ns/op:");
  for (size_t b = 0; b < ns.size(); ++b) {
    std::printf(" %s %.1f%s", names[b], shmc_bench::Median(ns[b]),
                b + 1 < ns.size() ? "," : "\n");
  }
  t.reset();
  Alloc().Unlink(seg);
}

Row RunTableM(const std::vector<uint64_t>& keys,
              const std::vector<uint64_t>& lookups,
              const std::vector<uint64_t>& absent, size_t capacity, int reps) {
  Row row;
  row.name = "ShmHashTableM (50 rows)";
  using TM = shmc::ShmHashTableM<uint64_t, Node, shmc::HEAP>;
  std::unique_ptr<TM> t;
  size_t cols = capacity * 5 / 4 / 50;
  row.insert = Measure(
      reps, keys.size(),
      [&] {
        t = std::make_unique<TM>();
        t->InitForWrite("", cols, 50);
      },
      [&] { InsertAll(t.get(), keys); });
  const TM& ct = *t;
  MeasureTableFinds(&row, reps, lookups, absent, ct);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  size_t nkeys = 2100000;
  size_t capacity = 2500000;
  int reps = 3;
  int rounds = 7;
  bool huge = false;
  bool models = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keys" && i + 1 < argc) {
      nkeys = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--capacity" && i + 1 < argc) {
      capacity = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--huge") {
      huge = true;
    } else if (a == "--no-models") {
      models = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--keys N] [--capacity C] [--reps R] "
                   "[--rounds R] [--huge] [--no-models]\n", argv[0]);
      return 2;
    }
  }
  if (nkeys == 0 || capacity < nkeys || reps < 1 || rounds < 1) {
    std::fprintf(stderr, "hash_table_bench: --keys must be >= 1 and <= "
                 "--capacity, --reps and --rounds >= 1\n");
    return 2;
  }
  std::mt19937_64 rng(12345);
  std::vector<uint64_t> keys(nkeys), absent(nkeys);
  for (auto& k : keys) k = rng() | 1;   // odd: present
  for (auto& k : absent) k = rng() & ~1ULL;  // even: never inserted
  std::vector<uint64_t> lookups = keys;
  std::shuffle(lookups.begin(), lookups.end(), rng);
  for (auto& k : absent) k = k ? k : 2;

  std::printf("keys %zu, capacity %zu, best of %d, 16-byte nodes, %s "
              "segment\n", nkeys, capacity, reps,
              huge ? "SVIPC_HugeTLB" : "POSIX");
  std::vector<Row> rows;
  if (huge) {
    rows.push_back(RunShmc<shmc::SVIPC_HugeTLB>("0x5cbe0001", keys, lookups,
                                               absent, capacity, reps));
  } else {
    rows.push_back(RunShmc<shmc::POSIX>("/shmc_hash_bench", keys, lookups,
                                        absent, capacity, reps));
  }
  Row floor = RunFloors(keys, lookups, capacity, huge, reps);
  rows.push_back(RunStdLike<absl::flat_hash_map<uint64_t, uint64_t>>(
      "absl::flat_hash_map", keys, lookups, absent, capacity, reps));
  rows.push_back(RunStdLike<std::unordered_map<uint64_t, uint64_t>>(
      "std::unordered_map", keys, lookups, absent, capacity, reps));
  if (models) {
    rows.push_back(RunTableM(keys, lookups, absent, capacity, reps));
    rows.push_back(RunRefDesign(keys, lookups, absent, capacity, reps));
  }

  std::printf("\n| table | insert ns | hit ns | miss ns | FindMany ns | "
              "usable fill |\n|---|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %.1f | %.1f | %.1f | %s | %s |\n", r.name.c_str(),
                r.insert, r.hit, r.miss,
                r.many > 0 ? std::to_string(r.many).substr(0, 5).c_str() : "-",
                r.fill > 0 ? (std::to_string(r.fill).substr(0, 4) + "%").c_str()
                           : "-");
  }
  const Row& s = rows[0];
  const Row& absl_row = rows[1];
  const Row& std_row = rows[2];
  if (!floor.name.empty()) {
    std::printf("| %s | - | %.1f | - | %.2f | keeps %.1f%% |\n",
                floor.name.c_str(), floor.hit, floor.many, floor.fill);
  }
  std::printf(
      "\nratios (baseline time / ShmHashTable time; the open goals are "
      "the last lines)\n");
  std::printf("  find hit  vs absl: %.2fx\n", absl_row.hit / s.hit);
  std::printf("  find miss vs std:  %.2fx\n", std_row.miss / s.miss);
  std::printf("  find miss vs absl: %.2fx\n", absl_row.miss / s.miss);
  std::printf("  insert    vs absl: %.2fx\n",
              absl_row.insert / s.insert);
  std::printf("  FindMany  vs absl single find: %.2fx\n",
              absl_row.hit / s.many);
  std::printf("  usable fill: %.1f%%\n", s.fill);
  if (models) {
    const Row& ref = rows[4];
    std::printf("  reference design model: hit %.2fx absl, miss %.2fx std, "
                "insert %.2fx absl, fill %.1f%%\n", absl_row.hit / ref.hit,
                std_row.miss / ref.miss, absl_row.insert / ref.insert,
                ref.fill);
  }
  // The open goals: each container's distance to its layout's floor.
  if (huge) {
    GoalRounds<shmc::SVIPC_HugeTLB>("0x5cbe0001", keys, lookups, capacity,
                                    true, rounds);
  } else {
    GoalRounds<shmc::POSIX>("/shmc_hash_bench", keys, lookups, capacity,
                            false, rounds);
  }
  return 0;
}
