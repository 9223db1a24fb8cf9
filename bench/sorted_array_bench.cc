// sorted_array_bench: ShmSortedArray (both layouts) against std::lower_bound
// on a std::vector (the baseline) and against ShmHashTable, at several sizes
// in the same run.
//
//   sorted_array_bench [--sizes 1000,65536,1048576,16777216] [--lookups M]
//                      [--reps R]
//
// Records are (uint64 key, uint64 value) with random odd keys. For each size:
//  build  ns per record: sorting a vector / Build() into a segment /
//         inserting into the hash table;
//  hit    ns per lookup of a present key (M random keys, independent
//         lookups, so the CPU may overlap them);
//  miss   ns per lookup of an absent (even) key;
//  bytes  bytes of memory per record (vector: its elements; shmc: the
//         segment, headers and unused slots included);
//  scan   ns per range scan: LowerBound of a random present key, then the
//         next 100 records in key order (the hash table cannot do this).
// Each figure is the best of R repetitions. "x" columns are
// baseline_time / time: above 1 is faster than std::lower_bound.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_sorted_array.h"
#include "bench/bench_util.h"
#include "bench/lookup_loops.h"

namespace {

using shmc_bench::Keep;
using shmc_bench::Measure;
using shmc_bench::NowNs;

using Rec = std::pair<uint64_t, uint64_t>;
constexpr size_t kScan = 100;

using shmc_bench::Node;

struct Row {
  std::string name;
  double build = 0, hit = 0, miss = 0, scan = -1, bytes = 0;
};

struct Workload {
  std::vector<Rec> recs;          // unsorted
  std::vector<uint64_t> lookups;  // present keys, random order
  std::vector<uint64_t> absent;   // keys not present
  std::vector<uint64_t> starts;   // scan start keys
};

Workload MakeWorkload(size_t n, size_t m) {
  std::mt19937_64 rng(n * 31 + 7);
  Workload w;
  for (size_t i = 0; i < n; ++i) {
    uint64_t k = rng() | 1;
    w.recs.push_back({k, k * 3});
  }
  for (size_t i = 0; i < m; ++i) {
    w.lookups.push_back(w.recs[rng() % n].first);
    w.absent.push_back((rng() & ~1ULL) | 2);
  }
  for (size_t i = 0; i < m / kScan; ++i) {
    w.starts.push_back(w.recs[rng() % n].first);
  }
  return w;
}

// Bytes per record of POSIX segment `name` (/dev/shm/NAME).
double SegmentBytes(const std::string& name, size_t n) {
  struct stat st;
  if (stat(("/dev/shm" + name).c_str(), &st) != 0) return 0;
  return static_cast<double>(st.st_size) / static_cast<double>(n);
}

template <class FindFn>
void MeasureFinds(Row* row, int reps, const Workload& w, const FindFn& find) {
  row->hit = Measure(reps, w.lookups.size(), nullptr, [&] {
    uint64_t sum = 0;
    for (uint64_t k : w.lookups) {
      const uint64_t* v = find(k);
      sum += v ? *v : 0;
    }
    Keep(sum);
  });
  row->miss = Measure(reps, w.absent.size(), nullptr, [&] {
    uint64_t sum = 0;
    for (uint64_t k : w.absent) sum += find(k) != nullptr;
    Keep(sum);
  });
}

template <class ScanFn>
void MeasureScans(Row* row, int reps, const Workload& w, const ScanFn& scan) {
  row->scan = Measure(reps, w.starts.size(), nullptr, [&] {
    uint64_t sum = 0;
    for (uint64_t k : w.starts) sum += scan(k);
    Keep(sum);
  });
}

Row RunVectorPairs(const Workload& w, int reps) {
  Row row;
  row.name = "std::lower_bound, vector<pair>";
  std::vector<Rec> v;
  row.build = Measure(reps, w.recs.size(), [&] { v = w.recs; }, [&] {
    std::sort(v.begin(), v.end());
  });
  row.bytes = sizeof(Rec);
  auto lb = [&v](uint64_t k) {
    return std::lower_bound(
        v.begin(), v.end(), k,
        [](const Rec& r, uint64_t key) { return r.first < key; });
  };
  MeasureFinds(&row, reps, w, [&](uint64_t k) -> const uint64_t* {
    auto it = lb(k);
    return it != v.end() && it->first == k ? &it->second : nullptr;
  });
  MeasureScans(&row, reps, w, [&](uint64_t k) {
    uint64_t sum = 0;
    auto it = lb(k);
    for (size_t i = 0; i < kScan && it != v.end(); ++i, ++it) sum += it->second;
    return sum;
  });
  return row;
}

template <shmc::SortedLayout kLayout>
Row RunSorted(const char* name, const std::string& seg, const Workload& w,
              int reps) {
  using Array = shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX>;
  Row row;
  row.name = name;
  std::unique_ptr<Array> a;
  row.build = Measure(reps, w.recs.size(), [&] { a = std::make_unique<Array>(); },
                      [&] {
                        if (!a->Build(seg, w.recs, kLayout)) {
                          std::fprintf(stderr, "%s\n",
                                       a->last_error().message.c_str());
                          std::exit(1);
                        }
                      });
  row.bytes = SegmentBytes(seg + (a->version() % 2 ? "0" : "1"),
                           w.recs.size());
  // Read through a separate reader object, as another process would.
  Array r;
  if (!r.InitForRead(seg)) {
    std::fprintf(stderr, "%s\n", r.last_error().message.c_str());
    std::exit(1);
  }
  MeasureFinds(&row, reps, w, [&](uint64_t k) { return r.Find(k); });
  MeasureScans(&row, reps, w, [&](uint64_t k) {
    uint64_t sum = 0;
    auto it = r.LowerBound(k);
    for (size_t i = 0; i < kScan && it != r.end(); ++i, ++it) {
      sum += it.value();
    }
    return sum;
  });
  return row;
}

Row RunHashTable(const std::string& seg, const Workload& w, int reps) {
  using Table = shmc::ShmHashTable<uint64_t, Node, shmc::POSIX>;
  Row row;
  row.name = "ShmHashTable";
  std::unique_ptr<Table> t;
  size_t capacity = w.recs.size() + w.recs.size() / 4 + 64;
  row.build = Measure(
      reps, w.recs.size(),
      [&] {
        t = std::make_unique<Table>();
        shmc::POSIX().Unlink(seg);
        if (!t->InitForWrite(seg, capacity)) {
          std::fprintf(stderr, "%s\n", t->last_error().message.c_str());
          std::exit(1);
        }
      },
      [&] {
        bool found;
        for (const Rec& r : w.recs) {
          volatile Node* n = t->FindOrAlloc(r.first, &found);
          if (n == nullptr) std::abort();
          n->key = r.first;
          n->val = r.second;
        }
      });
  row.bytes = SegmentBytes(seg, w.recs.size());
  const Table& ct = *t;
  MeasureFinds(&row, reps, w, [&](uint64_t k) -> const uint64_t* {
    const volatile Node* n = ct.Find(k);
    return n ? const_cast<const uint64_t*>(&n->val) : nullptr;
  });
  t.reset();
  shmc::POSIX().Unlink(seg);
  return row;
}

std::vector<size_t> ParseSizes(const char* s) {
  std::vector<size_t> out;
  for (const char* p = s; *p != '\0';) {
    char* end = nullptr;
    out.push_back(std::strtoull(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p != '\0') break;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {1000, 65536, 1048576, 16777216};
  size_t lookups = 2000000;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      sizes = ParseSizes(argv[++i]);
    } else if (a == "--lookups" && i + 1 < argc) {
      lookups = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--sizes N,N,...] [--lookups M] [--reps R]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string seg = "/shmc_sorted_bench_" + std::to_string(getpid());
  std::string table_seg = seg + "_table";
  std::printf("# %zu lookups per figure, best of %d; ns per op; x = "
              "std::lower_bound time / this time\n", lookups, reps);
  std::printf("%-10s %-31s %7s %6s %8s %6s %8s %6s %8s %6s\n", "records",
              "structure", "bytes", "build", "hit", "x", "miss", "x",
              "scan100", "x");
  for (size_t n : sizes) {
    Workload w = MakeWorkload(n, lookups);
    std::vector<Row> rows;
    rows.push_back(RunVectorPairs(w, reps));
    rows.push_back(RunSorted<shmc::SortedLayout::kSorted>(
        "ShmSortedArray kSorted", seg, w, reps));
    rows.push_back(RunSorted<shmc::SortedLayout::kEytzinger>(
        "ShmSortedArray kEytzinger", seg, w, reps));
    rows.push_back(RunHashTable(table_seg, w, reps));
    const Row& base = rows[0];
    for (const Row& r : rows) {
      char scan[32] = "n/a", scan_x[16] = "";
      if (r.scan >= 0) {
        std::snprintf(scan, sizeof(scan), "%.0f", r.scan);
        std::snprintf(scan_x, sizeof(scan_x), "%.2f", base.scan / r.scan);
      }
      std::printf("%-10zu %-31s %7.1f %6.0f %8.1f %6.2f %8.1f %6.2f %8s "
                  "%6s\n", n, r.name.c_str(), r.bytes, r.build, r.hit,
                  base.hit / r.hit, r.miss, base.miss / r.miss, scan, scan_x);
    }
    std::fflush(stdout);
  }
  shmc::POSIX alloc;
  alloc.Unlink(seg);
  alloc.Unlink(seg + "0");
  alloc.Unlink(seg + "1");
  return 0;
}
