// ShmHashTable and ShmHashTableM over every allocator: fill to full, travel,
// the Arg forms, FindMany, refusal of another node type, and a reader process
// looking up while the writer inserts.
#include "shmc/shm_hash_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "shmc/shm_array.h"
#include "shmc/shm_hash_table_m.h"
#include "tests/support/raw_segment.h"
#include "tests/support/tag_damage.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::AllocTraits;
using shmc_test::ScopedKey;

// Key published with release after the value, read with acquire: the node
// protocol the library documents for cross-process readers.
struct Node {
  std::atomic<uint64_t> key;
  uint64_t val;
  std::pair<bool, uint64_t> Key() const volatile {
    uint64_t k = key.load(std::memory_order_acquire);
    return {k != 0, k};
  }
  std::pair<bool, uint64_t> Key(int offset) const volatile {
    uint64_t k = key.load(std::memory_order_acquire);
    return {k != 0, k + static_cast<uint64_t>(offset)};
  }
  void Set(uint64_t k, uint64_t v) volatile {
    val = v;
    key.store(k, std::memory_order_release);
  }
  void Clear() volatile { key.store(0, std::memory_order_release); }
};

uint64_t KeyOf(uint64_t i) { return shmc::Mix64(i + 1) | 1; }

// Inserts KeyOf(i) -> i for i in [0, n): the table must have room.
template <class Table>
void InsertKeys(Table* t, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    bool found;
    t->FindOrAlloc(KeyOf(i), &found)->Set(KeyOf(i), i);
  }
}

template <class Alloc>
class ShmHashTableTest : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 4); }
  ScopedKey<Alloc> key_;
};
TYPED_TEST_SUITE(ShmHashTableTest, shmc_test::AllAllocs, shmc_test::AllocNames);

// Inserts KeyOf(0), KeyOf(1), ... until FindOrAlloc returns null.
template <class Table>
size_t FillToFull(Table* t) {
  size_t n = 0;
  for (;; ++n) {
    bool found = true;
    volatile Node* node = t->FindOrAlloc(KeyOf(n), &found);
    if (node == nullptr) return n;
    EXPECT_FALSE(found);
    node->Set(KeyOf(n), n);
  }
}

TYPED_TEST(ShmHashTableTest, FillsBeyondExpectedCapacity) {
  shmc::ShmHashTable<uint64_t, Node, TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 50000)) << t.last_error().message;
  EXPECT_GE(t.ideal_capacity(), 50000u);
  size_t n = FillToFull(&t);
  EXPECT_GT(n, t.expected_capacity());
  EXPECT_GT(n, t.ideal_capacity() * 90 / 100) << "usable fill below 90%";
  EXPECT_GT(n, 50000u) << "must hold the capacity asked for";
  for (size_t i = 0; i < n; ++i) {
    const auto& ct = t;
    const volatile Node* node = ct.Find(KeyOf(i));
    ASSERT_NE(node, nullptr) << i;
    ASSERT_EQ(node->val, i);
    bool found = false;
    ASSERT_EQ(t.FindOrAlloc(KeyOf(i), &found), node);
    ASSERT_TRUE(found);
  }
  EXPECT_EQ(t.Find(2), nullptr);  // even keys were never inserted
}

TYPED_TEST(ShmHashTableTest, SmallCapacities) {
  for (size_t cap : {1, 7, 100, 999}) {
    ScopedKey<TypeParam> key("cap" + std::to_string(cap));
    shmc::ShmHashTable<uint64_t, Node, TypeParam> t;
    ASSERT_TRUE(t.InitForWrite(key, cap)) << t.last_error().message;
    size_t n = FillToFull(&t);
    EXPECT_GE(n, cap);
    EXPECT_GT(n, t.expected_capacity());
  }
}

TYPED_TEST(ShmHashTableTest, EraseAndReinsert) {
  shmc::ShmHashTable<uint64_t, Node, TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 2000));
  // At the expected capacity, so that overflow rows are in use but
  // re-insertion in another order has room (a 100% full table may not).
  size_t n = t.expected_capacity();
  InsertKeys(&t, n);
  ASSERT_GT(t.overflow_depth(), 0u);
  // Free every third node, then make sure every remaining key is still found
  // (including those in overflow rows) and freed room is reused.
  for (size_t i = 0; i < n; i += 3) t.Find(KeyOf(i))->Clear();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(t.Find(KeyOf(i)) != nullptr, i % 3 != 0) << i;
    bool found = false;
    volatile Node* node = t.FindOrAlloc(KeyOf(i), &found);
    ASSERT_NE(node, nullptr);
    ASSERT_EQ(found, i % 3 != 0);
    if (!found) node->Set(KeyOf(i), i);
  }
  size_t count = 0;
  t.Travel([&](volatile Node*) { ++count; });
  EXPECT_EQ(count, n);
}

