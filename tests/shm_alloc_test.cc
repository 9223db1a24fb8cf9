// Allocator semantics of the reference API, plus shmc's additions (precise
// error numbers, page reservation, strict SysV keys, the file allocator).
#include "shmc/shm_alloc.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <string>

#include "tests/support/test_util.h"

namespace {

using shmc_test::AllocTraits;
using shmc_test::ScopedKey;

constexpr size_t kMiB = 1 << 20;

template <class Alloc>
class NamedAllocTest : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 8); }
  bool SizeIs(size_t mapped, size_t requested) {
    return mapped == shmc::Utils::RoundAlign(requested, alloc_.AlignSize());
  }
  Alloc alloc_;
  ScopedKey<Alloc> key_;
};
TYPED_TEST_SUITE(NamedAllocTest, shmc_test::NamedAllocs,
                 shmc_test::AllocNames);

TYPED_TEST(NamedAllocTest, ExclusiveCreateAndUnlink) {
  auto& a = this->alloc_;
  void* p = a.Attach_ExclCreate(this->key_, 3 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(a.Detach(p, 3 * kMiB));
  EXPECT_EQ(a.Attach_ExclCreate(this->key_, 3 * kMiB), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrAlreadyExist);
  EXPECT_EQ(a.sys_errno(), EEXIST);
  EXPECT_TRUE(a.Unlink(this->key_));
  EXPECT_FALSE(a.Unlink(this->key_));
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrNotExist);
  p = a.Attach_ExclCreate(this->key_, 3 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(a.Detach(p, 3 * kMiB));
  // Force-create replaces the segment in the way.
  p = a.Attach_ForceCreate(this->key_, 3 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(a.Detach(p, 3 * kMiB));
}

TYPED_TEST(NamedAllocTest, DataSurvivesDetachAndReadOnlyAttach) {
  auto& a = this->alloc_;
  const size_t size = 3 * kMiB;
  char* p = static_cast<char*>(a.Attach_MayCreate(this->key_, size));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p[size - 1], 0) << "fresh segments are zero-filled";
  std::memcpy(p + size - 8, "shmc-ok", 8);
  ASSERT_TRUE(a.Detach(p, size));
  size_t mapped = 0;
  p = static_cast<char*>(a.Attach_ReadOnly(this->key_, 0, &mapped));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(this->SizeIs(mapped, size));
  EXPECT_STREQ(p + size - 8, "shmc-ok");
  ASSERT_TRUE(a.Detach(p, mapped));
}

TYPED_TEST(NamedAllocTest, ReadOnlyAttachOfMissingSegmentFails) {
  EXPECT_EQ(this->alloc_.Attach_ReadOnly(this->key_, 0), nullptr);
  EXPECT_EQ(this->alloc_.last_errno(), shmc::impl::kErrNotExist);
}

TYPED_TEST(NamedAllocTest, SizeChecks) {
  auto& a = this->alloc_;
  size_t mapped = 0;
  bool created = false;
  void* p = a.Attach_MayCreate(this->key_, 3 * kMiB, &mapped, &created);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(created);
  EXPECT_TRUE(this->SizeIs(mapped, 3 * kMiB));
  ASSERT_TRUE(a.Detach(p, mapped));
  // Asking an existing segment for more than it has fails...
  EXPECT_EQ(a.Attach_MayCreate(this->key_, 9 * kMiB), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrBiggerSize);
  EXPECT_EQ(a.Attach_ReadOnly(this->key_, 9 * kMiB), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrBiggerSize);
  // ...size 0 takes what is there.
  p = a.Attach_MayCreate(this->key_, 0, &mapped, &created);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(created);
  EXPECT_TRUE(this->SizeIs(mapped, 3 * kMiB));
  ASSERT_TRUE(a.Detach(p, mapped));
}

TYPED_TEST(NamedAllocTest, AutoCreateFollowsFlags) {
  auto& a = this->alloc_;
  size_t mapped = 0;
  bool created = true;
  EXPECT_EQ(a.Attach_AutoCreate(this->key_, 3 * kMiB, shmc::kNoCreate,
                                &mapped, &created),
            nullptr);
  EXPECT_FALSE(created);
  void* p = a.Attach_AutoCreate(this->key_, 3 * kMiB, shmc::kCreateIfNotExist,
                                &mapped, &created);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(created);
  ASSERT_TRUE(a.Detach(p, mapped));
  EXPECT_EQ(a.Attach_AutoCreate(this->key_, 5 * kMiB, shmc::kCreateIfNotExist),
            nullptr);
  shmc_test::LogCapture log;
  p = a.Attach_AutoCreate(this->key_, 5 * kMiB, shmc::kCreateIfExtending,
                          &mapped, &created);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(created);
  EXPECT_TRUE(this->SizeIs(mapped, 5 * kMiB));
  EXPECT_TRUE(log.Contains(shmc::kWarning, "data is lost"));
  ASSERT_TRUE(a.Detach(p, mapped));
}

TYPED_TEST(NamedAllocTest, ReadOnlyMappingRefusesWrites) {
  auto& a = this->alloc_;
  void* p = a.Attach_MayCreate(this->key_, 3 * kMiB);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(a.Detach(p, 3 * kMiB));
  size_t mapped = 0;
  char* ro = static_cast<char*>(a.Attach_ReadOnly(this->key_, 0, &mapped));
  ASSERT_NE(ro, nullptr);
  int rc = shmc_test::RunInChild([&] {
    signal(SIGSEGV, [](int) { _exit(42); });
    ro[0] = 1;
    return 0;
  });
  EXPECT_EQ(rc, 42) << "a store through a read-only attach must fault";
  a.Detach(ro, mapped);
}

template <class Alloc>
class AnonAllocTest : public ::testing::Test {};
using AnonAllocs = ::testing::Types<shmc::ANON, shmc::HEAP>;
TYPED_TEST_SUITE(AnonAllocTest, AnonAllocs, shmc_test::AllocNames);

TYPED_TEST(AnonAllocTest, CreatesOnlyAndIgnoresKey) {
  TypeParam a;
  EXPECT_EQ(a.Attach_ReadOnly("anything", 4096), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrNotExist);
  size_t mapped = 0;
  char* p = static_cast<char*>(a.Attach_ExclCreate("x", 10000, &mapped));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(mapped, 12288u) << "rounded up to whole pages";
  p[9999] = 7;
  EXPECT_TRUE(a.Detach(p, mapped));
  EXPECT_TRUE(a.Unlink("x"));
}

TEST(AnonAlloc, SharedWithForkedChildHeapIsNot) {
  shmc::ANON anon;
  shmc::HEAP heap;
  char* s = static_cast<char*>(anon.Attach_ExclCreate("", 4096));
  char* h = static_cast<char*>(heap.Attach_ExclCreate("", 4096));
  ASSERT_NE(s, nullptr);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(shmc_test::RunInChild([&] {
              s[0] = 'A';
              h[0] = 'H';
              return 0;
            }),
            0);
  EXPECT_EQ(s[0], 'A');
  EXPECT_EQ(h[0], 0);
  anon.Detach(s, 4096);
  heap.Detach(h, 4096);
}

TEST(SysvKey, ParsesNumbersOnly) {
  key_t k = 0;
  EXPECT_TRUE(shmc::impl::ParseSysvKey("65539", &k));
  EXPECT_EQ(k, 65539);
  EXPECT_TRUE(shmc::impl::ParseSysvKey("0x10003", &k));
  EXPECT_EQ(k, 0x10003);
  EXPECT_TRUE(shmc::impl::ParseSysvKey("0200003", &k));
  EXPECT_EQ(k, 0200003);
  EXPECT_TRUE(shmc::impl::ParseSysvKey("0xffffffff", &k));
  EXPECT_EQ(static_cast<uint32_t>(k), 0xffffffffu);
  for (const char* bad : {"", "abc", "12abc", "0x", "0", "-1", "+5", " 7",
                          "0x100000000", "99999999999999999999", "0x1 "}) {
    EXPECT_FALSE(shmc::impl::ParseSysvKey(bad, &k)) << "'" << bad << "'";
  }
}

TEST(SysvKey, BadKeyIsBadParam) {
  shmc::SVIPC a;
  EXPECT_EQ(a.Attach_MayCreate("not-a-number", 4096), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrBadParam);
  EXPECT_FALSE(a.Unlink("0"));
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrBadParam);
}

