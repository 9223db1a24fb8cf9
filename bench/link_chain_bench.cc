// link_chain_bench: reading values longer than one node from a
// ShmLinkTable whose chains are scattered over the pool (as in a
// long-lived segment), with the read-ahead hints as the writer leaves them
// and, in the same run, with every hint cleared (the reader then follows
// the links alone, as it did before hints: one dependent access a node);
// beside them, the same bytes read from one contiguous std::string each
// (the floor of a value in one piece).
//
//   link_chain_bench [--values N] [--value BYTES] [--node BYTES]
//                    [--rounds R]
//
// Each round reads every value once in a random order, the three ways in
// rotating order; ratios are each round's own.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "shmc/shm_link_table.h"

namespace {

using Table = shmc::ShmLinkTable<shmc::POSIX>;
namespace sd = shmc::detail;

// Sets every node's hint word to 0 or back to what the writer left.
void SetHints(char* base, uint64_t nodes, uint64_t stride,
              std::vector<uint32_t>* saved, bool clear) {
  constexpr size_t kNodesAt =
      sizeof(sd::SegmentHeader) + sizeof(sd::LinkTableHeader);
  if (clear) saved->assign(nodes + 1, 0);
  for (uint64_t i = 1; i <= nodes; ++i) {
    auto* h = reinterpret_cast<sd::LinkNodeHead*>(base + kNodesAt + i * stride);
    if (clear) {
      (*saved)[i] = h->hint.load(std::memory_order_relaxed);
      h->hint.store(0, std::memory_order_relaxed);
    } else {
      h->hint.store((*saved)[i], std::memory_order_relaxed);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t nvalues = 200000, vlen = 2048, node = 64;
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--values" && i + 1 < argc) {
      nvalues = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--value" && i + 1 < argc) {
      vlen = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--node" && i + 1 < argc) {
      node = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--values N] [--value BYTES] "
                   "[--node BYTES] [--rounds R]\n", argv[0]);
      return 2;
    }
  }
  if (nvalues == 0 || vlen == 0 || node == 0 || rounds < 1) {
    std::fprintf(stderr, "link_chain_bench: every number must be >= 1\n");
    return 2;
  }
  const uint64_t per = (vlen + node - 1) / node;
  const uint64_t nodes = nvalues * per * 5 / 4;
  const std::string seg = "/shmc_link_chain_bench_" + std::to_string(getpid());
  Table t;
  if (!t.InitForWrite(seg, node, nodes)) {
    std::fprintf(stderr, "%s\n", t.last_error().message.c_str());
    return 1;
  }
  // Scatter the free list as a long-lived pool's is: fill it with
  // one-node values, free them in a random order, then write the values.
  std::mt19937_64 rng(1);
  std::vector<shmc::link_buf_t> singles;
  for (uint64_t i = 0; i < nodes; ++i) singles.push_back(t.New("x", 1));
  std::shuffle(singles.begin(), singles.end(), rng);
  for (shmc::link_buf_t lb : singles) t.Free(lb);
  std::vector<shmc::link_buf_t> lbs;
  std::vector<std::string> plain;
  for (size_t i = 0; i < nvalues; ++i) {
    std::string v(vlen, static_cast<char>('a' + i % 26));
    lbs.push_back(t.New(v.data(), v.size()));
    if (!lbs.back()) {
      std::fprintf(stderr, "link_chain_bench: pool full at %zu\n", i);
      return 1;
    }
    plain.push_back(std::move(v));
  }
  std::vector<size_t> order(nvalues);
  for (size_t i = 0; i < nvalues; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);

  shmc::POSIX alloc;
  size_t mapped = 0;
  char* base = static_cast<char*>(alloc.Attach(seg, 0, 0, &mapped));
  if (base == nullptr) return 1;
  std::vector<uint32_t> saved;
  std::vector<char> buf(vlen);
  const char* names[] = {"hints (as written)", "links alone (hints cleared)",
                         "floor: one std::string per value"};
  const uint64_t stride = Table::NodeCost(node);
  // Hints are cleared before the links-alone reads and put back after,
  // both untimed.
  std::vector<std::vector<double>> ns = shmc_bench::RotatingRounds(
      rounds, 3, [&](size_t k) {
        if (k == 1) SetHints(base, nodes, stride, &saved, true);
        double t0 = shmc_bench::NowNs();
        uint64_t sum = 0;
        for (size_t i : order) {
          if (k == 2) {
            std::memcpy(buf.data(), plain[i].data(), vlen);
          } else {
            size_t n = vlen;
            t.Read(lbs[i], buf.data(), &n);
          }
          sum += static_cast<unsigned char>(buf[vlen - 1]);
        }
        shmc_bench::Keep(sum);
        double per_value = (shmc_bench::NowNs() - t0) / nvalues;
        if (k == 1) SetHints(base, nodes, stride, &saved, false);
        return per_value;
      });
  alloc.Detach(base, mapped);
  shmc::POSIX().Unlink(seg);

  std::printf("%zu values of %zu bytes in %llu-node chains (%zu-byte nodes), "
              "%d rounds, reads in a random order\n\n", nvalues, vlen,
              static_cast<unsigned long long>(per), node, rounds);
  std::printf("| read | median ns/value | min-max |\n|---|---:|---:|\n");
  for (size_t k = 0; k < ns.size(); ++k) {
    std::printf("| %s | %.1f | %.1f-%.1f |\n", names[k],
                shmc_bench::Median(ns[k]),
                *std::min_element(ns[k].begin(), ns[k].end()),
                *std::max_element(ns[k].begin(), ns[k].end()));
  }
  shmc_bench::Spread s = shmc_bench::RoundRatios(ns[1], ns[0]);
  std::printf("\nlinks alone / hints: %.2fx (rounds %.2f-%.2f)\n", s.median,
              s.min, s.max);
  s = shmc_bench::RoundRatios(ns[0], ns[2]);
  std::printf("hints / one piece: %.2fx (rounds %.2f-%.2f)\n", s.median,
              s.min, s.max);
  return 0;
}