TYPED_TEST(ShmHashTableTest, TravelVisitsEachNodeOnceAndResumes) {
  shmc::ShmHashTable<uint64_t, Node, TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 5000));
  InsertKeys(&t, 4000);
  std::multiset<uint64_t> all;
  ASSERT_TRUE(t.Travel([&](volatile Node* n) { all.insert(+n->val); }));
  EXPECT_EQ(all.size(), 4000u);
  EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), 4000u);
  typename decltype(t)::TravelPos pos;
  EXPECT_TRUE(pos.at_origin());
  std::vector<uint64_t> seen;
  size_t calls = 0;
  do {
    ASSERT_TRUE(t.Travel(&pos, 333, [&](volatile Node* n) {
      seen.push_back(+n->val);
    }));
    ++calls;
  } while (!pos.at_origin());
  EXPECT_EQ(seen.size(), 4000u);
  EXPECT_EQ(calls, (t.ideal_capacity() + 332) / 333);
  pos.row = 99;  // not a position of this table
  EXPECT_FALSE(t.Travel(&pos, 1, [](volatile Node*) {}));
}

TYPED_TEST(ShmHashTableTest, ArgFormsPassTheArgument) {
  shmc::ShmHashTable<uint64_t, Node, TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 1000));
  bool found = true;
  volatile Node* n = t.FindOrAlloc(KeyOf(1) + 10, 10, &found);
  ASSERT_NE(n, nullptr);
  EXPECT_FALSE(found);
  n->Set(KeyOf(1), 1);  // Key(10) now reports KeyOf(1) + 10
  EXPECT_EQ(t.Find(KeyOf(1) + 10, 10), n);
  const auto& ct = t;
  EXPECT_EQ(ct.Find(KeyOf(1) + 10, 10), n);
  EXPECT_EQ(t.FindOrAlloc(KeyOf(1) + 10, 10, &found), n);
  EXPECT_TRUE(found);
}

TYPED_TEST(ShmHashTableTest, FindManyMatchesFind) {
  shmc::ShmHashTable<uint64_t, Node, TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 20000));
  size_t n = FillToFull(&t);
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < n + 5000; i += 2) keys.push_back(KeyOf(i));
  keys.push_back(2);  // never inserted
  std::vector<const volatile Node*> out(keys.size());
  size_t found = t.FindMany(keys.data(), keys.size(), out.data());
  size_t expect = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(out[i], static_cast<const decltype(t)&>(t).Find(keys[i])) << i;
    expect += out[i] != nullptr;
  }
  EXPECT_EQ(found, expect);
  EXPECT_EQ(found, (n + 1) / 2);
  EXPECT_EQ(t.FindMany(keys.data(), 3, out.data()), 3u);  // short batches
  EXPECT_EQ(t.FindMany(keys.data(), 0, out.data()), 0u);
}

