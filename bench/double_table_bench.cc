// ShmDoubleTable against its baseline, plain ShmHashTable::Find on the same
// keys and geometry, in rotating rounds of the same run:
//   - Find through a pin held for 64 lookups (a request's worth), and
//     through a pin per lookup;
//   - FindMany through a pin against plain FindMany;
//   - reader scaling: 1 and 2 reader processes looking up for a fixed
//     time, aggregate lookups/s (no updater running);
//   - the updater's costs: a copy-and-edit build + commit, a reader's
//     Verify, per MiB of half.
// Sizes: 100k keys (the table fits in L2/L3) and 2.1M keys (hash_table_bench's
// size, far beyond the caches).
//
//   double_table_bench [--rounds N] [--seconds S]
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/lookup_loops.h"
#include "shmc/shm_double_table.h"
#include "shmc/shm_hash_table.h"

namespace {

using shmc_bench::Keep;
using shmc_bench::Node;
using shmc_bench::NowNs;
using Plain = shmc::ShmHashTable<uint64_t, Node, shmc::POSIX>;
using Double = shmc::ShmDoubleTable<uint64_t, Node, shmc::POSIX>;

void Die(const char* what, const shmc::Error& e) {
  std::fprintf(stderr, "%s: %s\n", what, e.message.c_str());
  std::exit(1);
}

template <class Table>
void Fill(Table* t, const std::vector<uint64_t>& keys) {
  bool found;
  for (uint64_t k : keys) {
    volatile Node* n = t->FindOrAlloc(k, &found);
    if (n == nullptr) std::exit(2);
    n->key = k;
    n->val = k;
  }
}

template <class FindFn>
void FindLoop(const std::vector<uint64_t>& lookups, const FindFn& find) {
  uint64_t sum = 0;
  for (uint64_t k : lookups) sum += find(k)->val;
  Keep(sum);
}

void PinnedLoop(const Double& d, const std::vector<uint64_t>& lookups,
                size_t per_pin) {
  uint64_t sum = 0;
  for (size_t i = 0; i < lookups.size(); i += per_pin) {
    auto pin = d.Pin();
    size_t end = std::min(lookups.size(), i + per_pin);
    for (size_t j = i; j < end; ++j) sum += pin.Find(lookups[j])->val;
  }
  Keep(sum);
}

void PinnedManyLoop(const Double& d, const std::vector<uint64_t>& lookups,
                    std::vector<const volatile Node*>* out) {
  uint64_t sum = 0;
  for (size_t i = 0; i < lookups.size(); i += out->size()) {
    size_t n = std::min(out->size(), lookups.size() - i);
    auto pin = d.Pin();
    pin.FindMany(&lookups[i], n, out->data());
    for (size_t j = 0; j < n; ++j) sum += (*out)[j]->val;
  }
  Keep(sum);
}

// Aggregate lookups/s of `procs` reader processes, each attaching its own
// reader and running `loop` over its own random keys for `seconds`.
using ReaderLoop = std::function<bool(const std::vector<uint64_t>& mine,
                                      double end_ns, uint64_t* done)>;
double ReaderRate(const std::vector<uint64_t>& keys, int procs,
                  double seconds, const ReaderLoop& loop) {
  auto* counts = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0));
  if (counts == MAP_FAILED) std::exit(3);
  counts[0] = 0;  // readers ready
  counts[1] = 0;  // lookups done
  std::vector<pid_t> kids;
  for (int p = 0; p < procs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      std::mt19937_64 rng(static_cast<uint64_t>(getpid()));
      std::vector<uint64_t> mine(1 << 20);  // beyond the caches at 2.1M keys
      for (uint64_t& k : mine) k = keys[rng() % keys.size()];
      counts[0].fetch_add(1);
      while (counts[0].load() < static_cast<uint64_t>(procs)) {
      }
      uint64_t done = 0;
      if (!loop(mine, NowNs() + seconds * 1e9, &done)) _exit(1);
      counts[1].fetch_add(done);
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) waitpid(pid, nullptr, 0);
  double rate = static_cast<double>(counts[1].load()) / seconds;
  munmap(counts, 4096);
  return rate;
}

