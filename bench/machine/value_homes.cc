// The ceiling of a copy-free map Find for four places a value can live,
// against std::unordered_map<uint64_t, std::string>'s find in the same
// rounds (the goal's baseline: copy-free Find >= 0.75x it).
//
// The index is shmc's own ShmHashTable of MapNode<uint64_t> (the map's
// index node: key, then the value's handle), in a POSIX segment. The values
// are 100 bytes in a pool laid out as ShmLinkTable's nodes (16-byte node
// head, 104 data bytes, a 120-byte stride) in shared 4 KiB pages. The
// reader is the leanest that keeps ShmHashMap's checks for a value of one
// node: the tag pair names a candidate slot; its handle (acquire) and key;
// the handle's bounds; the value's tag (acquire) and length; the copy
// (detail::LoadWords, as the library copies); a fence; the value's tag and
// the handle again. Anything else goes to the table's full lookup.
//
// Placements, each with its own index (the same keys in the same order,
// so every key has the same slot in each), over one pool:
//   away  the value at the node a fresh ShmLinkTable hands out during a
//         fill (the i-th key's at the i-th node): today's layout; the
//         reader cannot know where it is before the index line arrives.
//   home  every value at its slot's home, node 2 * slot + 1: the reader
//         requests it once the tag pair names the slot, with the index
//         line. A writer cannot keep this: a Replace must not overwrite
//         the live value, so the new one lives elsewhere.
//   half  half the slots' values at home, the rest away: what one home
//         per slot keeps under Replace (a value is home after every second
//         write of its key).
//   two   every value in one of its slot's two homes (2 * slot + 1 or + 2,
//         at random), the reader requesting both: a layout that could keep
//         every value home, at twice the nodes.
//
// Build: cmake -DSHMC_BUILD_PROBES=ON, target probe_value_homes; run:
// value_homes [rounds] (default 7). Needs about 1 GB of memory.
#include <sys/mman.h>
#include <unistd.h>

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
#include <unordered_map>
#include <vector>

#include "bench/bench_util.h"
#include "bench/lookup_loops.h"
#include "shmc/detail/link_layout.h"
#include "shmc/detail/prefetch.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"

namespace {

using shmc::detail::kLinkHeadFlag;
using shmc::detail::PrefetchLine;
using Node = shmc::detail::MapNode<uint64_t>;
using Table = shmc::ShmHashTable<uint64_t, Node, shmc::POSIX>;

constexpr size_t kValueBytes = 100;
constexpr size_t kDataWords = 13;  // ShmLinkTable's node of 104 bytes
struct ValueNode {
  shmc::detail::LinkNodeHead head;
  std::atomic<uint64_t> data[kDataWords];
};
static_assert(sizeof(ValueNode) == 120, "ShmLinkTable's stride for 104 B");

enum Place { kAway, kHome, kHalf, kTwo, kPlaces };
const char* const kPlaceName[kPlaces] = {"away", "home", "half", "two"};

class Pool {
 public:
  explicit Pool(uint64_t nodes) : nodes_(nodes) {
    bytes_ = (nodes + 1) * sizeof(ValueNode);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("value_homes: mmap");
      std::exit(1);
    }
    node_ = static_cast<ValueNode*>(p);
  }
  ~Pool() { munmap(node_, bytes_); }
  uint64_t nodes() const { return nodes_; }
  ValueNode* at(uint64_t i) const { return node_ + i; }

  // Writes value v into node `at` as a one-node value with handle tag
  // `tag` (published last, release, as ShmLinkTable publishes a value).
  void Put(uint64_t at, uint32_t tag, const std::string& v) const {
    ValueNode* n = node_ + at;
    uint64_t words[kDataWords] = {};
    std::memcpy(words, v.data(), v.size());
    for (size_t w = 0; w < kDataWords; ++w) {
      n->data[w].store(words[w], std::memory_order_relaxed);
    }
    n->head.len.store(static_cast<uint32_t>(v.size()),
                      std::memory_order_relaxed);
    n->head.tag.store(tag | kLinkHeadFlag, std::memory_order_release);
  }

 private:
  uint64_t nodes_;
  size_t bytes_;
  ValueNode* node_;
};

// Requests the lines of node `i` (120 bytes: two or three lines).
inline void RequestNode(const Pool& pool, uint64_t i) {
  const char* p = reinterpret_cast<const char*>(pool.at(i));
  PrefetchLine(p);
  PrefetchLine(p + 64);
  PrefetchLine(p + sizeof(ValueNode) - 1);
}

// An index as its reader sees it: the table, and its tag array and nodes
// found from its documented layout (docs/layout/hash_table.md), so that the
// reader below does what ShmHashTable::Find does up to the candidate slot,
// with the home request added there.
struct Index {
  const Table* t;
  shmc::detail::TableGeometry geo;
  const volatile Node* nodes;
  const std::atomic<uint32_t>* tags;