// FindMany's steps used one by one, as a caller pipelining its own batches
// does: a candidate gone stale between the steps (its slot erased and
// handed to another key, or simply a wrong node) never yields a wrong
// node, and a key inserted after its tags were compared is still found.
TEST(ShmHashTableSteps, StaleCandidatesFallBackToTheWholeLookup) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(key, 5000));
  size_t n = FillToFull(&t);
  const auto& ct = t;
  for (size_t i = 0; i < n; i += 7) {
    uint64_t k = KeyOf(i);
    uint64_t h = ct.PrefetchTags(k);
    const volatile Node* cand = ct.PrefetchCandidate(h);
    const volatile Node* want = ct.Find(k);
    ASSERT_NE(want, nullptr);
    EXPECT_EQ(ct.FindCandidate(k, h, cand), want) << i;
    EXPECT_EQ(ct.FindCandidate(k, h, nullptr), want) << i;
    // Another key's node as the candidate.
    EXPECT_EQ(ct.FindCandidate(k, h, ct.Find(KeyOf(i + 1))), want) << i;
  }
  // Tags compared, then the key erased and its slot reused by a new key:
  // the old candidate now holds the new key, and neither key is mistaken.
  uint64_t old_key = KeyOf(3);
  uint64_t h = ct.PrefetchTags(old_key);
  const volatile Node* cand = ct.PrefetchCandidate(h);
  ASSERT_NE(cand, nullptr);
  volatile Node* old_node = t.Find(old_key);
  ASSERT_EQ(old_node, cand);
  old_node->Clear();
  bool found = true;
  uint64_t new_key = 0;
  // The table is (nearly) full: new keys go to the few free slots left
  // until one whose buckets hold the freed slot comes along.
  for (uint64_t j = n; new_key == 0; ++j) {
    ASSERT_LT(j, n + 10000000) << "the freed slot was never handed out";
    volatile Node* slot = t.FindOrAlloc(KeyOf(j), &found);
    if (slot == nullptr) continue;
    ASSERT_FALSE(found);
    slot->Set(KeyOf(j), j);
    if (slot == cand) new_key = KeyOf(j);
  }
  EXPECT_EQ(ct.FindCandidate(old_key, h, cand), nullptr);
  uint64_t h_new = ct.PrefetchTags(new_key);
  EXPECT_EQ(ct.FindCandidate(new_key, h_new, nullptr), cand);
  // A key absent when its tags were compared, inserted before the lookup
  // (even keys are never KeyOf values; the first with a free slot).
  for (size_t i = 0; i < n; i += 2) {  // room
    volatile Node* present = t.Find(KeyOf(i));
    ASSERT_NE(present, nullptr) << i;
    present->Clear();
  }
  uint64_t late = 2;
  uint64_t h_late = ct.PrefetchTags(late);
  const volatile Node* none = ct.PrefetchCandidate(h_late);
  EXPECT_EQ(ct.FindCandidate(late, h_late, none), nullptr);
  volatile Node* slot = t.FindOrAlloc(late, &found);
  ASSERT_NE(slot, nullptr);
  slot->Set(late, 1);
  EXPECT_EQ(ct.FindCandidate(late, h_late, none), slot);
  // A handle never initialized: the steps find nothing.
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> blank;
  uint64_t hb = blank.PrefetchTags(late);
  EXPECT_EQ(blank.PrefetchCandidate(hb), nullptr);
  EXPECT_EQ(blank.FindCandidate(late, hb, nullptr), nullptr);
}

TYPED_TEST(ShmHashTableTest, ReaderSeesWriterData) {
  if (!AllocTraits<TypeParam>::kNamed) {
    GTEST_SKIP() << "an ANON or HEAP segment has no name: no second "
                    "process can attach it";
  }
  {
    shmc::ShmHashTable<uint64_t, Node, TypeParam> w;
    ASSERT_TRUE(w.InitForWrite(this->key_, 3000));
    FillToFull(&w);
  }
  shmc::ShmHashTable<uint64_t, Node, TypeParam> r;
  ASSERT_TRUE(r.InitForRead(this->key_)) << r.last_error().message;
  const auto& cr = r;
  ASSERT_NE(cr.Find(KeyOf(5)), nullptr);
  EXPECT_EQ(cr.Find(KeyOf(5))->val, 5u);
  // Same geometry required of a second writer; another node type refused.
  shmc::ShmHashTable<uint64_t, Node, TypeParam> w2;
  EXPECT_FALSE(w2.InitForWrite(this->key_, 6000));
  EXPECT_EQ(w2.last_error().code, shmc::ErrorCode::kSizeMismatch);
  struct Big {
    uint64_t k, v, extra;
    std::pair<bool, uint64_t> Key() const volatile { return {k != 0, k}; }
  };
  shmc::ShmHashTable<uint64_t, Big, TypeParam> wrong;
  EXPECT_FALSE(wrong.InitForRead(this->key_));
  EXPECT_EQ(wrong.last_error().code, shmc::ErrorCode::kLayoutMismatch);
  EXPECT_NE(wrong.last_error().message.find("node_size"), std::string::npos);
  shmc::ShmHashTableM<uint64_t, Node, TypeParam> other_kind;
  EXPECT_FALSE(other_kind.InitForRead(this->key_));
  EXPECT_EQ(other_kind.last_error().code, shmc::ErrorCode::kLayoutMismatch);
}

struct Progress {
  std::atomic<uint64_t> inserted;
};

