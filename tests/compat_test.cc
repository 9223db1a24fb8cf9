// The reference API's contract where shmc had drifted from it (each test
// failed against shmc before its fix): create flags never lose data,
// shmc::Utils and AllocTraits, ShmHandle, link_buf_t's accessors, the hash
// table's expected capacity, and a queue on ANON/HEAP.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "shmc/common_utils.h"
#include "shmc/mmap_alloc.h"
#include "shmc/shm_array.h"
#include "shmc/shm_handle.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/version.h"
#include "tests/support/test_util.h"

namespace compat_alloc_only {
size_t RoundToAlloc(size_t n);
bool PosixIsNamed();
bool SvipcIsNamed();
}  // namespace compat_alloc_only

namespace {

using shmc_test::AllocTraits;
using shmc_test::RunInChild;
using shmc_test::ScopedCreateFlags;
using shmc_test::ScopedKey;

// --- 1. Create flags x existing segment: nothing is lost ------------------

enum class Before { kAbsent, kSmaller, kSame, kLarger, kOtherKind };

const char* Name(Before b) {
  switch (b) {
    case Before::kAbsent: return "absent";
    case Before::kSmaller: return "smaller";
    case Before::kSame: return "same size";
    case Before::kLarger: return "larger";
    case Before::kOtherKind: return "another kind";
  }
  return "?";
}

constexpr size_t kElems = 1000;
constexpr uint64_t kMark = 0x5eed5eed5eed5eedULL;

template <class Alloc>
class CreateFlagsTest : public ::testing::Test {};
using FlagAllocs = ::testing::Types<shmc::SVIPC, shmc::POSIX, shmc::MAPFILE>;
TYPED_TEST_SUITE(CreateFlagsTest, FlagAllocs, shmc_test::AllocNames);

// For every combination: a call that fails leaves the old segment and its
// data in place; a call that succeeds either kept the data (same segment)
// or made a new segment because it was allowed to replace a smaller one.
TYPED_TEST(CreateFlagsTest, NoCombinationLosesData) {
  const int kFlagSets[] = {shmc::kNoCreate, shmc::kCreateIfNotExist,
                           shmc::kCreateIfExtending,
                           shmc::kCreateIfNotExist | shmc::kCreateIfExtending};
  const Before kStates[] = {Before::kAbsent, Before::kSmaller, Before::kSame,
                            Before::kLarger, Before::kOtherKind};
  for (int flags : kFlagSets) {
    for (Before state : kStates) {
      SCOPED_TRACE(std::string("flags ") + std::to_string(flags) + ", " +
                   Name(state));
      ScopedKey<TypeParam> key(std::to_string(flags) + Name(state));
      size_t old_n = state == Before::kSmaller ? kElems / 2
                     : state == Before::kLarger ? kElems * 2
                                                : kElems;
      if (state == Before::kOtherKind) {
        shmc::ShmQueue<TypeParam> q;
        ASSERT_TRUE(q.InitForWrite(key, 64 * 1024)) << q.last_error().message;
        ASSERT_TRUE(q.Push("kept"));
      } else if (state != Before::kAbsent) {
        shmc::ShmArray<uint64_t, TypeParam> a;
        ASSERT_TRUE(a.InitForWrite(key, old_n)) << a.last_error().message;
        a[0] = kMark;
      }
      bool ok;
      {
        ScopedCreateFlags scoped(flags);
        shmc::ShmArray<uint64_t, TypeParam> a;
        ok = a.InitForWrite(key, kElems);
        if (ok) {
          EXPECT_EQ(a.size(), kElems);
          // Kept data exactly when the segment was not replaced.
          bool replaced = state == Before::kSmaller;
          bool kept = state == Before::kSame;
          if (kept) {
            EXPECT_EQ(a[0], kMark);
          }
          if (replaced) {
            EXPECT_EQ(a[0], 0u);
          }
        } else {
          EXPECT_NE(a.last_error().code, shmc::ErrorCode::kOk);
        }
      }
      bool may_create = flags & shmc::kCreateIfNotExist;
      bool may_extend = flags & shmc::kCreateIfExtending;
      switch (state) {
        case Before::kAbsent: EXPECT_EQ(ok, may_create); break;
        case Before::kSmaller: EXPECT_EQ(ok, may_extend); break;
        case Before::kSame: EXPECT_TRUE(ok); break;
        case Before::kLarger:
        case Before::kOtherKind: EXPECT_FALSE(ok); break;
      }
      if (ok) continue;
      // Failed: whatever was there is still there, data and all.
      if (state == Before::kOtherKind) {
        shmc::ShmQueue<TypeParam> q;
        ASSERT_TRUE(q.InitForRead(key)) << q.last_error().message;
        std::string out;
        ASSERT_TRUE(q.Pop(&out));
        EXPECT_EQ(out, "kept");
      } else if (state != Before::kAbsent) {
        shmc::ShmArray<uint64_t, TypeParam> r;
        ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
        EXPECT_EQ(r.size(), old_n);
        EXPECT_EQ(r[0], kMark);
      }
    }
  }
}

// InitForRead maps read-only: a write through a reader faults instead of
// changing what every process sees.
TEST(ReadOnlyReaders, AWriteThroughAReaderFaults) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmArray<uint64_t, shmc::POSIX> w, r;
  ASSERT_TRUE(w.InitForWrite(key, 16)) << w.last_error().message;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  w[3] = 7;
  EXPECT_EQ(r[3], 7u);
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The fault is expected: keep a sanitizer's report of it out of logs.
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    r[3] = 8;  // must fault
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  // Killed by SIGSEGV, or (under AddressSanitizer, whose handler reports
  // the fault) exited non-zero: never a normal exit after the write.
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the write went through";
  if (WIFSIGNALED(status)) {
    EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  }
  EXPECT_EQ(w[3], 7u);
}