void RunSize(size_t n_keys, int rounds, double seconds) {
  std::string tag = std::to_string(getpid()) + "_" + std::to_string(n_keys);
  std::string plain_seg = "/shmc_dtb_plain_" + tag;
  std::string double_seg = "/shmc_dtb_double_" + tag;
  shmc::POSIX().Unlink(plain_seg);
  shmc::POSIX().Unlink(double_seg);
  std::mt19937_64 rng(42);
  std::vector<uint64_t> keys(n_keys);
  for (uint64_t& k : keys) k = (rng() | 1);
  std::vector<uint64_t> lookups(1 << 22);
  for (uint64_t& k : lookups) k = keys[rng() % keys.size()];
  {
    Plain plain;
    Double dw;
    Double dr;
    if (!plain.InitForWrite(plain_seg, n_keys)) Die("plain", plain.last_error());
    if (!dw.InitForWrite(double_seg, n_keys)) Die("double", dw.last_error());
    Fill(&plain, keys);
    auto* build = dw.BeginBuild(Double::kEmpty);
    if (build == nullptr) Die("build", dw.last_error());
    Fill(build, keys);
    dw.Commit();
    if (!dr.InitForRead(double_seg)) Die("reader", dr.last_error());

    std::vector<const volatile Node*> out(1024);
    std::vector<std::function<void()>> ways = {
        [&] { FindLoop(lookups, [&](uint64_t k) { return plain.Find(k); }); },
        [&] { PinnedLoop(dr, lookups, 64); },
        [&] { PinnedLoop(dr, lookups, 1); },
        [&] { PinnedLoop(dr, lookups, 4096); },
        [&] { shmc_bench::FindManyLoop(plain, lookups, &out); },
        [&] { PinnedManyLoop(dr, lookups, &out); },
    };
    auto ns = shmc_bench::Rounds(rounds, lookups.size(), ways);
    auto ratio = [&](size_t base, size_t way) {
      // Speed ratio: the way's rate over its baseline's.
      shmc_bench::Spread s = shmc_bench::RoundRatios(ns[base], ns[way]);
      std::printf("%.2f (%.2f-%.2f)", s.median, s.min, s.max);
    };
    std::printf("\n## %zu keys (%.1f MiB per half), %d rounds\n\n", n_keys,
                static_cast<double>(dw.half_bytes()) / 1048576.0,
                rounds);
    std::printf("| way | ns/lookup (median) | speed vs plain (median, range) "
                "|\n|---|---:|---|\n");
    const char* names[] = {"plain ShmHashTable::Find", "pin per 64, Find",
                           "pin per lookup, Find", "pin per 4096, Find",
                           "plain FindMany",
                           "pin per 1024, FindMany"};
    for (size_t w = 0; w < ways.size(); ++w) {
      std::printf("| %s | %.1f | ", names[w], shmc_bench::Median(ns[w]));
      ratio(w < 4 ? 0 : 4, w);
      std::printf(" |\n");
    }

    // The updater's costs on this size.
    double copy_ms = 1e300, verify_ms = 1e300;
    for (int r = 0; r < 3; ++r) {
      double t0 = NowNs();
      auto* t = dw.BeginBuild();
      if (t == nullptr) Die("rebuild", dw.last_error());
      t->Find(keys[0])->val += 1;
      dw.Commit();
      copy_ms = std::min(copy_ms, (NowNs() - t0) / 1e6);
      t0 = NowNs();
      if (!dr.Verify()) Die("verify", dr.last_error());
      verify_ms = std::min(verify_ms, (NowNs() - t0) / 1e6);
    }
    std::printf("\nupdater: copy-and-edit build + commit %.2f ms; reader "
                "Verify %.2f ms\n", copy_ms, verify_ms);
  }
  ReaderLoop plain_loop = [&](const std::vector<uint64_t>& mine, double end,
                              uint64_t* done) {
    Plain r;
    if (!r.InitForRead(plain_seg)) return false;
    while (NowNs() < end) {
      FindLoop(mine, [&](uint64_t k) { return r.Find(k); });
      *done += mine.size();
    }
    return true;
  };
  ReaderLoop double_loop = [&](const std::vector<uint64_t>& mine, double end,
                               uint64_t* done) {
    Double r;
    if (!r.InitForRead(double_seg)) return false;
    while (NowNs() < end) {
      PinnedLoop(r, mine, 64);
      *done += mine.size();
    }
    return true;
  };
  std::printf("\n| reader processes | plain M lookups/s | pinned per 64 M "
              "lookups/s | vs plain |\n|---|---:|---:|---:|\n");
  double base1 = 0, base2 = 0, dt1 = 0, dt2 = 0;
  for (int procs : {1, 2}) {
    double p = ReaderRate(keys, procs, seconds, plain_loop);
    double d = ReaderRate(keys, procs, seconds, double_loop);
    (procs == 1 ? base1 : base2) = p;
    (procs == 1 ? dt1 : dt2) = d;
    std::printf("| %d | %.1f | %.1f | %.2f |\n", procs, p / 1e6, d / 1e6,
                d / p);
  }
  std::printf("\nscaling 1 -> 2 processes: plain %.2fx, double %.2fx\n",
              base2 / base1, dt2 / dt1);
  shmc::POSIX().Unlink(plain_seg);
  shmc::POSIX().Unlink(double_seg);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
  }
  std::printf("# double_table_bench: ShmDoubleTable vs plain ShmHashTable, "
              "same keys, same run\n");
  for (size_t n : {size_t{100000}, size_t{2100000}}) RunSize(n, rounds, seconds);
  return 0;
}
