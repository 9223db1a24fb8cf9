// hash_map_bench: ShmHashMap reads and writes of 100-byte values against
// std::unordered_map<uint64_t, std::string> in the same run.
//
//   hash_map_bench [--keys N] [--value BYTES] [--rounds R]
//
// Find paths: copy-free (into a caller buffer), batched (FindMany, 256
// keys a call), std::string (allocating) and Visit (in place); the
// baseline is measured both as a bare find that touches the value (reads
// its first and last byte) and as find + copy of the value into a caller
// buffer (what ShmHashMap's copy-free Find does).
// Last, Find's two parts are timed alone: the index lookup, and the value
// read given its handle.
// The goals' floor runs in the same rounds (bench/floor_layouts.h): one
// index line from the hash, then the value at its handle, copied as the
// library copies (shmc::detail::LoadWords) and validated; beside it, the
// same floor copying with 8-byte atomic loads, the C++ memory model's own
// cheapest copy; and the floor of a layout shmc does not have, where each
// index slot has a home for its value, so that a tag word names the slot
// and the slot's line and its value are read together (copy-free Find
// reads its index line and value one after the other; what such layouts
// give with Find's checks is bench/machine/value_homes.cc's question),
// and, against it, the floor of a hint table naming each slot's value
// beside today's index (the hint misses as the index line does).
// Every operation runs once per round, rounds rotate the order (default
// 7), and ratios are each round's own: this machine's speed drifts by
// tens of percent between minutes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "shmc/shm_hash_map.h"
#include "bench/bench_util.h"
#include "bench/floor_layouts.h"
#include "bench/lookup_loops.h"

namespace {

using shmc_bench::Keep;
using shmc_bench::MapFindLoop;
using shmc_bench::MapVisitLoop;
using shmc_bench::UmFindLoop;
using shmc_bench::Median;
using shmc_bench::Rounds;

}  // namespace