// --- 3, 4. Utils and AllocTraits -------------------------------------------

TEST(Utils, ReachableFromAnAllocatorHeaderAlone) {
  EXPECT_EQ(compat_alloc_only::RoundToAlloc(4097),
            shmc::Utils::RoundAlign(4097, shmc::POSIX().AlignSize()));
  EXPECT_TRUE(compat_alloc_only::PosixIsNamed());
  EXPECT_TRUE(compat_alloc_only::SvipcIsNamed());
}

TEST(Utils, AllocTraitsSaysWhichAllocatorsHaveNames) {
  static_assert(shmc::impl::AllocTraits<shmc::SVIPC>::is_named, "");
  static_assert(shmc::impl::AllocTraits<shmc::SVIPC_HugeTLB>::is_named, "");
  static_assert(shmc::impl::AllocTraits<shmc::POSIX>::is_named, "");
  static_assert(shmc::impl::AllocTraits<shmc::MAPFILE>::is_named, "");
  static_assert(!shmc::impl::AllocTraits<shmc::ANON>::is_named, "");
  static_assert(!shmc::impl::AllocTraits<shmc::HEAP>::is_named, "");
  SUCCEED();
}

TEST(Utils, CreateFlagsAndLogHandlerAreTheGlobalOnes) {
  int saved = shmc::DefaultCreateFlags();
  shmc::Utils::SetDefaultCreateFlags(shmc::kCreateIfExtending);
  EXPECT_EQ(shmc::DefaultCreateFlags(), shmc::kCreateIfExtending);
  EXPECT_EQ(shmc::Utils::DefaultCreateFlags(), shmc::kCreateIfExtending);
  shmc::Utils::SetDefaultCreateFlags(saved);

  std::string seen;
  shmc::Utils::SetLogHandler(shmc::kInfo, [&](shmc::LogLevel, const char* s) {
    seen += s;
  });
  shmc::Utils::Log(shmc::kInfo, "n=%d", 7);
  shmc::Utils::Log(shmc::kDebug, "too verbose");
  shmc::SetLogHandler(shmc::kError, nullptr);
  EXPECT_EQ(seen, "n=7");
}

