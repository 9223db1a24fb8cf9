// Bare layouts that floor a hash-table lookup on this machine: no table
// logic around them (no concurrency, no overflow, no fill guarantee: a key
// whose bucket is full is left out). hash_table_bench times the floors of
// its goals with them in the same run as the table; bench/machine/
// lookup_floor.cc explores more of them. hash_map_bench times its goal's
// floor (IndexValueFloor) the same way.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/lookup_loops.h"
#include "shmc/detail/link_layout.h"
#include "shmc/detail/prefetch.h"
#include "shmc/detail/table_geometry.h"
#include "shmc/hash.h"

namespace shmc_bench {

constexpr size_t kAhead = 16;  // keys between a request and its use

// The memory a floor lives in: shared 4 KiB pages (a POSIX segment's),
// private memory with transparent huge pages (a heap's), or shared 2 MiB
// hugetlb pages (an SVIPC_HugeTLB segment's).
enum class MemoryKind { kShared, kThp, kHugeTlb };

// Zeroed memory of `bytes`; null only for kHugeTlb when the pool is short.
inline void* Map(size_t bytes, MemoryKind kind) {
  int flags = MAP_ANONYMOUS |
              (kind == MemoryKind::kThp ? MAP_PRIVATE : MAP_SHARED);
  if (kind == MemoryKind::kHugeTlb) {
    flags |= MAP_HUGETLB;
    bytes = (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) {
    if (kind == MemoryKind::kHugeTlb) return nullptr;
    std::perror("mmap");
    std::exit(1);
  }
  if (kind == MemoryKind::kThp) madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  return p;
}

// A bucket of N nodes on its own N/4 lines.
template <size_t N>
struct alignas(64) Bucket {
  Node node[N];
};

// Sum of the values of `key` in `b` (0 if absent): N compares.
template <size_t N>
inline uint64_t Scan(const Bucket<N>& b, uint64_t key) {
  uint64_t v = 0;
  for (const Node& n : b.node) v += n.key == key ? n.val : 0;
  return v;
}

// Bare buckets of N nodes; a key may sit in its first bucket (h's low half)
// or, with `two`, its second (high half). ok() is false when kHugeTlb
// memory could not be had.
template <size_t N>
class Buckets {
 public:
  Buckets(uint64_t slots, MemoryKind kind)
      : n_((slots + N - 1) / N),
        b_(static_cast<Bucket<N>*>(Map(n_ * sizeof(Bucket<N>), kind))) {}
  bool ok() const { return b_ != nullptr; }
  uint64_t size() const { return n_; }
  const Bucket<N>& At(uint64_t i) const { return b_[i]; }
  const Bucket<N>& First(uint64_t h) const {
    return b_[shmc::detail::ReduceRange(static_cast<uint32_t>(h), n_)];
  }
  const Bucket<N>& Second(uint64_t h) const {
    return b_[shmc::detail::ReduceRange(static_cast<uint32_t>(h >> 32), n_)];
  }
  // Puts `key` (with `val`) in its first bucket, or with `two` its second;
  // false if they are full.
  bool Insert(uint64_t key, uint64_t val, bool two) {
    uint64_t h = shmc::Mix64(key);
    if (Put(const_cast<Bucket<N>&>(First(h)), key, val)) return true;
    return two && Put(const_cast<Bucket<N>&>(Second(h)), key, val);
  }

 private:
  static bool Put(Bucket<N>& b, uint64_t key, uint64_t val) {
    for (Node& n : b.node) {
      if (n.key == 0) {
        n = Node{key, val};
        return true;
      }
    }
    return false;
  }
  uint64_t n_;
  Bucket<N>* b_;
};
using Lines = Buckets<4>;

// Single lookups, each in the key's first bucket: the least any table does
// for a hit (one line, its keys compared, nothing else).
template <class B>
void OneBucketLoop(const B& buckets, const std::vector<uint64_t>& lookups) {
  uint64_t sum = 0;
  for (uint64_t k : lookups) sum += Scan(buckets.First(shmc::Mix64(k)), k);
  Keep(sum);
}

// Both of each key's lines (two choices, as ShmHashTable's main rows)
// requested kAhead keys before they are compared: FindMany's floor.
inline void TwoLinesAheadLoop(const Lines& two,
                              const std::vector<uint64_t>& lookups) {
  uint64_t sum = 0;
  uint64_t hash[kAhead];
  auto request = [&](size_t slot, uint64_t key) {
    hash[slot] = shmc::Mix64(key);
    shmc::detail::PrefetchLine(&two.First(hash[slot]));
    shmc::detail::PrefetchLine(&two.Second(hash[slot]));
  };
  for (size_t i = 0; i < kAhead && i < lookups.size(); ++i) {
    request(i, lookups[i]);
  }
  for (size_t i = 0; i < lookups.size(); ++i) {
    uint64_t h = hash[i % kAhead];
    if (i + kAhead < lookups.size()) request(i % kAhead, lookups[i + kAhead]);
    sum += Scan(two.First(h), lookups[i]) + Scan(two.Second(h), lookups[i]);
  }
  Keep(sum);
}

// One value of the map floors: a version word (even: stable) and the bytes.
constexpr size_t kValueBytes = 100;
struct alignas(64) Value {
  std::atomic<uint64_t> version;
  uint64_t key;  // used by the value-in-line floor only
  std::atomic<uint64_t> len;
  std::atomic<uint64_t> word[13];  // 104 bytes: room for the 100
};
static_assert(sizeof(Value) == 128, "two lines");

// The ways a floor reads a value it found, least work first.
enum Read {
  kTouch,   // its first and last byte, in place (what um find does here)
  kVector,  // copied out with memcpy, between two loads of the version word
            // (validated): the fewest load instructions, but a plain copy
            // racing a writer is outside the C++ memory model
  kWords,   // the same with 8-byte relaxed atomic loads: the cheapest copy
            // the C++ memory model alone allows
  kLibrary,  // the same with the library's shmc::detail::LoadWords (16-byte
             // loads in asm on x86-64, ordered by the hardware)
};

// Reads `v` the way `kRead` says into `out` (room for 104 bytes); returns
// its length plus what was read of its first byte, or 0 if a writer moved
// its version (a validating reader's retry).
template <Read kRead>
inline size_t ReadValue(const Value& v, char* out) {
  if (kRead == kTouch) {
    auto* bytes = reinterpret_cast<const unsigned char*>(v.word);
    return bytes[0] + bytes[kValueBytes - 1];
  }
  uint64_t before = v.version.load(std::memory_order_acquire);
  size_t len = v.len.load(std::memory_order_relaxed);
  if (kRead == kVector) {
    std::memcpy(out, reinterpret_cast<const char*>(v.word), 104);
  } else if (kRead == kLibrary) {
    shmc::detail::LoadWords(out, v.word, 104);
  } else {
    for (size_t i = 0; i < 13; ++i) {
      uint64_t w = v.word[i].load(std::memory_order_relaxed);
      std::memcpy(out + 8 * i, &w, 8);
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  if ((before & 1) != 0 ||
      v.version.load(std::memory_order_relaxed) != before || len > 104)
    return 0;
  return len + static_cast<unsigned char>(out[0]);
}

inline void WriteValue(Value* v, uint64_t key, const std::string& s) {
  v->key = key;
  v->len.store(s.size(), std::memory_order_relaxed);
  uint64_t words[13] = {};
  std::memcpy(words, s.data(), s.size());
  for (size_t i = 0; i < 13; ++i)
    v->word[i].store(words[i], std::memory_order_relaxed);
  v->version.store(2, std::memory_order_release);
}

// The least a map whose values live outside its index does (the map
// goals' floor): one line of {key, value index} named by the hash, then the
// value at that index, 128-byte slots written in key order (as
// unordered_map's heap holds them). A key whose line is full is left out.
class IndexValueFloor {
 public:
  IndexValueFloor(const std::vector<uint64_t>& keys, const std::string& value)
      : index_(keys.size() * 5 / 4, MemoryKind::kShared),
        values_(static_cast<Value*>(
            Map(keys.size() * sizeof(Value), MemoryKind::kShared))),
        home_(static_cast<Value*>(
            Map(index_.size() * 4 * sizeof(Value), MemoryKind::kShared))),
        tags_(static_cast<uint32_t*>(
            Map(index_.size() * sizeof(uint32_t), MemoryKind::kShared))),
        hints_(static_cast<uint32_t*>(
            Map(index_.size() * 4 * sizeof(uint32_t), MemoryKind::kShared))) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!index_.Insert(keys[i], i, false)) continue;
      WriteValue(&values_[i], keys[i], value);
      ++kept_;
      // The same value at its slot's home, the slot's hint (where the
      // value is in values_), and the slot's tag.
      uint64_t h = shmc::Mix64(keys[i]);
      uint64_t b = Line(h);
      for (uint32_t p = 0; p < 4; ++p) {
        if (index_.At(b).node[p].key != keys[i]) continue;
        WriteValue(&home_[b * 4 + p], keys[i], value);
        hints_[b * 4 + p] = static_cast<uint32_t>(i);
        tags_[b] |= shmc::detail::TagOf(h) << (8 * p);
      }
    }
  }
  size_t kept() const { return kept_; }

  // Finds each key and reads its value as kRead says.
  template <Read kRead>
  void Loop(const std::vector<uint64_t>& lookups) const {
    char buf[128];
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      for (const Node& n : index_.First(shmc::Mix64(k)).node) {
        if (n.key == k) sum += ReadValue<kRead>(values_[n.val], buf);
      }
    }
    Keep(sum);
  }

