// ShmSortedArray: searches agree with std::lower_bound on both layouts;
// builds are atomic across processes (old readers keep their version, a
// killed builder changes nothing); bad input and damaged segments are
// reported.
#include "shmc/shm_sorted_array.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace {

using shmc::ErrorCode;
using shmc::SortedLayout;
using Records = std::vector<std::pair<uint64_t, uint64_t>>;

// A key whose data segments key + "0"/"1" are valid too. SysV keys are
// 32-bit numbers, so the base key gets 8 decimal digits.
template <class Alloc>
std::string BaseKey() {
  std::string k = shmc_test::MakeKey<Alloc>("sorted");
  if (std::is_same<Alloc, shmc::SVIPC>::value) {
    uint64_t tag = shmc_test::TestTag("sorted");
    k = std::to_string(30000000 + tag % 10000000);
  }
  return k;
}

// Owns the directory and both data segments of one array.
template <class Alloc>
class SortedKey {
 public:
  SortedKey() : key_(BaseKey<Alloc>()) { Clean(); }
  ~SortedKey() { Clean(); }
  operator const std::string&() const { return key_; }
  std::string data(int slot) const { return key_ + (slot ? "1" : "0"); }

 private:
  void Clean() {
    Alloc a;
    a.Unlink(key_);
    a.Unlink(data(0));
    a.Unlink(data(1));
  }
  std::string key_;
};

Records RandomRecords(size_t n, uint64_t seed, uint64_t key_range) {
  std::mt19937_64 rng(seed);
  Records r;
  for (size_t i = 0; i < n; ++i) {
    uint64_t k = rng() % key_range;
    r.push_back({k, k * 3 + i});
  }
  return r;
}

template <class Alloc>
class ShmSortedArrayTest : public ::testing::Test {};
using Allocs = ::testing::Types<shmc::SVIPC, shmc::POSIX, shmc::MAPFILE>;
TYPED_TEST_SUITE(ShmSortedArrayTest, Allocs, shmc_test::AllocNames);

// Every probe (present, absent, below, above, duplicates) against
// std::lower_bound on a sorted copy, for many sizes and both layouts.
TYPED_TEST(ShmSortedArrayTest, SearchesAgreeWithLowerBound) {
  for (SortedLayout layout : {SortedLayout::kSorted, SortedLayout::kEytzinger}) {
    for (size_t n : {0, 1, 2, 3, 7, 8, 15, 16, 17, 100, 1000, 4097}) {
      SCOPED_TRACE(::testing::Message()
                   << "n=" << n << " layout=" << static_cast<int>(layout));
      SortedKey<TypeParam> key;
      // Keys from a range of 2n: duplicates and gaps both occur.
      Records recs = RandomRecords(n, n + 7, 2 * n + 1);
      shmc::ShmSortedArray<uint64_t, uint64_t, TypeParam> b;
      ASSERT_TRUE(b.Build(key, recs, layout)) << b.last_error().message;
      std::stable_sort(recs.begin(), recs.end(),
                       [](const auto& x, const auto& y) {
                         return x.first < y.first;
                       });
      shmc::ShmSortedArray<uint64_t, uint64_t, TypeParam> r;
      ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
      ASSERT_EQ(r.size(), n);
      EXPECT_EQ(r.layout(), layout);
      EXPECT_EQ(r.version(), 1u);
      // In-order iteration yields the sorted records.
      size_t i = 0;
      for (auto e : r) {
        ASSERT_LT(i, n);
        EXPECT_EQ(e.key, recs[i].first);
        EXPECT_EQ(e.value, recs[i].second) << "stable order of equal keys";
        ++i;
      }
      EXPECT_EQ(i, n);
      for (uint64_t x = 0; x <= 2 * n + 2; ++x) {
        auto lb = std::lower_bound(
            recs.begin(), recs.end(), x,
            [](const auto& rec, uint64_t k) { return rec.first < k; });
        auto it = r.LowerBound(x);
        if (lb == recs.end()) {
          EXPECT_TRUE(it == r.end()) << x;
          EXPECT_EQ(r.Find(x), nullptr) << x;
          continue;
        }
        ASSERT_TRUE(it != r.end()) << x;
        EXPECT_EQ(it.key(), lb->first);
        EXPECT_EQ(it.value(), lb->second) << "first of equal keys";
        const uint64_t* v = r.Find(x);
        if (lb->first == x) {
          ASSERT_NE(v, nullptr) << x;
          EXPECT_EQ(*v, lb->second);
        } else {
          EXPECT_EQ(v, nullptr) << x;
        }
        size_t equal = 0;
        for (auto e : r.EqualRange(x)) {
          EXPECT_EQ(e.key, x);
          ++equal;
        }
        auto ub = std::upper_bound(
            recs.begin(), recs.end(), x,
            [](uint64_t k, const auto& rec) { return k < rec.first; });
        EXPECT_EQ(equal, static_cast<size_t>(ub - lb));
      }
      EXPECT_TRUE(r.Verify()) << r.last_error().message;
    }
  }
}