TEST(Utils, HexDumpsAsTheReference) {
  const unsigned char bytes[18] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xab,
                                   0,    0,    0,    0,    0,    0,
                                   0,    0,    0,    0x10, 0xfe, 0xc3};
  EXPECT_STREQ(shmc::Utils::Hex(bytes, 18),
               "0001 7f80 ffab 0000 0000 0000 0000 0010\nfec3 \n");
  EXPECT_STREQ(shmc::Utils::Hex(bytes, 3), "0001 7f\n");
  EXPECT_STREQ(shmc::Utils::Hex(bytes, 0), "");
  std::vector<unsigned char> big(100000, 0xee);
  const char* out = shmc::Utils::Hex(big.data(), big.size());
  EXPECT_LT(std::strlen(out), 8192u);  // cut, never overrun
}

TEST(Version, TheReferenceMacrosNameTheApiImplemented) {
  static_assert(SHMC_MAJOR_VERSION == 1 && SHMC_MINOR_VERSION == 0 &&
                    SHMC_PATCH_VERSION == 0,
                "shm_container v1.0.0");
  SUCCEED();
}

TEST(Utils, PrimesMagicVersionsAlignment) {
  size_t p[5];
  ASSERT_TRUE(shmc::Utils::GetPrimeArray(100, 5, p));
  EXPECT_EQ(std::vector<size_t>(p, p + 5),
            (std::vector<size_t>{97, 89, 83, 79, 73}));
  // As the reference: 1 ends the list of "primes".
  ASSERT_TRUE(shmc::Utils::GetPrimeArray(10, 5, p));
  EXPECT_EQ(std::vector<size_t>(p, p + 5),
            (std::vector<size_t>{7, 5, 3, 2, 1}));
  EXPECT_FALSE(shmc::Utils::GetPrimeArray(10, 6, p));
  ASSERT_TRUE(shmc::Utils::GetPrimeArray(1000003, 1, p));
  EXPECT_EQ(p[0], 1000003u);

  uint64_t magic = shmc::Utils::GenMagic("LinkTab");
  EXPECT_EQ(std::memcmp(&magic, "LinkTab\0", 8), 0);
  EXPECT_EQ(shmc::Utils::GenMagic("a-much-longer-name"),
            shmc::Utils::GenMagic("a-much-l"));

  uint32_t v = shmc::Utils::MakeVer(3, 7);
  EXPECT_EQ(shmc::Utils::MajorVer(v), 3u);
  EXPECT_EQ(shmc::Utils::MinorVer(v), 7u);

  struct Five { char c[5]; };
  static_assert(shmc::Utils::Padding<Five, 8>() == 3, "");
  static_assert(shmc::Utils::Padding<uint64_t, 8>() == 0, "");
  EXPECT_EQ(shmc::Utils::RoundAlign<64>(65), 128);
  EXPECT_EQ(shmc::Utils::RoundAlign(4097, 4096), 8192);
  errno = ENOENT;
  EXPECT_STREQ(shmc::Utils::Perror(), std::strerror(ENOENT));
}

// --- 2. ShmHandle ------------------------------------------------------------

struct Shared {
  uint64_t counter;
  char name[24];
};

template <class Alloc>
class ShmHandleTest : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 2); }
  ScopedKey<Alloc> key_;
};
TYPED_TEST_SUITE(ShmHandleTest, shmc_test::AllAllocs, shmc_test::AllocNames);