// A reader process looks up keys while the writer inserts: every key whose
// insertion finished before the lookup began must be found (no false miss),
// and a key never inserted is never found.
TYPED_TEST(ShmHashTableTest, ConcurrentReaderProcessNoFalseMiss) {
  if (!AllocTraits<TypeParam>::kNamed) {
    GTEST_SKIP() << "an ANON or HEAP segment has no name: no second "
                    "process can attach it";
  }
  ScopedKey<TypeParam> progress_key("progress");
  constexpr size_t kCap = 60000;
  shmc::ShmHashTable<uint64_t, Node, TypeParam> w;
  ASSERT_TRUE(w.InitForWrite(this->key_, kCap));
  shmc::ShmArray<Progress, TypeParam> prog;
  ASSERT_TRUE(prog.InitForWrite(progress_key, 1));
  std::string tkey = this->key_, pkey = progress_key;
  // The reader's lookup count, so the writer can make sure the two really
  // overlap (the machine may run one process at a time).
  auto* lookups_seen = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(lookups_seen, MAP_FAILED);
  lookups_seen->store(0);
  pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    shmc::ShmHashTable<uint64_t, Node, TypeParam> r;
    shmc::ShmArray<Progress, TypeParam> p;
    if (!r.InitForRead(tkey) || !p.InitForRead(pkey)) _exit(1);
    const auto& cr = r;
    const auto& cp = p;
    std::mt19937_64 rng(7);
    uint64_t lookups = 0;
    for (;;) {
      uint64_t done = const_cast<const Progress&>(cp[0]).inserted.load(
          std::memory_order_acquire);
      if (done > 0) {
        uint64_t i = rng() % done;
        const volatile Node* n = cr.Find(KeyOf(i));
        if (n == nullptr) _exit(2);            // false miss
        if (n->val != i) _exit(3);             // wrong node
        if (cr.Find(KeyOf(i) + 1) != nullptr) _exit(4);  // even: never there
        ++lookups;
        lookups_seen->store(lookups, std::memory_order_relaxed);
      }
      if (done >= kCap) break;
    }
    _exit(lookups > 1000 ? 0 : 5);
  }
  volatile Progress& p = prog[0];
  for (uint64_t i = 0; i < kCap; ++i) {
    bool found;
    volatile Node* n = w.FindOrAlloc(KeyOf(i), &found);
    ASSERT_NE(n, nullptr);
    n->Set(KeyOf(i), i);
    const_cast<Progress&>(p).inserted.store(i + 1, std::memory_order_release);
    if (i % 1000 == 999) {
      // Let the reader look up while keys are still being inserted (waits
      // at most ~1 s per pause, so a dead reader cannot hang the test).
      uint64_t seen = lookups_seen->load();
      for (int w = 0; w < 1000 && lookups_seen->load() == seen; ++w) {
        usleep(1000);
      }
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: false miss, 3: wrong node, "
                                       "4: phantom key, 5: too few lookups";
  EXPECT_GT(w.overflow_depth(), 0u) << "test should exercise overflow rows";
}

// A node whose in-use flag is separate from its key: clearing it leaves a
// stale key behind, which the lookup's fast path may match and must reject.
struct FlagNode {
  uint64_t key;
  uint32_t used;
  uint32_t val;
  std::pair<bool, uint64_t> Key() const volatile { return {used != 0, key}; }
};

TEST(ShmHashTableStale, StaleKeyInFreeSlotIsNotAHit) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<uint64_t, FlagNode, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(key, 1000));
  bool found = true;
  volatile FlagNode* a = t.FindOrAlloc(77, &found);
  ASSERT_NE(a, nullptr);
  a->key = 77;
  a->val = 1;
  a->used = 1;
  ASSERT_EQ(t.Find(77), a);
  a->used = 0;  // erased; key 77 stays in the slot
  EXPECT_EQ(t.Find(77), nullptr);
  // Re-inserted: it may land in the same slot or another; either way the
  // live one is found, never the stale copy.
  volatile FlagNode* b = t.FindOrAlloc(77, &found);
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(found);
  if (b == a) {
    // Make the stale copy sit in a different slot than the live one.
    b = nullptr;
    for (uint64_t k = 1000; b == nullptr && k < 5000000; ++k) {
      volatile FlagNode* n = t.FindOrAlloc(k, &found);
      if (n != a) continue;
      n->key = k;
      n->used = 1;
      a = nullptr;  // slot now holds k
      b = t.FindOrAlloc(77, &found);
    }
    ASSERT_NE(b, nullptr) << "no key reused the stale slot";
  }
  b->key = 77;
  b->val = 2;
  b->used = 1;
  const volatile FlagNode* got = t.Find(77);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->val, 2u);
  EXPECT_EQ(got, b);
}

// --- Tags: one byte per slot that lookups read before any node ---