  // The floor of a layout where each index slot has a home for its value
  // (not shmc's): a tag word names the slot, and the slot's line and its
  // value are then read together instead of one after the other.
  void LoopHome(const std::vector<uint64_t>& lookups) const {
    char buf[128];
    LoopTagged(lookups, [](uint64_t) {},
               [&](uint64_t b, uint32_t p, uint64_t k) -> size_t {
                 if (index_.At(b).node[p].key != k) return 0;
                 return ReadValue<kLibrary>(home_[b * 4 + p], buf);
               });
  }

  // The floor of a per-slot hint table beside the index (not shmc's): the
  // hints of the key's line are requested with the line, and once the tag
  // word names the slot, the value its hint names is requested before the
  // index line is in. The hints are a fifth of the index's bytes, so they
  // miss as the index line does: a pointer to the value saves nothing
  // unless the value's address follows from the slot itself (LoopHome).
  void LoopHint(const std::vector<uint64_t>& lookups) const {
    char buf[128];
    LoopTagged(lookups,
               [&](uint64_t b) {
                 shmc::detail::PrefetchLine(&hints_[b * 4]);
                 shmc::detail::PrefetchLine(&index_.At(b));
               },
               [&](uint64_t b, uint32_t p, uint64_t k) -> size_t {
                 shmc::detail::PrefetchLine(&values_[hints_[b * 4 + p]]);
                 const Node& n = index_.At(b).node[p];
                 if (n.key != k) return 0;
                 return ReadValue<kLibrary>(values_[n.val], buf);
               });
  }

 private:
  // The lookup both tagged floors share: for each key, on_line(b) runs
  // once its index line b is known; then the line's tag word names the
  // slot p, and read(b, p, key) returns what it read there (0 for none).
  template <class OnLine, class Read>
  void LoopTagged(const std::vector<uint64_t>& lookups,
                  const OnLine& on_line, const Read& read) const {
    uint64_t sum = 0;
    for (uint64_t k : lookups) {
      uint64_t h = shmc::Mix64(k);
      uint64_t b = Line(h);
      on_line(b);
      uint32_t m =
          shmc::detail::MatchTagWord(tags_[b], shmc::detail::TagOf(h));
      if (m == 0) continue;
      sum += read(b, static_cast<uint32_t>(__builtin_ctz(m)), k);
    }
    Keep(sum);
  }

  uint64_t Line(uint64_t h) const {
    return shmc::detail::ReduceRange(static_cast<uint32_t>(h), index_.size());
  }

  Lines index_;
  Value* values_;
  Value* home_;
  uint32_t* tags_;
  uint32_t* hints_;  // four per index line: its slots' value indexes
  size_t kept_ = 0;
};

}  // namespace shmc_bench
