// value_pool_bench: ShmHashMap over ShmExtentTable against ShmHashMap over
// ShmLinkTable (the baseline: 64-byte nodes, as shmkv's store has them),
// same keys and values, same run.
//
//   value_pool_bench [--keys N] [--sizes "40 130 1030"] [--rounds R]
//
// For each value size: the bytes each value pool holds per key (nodes
// with their heads, or granules up to the top; the indexes are alike),
// and ns per copy-free Find, per
// FindMany (256 keys a call) and per Replace of a random key with a value
// of the same size. The default sizes are shmkv's blobs for values of 10,
// 100 and 1,000 bytes under a 14-byte key (a 16-byte head, the key, the
// value). Rounds rotate the order; ratios are each round's own.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"

namespace {

using Links = shmc::ShmHashMap<uint64_t, shmc::POSIX>;
using Extents = shmc::ShmHashMap<uint64_t, shmc::POSIX,
                                 shmc::ShmExtentTable<shmc::POSIX>>;

template <class Map>
struct Side {
  Map m;
  std::string seg;
  explicit Side(const std::string& s) : seg(s) { Clean(); }
  ~Side() { Clean(); }
  void Clean() {
    shmc::POSIX().Unlink(seg + "0");
    shmc::POSIX().Unlink(seg + "1");
  }
};

}  // namespace

int main(int argc, char** argv) {
  size_t nkeys = 1000000;
  int rounds = 5;
  std::vector<size_t> sizes = {40, 130, 1030};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keys" && i + 1 < argc) {
      nkeys = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::istringstream in(argv[++i]);
      size_t s;
      while (in >> s) sizes.push_back(s);
    } else {
      std::fprintf(stderr, "usage: %s [--keys N] [--sizes \"S...\"] "
                   "[--rounds R]\n", argv[0]);
      return 2;
    }
  }
  if (nkeys == 0 || rounds < 1 || sizes.empty()) {
    std::fprintf(stderr, "value_pool_bench: bad arguments\n");
    return 2;
  }
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(nkeys);
  for (auto& k : keys) k = rng() | 1;
  std::vector<uint64_t> lookups = keys;
  std::shuffle(lookups.begin(), lookups.end(), rng);
  std::printf("# %zu keys, %d rounds; ns per op, median (min-max) of each "
              "round's extent/link ratio\n", nkeys, rounds);
  std::printf("%-6s %-8s %10s %10s %10s %10s\n", "value", "pool", "pool B/key",
              "find ns", "many ns", "replace ns");
  for (size_t vlen : sizes) {
    std::string value(vlen, 'v');
    Side<Links> l("/shmc_vpool_bench_l");
    Side<Extents> e("/shmc_vpool_bench_e");
    // Room for every value twice over (a replace needs its new value's
    // room before the old one goes).
    const size_t link_nodes = nkeys * ((vlen + 63) / 64) * 5 / 4 + 64;
    if (!l.m.InitForWrite(l.seg, nkeys, 64, link_nodes) ||
        !e.m.InitForWrite(e.seg, nkeys, 64, link_nodes)) {
      std::fprintf(stderr, "cannot make the maps: %s %s\n",
                   l.m.last_error().message.c_str(),
                   e.m.last_error().message.c_str());
      return 1;
    }
    for (uint64_t k : keys) {
      if (!l.m.Replace(k, value) || !e.m.Replace(k, value)) {
        std::fprintf(stderr, "fill failed\n");
        return 1;
      }
    }
    // The value pools' bytes in use per key (the two indexes are alike).
    const double l_bytes =
        static_cast<double>((l.m.link_table().total_nodes() -
                             l.m.link_table().free_nodes()) *
                            shmc::ShmLinkTable<shmc::POSIX>::NodeCost(64)) /
            static_cast<double>(nkeys);
    const double e_bytes =
        static_cast<double>(e.m.link_table().used_nodes() * 8) /
            static_cast<double>(nkeys);
    std::vector<char> buf(vlen + 64);
    constexpr size_t kMany = 256;
    std::vector<char> many(kMany * vlen);
    size_t lens[kMany];
    auto find = [&](const auto& m) {
      uint64_t sum = 0;
      for (uint64_t k : lookups) {
        size_t len = buf.size();
        m.Find(k, buf.data(), &len);
        sum += len + static_cast<unsigned char>(buf[0]);
      }
      shmc_bench::Keep(sum);
    };
    auto find_many = [&](const auto& m) {
      uint64_t sum = 0;
      for (size_t i = 0; i < lookups.size(); i += kMany) {
        size_t n = std::min(kMany, lookups.size() - i);
        sum += m.FindMany(&lookups[i], n, many.data(), vlen, lens);
      }
      shmc_bench::Keep(sum);
    };
    std::mt19937_64 wr(2);
    const size_t writes = nkeys / 4;
    auto replace = [&](auto& m) {
      for (size_t i = 0; i < writes; ++i) {
        m.Replace(keys[wr() % nkeys], value);
      }
    };
    const auto& cl = l.m;
    const auto& ce = e.m;
    auto reads = shmc_bench::Rounds(
        rounds, nkeys,
        {[&] { find(cl); }, [&] { find(ce); }, [&] { find_many(cl); },
         [&] { find_many(ce); }});
    auto writes_ns = shmc_bench::Rounds(
        rounds, writes, {[&] { replace(l.m); }, [&] { replace(e.m); }});
    auto med = [](const std::vector<double>& v) {
      return shmc_bench::Median(v);
    };
    std::printf("%-6zu %-8s %10.1f %10.1f %10.1f %10.1f\n", vlen, "link",
                l_bytes, med(reads[0]), med(reads[2]), med(writes_ns[0]));
    std::printf("%-6zu %-8s %10.1f %10.1f %10.1f %10.1f\n", vlen, "extent",
                e_bytes, med(reads[1]), med(reads[3]), med(writes_ns[1]));
    auto f = shmc_bench::RoundRatios(reads[1], reads[0]);
    auto fm = shmc_bench::RoundRatios(reads[3], reads[2]);
    auto w = shmc_bench::RoundRatios(writes_ns[1], writes_ns[0]);
    std::printf("%-6zu %-8s %10.2fx %4.2fx (%.2f-%.2f) %4.2fx (%.2f-%.2f) "
                "%4.2fx (%.2f-%.2f)\n",
                vlen, "ratio", e_bytes / l_bytes, f.median, f.min, f.max,
                fm.median, fm.min, fm.max, w.median, w.min, w.max);
    std::fflush(stdout);
  }
  return 0;
}