TEST(HugeTlb, NoFreePagesIsItsOwnError) {
  if (shmc_test::HugePagesFree() >= 64) {
    GTEST_SKIP() << "hugepages are free; asking for more than the pool";
  }
  ScopedKey<shmc::SVIPC_HugeTLB> key;
  shmc::SVIPC_HugeTLB a;
  EXPECT_EQ(a.Attach_ExclCreate(key, 128 * kMiB), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrNoHugePages);
}

TEST(MapFile, SegmentIsAPlainFile) {
  ScopedKey<shmc::MAPFILE> key;
  shmc::MAPFILE a;
  size_t mapped = 0;
  char* p = static_cast<char*>(a.Attach_ExclCreate(key, 100000, &mapped));
  ASSERT_NE(p, nullptr);
  std::memcpy(p + 50000, "persist", 8);
  EXPECT_TRUE(a.Sync(p, mapped));
  ASSERT_TRUE(a.Detach(p, mapped));
  struct stat st;
  ASSERT_EQ(stat(key.str().c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 100000);
  EXPECT_GE(st.st_blocks * 512, 100000) << "blocks are reserved at create";
  FILE* f = fopen(key.str().c_str(), "rb");
  ASSERT_NE(f, nullptr);
  char buf[8] = {};
  fseek(f, 50000, SEEK_SET);
  ASSERT_EQ(fread(buf, 1, 8, f), 8u);
  fclose(f);
  EXPECT_STREQ(buf, "persist");
}

TEST(PosixAlloc, BadNameIsInvalid) {
  shmc::POSIX a;
  EXPECT_EQ(a.Attach_MayCreate("/bad/name", 4096), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrInvalid);
  EXPECT_EQ(a.Attach_MayCreate("", 4096), nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrBadParam);
}

}  // namespace