int main(int argc, char** argv) {
  size_t nkeys = 1000000, vlen = 100;
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keys" && i + 1 < argc) {
      nkeys = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--value" && i + 1 < argc) {
      vlen = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--keys N] [--value BYTES] [--rounds R]\n",
                   argv[0]);
      return 2;
    }
  }
  if (nkeys == 0 || rounds < 1) {
    std::fprintf(stderr, "hash_map_bench: --keys and --rounds must be >= 1\n");
    return 2;
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
  // The floor holds values of up to 104 bytes (the goal's 100).
  bool floor = vlen <= 104;
  std::unique_ptr<shmc_bench::IndexValueFloor> index_value;
  if (floor) {
    index_value = std::make_unique<shmc_bench::IndexValueFloor>(keys, value);
  }
  const auto& cm = m;
  constexpr size_t kMany = 256;
  std::vector<char> many_bufs(kMany * vlen);
  size_t many_lens[kMany];
  std::string out;
  struct Op {
    const char* name;
    std::function<void()> body;
  };
  std::vector<Op> ops = {
      {"ShmHashMap Find, copy-free (caller buffer)",
       [&] { MapFindLoop(cm, lookups, buf.data(), buf.size()); }},
      {"ShmHashMap FindMany, 256 keys a call (caller buffers)",
       [&] {
         uint64_t sum = 0;
         for (size_t i = 0; i < lookups.size(); i += kMany) {
           size_t n = std::min(kMany, lookups.size() - i);
           sum += cm.FindMany(lookups.data() + i, n, many_bufs.data(), vlen,
                              many_lens);
           sum += static_cast<unsigned char>(many_bufs[0]);
         }
         Keep(sum);
       }},
      {"ShmHashMap Find, std::string",
       [&] {
         uint64_t sum = 0;
         for (uint64_t k : lookups) {
           cm.Find(k, &out);
           sum += out.size();
         }
         Keep(sum);
       }},
      {"ShmHashMap Visit (in place)", [&] { MapVisitLoop(cm, lookups); }},
      {"unordered_map find (touch value)", [&] { UmFindLoop(um, lookups); }},
      {"unordered_map find + copy value out",
       [&] {
         uint64_t sum = 0;
         for (uint64_t k : lookups) {
           const std::string& s = um.find(k)->second;
           std::memcpy(buf.data(), s.data(), s.size());
           sum += static_cast<unsigned char>(buf[0]);
         }
         Keep(sum);
       }},
      {"ShmHashMap Replace",
       [&] {
         for (uint64_t k : lookups) m.Replace(k, value);
       }},
      {"unordered_map assign",
       [&] {
         for (uint64_t k : lookups) um[k] = value;
       }},
      {"floor: index line + value, the library's copy",
       [&] {
         if (floor) index_value->Loop<shmc_bench::kLibrary>(lookups);
       }},
      {"unordered_map find + assign to a std::string",
       [&] {
         uint64_t sum = 0;
         for (uint64_t k : lookups) {
           out = um.find(k)->second;
           sum += out.size();
         }
         Keep(sum);
       }},
      {"floor, copied a word a load (atomics only)",
       [&] {
         if (floor) index_value->Loop<shmc_bench::kWords>(lookups);
       }},
      {"floor of a layout with a home per slot (tag, then both)",
       [&] {
         if (floor) index_value->LoopHome(lookups);
       }},
      {"floor of a per-slot hint table (tag + hints, then both)",
       [&] {
         if (floor) index_value->LoopHint(lookups);
       }},
  };
  enum { kFind, kFindMany, kString, kVisit, kUm, kUmCopy, kReplace, kUmAssign,
         kFloor, kUmString, kFloorWords, kFloorHome, kFloorHint };
  std::vector<std::function<void()>> bodies;
  for (const Op& op : ops) bodies.push_back(op.body);
  std::vector<std::vector<double>> ns = Rounds(rounds, nkeys, bodies);

  size_t seg_bytes = m.hash_table().ideal_capacity() * 16 +
                     m.link_table().total_nodes() *
                         shmc::ShmLinkTable<shmc::POSIX>::NodeCost(node);
  std::printf("keys %zu, %zu-byte values, %d rounds (every operation once a "
              "round, rotating order), POSIX segments\n\n",
              nkeys, vlen, rounds);
  std::printf("| operation | median ns/op | min-max |\n|---|---:|---:|\n");
  for (size_t k = 0; k < ops.size(); ++k) {
    std::printf("| %s | %.1f | %.1f-%.1f |\n", ops[k].name, Median(ns[k]),
                *std::min_element(ns[k].begin(), ns[k].end()),
                *std::max_element(ns[k].begin(), ns[k].end()));
  }
  // Each round's own ratio: the two sides ran minutes apart at most.
  auto ratio = [&](int base, int ours, const char* what, const char* goal) {
    shmc_bench::Spread r = shmc_bench::RoundRatios(ns[base], ns[ours]);
    std::printf("  %-46s %.2fx (%.2f-%.2f)%s\n", what, r.median, r.min,
                r.max, goal);
  };
  // The open goals, each beside the floor measured in the same rounds.
  std::printf("\ngoals, median of the rounds' own ratios (range)\n");
  ratio(kUm, kFind, "copy-free Find vs unordered_map find:", " [goal >= 0.75]");
  if (floor) {
    ratio(kUm, kFloor, "  its floor (index line + value, lib's copy):", "");
    ratio(kFloor, kFind, "  copy-free Find vs its floor:", "");
    ratio(kUm, kFloorWords, "  the floor copying a word a load:", "");
    ratio(kUm, kFloorHome, "  a home-per-slot layout's floor (not shmc's):",
          "");
    ratio(kUm, kFloorHint, "  a per-slot hint table's floor (not shmc's):",
          "");
    std::printf("  (the floor kept %.1f%% of the keys; the rest are misses "
                "in their line)\n", 100.0 * index_value->kept() / nkeys);
  }
  ratio(kUmString, kString, "std::string Find vs um find + assign:",
        " [goal >= 1.0]");
  std::printf("\nratios, baseline / shmc, median of the rounds' own (range)\n");
  ratio(kUm, kFind, "copy-free Find vs unordered_map find:", "");
  ratio(kUmCopy, kFind, "copy-free Find vs unordered_map find + copy:", "");
  ratio(kUm, kFindMany, "FindMany vs unordered_map find:", "");
  ratio(kUmCopy, kFindMany, "FindMany vs unordered_map find + copy:", "");
  ratio(kUm, kVisit, "Visit vs unordered_map find:", "");
  ratio(kUm, kString, "std::string Find vs unordered_map find:", "");
  ratio(kUmAssign, kReplace, "Replace vs unordered_map assign:", "");
  ratio(kFind, kFindMany, "FindMany vs copy-free Find:", "");
  std::printf("memory: %.1f bytes per value in segments (%.1f MB), sized for "
              "%zu keys\n", static_cast<double>(seg_bytes) / nkeys,
              seg_bytes / 1e6, nkeys * 5 / 4);

  // Find's two parts, each alone in the same shuffled order, with nothing
  // linking one lookup to the next: the index lookup (key to value handle),
  // and the value read given its handle. Their sum against Find shows what
  // the dependency between them costs. Measured after the Replace rounds,
  // which give every key a new handle.
  std::vector<shmc::link_buf_t> handles;
  handles.reserve(lookups.size());
  for (uint64_t k : lookups) {
    handles.push_back(shmc::link_buf_t::Unpack(
        cm.hash_table().Find(k)->LoadLink()));
  }
  std::vector<std::function<void()>> parts = {
      bodies[kFind],
      [&] {
        uint64_t sum = 0;
        for (uint64_t k : lookups) sum += cm.hash_table().Find(k)->LoadLink();
        Keep(sum);
      },
      [&] {
        uint64_t sum = 0;
        for (shmc::link_buf_t lb : handles) {
          size_t len = buf.size();
          cm.link_table().Read(lb, buf.data(), &len);
          sum += len + static_cast<unsigned char>(buf[0]);
        }
        Keep(sum);
      },
      bodies[kUm],
  };
  const char* part_names[] = {"copy-free Find", "index lookup only",
                              "value read only (handle known)",
                              "unordered_map find (touch value)"};
  std::vector<std::vector<double>> pns = Rounds(rounds, nkeys, parts);
  std::printf("\nFind's parts, each alone (median ns/op, min-max)\n");
  for (size_t k = 0; k < parts.size(); ++k) {
    std::printf("  %-34s %.1f (%.1f-%.1f)\n", part_names[k], Median(pns[k]),
                *std::min_element(pns[k].begin(), pns[k].end()),
                *std::max_element(pns[k].begin(), pns[k].end()));
  }
  shmc::POSIX().Unlink(seg + "0");
  shmc::POSIX().Unlink(seg + "1");
  return 0;
}