TYPED_TEST(ShmSortedArrayTest, RangeScan) {
  SortedKey<TypeParam> key;
  Records recs;
  for (uint64_t k = 0; k < 1000; ++k) recs.push_back({k * 10, k});
  for (SortedLayout layout : {SortedLayout::kSorted, SortedLayout::kEytzinger}) {
    shmc::ShmSortedArray<uint64_t, uint64_t, TypeParam> a;
    ASSERT_TRUE(a.Build(key, recs, layout)) << a.last_error().message;
    std::vector<uint64_t> got;
    for (auto e : a.Between(95, 141)) got.push_back(e.key);
    EXPECT_EQ(got, (std::vector<uint64_t>{100, 110, 120, 130, 140}));
    EXPECT_TRUE(a.Between(141, 95).empty());
    EXPECT_TRUE(a.Between(101, 109).empty());
    auto ub = a.UpperBound(9990);
    EXPECT_TRUE(ub == a.end());
    EXPECT_EQ(a.UpperBound(15).key(), 20u);
  }
}

// Old readers keep their version after later builds, even when the slot
// they mapped is reused; Refresh moves them on.
TYPED_TEST(ShmSortedArrayTest, OldReadersKeepTheirVersion) {
  SortedKey<TypeParam> key;
  auto version_recs = [](uint64_t v) {
    Records r;
    for (uint64_t k = 0; k < 500 + v; ++k) r.push_back({k, k * 1000 + v});
    return r;
  };
  shmc::ShmSortedArray<uint64_t, uint64_t, TypeParam> b, r1, r2;
  ASSERT_TRUE(b.Build(key, version_recs(1))) << b.last_error().message;
  ASSERT_TRUE(r1.InitForRead(key)) << r1.last_error().message;
  ASSERT_TRUE(b.Build(key, version_recs(2), SortedLayout::kEytzinger));
  ASSERT_TRUE(r2.InitForRead(key));
  // Version 3 reuses the slot r1 mapped (version 1, unlinked since).
  ASSERT_TRUE(b.Build(key, version_recs(3)));
  EXPECT_EQ(b.version(), 3u);
  EXPECT_EQ(r1.version(), 1u);
  EXPECT_EQ(r2.version(), 2u);
  EXPECT_TRUE(r1.stale());
  EXPECT_EQ(r1.latest_version(), 3u);
  EXPECT_EQ(r1.size(), 501u);
  EXPECT_EQ(*r1.Find(77), 77001u);
  EXPECT_EQ(*r2.Find(77), 77002u);
  EXPECT_TRUE(r1.Verify()) << r1.last_error().message;
  bool changed = false;
  ASSERT_TRUE(r1.Refresh(&changed)) << r1.last_error().message;
  EXPECT_TRUE(changed);
  EXPECT_FALSE(r1.stale());
  EXPECT_EQ(*r1.Find(77), 77003u);
  EXPECT_EQ(r1.size(), 503u);
  ASSERT_TRUE(r1.Refresh(&changed));
  EXPECT_FALSE(changed) << "already current";
  // Only the published data segment is left behind.
  TypeParam alloc;
  EXPECT_EQ(alloc.Attach(key.data(1), 0, shmc::impl::kReadOnly), nullptr);
  EXPECT_EQ(alloc.last_errno(), shmc::impl::kErrNotExist);
}