TYPED_TEST(ShmHandleTest, WriteCreatesReadSeesAndResetDetaches) {
  shmc::ShmHandle<Shared, TypeParam> w;
  EXPECT_FALSE(w.is_initialized());
  ASSERT_TRUE(w.InitForWrite(this->key_, sizeof(Shared)));
  EXPECT_TRUE(w.is_initialized());
  EXPECT_TRUE(w.is_newly_created());
  EXPECT_TRUE(w.CheckSize(sizeof(Shared)));
  EXPECT_EQ(w.key(), this->key_.str());
  EXPECT_FALSE(w.InitForWrite(this->key_, sizeof(Shared)));  // already
  w->counter = 41;
  ++w.ptr()->counter;
  std::strcpy(w->name, "handle");
  if (AllocTraits<TypeParam>::kNamed) {
    shmc::ShmHandle<Shared, TypeParam> again;
    ASSERT_TRUE(again.InitForWrite(this->key_, sizeof(Shared)));
    EXPECT_FALSE(again.is_newly_created());
    shmc::ShmHandle<Shared, TypeParam> r;
    ASSERT_TRUE(r.InitForRead(this->key_, sizeof(Shared)));
    const auto& cr = r;
    EXPECT_EQ(cr->counter, 42u);
    EXPECT_STREQ(cr.ptr()->name, "handle");
    EXPECT_FALSE(r.is_newly_created());
  } else {
    shmc::ShmHandle<Shared, TypeParam> r;
    EXPECT_FALSE(r.InitForRead(this->key_, sizeof(Shared)));
  }
  if (AllocTraits<TypeParam>::kShared) {
    // A forked child writes through its copy; the parent sees it.
    int rc = RunInChild([&] {
      w->counter = 1000;
      return 0;
    });
    ASSERT_EQ(rc, 0);
    EXPECT_EQ(w->counter, 1000u);
  }
  w.Reset();
  EXPECT_FALSE(w.is_initialized());
  EXPECT_EQ(w.ptr(), nullptr);
  EXPECT_EQ(w.size(), 0u);
  if (AllocTraits<TypeParam>::kNamed) {
    // The segment outlives the handle.
    shmc::ShmHandle<Shared, TypeParam> r;
    ASSERT_TRUE(r.InitForRead(this->key_, sizeof(Shared)));
    EXPECT_EQ(r->counter, AllocTraits<TypeParam>::kShared ? 1000u : 42u);
  }
}

TEST(ShmHandle, NoCreateOnAMissingSegmentFails) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmHandle<Shared, shmc::POSIX> h;
  EXPECT_FALSE(h.InitForWrite(key, sizeof(Shared), shmc::kNoCreate));
  EXPECT_EQ(h.last_errno(), shmc::impl::kErrNotExist);
  EXPECT_FALSE(h.is_initialized());
}

// --- 5. link_buf_t -----------------------------------------------------------

TEST(LinkBuf, AccessorsWordAndView) {
  shmc::link_buf_t lb(7, 9);
  EXPECT_EQ(lb.head(), 7u);
  EXPECT_EQ(lb.tag(), 9u);
  EXPECT_EQ(lb.head_and_tag, (uint64_t{9} << 32) | 7);
  EXPECT_EQ(lb.m.head, 7u);
  EXPECT_EQ(lb.m.tag, 9u);
  bool truth = lb;  // implicit, as in the reference
  EXPECT_TRUE(truth);
  lb.m.head = 11;
  EXPECT_EQ(lb.head(), 11u);
  volatile shmc::link_buf_t v;
  v = lb;
  EXPECT_EQ(v.head(), 11u);
  EXPECT_TRUE(v == lb);
  lb.clear();
  EXPECT_FALSE(lb);
  EXPECT_TRUE(v != lb);
}

// --- 6. ShmHashTable::expected_capacity ---------------------------------------

struct KV {
  uint64_t key, value;
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};

TEST(ShmHashTableCapacity, ExpectedExceedsAskedAndIsHeld) {
  for (size_t cap : {1ul, 100ul, 1000ul, 77777ul, 250000ul}) {
    SCOPED_TRACE(cap);
    shmc::ShmHashTable<uint64_t, KV, shmc::HEAP> t;
    ASSERT_TRUE(t.InitForWrite("", cap));
    EXPECT_GT(t.expected_capacity(), cap);
    EXPECT_GT(t.ideal_capacity(), t.expected_capacity());
    size_t n = 0;
    for (uint64_t k = 1;; ++k) {
      bool found = false;
      volatile KV* node = t.FindOrAlloc(k * 0x9e3779b97f4a7c15ULL, &found);
      if (node == nullptr) break;
      node->key = k * 0x9e3779b97f4a7c15ULL;
      ++n;
    }
    EXPECT_GT(n, t.expected_capacity());
  }
}