TEST(ShmHashTableTags, MatchTagWordAndPairFindExactlyTheEqualBytes) {
  std::mt19937_64 rng(5);
  // Tag 0 too: inserts look for never-used slots by matching it.
  for (uint32_t tag = 0; tag < 256; ++tag) {
    for (int i = 0; i < 2000; ++i) {
      uint32_t word = static_cast<uint32_t>(rng());
      // Plant the tag (and its neighbours, which a borrow-based test
      // would confuse with it) in random bytes.
      for (int b = 0; b < 4; ++b) {
        uint32_t pick = static_cast<uint32_t>(rng() % 4);
        uint32_t byte = pick == 0 ? tag : pick == 1 ? (tag + 1) & 0xff
                                  : pick == 2 ? (tag + 255) & 0xff : (word >> (8 * b)) & 0xff;
        word = (word & ~(0xffu << (8 * b))) | (byte << (8 * b));
      }
      uint32_t expect = 0;
      for (int b = 0; b < 4; ++b) {
        expect |= static_cast<uint32_t>(((word >> (8 * b)) & 0xff) == tag) << b;
      }
      ASSERT_EQ(shmc::detail::MatchTagWord(word, tag), expect)
          << std::hex << word << " tag " << tag;
    }
  }
  // The two-word form agrees with two one-word matches.
  for (uint32_t tag = 0; tag < 256; ++tag) {
    for (int i = 0; i < 2000; ++i) {
      uint64_t words = rng();
      for (int b = 0; b < 8; ++b) {
        uint64_t pick = rng() % 4;
        uint64_t byte = pick == 0 ? tag : pick == 1 ? (tag + 1) & 0xff
                        : pick == 2 ? (tag + 255) & 0xff : (words >> (8 * b)) & 0xff;
        words = (words & ~(0xffULL << (8 * b))) | (byte << (8 * b));
      }
      uint32_t expect =
          shmc::detail::MatchTagWord(static_cast<uint32_t>(words), tag) |
          shmc::detail::MatchTagWord(static_cast<uint32_t>(words >> 32), tag)
              << 4;
      ASSERT_EQ(shmc::detail::MatchTagPair(words, tag), expect)
          << std::hex << words << " tag " << tag;
      // The portable form too, where MatchTagPair has its own (SSE2).
      ASSERT_EQ(shmc::detail::MatchTagBytes(words, tag), expect)
          << std::hex << words << " tag " << tag;
    }
  }
  for (uint64_t h : {0ULL, 1ULL, ~0ULL, 0x8000000000000000ULL}) {
    EXPECT_NE(shmc::detail::TagOf(h), 0u);  // 0 marks a never-used slot
    EXPECT_LT(shmc::detail::TagOf(h), 256u);
  }
}

// Nodes of 8 and 12 bytes: 8 and 5 slots a bucket, so tags span two words
// (the second one padded for 5).
struct Node8 {
  std::atomic<uint64_t> key;
  std::pair<bool, uint64_t> Key() const volatile {
    uint64_t k = key.load(std::memory_order_acquire);
    return {k != 0, k};
  }
  void Set(uint64_t k, uint64_t) volatile {
    key.store(k, std::memory_order_release);
  }
  void Clear() volatile { key.store(0, std::memory_order_release); }
  uint64_t Val() const volatile { return 0; }
};
struct Node12 {
  std::atomic<uint32_t> lo, hi;
  uint32_t val;
  std::pair<bool, uint64_t> Key() const volatile {
    uint32_t h = hi.load(std::memory_order_acquire);
    uint64_t k = (static_cast<uint64_t>(h) << 32) | lo.load();
    return {k != 0, k};
  }
  void Set(uint64_t k, uint64_t v) volatile {
    val = static_cast<uint32_t>(v);
    lo.store(static_cast<uint32_t>(k));
    hi.store(static_cast<uint32_t>(k >> 32), std::memory_order_release);
  }
  void Clear() volatile {
    hi.store(0, std::memory_order_release);
    lo.store(0);
  }
};
struct Node16 : Node {};

template <class N>
class ShmHashTableTagsTyped : public ::testing::Test {};
using TagNodes = ::testing::Types<Node8, Node12, Node16>;
TYPED_TEST_SUITE(ShmHashTableTagsTyped, TagNodes, );

