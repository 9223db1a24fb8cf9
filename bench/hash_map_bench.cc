// hash_map_bench: ShmHashMap reads and writes of 100-byte values against
// std::unordered_map<uint64_t, std::string> in the same run (issue #4).
//
//   hash_map_bench [--keys N] [--value BYTES] [--reps R]
//
// Find paths: copy-free (into a caller buffer), std::string (allocating),
// and Visit (in place); the baseline is measured both as a bare find that
// touches the value (reads its first and last byte) and as find + copy of
// the value into a caller buffer (what ShmHashMap's copy-free Find does).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "shmc/shm_hash_map.h"
#include "bench/bench_util.h"

namespace {

using shmc_bench::Keep;
using shmc_bench::Measure;
using shmc_bench::NowNs;

}  // namespace

int main(int argc, char** argv) {
  size_t nkeys = 1000000, vlen = 100;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keys" && i + 1 < argc) {
      nkeys = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--value" && i + 1 < argc) {
      vlen = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--keys N] [--value BYTES] [--reps R]\n",
                   argv[0]);
      return 2;
    }
  }
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(nkeys);
  for (auto& k : keys) k = rng() | 1;
  std::string value(vlen, 'v');
  std::vector<uint64_t> lookups = keys;
  std::shuffle(lookups.begin(), lookups.end(), rng);

  const std::string seg = "/shmc_map_bench";
  shmc::POSIX().Unlink(seg + "0");
  shmc::POSIX().Unlink(seg + "1");
  shmc::ShmHashMap<uint64_t, shmc::POSIX> m;
  size_t node = (vlen + 7) / 8 * 8;  // one node per value
  if (!m.InitForWrite(seg, nkeys * 5 / 4, node, nkeys * 5 / 4)) {
    std::fprintf(stderr, "%s\n", m.last_error().message.c_str());
    return 1;
  }
  for (uint64_t k : keys) m.Replace(k, value);
  std::unordered_map<uint64_t, std::string> um;
  um.reserve(nkeys);
  for (uint64_t k : keys) um.emplace(k, value);

  std::vector<char> buf(vlen + 64);
  const auto& cm = m;
  double copy_free = Measure(reps, nkeys, [&] {
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      size_t len = buf.size();
      cm.Find(k, buf.data(), &len);
      sum += len + static_cast<unsigned char>(buf[0]);
    }
    Keep(sum);
  });
  constexpr size_t kMany = 256;
  std::vector<char> many_bufs(kMany * vlen);
  size_t many_lens[kMany];
  double find_many = Measure(reps, nkeys, [&] {
    uint64_t sum = 0;
    for (size_t i = 0; i < lookups.size(); i += kMany) {
      size_t n = std::min(kMany, lookups.size() - i);
      sum += cm.FindMany(lookups.data() + i, n, many_bufs.data(), vlen,
                         many_lens);
      sum += static_cast<unsigned char>(many_bufs[0]);
    }
    Keep(sum);
  });
  std::string out;
  double as_string = Measure(reps, nkeys, [&] {
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      cm.Find(k, &out);
      sum += out.size();
    }
    Keep(sum);
  });
  double visit = Measure(reps, nkeys, [&] {
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      cm.Visit(k, [&](const char* p, size_t n) {
        sum += n + static_cast<unsigned char>(p[0]);
      });
    }
    Keep(sum);
  });
  double um_find = Measure(reps, nkeys, [&] {
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      const std::string& s = um.find(k)->second;
      sum += static_cast<unsigned char>(s[0]) +
             static_cast<unsigned char>(s[s.size() - 1]);
    }
    Keep(sum);
  });
  double um_copy = Measure(reps, nkeys, [&] {
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      const std::string& s = um.find(k)->second;
      std::memcpy(buf.data(), s.data(), s.size());
      sum += static_cast<unsigned char>(buf[0]);
    }
    Keep(sum);
  });
  double replace = Measure(reps, nkeys, [&] {
    for (uint64_t k : lookups) m.Replace(k, value);
  });
  double um_replace = Measure(reps, nkeys, [&] {
    for (uint64_t k : lookups) um[k] = value;
  });
  size_t seg_bytes = m.hash_table().ideal_capacity() * 16 +
                     m.link_table().total_nodes() * (16 + node);
  std::printf("keys %zu, %zu-byte values, best of %d, POSIX segments\n\n",
              nkeys, vlen, reps);
  std::printf("| operation | ns/op |\n|---|---:|\n");
  std::printf("| ShmHashMap Find, copy-free (caller buffer) | %.1f |\n", copy_free);
  std::printf("| ShmHashMap FindMany, %zu keys a call (caller buffers) | %.1f |\n",
              kMany, find_many);
  std::printf("| ShmHashMap Find, std::string | %.1f |\n", as_string);
  std::printf("| ShmHashMap Visit (in place) | %.1f |\n", visit);
  std::printf("| unordered_map find (touch value) | %.1f |\n", um_find);
  std::printf("| unordered_map find + copy value out | %.1f |\n", um_copy);
  std::printf("| ShmHashMap Replace | %.1f |\n", replace);
  std::printf("| unordered_map assign | %.1f |\n", um_replace);
  std::printf("\nratios (baseline / shmc; goal in brackets)\n");
  std::printf("  copy-free Find vs unordered_map find:        %.2fx [>= 1.5]\n",
              um_find / copy_free);
  std::printf("  copy-free Find vs unordered_map find + copy: %.2fx\n",
              um_copy / copy_free);
  std::printf("  FindMany vs unordered_map find:              %.2fx\n",
              um_find / find_many);
  std::printf("  Visit vs unordered_map find:                 %.2fx\n",
              um_find / visit);
  std::printf("  std::string Find vs unordered_map find:      %.2fx\n",
              um_find / as_string);
  std::printf("  Replace vs unordered_map assign:             %.2fx\n",
              um_replace / replace);
  std::printf("memory: %.1f bytes per value in segments (%.1f MB), sized for "
              "%zu keys\n", static_cast<double>(seg_bytes) / nkeys,
              seg_bytes / 1e6, nkeys * 5 / 4);
  shmc::POSIX().Unlink(seg + "0");
  shmc::POSIX().Unlink(seg + "1");
  return 0;
}