TYPED_TEST(ShmSortedArrayTest, BuildFromFile) {
  SortedKey<TypeParam> key;
  char path[] = "/tmp/shmc_sorted_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  auto write_file = [&](const Records& recs, size_t extra) {
    FILE* f = std::fopen(path, "wb");
    for (const auto& r : recs) {
      std::fwrite(&r.first, 8, 1, f);
      std::fwrite(&r.second, 8, 1, f);
    }
    for (size_t i = 0; i < extra; ++i) std::fputc(0, f);
    std::fclose(f);
  };
  Records recs;
  for (uint64_t k = 0; k < 20000; ++k) recs.push_back({k * 2, k});
  write_file(recs, 0);
  shmc::ShmSortedArray<uint64_t, uint64_t, TypeParam> a;
  ASSERT_TRUE(a.BuildFromFile(key, path, SortedLayout::kEytzinger))
      << a.last_error().message;
  EXPECT_EQ(a.size(), 20000u);
  EXPECT_EQ(*a.Find(39998), 19999u);
  EXPECT_EQ(a.Find(39997), nullptr);

  write_file(recs, 5);
  EXPECT_FALSE(a.BuildFromFile(key, path));
  EXPECT_EQ(a.last_error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(a.last_error().message.find("5 bytes left over"),
            std::string::npos) << a.last_error().message;

  std::swap(recs[100], recs[101]);
  write_file(recs, 0);
  EXPECT_FALSE(a.BuildFromFile(key, path));
  EXPECT_EQ(a.last_error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(a.last_error().message.find("record 101 is out of order"),
            std::string::npos) << a.last_error().message;
  // The failed builds changed nothing: version 1 is still published.
  EXPECT_EQ(a.version(), 1u);
  EXPECT_EQ(a.latest_version(), 1u);
  EXPECT_EQ(*a.Find(39998), 19999u);

  unlink(path);
  EXPECT_FALSE(a.BuildFromFile(key, path));
  EXPECT_EQ(a.last_error().code, ErrorCode::kNotFound);
}

TEST(ShmSortedArray, StreamingBuildChecksItsInput) {
  SortedKey<shmc::POSIX> key;
  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> a;
  EXPECT_FALSE(a.Append(1, 1));
  EXPECT_EQ(a.last_error().code, ErrorCode::kNotInitialized);
  ASSERT_TRUE(a.BeginBuild(key, 3)) << a.last_error().message;
  EXPECT_FALSE(a.BeginBuild(key, 3));
  EXPECT_EQ(a.last_error().code, ErrorCode::kAlreadyInitialized);
  ASSERT_TRUE(a.Append(5, 50));
  EXPECT_FALSE(a.Append(4, 40)) << "out of order";
  ASSERT_TRUE(a.Append(5, 51)) << "equal keys are allowed";
  EXPECT_FALSE(a.CommitBuild()) << "one record short";
  ASSERT_TRUE(a.Append(9, 90));
  EXPECT_FALSE(a.Append(10, 100)) << "one more than announced";
  ASSERT_TRUE(a.CommitBuild()) << a.last_error().message;
  EXPECT_EQ(*a.Find(5), 50u);
  EXPECT_EQ(a.size(), 3u);

  // An aborted build leaves the published version and no segment behind.
  ASSERT_TRUE(a.BeginBuild(key, 1));
  ASSERT_TRUE(a.Append(1, 1));
  a.AbortBuild();
  EXPECT_EQ(a.latest_version(), 1u);
  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> r;
  ASSERT_TRUE(r.InitForRead(key));
  EXPECT_EQ(*r.Find(9), 90u);
  EXPECT_EQ(shmc::POSIX().Attach(key.data(1), 0, shmc::impl::kReadOnly),
            nullptr);
}

TEST(ShmSortedArray, BadAttachesAreExplained) {
  SortedKey<shmc::POSIX> key;
  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> a;
  EXPECT_FALSE(a.InitForRead(key));
  EXPECT_EQ(a.last_error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(a.begin() == a.end()) << "an unattached array is empty";
  EXPECT_EQ(a.Find(1), nullptr);
  // A directory with nothing published yet.
  ASSERT_TRUE(a.BeginBuild(key, 0));
  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> r;
  EXPECT_FALSE(r.InitForRead(key));
  EXPECT_EQ(r.last_error().code, ErrorCode::kNotReady);
  ASSERT_TRUE(a.CommitBuild());
  EXPECT_TRUE(a.empty());
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  EXPECT_FALSE(r.InitForRead(key));
  EXPECT_EQ(r.last_error().code, ErrorCode::kAlreadyInitialized);
  // Another value type: refused with the parameter named.
  shmc::ShmSortedArray<uint64_t, uint32_t, shmc::POSIX> other;
  EXPECT_FALSE(other.InitForRead(key));
  EXPECT_EQ(other.last_error().code, ErrorCode::kLayoutMismatch);
  EXPECT_NE(other.last_error().message.find("value_size"), std::string::npos)
      << other.last_error().message;
  EXPECT_FALSE(other.Build(key, {{1, 1}}));
  EXPECT_EQ(other.last_error().code, ErrorCode::kLayoutMismatch);
}

// A second builder is refused while one is building; a builder killed in
// the middle leaves the published version intact and the next build works.
TEST(ShmSortedArray, KilledBuilderChangesNothing) {
  SortedKey<shmc::POSIX> key;
  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> a, b;
  ASSERT_TRUE(a.Build(key, {{1, 10}, {2, 20}}));
  ASSERT_TRUE(a.BeginBuild(key, 2));
  EXPECT_FALSE(b.BeginBuild(key, 2)) << "another object, same process";
  EXPECT_EQ(b.last_error().code, ErrorCode::kWriterBusy);
  EXPECT_EQ(shmc_test::RunInChild([&] {
              shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> c;
              bool busy = !c.BeginBuild(key, 2) &&
                          c.last_error().code == ErrorCode::kWriterBusy &&
                          c.last_error().message.find("writer lease held") !=
                              std::string::npos;
              return busy ? 0 : 1;
            }), 0) << "another process";
  a.AbortBuild();
  ASSERT_TRUE(b.BeginBuild(key, 0)) << "free again after the abort";
  b.AbortBuild();

  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> c;
    bool ok = c.BeginBuild(key, 1000000);
    for (uint64_t k = 0; ok && k < 1000; ++k) ok = c.Append(k, k);
    char x = ok ? 'y' : 'n';
    (void)!write(pipefd[1], &x, 1);
    pause();
    _exit(0);
  }
  char x = 0;
  ASSERT_EQ(read(pipefd[0], &x, 1), 1);
  ASSERT_EQ(x, 'y');
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(pipefd[0]);
  close(pipefd[1]);

  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> r;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  EXPECT_EQ(r.version(), 1u);
  EXPECT_EQ(*r.Find(2), 20u);
  ASSERT_TRUE(b.Build(key, {{3, 30}})) << b.last_error().message;
  EXPECT_EQ(b.version(), 2u);
  ASSERT_TRUE(r.Refresh());
  EXPECT_EQ(*r.Find(3), 30u);
}

// A damaged data segment: Verify names it, and a reader of another
// Compare sees the order broken.
TEST(ShmSortedArray, VerifyFindsDamage) {
  SortedKey<shmc::POSIX> key;
  Records recs = RandomRecords(5000, 1, 1u << 30);
  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> a;
  ASSERT_TRUE(a.Build(key, recs));
  ASSERT_TRUE(a.Verify());
  shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX,
                       std::greater<uint64_t>> reversed;
  ASSERT_TRUE(reversed.InitForRead(key));
  EXPECT_FALSE(reversed.Verify());
  EXPECT_NE(reversed.last_error().message.find("another Compare"),
            std::string::npos) << reversed.last_error().message;

  size_t mapped = 0;
  shmc::POSIX alloc;
  char* p = static_cast<char*>(alloc.Attach(key.data(0), 0, 0, &mapped));
  ASSERT_NE(p, nullptr);
  p[mapped / 2] ^= 0x40;
  alloc.Detach(p, mapped);
  EXPECT_FALSE(a.Verify());
  EXPECT_EQ(a.last_error().code, ErrorCode::kCorrupted);
  EXPECT_NE(a.last_error().message.find("checksum"), std::string::npos);
}

// Records with a struct key and a custom order.
TEST(ShmSortedArray, StructKeys) {
  struct Name {
    char s[12];
  };
  struct ByBytes {
    bool operator()(const Name& a, const Name& b) const {
      return std::memcmp(a.s, b.s, sizeof(a.s)) < 0;
    }
  };
  struct Rec {
    uint32_t id;
    double score;
  };
  SortedKey<shmc::POSIX> key;
  std::vector<std::pair<Name, Rec>> recs;
  for (uint32_t i = 0; i < 300; ++i) {
    Name n{};
    std::snprintf(n.s, sizeof(n.s), "user%05u", (i * 7919) % 300);
    recs.push_back({n, Rec{i, i * 0.5}});
  }
  shmc::ShmSortedArray<Name, Rec, shmc::POSIX, ByBytes> a;
  ASSERT_TRUE(a.Build(key, recs, SortedLayout::kEytzinger));
  Name q{};
  std::snprintf(q.s, sizeof(q.s), "user%05u", 123u);
  const Rec* r = a.Find(q);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ((r->id * 7919) % 300, 123u);
  std::snprintf(q.s, sizeof(q.s), "user%05u", 300u);
  EXPECT_EQ(a.Find(q), nullptr);
  EXPECT_TRUE(a.Verify());
}

// A builder process publishes versions as fast as it can while reader
// processes refresh and look up: every value read belongs to the version
// the reader holds, never to another.
TEST(ShmSortedArray, ConcurrentBuildsAndReaders) {
  SortedKey<shmc::POSIX> key;
  constexpr uint64_t kKeys = 20000;
  auto recs = [](uint64_t v) {
    Records r;
    for (uint64_t k = 0; k < kKeys; ++k) r.push_back({k, k << 20 | v});
    return r;
  };
  {
    shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> first;
    ASSERT_TRUE(first.Build(key, recs(1)));
  }
  auto* stop = static_cast<std::atomic<int>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0));
  ASSERT_NE(stop, MAP_FAILED);
  stop->store(0);
  pid_t builder = fork();
  ASSERT_GE(builder, 0);
  if (builder == 0) {
    shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> b;
    for (uint64_t v = 2; stop->load() == 0; ++v) {
      if (!b.Build(key, recs(v), v % 2 ? SortedLayout::kEytzinger
                                       : SortedLayout::kSorted)) {
        _exit(1);
      }
    }
    _exit(0);
  }
  auto reader = [&]() -> int {
    shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX> r;
    if (!r.InitForRead(key)) return 2;
    std::mt19937_64 rng(getpid());
    uint64_t versions = 0, last = 0;
    // At least 500k lookups, and on until two versions were seen: how many
    // builds land in a fixed number of lookups depends on the machine's
    // load (a loaded CI runner once saw one version in 500k). Bounded.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (int i = 0; i < 500000 ||
                    (versions < 2 && std::chrono::steady_clock::now() < deadline);
         ++i) {
      if (i % 1000 == 0 && !r.Refresh()) return 3;
      uint64_t k = rng() % kKeys;
      const uint64_t* v = r.Find(k);
      if (v == nullptr || (*v >> 20) != k || (*v & 0xfffff) != r.version()) {
        return 4;
      }
      if (r.version() != last) {
        ++versions;
        last = r.version();
      }
    }
    return versions >= 2 ? 0 : 5;
  };
  // Two readers at once, 1M lookups in all.
  pid_t readers[2];
  for (pid_t& pid : readers) {
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(reader());
  }
  for (pid_t pid : readers) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "2 attach, 3 refresh, 4 wrong value, 5 no new version";
  }
  stop->store(1);
  int status = 0;
  waitpid(builder, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  munmap(stop, 4096);
}

}  // namespace
