// ShmHashTable<Key, Node, Alloc>: a pre-allocated hash table of fixed-size
// nodes in shared memory, one writer and any number of readers.
//
// Geometry (docs/hash_table.md, detail/table_geometry.h): buckets of
// `kSlots` consecutive nodes (one 64-byte line for 16-byte nodes); two main
// rows (a key lives in bucket b0 of row 0 or b1 of row 1, inserted into the
// less loaded) and four small overflow rows behind them. Every slot has a
// one-byte tag (8 bits of the key's hash) in a separate array, 1/16 of the
// nodes' size for 16-byte nodes: a lookup compares the two main buckets'
// tags and reads only the node they point at (both node lines are requested
// early, so a hit does not wait for two round trips in a row), and a miss
// usually ends with the tags. A miss goes past the main rows only if both
// buckets once overflowed, which a bitmap of 2 bits per bucket pair
// records.
//
//   [SegmentHeader 512][HashTableHeader 64][bitmap row 0][bitmap row 1][tags]
//   [row 0 buckets][row 1 buckets][overflow row 0]...[overflow row 3]
//
// Node contract (as in the reference): a standard-layout type with
//   std::pair<bool, Key> Key() const volatile;   (and/or Key(Arg))
// where the bool says the node is in use. The table never writes nodes: the
// caller fills the node FindOrAlloc returns, and clears it to erase.
//
// Concurrency: one writer process (FindOrAlloc) and any number of readers
// (Find, FindMany, Travel). The table's own metadata (the slot's tag, and
// the overflow bitmap and depth) is updated before FindOrAlloc returns,
// followed by a release fence, so a reader that sees the caller's key
// (written after FindOrAlloc returns, published with release and read with
// acquire in Node::Key()) also sees the metadata needed to reach it: no
// false misses. Node contents are the caller's to synchronise
// (docs/memory-ordering.md).
//
// A node gets its key only through the slot FindOrAlloc returned (as in the
// reference); a key written into another slot would not be found, since
// its tag is not there. Erasing (clearing the node) leaves a stale tag,
// which lookups skip after comparing the key.
//
// Differences from the reference: a fixed hash (shmc/hash.h) instead of
// std::hash; no division on the lookup path; misses stop early; FindMany.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "shmc/common_utils.h"
#include "shmc/detail/fixed_layout.h"
#include "shmc/detail/node_key.h"
#include "shmc/detail/segment.h"
#include "shmc/detail/table_check.h"
#include "shmc/detail/table_geometry.h"
#include "shmc/detail/travel.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/hash.h"
#include "shmc/shm_alloc.h"

namespace shmc {

template <class KeyType, class Alloc, class Values>
class ShmHashMap;
template <class Key, class Node, class Alloc>
class ShmDoubleTable;

template <class Key, class Node, class Alloc = SVIPC>
class ShmHashTable {
  static_assert(std::is_standard_layout<Node>::value,
                "Node lives in shared memory: it must be standard-layout");

 public:
  static constexpr uint32_t kLayoutVersion = detail::kTableLayoutVersion;
  // Nodes per bucket: a whole cache line of small nodes, and never fewer
  // than 4 (with fewer, two-choice buckets cannot reach 90% fill).
  static constexpr uint32_t kSlots =
      sizeof(Node) * 4 <= detail::kCacheLine
          ? static_cast<uint32_t>(detail::kCacheLine / sizeof(Node) > 64
                                      ? 64
                                      : detail::kCacheLine / sizeof(Node))
          : 4;
  // Largest capacity accepted: keeps every row under 2^32 slots.
  static constexpr uint64_t kMaxCapacity = 4000000000ULL;

  ShmHashTable() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmHashTable);

