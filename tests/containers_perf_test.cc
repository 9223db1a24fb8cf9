// Perf tests of the containers, written with gtestx. CTest runs them with
// -time=200 (label "perf"); run the binary alone for the default 1.5 s, or
// with -time=MS / -hz=N. They check results, never timings.
#include <random>
#include <vector>

#include "gtestx/gtestx.h"
#include "shmc/shm_array.h"
#include "shmc/shm_hash_table.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::ScopedKey;

struct Node {
  uint64_t key;
  uint64_t val;
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};

template <class Alloc>
class HashTablePerf : public ::testing::Test {
 protected:
  static constexpr size_t kKeys = 200000;
  void SetUp() override {
    SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 8);
    ASSERT_TRUE(table_.InitForWrite(key_, kKeys * 5 / 4))
        << table_.last_error().message;
    std::mt19937_64 rng(5);
    keys_.resize(kKeys);
    for (auto& k : keys_) {
      k = rng() | 1;
      bool found;
      volatile Node* n = table_.FindOrAlloc(k, &found);
      ASSERT_NE(n, nullptr);
      n->key = k;
      n->val = k ^ 0x5a5a;
    }
  }
  uint64_t NextKey() { return keys_[next_++ % kKeys]; }

  ScopedKey<Alloc> key_;
  shmc::ShmHashTable<uint64_t, Node, Alloc> table_;
  std::vector<uint64_t> keys_;
  size_t next_ = 0;
};
using PerfAllocs = ::testing::Types<shmc::POSIX, shmc::SVIPC_HugeTLB>;
TYPED_PERF_TEST_CASE(HashTablePerf, PerfAllocs);

TYPED_PERF_TEST(HashTablePerf, FindHit) {
  uint64_t k = this->NextKey();
  const auto& t = this->table_;
  const volatile Node* n = t.Find(k);
  ASSERT_TRUE(n != nullptr && n->val == (k ^ 0x5a5a)) << PERF_ABORT;
}

TYPED_PERF_TEST(HashTablePerf, FindMiss) {
  const auto& t = this->table_;
  ASSERT_EQ(t.Find(this->NextKey() + 1), nullptr) << PERF_ABORT;
}

TYPED_PERF_TEST(HashTablePerf, FindMany64) {
  uint64_t batch[64];
  const volatile Node* out[64];
  for (auto& k : batch) k = this->NextKey();
  const auto& t = this->table_;
  ASSERT_EQ(t.FindMany(batch, 64, out), 64u) << PERF_ABORT;
}

TYPED_PERF_TEST(HashTablePerf, FindOrAllocExisting) {
  bool found = false;
  ASSERT_NE(this->table_.FindOrAlloc(this->NextKey(), &found), nullptr)
      << PERF_ABORT;
  ASSERT_TRUE(found) << PERF_ABORT;
}

class ArrayPerf : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(array_.InitForWrite(key_, kSize));
    for (size_t k = 0; k < kSize; ++k) array_[static_cast<int>(k)] = k;
  }
  static constexpr size_t kSize = 1 << 20;
  ScopedKey<shmc::POSIX> key_;
  shmc::ShmArray<uint64_t, shmc::POSIX> array_;
  uint64_t i_ = 0;
};

// Each write reads back what it wrote.
PERF_TEST_F(ArrayPerf, SequentialWrite) {
  int at = static_cast<int>(i_ % kSize);
  array_[at] = i_;
  ASSERT_EQ(static_cast<uint64_t>(array_[at]), i_) << PERF_ABORT;
  ++i_;
}

// Slot k holds k (SetUp): each read checks it.
PERF_TEST_F(ArrayPerf, RandomRead) {
  i_ = i_ * 6364136223846793005ULL + 1442695040888963407ULL;
  const auto& a = array_;
  uint64_t at = (i_ >> 33) % kSize;
  ASSERT_EQ(static_cast<uint64_t>(a[static_cast<int>(at)]), at) << PERF_ABORT;
}

}  // namespace