// Random inserts, erases and re-inserts into a nearly full table (overflow
// rows in use, slots reused with stale tags), checked after every step
// against a std::set, by Find, FindMany and FindOrAlloc's is_found.
TYPED_TEST(ShmHashTableTagsTyped, RandomOpsAgreeWithAReferenceSet) {
  using N = TypeParam;
  for (size_t capacity : {60, 3000}) {
    ScopedKey<shmc::POSIX> key(std::to_string(capacity));
    shmc::ShmHashTable<uint64_t, N, shmc::POSIX> t;
    ASSERT_TRUE(t.InitForWrite(key, capacity));
    std::set<uint64_t> live;
    std::mt19937_64 rng(capacity);
    // Keys from a small pool so that erased keys come back.
    size_t pool = t.expected_capacity() * 5 / 4;
    for (int step = 0; step < 40000; ++step) {
      uint64_t k = KeyOf(rng() % pool);
      bool erase = rng() % 3 == 0;
      if (erase) {
        volatile N* n = t.Find(k);
        ASSERT_EQ(n != nullptr, live.count(k) == 1) << step;
        if (n != nullptr) {
          n->Clear();
          live.erase(k);
        }
      } else if (live.size() < t.expected_capacity()) {
        bool found = false;
        volatile N* n = t.FindOrAlloc(k, &found);
        ASSERT_NE(n, nullptr) << step;
        ASSERT_EQ(found, live.count(k) == 1) << step;
        if (!found) {
          n->Set(k, step);
          live.insert(k);
        }
      }
      if (step % 4000 == 3999) {
        std::vector<uint64_t> keys;
        for (size_t i = 0; i < pool; ++i) keys.push_back(KeyOf(i));
        std::vector<const volatile N*> out(keys.size());
        size_t found = t.FindMany(keys.data(), keys.size(), out.data());
        ASSERT_EQ(found, live.size());
        for (size_t i = 0; i < keys.size(); ++i) {
          const auto& ct = t;
          const volatile N* one = ct.Find(keys[i]);
          ASSERT_EQ(one != nullptr, live.count(keys[i]) == 1) << i;
          ASSERT_EQ(out[i], one) << i;
          if (one != nullptr) {
            ASSERT_EQ(one->Key().second, keys[i]);
          }
        }
      }
    }
    EXPECT_GT(t.overflow_depth(), 0u) << "the overflow rows were not reached";
  }
}

// Keys that share both a main bucket and a tag: the tag matches more than
// one slot and the keys decide.
TEST(ShmHashTableTags, KeysSharingBucketAndTagAreTold) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(key, 200));
  uint64_t main_buckets = t.row_slots(0) / decltype(t)::kSlots;
  auto place = [&](uint64_t k) {
    uint64_t h = shmc::ShmHash<uint64_t>()(k);
    uint64_t b0 = shmc::detail::ReduceRange(static_cast<uint32_t>(h),
                                            main_buckets);
    uint64_t b1 = shmc::detail::ReduceRange(static_cast<uint32_t>(h >> 32),
                                            main_buckets);
    return (b0 << 40) | (b1 << 8) | shmc::detail::TagOf(h);
  };
  // Three keys with the same row-0 bucket, row-1 bucket and tag.
  uint64_t want = place(KeyOf(0));
  std::vector<uint64_t> same = {KeyOf(0)};
  for (uint64_t i = 1; same.size() < 3 && i < 50000000; ++i) {
    if (place(KeyOf(i)) == want) same.push_back(KeyOf(i));
  }
  ASSERT_EQ(same.size(), 3u) << "no colliding keys found";
  for (uint64_t k : same) {
    bool found = true;
    volatile Node* n = t.FindOrAlloc(k, &found);
    ASSERT_NE(n, nullptr);
    ASSERT_FALSE(found);
    n->Set(k, k ^ 1);
  }
  for (uint64_t k : same) {
    const auto& ct = t;
    const volatile Node* n = ct.Find(k);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->val, k ^ 1);
  }
  t.Find(same[0])->Clear();
  EXPECT_EQ(t.Find(same[0]), nullptr);
  EXPECT_NE(t.Find(same[1]), nullptr);
  EXPECT_NE(t.Find(same[2]), nullptr);
  std::vector<const volatile Node*> out(3);
  EXPECT_EQ(t.FindMany(same.data(), 3, out.data()), 2u);
  EXPECT_EQ(out[0], nullptr);
}

// A damaged tag hides its key; CheckTags finds it and the writer's
// CheckTags(true) makes it findable again.
TEST(ShmHashTableTags, CheckTagsFindsAndFixesADamagedTag) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(key, 1000));
  InsertKeys(&t, 500);
  EXPECT_EQ(t.CheckTags(false), 0);
  // Flip the tag byte of KeyOf(7)'s slot through a second mapping.
  uint64_t slot = t.node_index(t.Find(KeyOf(7)));
  ASSERT_TRUE(shmc_test::FlipTagByte(key.str(), t, slot));
  EXPECT_EQ(t.Find(KeyOf(7)), nullptr);
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> reader;
  ASSERT_TRUE(reader.InitForRead(key));
  EXPECT_EQ(reader.CheckTags(false), 1);
  EXPECT_EQ(reader.CheckTags(true), -1);  // a reader may not fix
  EXPECT_EQ(t.CheckTags(true), 1);
  EXPECT_EQ(t.CheckTags(false), 0);
  ASSERT_NE(t.Find(KeyOf(7)), nullptr);
  EXPECT_EQ(t.Find(KeyOf(7))->val, 7u);
}