  // Attaches or creates (per the default create flags) a table sized for
  // `capacity` keys. An existing table must have the same geometry.
  // Errors: create errors; kWriterBusy; kInvalidArgument for a capacity
  // outside 1..kMaxCapacity.
  bool InitForWrite(const std::string& shm_key, size_t capacity) {
    error_.Clear();
    const char* who = "ShmHashTable::InitForWrite";
    if (capacity < 1 || capacity > kMaxCapacity) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "capacity must be 1..%llu",
          static_cast<unsigned long long>(kMaxCapacity));
    }
    detail::TableGeometry g =
        detail::TableGeometry::ForCapacity(capacity, kSlots);
    detail::TableGeometry old =
        detail::TableGeometry::ForCapacity(capacity, kSlots, true);
    detail::SegmentSpec spec = Spec(g), old_spec = Spec(old);
    bool same = old_spec.total_size == spec.total_size &&
                old.main_buckets == g.main_buckets &&
                old.over_buckets == g.over_buckets;
    bool used_old = false;
    int flags = DefaultCreateFlags();
    if (!seg_.OpenForWrite(shm_key, spec, flags, nullptr, who, &error_,
                           same ? nullptr : &old_spec, &used_old) ||
        !seg_.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    Bind(seg_.base(), used_old ? old : g, false);
    return true;
  }

  // Attaches an existing table read-only.
  // Errors: attach errors.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmHashTable::InitForRead";
    detail::TableGeometry g;
    g.slots = kSlots;
    detail::FixedLayout lay = Layout(g);
    if (!detail::OpenFixedForRead(&seg_, shm_key, &lay, who, &error_)) {
      return false;
    }
    Bind(seg_.base(), lay.geometry(), true);
    return true;
  }

  const volatile Node* Find(const Key& key) const {
    return Lookup(key, Hash(key), detail::NodeKey());
  }
  volatile Node* Find(const Key& key) {
    return Lookup(key, Hash(key), detail::NodeKey());
  }
  template <class Arg>
  const volatile Node* Find(const Key& key, Arg&& arg) const {
    return Lookup(key, Hash(key), detail::NodeKeyWithArg<Arg>{arg});
  }
  template <class Arg>
  volatile Node* Find(const Key& key, Arg&& arg) {
    return Lookup(key, Hash(key), detail::NodeKeyWithArg<Arg>{arg});
  }

  // Returns the node holding `key` (*is_found = true), else an empty node
  // the caller may fill with it (*is_found = false), else nullptr (full,
  // or a read-only or uninitialized handle).
  volatile Node* FindOrAlloc(const Key& key, bool* is_found) {
    return Allocate(key, is_found, detail::NodeKey());
  }
  template <class Arg>
  volatile Node* FindOrAlloc(const Key& key, Arg&& arg, bool* is_found) {
    return Allocate(key, is_found, detail::NodeKeyWithArg<Arg>{arg});
  }

  // Batched lookup (shmc addition): out[i] = Find(keys[i]). A three-stage
  // pipeline, kStage keys apart: the tag words of a key are requested,
  // then its tags compared and only the node they point at requested, then
  // the key verified in that node. A hit reads two tag words (from an
  // array 1/16 of the nodes' size for 16-byte nodes) and one node, where
  // Find requests both buckets' nodes, and many keys are in flight at once.
  // Returns how many were found.
  size_t FindMany(const Key* keys, size_t n, const volatile Node** out) const {
    if (nodes_ == nullptr) {  // never initialized
      for (size_t i = 0; i < n; ++i) out[i] = nullptr;
      return 0;
    }
    if constexpr (kTagWords == 1) {
      if (geo_.total_buckets() <= (1ULL << 32)) {
        return FindManyPaired(keys, n, out);
      }
    }
    // Several tag words a bucket (nodes under 16 bytes), or more buckets
    // than FindManyPaired numbers: the public steps.
    constexpr size_t kRing = 4 * kStage;  // > 2 * kStage, a power of two
    uint64_t hashes[kRing];
    const volatile Node* cands[kRing];
    size_t found = 0;
    auto step = [&](size_t j, auto full) __attribute__((always_inline)) {
      constexpr bool all_stages = decltype(full)::value;
      if (all_stages || j < n) hashes[j % kRing] = PrefetchTags(keys[j]);
      if (all_stages || (j >= kStage && j - kStage < n)) {
        size_t k = (j - kStage) % kRing;
        cands[k] = PrefetchCandidate(hashes[k]);
      }
      if (all_stages || j >= 2 * kStage) {
        size_t i = j - 2 * kStage;
        out[i] = FindCandidate(keys[i], hashes[i % kRing], cands[i % kRing]);
        found += out[i] != nullptr;
      }
    };
    detail::RunPipeline3<kStage>(n, step);
    return found;
  }

  // FindMany's steps, for callers that pipeline their own batches
  // (ShmHashMap::FindMany); each step wants the lines the one before
  // requested to have arrived. PrefetchTags requests the key's two tag
  // words and returns its hash. PrefetchCandidate compares them, requests
  // the node they point at and returns it (nullptr if no tag matched: then
  // nothing more is requested). FindCandidate is Find(key) given those.
  uint64_t PrefetchTags(const Key& key) const {
    uint64_t h = Hash(key);
    if (nodes_ != nullptr) {
      detail::PrefetchLine(BucketTags(0, B0(h)));
      detail::PrefetchLine(BucketTags(1, B1(h)));
    }
    return h;
  }
  const volatile Node* PrefetchCandidate(uint64_t h) const {
    if (nodes_ == nullptr) return nullptr;
    uint64_t b0 = B0(h), b1 = B1(h);
    bool matched;
    volatile Node* c = Candidate(detail::TagOf(h), b0, b1, &matched);
    return RequestCandidate(c, matched, BucketTags(0, b0));
  }
  const volatile Node* FindCandidate(const Key& key, uint64_t h,
                                     const volatile Node* cand) const {
    auto* c = const_cast<volatile Node*>(cand);
    if (__builtin_expect(c != nullptr && Verify(c, key, detail::NodeKey()),
                         1)) {
      return c;
    }
    return LookupSlow(key, h, detail::NodeKey());
  }

  using TravelPos = detail::TableTravelPos;

  // Calls `f` for each node in use, resuming from *pos; stops after
  // visiting `max_travel_nodes` slots (0: all) and saves where it stopped.
  // At the end *pos is back at the origin. False if not initialized or
  // *pos is not a position of this table.
  bool Travel(TravelPos* pos, size_t max_travel_nodes,
              std::function<void(volatile Node*)> f) {
    if (nodes_ == nullptr) return false;
    return detail::TravelRows(
        pos, geo_.rows(), max_travel_nodes,
        [this](size_t r) -> uint64_t {
          return r < 2 + detail::kMaxOverRows ? geo_.row_buckets[r] * kSlots
                                              : 0;
        },
        [this](size_t r, uint64_t c) {
          return nodes_ + geo_.row_first[r] * kSlots + c;
        },
        f);
  }
  bool Travel(std::function<void(volatile Node*)> f) {
    TravelPos pos;
    return Travel(&pos, 0, std::move(f));
  }

  // Slots in the table.
  size_t ideal_capacity() const { return geo_.total_slots(); }
  // Keys the table is expected to hold for certain: 90% of its slots, more
  // than the capacity it was created for. Measured: inserting random keys
  // until FindOrAlloc fails fills at least 92.9% of the slots at every size
  // from 1 to 2.5M keys (40 tables each up to 100k; docs/hash_table.md).
  size_t expected_capacity() const {
    return static_cast<size_t>(detail::ExpectedCapacity(ideal_capacity()));
  }

  // shmc additions
  const Error& last_error() const { return error_; }
  bool is_initialized() const { return nodes_ != nullptr; }
  uint32_t row_count() const { return geo_.rows(); }
  size_t row_slots(uint32_t row) const {
    return row < geo_.rows() ? geo_.row_buckets[row] * kSlots : 0;
  }
  uint32_t overflow_depth() const {
    return hdr_ ? hdr_->overflow_depth.load(std::memory_order_relaxed) : 0;
  }
  bool Sync() { return seg_.Sync(); }
  using HealthStat = detail::TableHealth;
  // Full scan of the table's own metadata against its nodes
  // (detail/table_check.h; `shmc check` runs the same checks): nodes in use
  // whose tag is 0 or not their key's, and overflow rows in use beyond the
  // recorded depth, all of which hide keys from lookups. With auto_fix
  // (writer only) tags are rewritten from the keys and the depth raised,
  // after which every key is found again. False if not initialized, or
  // auto_fix on a read-only handle.
  bool HealthCheck(HealthStat* hs, bool auto_fix) {
    if (hs == nullptr || nodes_ == nullptr || (auto_fix && read_only_)) {
      return false;
    }
    detail::CheckTable(
        base_, Layout(geo_),
        [this](uint64_t i) { return detail::NodeKey()(nodes_ + i).first; },
        [this](uint64_t i, uint64_t* h) {
          *h = Hash(detail::NodeKey()(nodes_ + i).second);
          return true;
        },
        auto_fix, hs);
    return true;
  }
  // The tag part of HealthCheck: how many nodes in use carry a tag that is
  // not their key's (a damaged segment, or a key written into a slot
  // FindOrAlloc did not hand out), so cannot be found; `fix` (writer only)
  // repairs as HealthCheck does. -1 if not initialized, or `fix` on a
  // read-only handle.
  long CheckTags(bool fix) {
    HealthStat hs;
    if (!HealthCheck(&hs, fix)) return -1;
    return static_cast<long>(hs.untagged + hs.mistagged);
  }
  // Index of a node returned by this table, and the node at an index
  // (nullptr when out of range): let containers built on the table name a
  // node in shared memory, e.g. in a crash-recovery record.
  size_t node_index(const volatile Node* n) const {
    return static_cast<size_t>(n - nodes_);
  }
  volatile Node* node_at(size_t i) const {
    return nodes_ != nullptr && i < geo_.total_slots() ? nodes_ + i : nullptr;
  }

 private:
  // FindMany's distance between its stages, in keys (measured: 16 beat 8
  // and 32; bench/RESULTS.md).
  static constexpr size_t kStage = 16;

  // FindMany for buckets of one tag word (nodes of 16 bytes or more) and
  // at most 2^32 buckets: the public steps, in fewer instructions, since
  // FindMany's time rises with them (bench/RESULTS.md). Stage 1 hands
  // stage 2 the key's two bucket numbers and its tag rather than its hash,
  // so nothing is computed twice, and the candidate is chosen by bucket
  // number (PairCandidate, as Candidate does).
  size_t FindManyPaired(const Key* keys, size_t n,
                        const volatile Node** out) const {
    constexpr size_t kRing = 4 * kStage;
    uint64_t pairs[kRing];  // bucket numbers over all rows: g0 | g1 << 32
    uint32_t tags[kRing];
    const volatile Node* cands[kRing];
    size_t found = 0;
    auto step = [&](size_t j, auto full) __attribute__((always_inline)) {
      constexpr bool all_stages = decltype(full)::value;
      if (all_stages || j < n) {
        uint64_t h = Hash(keys[j]);
        uint64_t g0 = geo_.row_first[0] + B0(h);
        uint64_t g1 = geo_.row_first[1] + B1(h);
        detail::PrefetchLine(tags_ + g0);
        detail::PrefetchLine(tags_ + g1);
        pairs[j % kRing] = g0 | g1 << 32;
        tags[j % kRing] = detail::TagOf(h);
      }
      if (all_stages || (j >= kStage && j - kStage < n)) {
        size_t k = (j - kStage) % kRing;
        uint64_t g0 = static_cast<uint32_t>(pairs[k]), g1 = pairs[k] >> 32;
        bool matched;
        volatile Node* c = PairCandidate(tags[k], g0, g1, &matched);
        cands[k] = RequestCandidate(c, matched, tags_ + g0);
      }
      if (all_stages || j >= 2 * kStage) {
        size_t i = j - 2 * kStage;
        // The hash again only on the rare slow path (the compiler sinks it).
        out[i] = FindCandidate(keys[i], Hash(keys[i]), cands[i % kRing]);
        found += out[i] != nullptr;
      }
    };
    detail::RunPipeline3<kStage>(n, step);
    return found;
  }

  static constexpr uint64_t kBitmapOffset = detail::kTableBitmapOffset;

  static uint64_t Hash(const Key& key) { return ShmHash<Key>()(key); }

  static uint64_t BitmapBytes(uint64_t buckets) {
    return detail::TableBitmapBytes(buckets);
  }
  static constexpr uint32_t kTagWords = detail::TagWordsPerBucket(kSlots);

  static detail::FixedLayout Layout(const detail::TableGeometry& g) {
    return detail::FixedLayout::Table(sizeof(Node), alignof(Node),
                                      ShmHash<Key>::kId, g);
  }
  static detail::SegmentSpec Spec(const detail::TableGeometry& g) {
    return Layout(g).spec();
  }

  // The table's parts, in a segment of its own or (ShmDoubleTable) in one
  // half of another, laid out as a table segment from `base` on.
  template <class K, class N, class A>
  friend class ShmDoubleTable;
  void Bind(char* base, const detail::TableGeometry& g, bool read_only) {
    geo_ = g;
    base_ = base;
    read_only_ = read_only;
    hdr_ = reinterpret_cast<detail::HashTableHeader*>(
        base + detail::kTableHeaderOffset);
    bits_[0] = reinterpret_cast<std::atomic<uint64_t>*>(base + kBitmapOffset);
    bits_[1] = reinterpret_cast<std::atomic<uint64_t>*>(
        base + kBitmapOffset + BitmapBytes(g.main_buckets));
    tags_ = reinterpret_cast<std::atomic<uint32_t>*>(
        base + detail::TableTagsOffset(g.main_buckets));
    nodes_ = reinterpret_cast<volatile Node*>(base +
                                              Layout(g).nodes_offset());
  }

  volatile Node* Bucket(uint32_t row, uint64_t b) const {
    return nodes_ + (geo_.row_first[row] + b) * kSlots;
  }
  uint64_t B0(uint64_t h) const {
    return detail::ReduceRange(static_cast<uint32_t>(h), geo_.main_buckets);
  }
  uint64_t B1(uint64_t h) const {
    return detail::ReduceRange(static_cast<uint32_t>(h >> 32),
                               geo_.main_buckets);
  }
  uint64_t OverIndex(uint64_t h, uint32_t r) const {
    return detail::ReduceRange(detail::OverflowHash(h, r),
                               geo_.row_buckets[2 + r]);
  }

  static void Prefetch(const volatile Node* bucket) {
    const char* p = const_cast<const char*>(
        reinterpret_cast<const volatile char*>(bucket));
    constexpr size_t kBytes = kSlots * sizeof(Node);
    for (size_t off = 0; off < kBytes; off += detail::kCacheLine) {
      detail::PrefetchLine(p + off);
    }
    if (kBytes % detail::kCacheLine != 0) detail::PrefetchLine(p + kBytes - 1);
  }
  // Requests the lines of one node. Nodes start on a line boundary, so one
  // whose size divides a line never straddles two.
  static void PrefetchNode(const volatile void* node) {
    const char* p = const_cast<const char*>(
        static_cast<const volatile char*>(node));
    for (size_t off = 0; off < sizeof(Node); off += detail::kCacheLine) {
      detail::PrefetchLine(p + off);
    }
    if (detail::kCacheLine % sizeof(Node) != 0) {
      detail::PrefetchLine(p + sizeof(Node) - 1);
    }
  }
  const std::atomic<uint32_t>* BucketTags(uint32_t row, uint64_t b) const {
    return tags_ + (geo_.row_first[row] + b) * kTagWords;
  }
  // Slots of a bucket whose tag is `tag` (bit i: slot i). A tag is a hint:
  // the slot's key still has to be compared (Verify).
  uint64_t MatchTags(const std::atomic<uint32_t>* words, uint32_t tag) const {
    uint64_t m = 0;
    for (uint32_t w = 0; w < kTagWords; ++w) {
      // Relaxed: see SetTag.
      uint32_t word = words[w].load(std::memory_order_relaxed);
      m |= static_cast<uint64_t>(detail::MatchTagWord(word, tag)) << (4 * w);
    }
    return m;
  }
  // The tag word holding slot `slot`'s tag, and the tag's bit offset in it.
  std::atomic<uint32_t>* TagWord(uint64_t slot) const {
    return tags_ + detail::TagWordIndex(slot, kSlots);
  }
  static uint32_t TagShift(uint64_t slot) {
    return detail::TagShift(slot, kSlots);
  }
  // Records the tag of the key about to be stored in `n`. Single writer:
  // load and store, no read-modify-write. Ordered before the caller's
  // release store of the node's key by the release fence in Claim.
  void SetTag(volatile Node* n, uint32_t tag) {
    uint64_t slot = node_index(n);
    std::atomic<uint32_t>* word = TagWord(slot);
    uint32_t shift = TagShift(slot);
    uint32_t v = word->load(std::memory_order_relaxed);
    v = (v & ~(0xffu << shift)) | (tag << shift);
    word->store(v, std::memory_order_relaxed);
  }
  // With one tag word per bucket (4 slots): the key's two main buckets'
  // words, row 0's in the low half.
  uint64_t MainTagPair(uint64_t b0, uint64_t b1) const {
    return BucketTags(0, b0)->load(std::memory_order_relaxed) |
           static_cast<uint64_t>(
               BucketTags(1, b1)->load(std::memory_order_relaxed))
               << 32;
  }
  // Tag matches in the key's two main buckets (bit i: slot i).
  void MatchMain(uint32_t tag, uint64_t b0, uint64_t b1, uint64_t* m0,
                 uint64_t* m1) const {
    if constexpr (kTagWords == 1) {
      uint32_t m = detail::MatchTagPair(MainTagPair(b0, b1), tag);
      *m0 = m & 0xfu;
      *m1 = m >> 4;
    } else {
      *m0 = MatchTags(BucketTags(0, b0), tag);
      *m1 = MatchTags(BucketTags(1, b1), tag);
    }
  }
  // The first slot of the key's main buckets whose tag is `tag`: in bucket
  // b0 of row 0 if one matched there, else in bucket b1 of row 1 (the last
  // slot of b1 if none matched: *matched says which). Selected without a
  // branch: which row holds a key is a coin toss, and a mispredicted branch
  // here would throw away the next lookups' loads already in flight.
  volatile Node* Candidate(uint32_t tag, uint64_t b0, uint64_t b1,
                           bool* matched) const {
    if constexpr (kTagWords == 1) {
      return PairCandidate(tag, geo_.row_first[0] + b0,
                           geo_.row_first[1] + b1, matched);
    } else {
      uintptr_t a0 = reinterpret_cast<uintptr_t>(Bucket(0, b0));
      uintptr_t a1 = reinterpret_cast<uintptr_t>(Bucket(1, b1));
      constexpr uint64_t kLast = 1ULL << (kSlots - 1);
      uint64_t m0, m1;
      MatchMain(tag, b0, b1, &m0, &m1);
      *matched = (m0 | m1) != 0;
      uintptr_t s0 = static_cast<uintptr_t>(__builtin_ctzll(m0 | kLast));
      uintptr_t s1 = static_cast<uintptr_t>(__builtin_ctzll(m1 | kLast));
      uintptr_t pick1 = 0 - static_cast<uintptr_t>(m0 == 0);
      // Opaque to the optimizer, which otherwise turns the select back
      // into the very branch this avoids.
      asm("" : "+r"(pick1));
      uintptr_t slot = s0 ^ ((s0 ^ s1) & pick1);
      return reinterpret_cast<volatile Node*>((a0 ^ ((a0 ^ a1) & pick1)) +
                                              slot * sizeof(Node));
    }
  }
  // Candidate for one tag word a bucket, given the two buckets' numbers
  // over all rows: one match and one count over their 8 slots (4 each).
  volatile Node* PairCandidate(uint32_t tag, uint64_t g0, uint64_t g1,
                               bool* matched) const {
    uint64_t words =
        tags_[g0].load(std::memory_order_relaxed) |
        static_cast<uint64_t>(tags_[g1].load(std::memory_order_relaxed))
            << 32;
    uint32_t m = detail::MatchTagPair(words, tag);
    *matched = m != 0;
    uint32_t first = static_cast<uint32_t>(__builtin_ctz(m | 0x80u));
    uint64_t pick1 = 0 - static_cast<uint64_t>(first >> 2);
    asm("" : "+r"(pick1));  // a select, not a branch (see Candidate)
    uint64_t g = g0 ^ ((g0 ^ g1) & pick1);
    return nodes_ + g * kSlots + (first & 3);
  }
  // FindMany's stage 2 after the choice: the candidate if a tag matched,
  // else nullptr; requests its node, or (no match) the tag word, already
  // in cache, without a branch.
  static const volatile Node* RequestCandidate(volatile Node* cand,
                                               bool matched,
                                               const void* tag_word) {
    uintptr_t any = 0 - static_cast<uintptr_t>(matched);
    asm("" : "+r"(any));  // a select, not a branch (see Candidate)
    uintptr_t c = reinterpret_cast<uintptr_t>(cand) & any;
    uintptr_t t = reinterpret_cast<uintptr_t>(tag_word);
    PrefetchNode(reinterpret_cast<const volatile void*>(c | (t & ~any)));
    return reinterpret_cast<const volatile Node*>(c);
  }
  // Mask of the bucket's slots in use (bit i: slot i).
  template <class Getter>
  static uint64_t UsedSlots(volatile Node* bucket, const Getter& get) {
    uint64_t in_use = 0;
#pragma GCC unroll 64
    for (uint32_t i = 0; i < kSlots; ++i) {
      in_use |= static_cast<uint64_t>(static_cast<bool>(get(bucket + i).first))
                << i;
    }
    return in_use;
  }

  template <class Getter>
  static bool Verify(volatile Node* node, const Key& key, const Getter& get) {
    auto kv = get(node);
    return kv.first && kv.second == key;
  }

  // The slot of `bucket` (tag words `words`) holding `key`, or nullptr.
  template <class Getter>
  volatile Node* FindInBucket(volatile Node* bucket,
                              const std::atomic<uint32_t>* words,
                              uint32_t tag, const Key& key,
                              const Getter& get) const {
    for (uint64_t m = MatchTags(words, tag); m != 0; m &= m - 1) {
      volatile Node* n = bucket + __builtin_ctzll(m);
      if (Verify(n, key, get)) return n;
    }
    return nullptr;
  }

  static bool TestBit(const std::atomic<uint64_t>* bits, uint64_t i) {
    // Relaxed: the caller's acquire of the node key (or the fence in
    // FindOrAlloc, for the writer itself) orders this load.
    return (bits[i / 64].load(std::memory_order_relaxed) >> (i % 64)) & 1;
  }

  uint32_t Depth() const {
    uint32_t d = hdr_->overflow_depth.load(std::memory_order_relaxed);
    return d < geo_.over_rows ? d : geo_.over_rows;  // untrusted bytes
  }

  // A lookup compares the two main buckets' tag words (1/16 of the nodes'
  // bytes for 16-byte nodes) and then reads only the node the tags point
  // at: a miss usually compares no key at all and returns once the tags
  // are in.
  template <class Getter>
  __attribute__((always_inline)) volatile Node* Lookup(
      const Key& key, uint64_t h, const Getter& get,
      bool prefetched = false) const {
    if (nodes_ == nullptr) return nullptr;  // never initialized
    uint32_t tag = detail::TagOf(h);
    uint64_t b0 = B0(h), b1 = B1(h);
    // Both node lines are requested while the tags are compared: a hit then
    // waits for its tags and one line already on its way, not for a tag
    // round trip followed by a node round trip (measured: hits 66-84 ns
    // with, 105-123 without; misses 52-60 with, 39-41 without, 100-105
    // without tags at all; bench/RESULTS.md).
    if (!prefetched) {
      Prefetch(Bucket(0, b0));
      Prefetch(Bucket(1, b1));
    }
    bool matched;
    volatile Node* n = Candidate(tag, b0, b1, &matched);
    if (matched) {
      if (__builtin_expect(Verify(n, key, get), 1)) return n;
      // Another key with the same tag, or a stale tag of a freed slot.
      return LookupAgain(key, h, tag, b0, b1, get);
    }
    return LookupOverflow(key, h, tag, b0, b1, get);
  }
  // The rare rest of a lookup whose first candidate was not the key, out
  // of line so that the common path stays small where it is inlined.
  template <class Getter>
  __attribute__((noinline)) volatile Node* LookupAgain(
      const Key& key, uint64_t h, uint32_t tag, uint64_t b0, uint64_t b1,
      const Getter& get) const {
    volatile Node* n =
        FindInBucket(Bucket(0, b0), BucketTags(0, b0), tag, key, get);
    if (n == nullptr) {
      n = FindInBucket(Bucket(1, b1), BucketTags(1, b1), tag, key, get);
    }
    return n != nullptr ? n : LookupOverflow(key, h, tag, b0, b1, get);
  }

  // The whole lookup, its node lines not requested again: for
  // FindCandidate when the candidate was not the key (out of line: keeps
  // the batched loop small).
  template <class Getter>
  __attribute__((noinline)) volatile Node* LookupSlow(const Key& key,
                                                      uint64_t h,
                                                      const Getter& get) const {
    return Lookup(key, h, get, true);
  }

  // A key in no main bucket can only be in an overflow row if both its
  // buckets are marked; most misses end at that check, inline.
  template <class Getter>
  volatile Node* LookupOverflow(const Key& key, uint64_t h, uint32_t tag,
                                uint64_t b0, uint64_t b1,
                                const Getter& get) const {
    uint32_t depth = Depth();
    if (depth == 0 || !TestBit(bits_[0], b0) || !TestBit(bits_[1], b1)) {
      return nullptr;
    }
    return SearchOverflow(key, h, tag, depth, get);
  }
  template <class Getter>
  __attribute__((noinline)) volatile Node* SearchOverflow(
      const Key& key, uint64_t h, uint32_t tag, uint32_t depth,
      const Getter& get) const {
    for (uint32_t r = 0; r < depth; ++r) {
      uint64_t b = OverIndex(h, r);
      volatile Node* n =
          FindInBucket(Bucket(2 + r, b), BucketTags(2 + r, b), tag, key, get);
      if (n != nullptr) return n;
    }
    return nullptr;
  }

  static uint64_t FreeMask(uint64_t used) {
    uint64_t all = kSlots == 64 ? ~0ULL : ((1ULL << kSlots) - 1);
    return ~used & all;
  }

  // Hands out slot `n` for a new key: its tag first, then (release fence)
  // the caller's store of the key.
  volatile Node* Claim(volatile Node* n, uint32_t tag) {
    SetTag(n, tag);
    // SYNC POINT: the tag (and, for overflow rows, the bitmap bits and
    // depth stored before this) must be visible before the caller's store
    // of the key into the node (a release store by the caller, acquired by
    // readers in Node::Key()): a reader that sees the key finds its tag.
    std::atomic_thread_fence(std::memory_order_release);
    return n;
  }

  template <class Getter>
  volatile Node* Allocate(const Key& key, bool* is_found, const Getter& get) {
    if (is_found != nullptr) *is_found = false;
    if (nodes_ == nullptr) return nullptr;  // never initialized
    uint64_t h = Hash(key);
    uint32_t tag = detail::TagOf(h);
    uint64_t b0 = B0(h), b1 = B1(h);
    volatile Node* n0 = Bucket(0, b0);
    volatile Node* n1 = Bucket(1, b1);
    // The node lines are needed for the free slots if the key is new.
    Prefetch(n0);
    Prefetch(n1);
    volatile Node* found = FindInBucket(n0, BucketTags(0, b0), tag, key, get);
    if (found == nullptr) {
      found = FindInBucket(n1, BucketTags(1, b1), tag, key, get);
    }
    if (found == nullptr) found = LookupOverflow(key, h, tag, b0, b1, get);
    if (found != nullptr) {
      if (is_found != nullptr) *is_found = true;
      return found;
    }
    // Attached for reading: an existing key's node is returned (as the
    // reference did), but nothing is handed out: its tag would be written
    // through a read-only mapping.
    if (read_only_) return nullptr;
    // New key. A slot whose tag is still 0 was never handed out (TagOf is
    // never 0 and tags outlive erases), so the tags alone say which slots
    // are free: the less loaded main bucket by them (row 0 on a tie), and
    // only the chosen node is read, to be sure it is empty (a damaged tag
    // must not hand out a live node).
    uint64_t all = FreeMask(0);
    uint64_t z0, z1;
    MatchMain(0, b0, b1, &z0, &z1);
    z0 &= all;
    z1 &= all;
    if ((z0 | z1) != 0) {
      volatile Node* n = detail::BitCount(z0) >= detail::BitCount(z1)
                             ? n0 + __builtin_ctzll(z0)
                             : n1 + __builtin_ctzll(z1);
      if (!get(n).first) return Claim(n, tag);
    }
    // No never-used slot (or a damaged tag): erased slots keep their tags,
    // so the nodes decide.
    uint64_t free0 = FreeMask(UsedSlots(n0, get));
    uint64_t free1 = FreeMask(UsedSlots(n1, get));
    if (free0 != 0 || free1 != 0) {
      bool pick0 = detail::BitCount(free0) >= detail::BitCount(free1);
      return Claim(pick0 ? n0 + __builtin_ctzll(free0)
                         : n1 + __builtin_ctzll(free1),
                   tag);
    }
    // Both main buckets full: mark the pair, then take the first overflow
    // row with room.
    for (uint32_t r = 0; r < geo_.over_rows; ++r) {
      volatile Node* n = Bucket(2 + r, OverIndex(h, r));
      uint64_t fr = FreeMask(UsedSlots(n, get));
      if (fr == 0) continue;
      bits_[0][b0 / 64].fetch_or(1ULL << (b0 % 64), std::memory_order_relaxed);
      bits_[1][b1 / 64].fetch_or(1ULL << (b1 % 64), std::memory_order_relaxed);
      if (r + 1 > Depth()) {
        hdr_->overflow_depth.store(r + 1, std::memory_order_relaxed);
      }
      hdr_->overflow_allocs.fetch_add(1, std::memory_order_relaxed);
      return Claim(n + __builtin_ctzll(fr), tag);
    }
    return nullptr;
  }

  // ShmHashMap's undo of an InitForWrite whose values segment could not be
  // made: the handle detaches, and removes the segment if this handle
  // created it (an index without its values is no map, and left behind it
  // would hold memory, hugepages even, that nothing owns).
  template <class K, class A, class V>
  friend class ShmHashMap;
  void DetachRemovingCreated() {
    bool created = seg_.newly_created();
    std::string key = seg_.key();
    seg_.Reset();
    geo_ = detail::TableGeometry();
    base_ = nullptr;
    hdr_ = nullptr;
    bits_[0] = bits_[1] = nullptr;
    tags_ = nullptr;
    nodes_ = nullptr;
    if (created) {
      Alloc alloc;
      detail::RemoveOwnSegment(key, &alloc, detail::ContainerKind::kHashTable);
    }
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  detail::TableGeometry geo_;
  char* base_ = nullptr;
  bool read_only_ = false;
  detail::HashTableHeader* hdr_ = nullptr;
  std::atomic<uint64_t>* bits_[2] = {nullptr, nullptr};
  std::atomic<uint32_t>* tags_ = nullptr;
  volatile Node* nodes_ = nullptr;
};

}  // namespace shmc