  Index(const Table* table, const shmc::detail::TableGeometry& g)
      : t(table), geo(g), nodes(table->node_at(0)) {
    const volatile char* base =
        reinterpret_cast<const volatile char*>(nodes) -
        shmc::detail::FixedLayout::Table(sizeof(Node), alignof(Node),
                                         shmc::ShmHash<uint64_t>::kId, g)
            .nodes_offset();
    tags = reinterpret_cast<const std::atomic<uint32_t>*>(
        const_cast<const char*>(base) +
        shmc::detail::TableTagsOffset(g.main_buckets));
  }
};

// Copies key's value into buf (room for cap bytes) as described at the top;
// returns its length, or 0 if not found or the checks failed. kHomes: how
// many home nodes of the candidate slot to request (0, 1 or 2).
template <int kHomes>
size_t Read(const Index& ix, const Pool& pool, uint64_t key, char* buf,
            size_t cap) {
  uint64_t h = shmc::ShmHash<uint64_t>()(key);
  uint32_t tag = shmc::detail::TagOf(h);
  uint64_t g0 = ix.geo.row_first[0] +
                shmc::detail::ReduceRange(static_cast<uint32_t>(h),
                                          ix.geo.main_buckets);
  uint64_t g1 = ix.geo.row_first[1] +
                shmc::detail::ReduceRange(static_cast<uint32_t>(h >> 32),
                                          ix.geo.main_buckets);
  PrefetchLine(const_cast<const Node*>(ix.nodes + g0 * 4));
  PrefetchLine(const_cast<const Node*>(ix.nodes + g1 * 4));
  uint64_t words =
      ix.tags[g0].load(std::memory_order_relaxed) |
      static_cast<uint64_t>(ix.tags[g1].load(std::memory_order_relaxed))
          << 32;
  uint32_t m = shmc::detail::MatchTagPair(words, tag);
  const volatile Node* n = nullptr;
  uint64_t l = 0;
  if (m != 0) {
    // The first match, row 0 before row 1, picked without a branch.
    uint32_t first = static_cast<uint32_t>(__builtin_ctz(m));
    uint64_t pick1 = 0 - static_cast<uint64_t>(first >> 2);
    asm("" : "+r"(pick1));
    uint64_t slot = (g0 ^ ((g0 ^ g1) & pick1)) * 4 + (first & 3);
    if (kHomes > 0) {
      RequestNode(pool, 2 * slot + 1);
      if (kHomes > 1) RequestNode(pool, 2 * slot + 2);
    }
    n = ix.nodes + slot;
    l = n->LoadLink();
  }
  if (static_cast<uint32_t>(l) == 0 || !(n->LoadKey() == key)) {
    n = ix.t->Find(key);  // no candidate, or another key: the full lookup
    if (n == nullptr) return 0;
    l = n->LoadLink();
    if (static_cast<uint32_t>(l) == 0 || !(n->LoadKey() == key)) return 0;
  }
  uint32_t head = static_cast<uint32_t>(l);
  uint32_t vtag = static_cast<uint32_t>(l >> 32);
  if (head > pool.nodes() || vtag == 0 || (vtag & kLinkHeadFlag)) return 0;
  const ValueNode* v = pool.at(head);
  uint32_t want = vtag | kLinkHeadFlag;
  if (v->head.tag.load(std::memory_order_acquire) != want) return 0;
  uint32_t len = v->head.len.load(std::memory_order_relaxed);
  if (len > kDataWords * 8 || len > cap) return 0;
  shmc::detail::LoadWords(buf, v->data, len);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (v->head.tag.load(std::memory_order_relaxed) != want ||
      n->LoadLink() != l) {
    return 0;
  }
  return len;
}