// An overflow depth below the deepest overflow row in use hides that row's
// keys (a damaged header): HealthCheck says so, a reader may not repair it,
// the writer's HealthCheck(true) raises the depth and the keys are found.
TEST(ShmHashTableTags, HealthCheckFindsAndRaisesAHidingDepth) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(key, 1000));
  const uint64_t main_slots = t.row_slots(0) + t.row_slots(1);
  uint64_t in_overflow = 0;
  for (uint64_t i = 0; in_overflow == 0; ++i) {
    bool found;
    volatile Node* n = t.FindOrAlloc(KeyOf(i), &found);
    ASSERT_NE(n, nullptr) << "filled before any overflow";
    n->Set(KeyOf(i), i);
    if (t.node_index(n) >= main_slots) in_overflow = KeyOf(i);
  }
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX>::HealthStat hs;
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_TRUE(hs.ok());
  EXPECT_GT(hs.deepest_used, 0u);
  {
    shmc_test::RawSegment raw(key);
    ASSERT_TRUE(raw.ok());
    raw.at<shmc::detail::HashTableHeader>(shmc::detail::kTableHeaderOffset)
        ->overflow_depth.store(0);
  }
  EXPECT_EQ(t.Find(in_overflow), nullptr) << "the depth hides the key";
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> reader;
  ASSERT_TRUE(reader.InitForRead(key));
  ASSERT_TRUE(reader.HealthCheck(&hs, false));
  EXPECT_FALSE(hs.ok());
  EXPECT_TRUE(hs.depth_hides_nodes());
  EXPECT_EQ(hs.untagged + hs.mistagged, 0u) << "tags are not at fault";
  EXPECT_FALSE(reader.HealthCheck(&hs, true)) << "a reader may not fix";
  ASSERT_TRUE(t.HealthCheck(&hs, true));
  EXPECT_EQ(hs.depth_fixed, 1u);
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_TRUE(hs.ok());
  ASSERT_NE(t.Find(in_overflow), nullptr);
}

// Inserts take a slot whose tag is 0 (never handed out) without reading
// the other nodes; a live node whose tag was damaged to 0 must still not
// be handed out again. Filling the table to the brim reaches its bucket.
TEST(ShmHashTableTags, ZeroedTagOfALiveNodeIsNotHandedOut) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(key, 1000));
  InsertKeys(&t, 200);
  std::vector<uint64_t> damaged;
  for (uint64_t i = 0; i < 200; i += 10) {
    uint64_t slot = t.node_index(t.Find(KeyOf(i)));
    damaged.push_back(slot);
    ASSERT_TRUE(shmc_test::ChangeTagByte(key.str(), t, slot,
                                         [](uint8_t) { return uint8_t{0}; }));
  }
  uint64_t i = 200;
  for (;; ++i) {
    bool found;
    volatile Node* n = t.FindOrAlloc(KeyOf(i), &found);
    if (n == nullptr) break;
    ASSERT_FALSE(found);
    n->Set(KeyOf(i), i);
  }
  EXPECT_GT(i, 900u) << "filled";
  for (size_t d = 0; d < damaged.size(); ++d) {
    const volatile Node* n = t.node_at(damaged[d]);
    EXPECT_EQ(n->key.load(), KeyOf(d * 10)) << "live node handed out again";
    EXPECT_EQ(n->val, d * 10);
  }
  EXPECT_EQ(t.CheckTags(true), static_cast<long>(damaged.size()));
  for (uint64_t k = 0; k < i; ++k) ASSERT_NE(t.Find(KeyOf(k)), nullptr) << k;
}