// A table made by an earlier build's sizing rule (one slot less) is still
// adopted by InitForWrite with the same capacity, data and all.
TEST(ShmHashTableCapacity, TablesOfTheEarlierSizingAreAdopted) {
  using Table = shmc::ShmHashTable<uint64_t, KV, shmc::POSIX>;
  using shmc::detail::TableGeometry;
  // Find a capacity whose earlier geometry differs from today's but equals
  // today's geometry for a smaller capacity, which makes such a segment.
  size_t cap = 0, maker = 0;
  for (size_t c = 1000; c < 100000 && cap == 0; ++c) {
    TableGeometry old = TableGeometry::ForCapacity(c, Table::kSlots, true);
    TableGeometry now = TableGeometry::ForCapacity(c, Table::kSlots);
    if (old.main_buckets == now.main_buckets &&
        old.over_buckets == now.over_buckets) {
      continue;
    }
    for (size_t d = c - 5; d < c; ++d) {
      TableGeometry g = TableGeometry::ForCapacity(d, Table::kSlots);
      if (g.main_buckets == old.main_buckets &&
          g.over_buckets == old.over_buckets) {
        cap = c;
        maker = d;
        break;
      }
    }
  }
  ASSERT_NE(cap, 0u);
  ScopedKey<shmc::POSIX> key;
  {
    Table made;
    ASSERT_TRUE(made.InitForWrite(key, maker)) << made.last_error().message;
    bool found = false;
    volatile KV* n = made.FindOrAlloc(77, &found);
    ASSERT_NE(n, nullptr);
    n->key = 77;
    n->value = 123;
  }
  Table t;
  ASSERT_TRUE(t.InitForWrite(key, cap)) << t.last_error().message;
  const volatile KV* n = t.Find(77);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->value, 123u);
  // Another capacity with another geometry is still refused.
  Table other;
  EXPECT_FALSE(other.InitForWrite(key, cap * 2));
}

// --- 7. ShmQueue on ANON and HEAP --------------------------------------------

template <class Alloc>
class UnnamedQueueTest : public ::testing::Test {};
using Unnamed = ::testing::Types<shmc::ANON, shmc::HEAP>;
TYPED_TEST_SUITE(UnnamedQueueTest, Unnamed, shmc_test::AllocNames);

TYPED_TEST(UnnamedQueueTest, TheWritersHandlePops) {
  shmc::ShmQueue<TypeParam> q;
  ASSERT_TRUE(q.InitForWrite("", 64 * 1024)) << q.last_error().message;
  ASSERT_TRUE(q.Push("one"));
  ASSERT_TRUE(q.Push(std::string("two")));
  std::string out;
  ASSERT_TRUE(q.Pop(&out));
  EXPECT_EQ(out, "one");
  char buf[8];
  size_t len = sizeof(buf);
  ASSERT_TRUE(q.Pop(buf, &len));
  EXPECT_EQ(std::string(buf, len), "two");
  EXPECT_FALSE(q.Pop(&out));
  shmc::ZeroCopyBuf zcb;
  ASSERT_TRUE(q.ZeroCopyPushPrepare(5, &zcb));
  std::memcpy(zcb.ptr, "zero!", 5);
  ASSERT_TRUE(q.ZeroCopyPushCommit(zcb));
  ASSERT_TRUE(q.ZeroCopyPopPrepare(&zcb));
  EXPECT_EQ(std::string(static_cast<char*>(zcb.ptr), zcb.len), "zero!");
  ASSERT_TRUE(q.ZeroCopyPopCommit(zcb));
}

TEST(UnnamedQueue, AForkedChildPopsWhatTheParentPushes) {
  shmc::ShmQueue<shmc::ANON> q;
  ASSERT_TRUE(q.InitForWrite("", 64 * 1024)) << q.last_error().message;
  constexpr int kRecords = 10000;
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: the consumer.
    int next = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (next < kRecords && std::chrono::steady_clock::now() < deadline) {
      int v = -1;
      size_t len = sizeof(v);
      if (q.Pop(&v, &len)) {
        if (len != sizeof(v) || v != next) _exit(2);
        ++next;
      }
    }
    _exit(next == kRecords ? 0 : 3);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int pushed = 0;
  while (pushed < kRecords && std::chrono::steady_clock::now() < deadline) {
    if (q.Push(&pushed, sizeof(pushed))) ++pushed;
  }
  EXPECT_EQ(pushed, kRecords) << "the child stopped consuming";
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