template <int kHomes>
void ReadLoop(const Index& t, const Pool& pool,
              const std::vector<uint64_t>& lookups, size_t* found) {
  char buf[128];
  uint64_t sum = 0;
  size_t hits = 0;
  for (uint64_t k : lookups) {
    size_t len = Read<kHomes>(t, pool, k, buf, sizeof buf);
    hits += len != 0;
    sum += len + static_cast<unsigned char>(buf[0]);
  }
  shmc_bench::Keep(sum);
  *found = hits;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: %s [rounds >= 1]\n", argv[0]);
    return 2;
  }
  const size_t nkeys = 1000000;
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(nkeys);
  for (auto& k : keys) k = rng() | 1;
  std::vector<uint64_t> lookups = keys;
  std::shuffle(lookups.begin(), lookups.end(), rng);
  std::string value(kValueBytes, 'v');

  // One index per placement, sized as hash_map_bench sizes its map's.
  std::string base = "/shmc_value_homes." + std::to_string(getpid()) + ".";
  std::unique_ptr<Table> index[kPlaces];
  for (int p = 0; p < kPlaces; ++p) {
    index[p] = std::make_unique<Table>();
    if (!index[p]->InitForWrite(base + kPlaceName[p], nkeys * 5 / 4)) {
      std::fprintf(stderr, "value_homes: %s\n",
                   index[p]->last_error().message.c_str());
      return 1;
    }
  }
  const uint64_t slots = index[0]->ideal_capacity();
  // Nodes 1..2*slots+2 are the homes, then nkeys nodes for values away.
  const uint64_t away0 = 2 * slots + 3;
  Pool pool(away0 + nkeys);
  std::mt19937_64 coin(2);
  bool ok = true;
  for (size_t i = 0; i < nkeys && ok; ++i) {
    uint32_t tag = static_cast<uint32_t>(i % 0x7ffffffe) + 1;
    volatile Node* n[kPlaces];
    for (int p = 0; p < kPlaces; ++p) {
      bool found = false;
      n[p] = index[p]->FindOrAlloc(keys[i], &found);
      // The same slot in every index, or the placements are not comparable.
      ok = ok && n[p] != nullptr && !found &&
           index[p]->node_index(n[p]) == index[0]->node_index(n[0]);
    }
    if (!ok) break;
    uint64_t s = index[0]->node_index(n[0]);
    uint64_t home = 2 * s + 1;
    uint64_t at[kPlaces];
    at[kAway] = away0 + i;
    at[kHome] = home;
    at[kHalf] = (s * 0x9e3779b97f4a7c15ULL) >> 63 ? home : away0 + i;
    at[kTwo] = home + (coin() & 1);
    for (int p = 0; p < kPlaces; ++p) {
      pool.Put(at[p], tag, value);
      n[p]->StoreKey(keys[i]);
      n[p]->link_word()->store(
          shmc::detail::PackLink(static_cast<uint32_t>(at[p]), tag),
          std::memory_order_release);
    }
  }
  if (!ok) {
    std::fprintf(stderr, "value_homes: the indexes disagree or are full\n");
    return 1;
  }
  std::unordered_map<uint64_t, std::string> um;
  um.reserve(nkeys);
  for (uint64_t k : keys) um.emplace(k, value);

  // The geometry ShmHashTable gives a capacity (checked against its slots).
  shmc::detail::TableGeometry geo =
      shmc::detail::TableGeometry::ForCapacity(nkeys * 5 / 4, 4);
  if (geo.total_slots() != slots || sizeof(Node) * 4 != 64) {
    std::fprintf(stderr, "value_homes: unexpected table geometry\n");
    return 1;
  }
  std::vector<Index> bk;
  for (int p = 0; p < kPlaces; ++p) bk.emplace_back(index[p].get(), geo);
  size_t found[kPlaces] = {};
  std::vector<std::function<void()>> bodies = {
      [&] { shmc_bench::UmFindLoop(um, lookups); },
      [&] { ReadLoop<0>(bk[kAway], pool, lookups, &found[kAway]); },
      [&] { ReadLoop<1>(bk[kHome], pool, lookups, &found[kHome]); },
      [&] { ReadLoop<1>(bk[kHalf], pool, lookups, &found[kHalf]); },
      [&] { ReadLoop<2>(bk[kTwo], pool, lookups, &found[kTwo]); },
  };
  std::vector<std::vector<double>> ns =
      shmc_bench::Rounds(rounds, nkeys, bodies);
  std::printf("value_homes: %zu keys, %zu-byte values, %d rounds "
              "(rotating order), index of %llu slots\n\n", nkeys,
              kValueBytes, rounds, static_cast<unsigned long long>(slots));
  std::printf("| reader | median ns | x unordered_map find, median "
              "(range) | found |\n|---|---:|---:|---:|\n");
  std::printf("| unordered_map find (touch value) | %.1f | 1 | %zu |\n",
              shmc_bench::Median(ns[0]), nkeys);
  const char* what[kPlaces] = {
      "away (today's layout), no home requested",
      "home: all values at home, home requested",
      "half: half the values at home, home requested",
      "two: each value in one of two homes, both requested"};
  for (int p = 0; p < kPlaces; ++p) {
    shmc_bench::Spread r = shmc_bench::RoundRatios(ns[0], ns[1 + p]);
    std::printf("| %s | %.1f | %.2f (%.2f-%.2f) | %zu |\n", what[p],
                shmc_bench::Median(ns[1 + p]), r.median, r.min, r.max,
                found[p]);
  }
  for (int p = 0; p < kPlaces; ++p) {
    index[p].reset();
    shmc::POSIX().Unlink(base + kPlaceName[p]);
  }
  return 0;
}