// Misuse gets a refusal, not a crash: a table never initialized finds
// nothing and hands out nothing; a read-only handle returns an existing
// key's node but never hands out a slot.
TEST(ShmHashTableMisuse, UninitializedAndReadOnlyHandles) {
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> none;
  bool found = true;
  EXPECT_EQ(none.Find(KeyOf(1)), nullptr);
  EXPECT_EQ(none.FindOrAlloc(KeyOf(1), &found), nullptr);
  EXPECT_FALSE(found);
  uint64_t keys[2] = {KeyOf(1), KeyOf(2)};
  const volatile Node* out[2] = {nullptr, nullptr};
  EXPECT_EQ(none.FindMany(keys, 2, out), 0u);
  EXPECT_EQ(out[1], nullptr);

  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> w;
  ASSERT_TRUE(w.InitForWrite(key, 100));
  w.FindOrAlloc(KeyOf(1), &found)->Set(KeyOf(1), 1);
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> r;
  ASSERT_TRUE(r.InitForRead(key));
  volatile Node* n = r.FindOrAlloc(KeyOf(1), &found);
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(found);
  EXPECT_EQ(n->val, 1u);
  EXPECT_EQ(r.FindOrAlloc(KeyOf(2), &found), nullptr);
  EXPECT_FALSE(found);
  EXPECT_EQ(w.Find(KeyOf(2)), nullptr);

  // The same for the classic multi-row table.
  shmc::ShmHashTableM<uint64_t, Node, shmc::POSIX> none_m;
  EXPECT_EQ(none_m.Find(KeyOf(1)), nullptr);
  EXPECT_EQ(none_m.FindOrAlloc(KeyOf(1), &found), nullptr);
  ScopedKey<shmc::POSIX> key_m("m");
  shmc::ShmHashTableM<uint64_t, Node, shmc::POSIX> wm, rm;
  ASSERT_TRUE(wm.InitForWrite(key_m, 100, 10));
  wm.FindOrAlloc(KeyOf(1), &found)->Set(KeyOf(1), 1);
  ASSERT_TRUE(rm.InitForRead(key_m));
  ASSERT_NE(rm.FindOrAlloc(KeyOf(1), &found), nullptr);
  EXPECT_TRUE(found);
  EXPECT_EQ(rm.FindOrAlloc(KeyOf(2), &found), nullptr);
}

// Keys that are not integers: a fixed-size string key and a key type known
// only through std::hash (programs written for the reference).
struct NameNode {
  char name[24];
  uint32_t len;
  uint32_t val;
  std::pair<bool, std::string> Key() const volatile {
    if (len == 0) return {false, std::string()};
    return {true, std::string(const_cast<const char*>(name), len)};
  }
};

TEST(ShmHashTableKeys, StringKeys) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTable<std::string, NameNode, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(key, 1000));
  for (int i = 0; i < 500; ++i) {
    std::string k = "user:" + std::to_string(i);
    bool found;
    volatile NameNode* n = t.FindOrAlloc(k, &found);
    ASSERT_NE(n, nullptr);
    std::memcpy(const_cast<char*>(n->name), k.data(), k.size());
    n->val = i;
    n->len = static_cast<uint32_t>(k.size());
  }
  for (int i = 0; i < 500; ++i) {
    const volatile NameNode* n = t.Find("user:" + std::to_string(i));
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->val, static_cast<uint32_t>(i));
  }
  EXPECT_EQ(t.Find("user:500"), nullptr);
}

TEST(ShmHashTableM, ClassicTableFillsAndFinds) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHashTableM<uint64_t, Node, shmc::POSIX> t;
  EXPECT_FALSE(t.InitForWrite(key, 100, 5));
  EXPECT_EQ(t.last_error().code, shmc::ErrorCode::kInvalidArgument);
  EXPECT_FALSE(t.InitForWrite(key, 200, 50));  // only 46 primes <= 200
  EXPECT_EQ(t.last_error().code, shmc::ErrorCode::kInvalidArgument);
  ASSERT_TRUE(t.InitForWrite(key, 1000, 50)) << t.last_error().message;
  size_t n = FillToFull(&t);
  EXPECT_GT(n, t.expected_capacity());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(t.Find(KeyOf(i))->val, i);
  size_t travelled = 0;
  typename decltype(t)::TravelPos pos;
  do {
    ASSERT_TRUE(t.Travel(&pos, 1000, [&](volatile Node*) { ++travelled; }));
  } while (!pos.at_origin());
  EXPECT_EQ(travelled, n);
  shmc::ShmHashTableM<uint64_t, Node, shmc::POSIX> r;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  EXPECT_EQ(r.ideal_capacity(), t.ideal_capacity());
  EXPECT_EQ(static_cast<const decltype(r)&>(r).Find(KeyOf(3))->val, 3u);
  shmc::ShmHashTable<uint64_t, Node, shmc::POSIX> other_kind;
  EXPECT_FALSE(other_kind.InitForRead(key));
  EXPECT_EQ(other_kind.last_error().code, shmc::ErrorCode::kLayoutMismatch);
}

}  // namespace
