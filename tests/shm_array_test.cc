// ShmArray over every allocator: the reference behaviour, persistence,
// read-only attach, and cross-process visibility.
#include "shmc/shm_array.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "tests/support/test_util.h"

namespace {

using shmc_test::AllocTraits;
using shmc_test::RunInChild;
using shmc_test::ScopedKey;

struct Node {
  uint32_t id;
  uint32_t val;
} __attribute__((packed));  // as in programs written for the reference

constexpr size_t kSize = 10000;

template <class Alloc>
class ShmArrayTest : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 2); }
  ScopedKey<Alloc> key_;
};
TYPED_TEST_SUITE(ShmArrayTest, shmc_test::AllAllocs, shmc_test::AllocNames);

TYPED_TEST(ShmArrayTest, WriteThenRead) {
  shmc::ShmArray<Node, TypeParam> w;
  ASSERT_TRUE(w.InitForWrite(this->key_, kSize)) << w.last_error().message;
  EXPECT_EQ(w.size(), kSize);
  for (size_t i = 0; i < kSize; ++i) {
    EXPECT_EQ(+w[i].id, 0u);
    w[i].id = static_cast<uint32_t>(i);
    w[i].val = static_cast<uint32_t>(i * 3);
  }
  const auto& cw = w;
  EXPECT_EQ(+cw[kSize - 1].val, (kSize - 1) * 3);
  shmc::ShmArray<Node, TypeParam> r;
  if (!AllocTraits<TypeParam>::kNamed) {
    EXPECT_FALSE(r.InitForRead(this->key_));
    EXPECT_EQ(r.last_error().code, shmc::ErrorCode::kNotFound);
    return;
  }
  ASSERT_TRUE(r.InitForRead(this->key_)) << r.last_error().message;
  ASSERT_EQ(r.size(), kSize);
  const auto& cr = r;
  for (size_t i = 0; i < kSize; ++i) {
    ASSERT_EQ(+cr[i].id, i);
    ASSERT_EQ(+cr[i].val, i * 3);
  }
}

TYPED_TEST(ShmArrayTest, DataOutlivesTheWriterObject) {
  if (!AllocTraits<TypeParam>::kNamed) {
    GTEST_SKIP() << "an ANON or HEAP segment has no name: no second "
                    "process can attach it";
  }
  {
    shmc::ShmArray<Node, TypeParam> w;
    ASSERT_TRUE(w.InitForWrite(this->key_, kSize));
    w[123].val = 456;
  }
  shmc::ShmArray<Node, TypeParam> again;
  ASSERT_TRUE(again.InitForWrite(this->key_, kSize))
      << again.last_error().message;
  EXPECT_EQ(+again[123].val, 456u);
}

TYPED_TEST(ShmArrayTest, OtherProcessReadsWhatWasWritten) {
  if (!AllocTraits<TypeParam>::kNamed) {
    GTEST_SKIP() << "an ANON or HEAP segment has no name: no second "
                    "process can attach it";
  }
  std::string key = this->key_;
  // The writer is a separate process that exits before the reader attaches.
  int rc = RunInChild([&] {
    shmc::ShmArray<Node, TypeParam> w;
    if (!w.InitForWrite(key, kSize)) return 1;
    for (size_t i = 0; i < kSize; ++i) w[i].val = static_cast<uint32_t>(~i);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  shmc::ShmArray<Node, TypeParam> r;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(+r[i].val, ~i & 0xffffffffu);
}

TYPED_TEST(ShmArrayTest, ForkedChildSharesTheMapping) {
  shmc::ShmArray<Node, TypeParam> w;
  ASSERT_TRUE(w.InitForWrite(this->key_, kSize));
  int rc = RunInChild([&] {
    w[7].val = 777;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(+w[7].val, AllocTraits<TypeParam>::kShared ? 777u : 0u);
}

struct Counter {
  std::atomic<uint64_t> seq;
  uint64_t payload;
};

TYPED_TEST(ShmArrayTest, ConcurrentReaderProcessSeesPublishedWrites) {
  if (!AllocTraits<TypeParam>::kNamed) {
    GTEST_SKIP() << "an ANON or HEAP segment has no name: no second "
                    "process can attach it";
  }
  shmc::ShmArray<Counter, TypeParam> w;
  ASSERT_TRUE(w.InitForWrite(this->key_, 64));
  std::string key = this->key_;
  // The reader runs while the writer publishes; each payload is released by
  // its sequence number, so the reader must never see a payload behind it.
  pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    shmc::ShmArray<Counter, TypeParam> r;
    if (!r.InitForRead(key)) _exit(1);
    const auto& cr = r;
    const volatile Counter& c = cr[3];
    uint64_t last = 0;
    while (last < 200000) {
      uint64_t s = const_cast<const Counter&>(c).seq.load(
          std::memory_order_acquire);
      uint64_t p = c.payload;
      if (p < s * 2 || s < last) _exit(2);
      last = s;
    }
    _exit(0);
  }
  volatile Counter& c = w[3];
  for (uint64_t i = 1; i <= 200000; ++i) {
    c.payload = i * 2;
    const_cast<Counter&>(c).seq.store(i, std::memory_order_release);
  }
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
