// ShmLinkTable over the named allocators: values of every size, stale
// handles, a full pool, travel, health checks, and the writer lease.
#include "shmc/shm_link_table.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace {

using shmc_test::ScopedKey;

template <class Alloc>
class ShmLinkTableTest : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 4); }
  ScopedKey<Alloc> key_;
};
TYPED_TEST_SUITE(ShmLinkTableTest, shmc_test::AllAllocs, shmc_test::AllocNames);

TYPED_TEST(ShmLinkTableTest, ValuesOfEverySizeRoundTrip) {
  shmc::ShmLinkTable<TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 60, 2000)) << t.last_error().message;
  EXPECT_EQ(t.node_capacity(), 64u);
  std::vector<shmc::link_buf_t> lbs;
  size_t bytes = 0;
  for (size_t len : {0, 1, 7, 8, 63, 64, 65, 128, 1000, 4096}) {
    std::string v = shmc_test::MakeValue(len, 1, len);
    shmc::link_buf_t lb = t.New(v.data(), v.size());
    ASSERT_TRUE(lb) << len;
    lbs.push_back(lb);
    bytes += len;
    std::string out;
    ASSERT_TRUE(t.Read(lb, &out));
    EXPECT_EQ(out, v) << len;
  }
  EXPECT_EQ(t.link_bufs(), lbs.size());
  EXPECT_EQ(t.link_buf_bytes(), bytes);
  // Truncating read reports the full length.
  char small[5];
  size_t n = sizeof(small);
  ASSERT_TRUE(t.Read(lbs.back(), small, &n));
  EXPECT_EQ(n, 4096u);
  EXPECT_EQ(std::string(small, 5), shmc_test::MakeValue(4096, 1, 4096).substr(0, 5));
  // Visit sees the pieces in order.
  std::string seen;
  ASSERT_TRUE(t.Visit(lbs.back(), [&](const char* p, size_t k) {
    seen.append(p, k);
  }));
  EXPECT_EQ(seen, shmc_test::MakeValue(4096, 1, 4096));
  std::set<uint32_t> heads;
  t.Travel([&](shmc::link_buf_t lb) { heads.insert(lb.head()); });
  EXPECT_EQ(heads.size(), lbs.size());
  for (auto lb : lbs) ASSERT_TRUE(t.Free(lb));
  EXPECT_EQ(t.free_nodes(), 2000u);
  EXPECT_EQ(t.link_bufs(), 0u);
  EXPECT_EQ(t.link_buf_bytes(), 0u);
}

TYPED_TEST(ShmLinkTableTest, StaleHandlesAndFullPoolAreRefused) {
  shmc::ShmLinkTable<TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 32, 10));
  shmc::link_buf_t a = t.New("abc", 3);
  ASSERT_TRUE(a);
  ASSERT_TRUE(t.Free(a));
  std::string out;
  EXPECT_FALSE(t.Read(a, &out)) << "freed";
  EXPECT_FALSE(t.Free(a)) << "double free";
  EXPECT_FALSE(t.Read(shmc::link_buf_t(99, 1), &out)) << "out of range";
  EXPECT_FALSE(t.Read(shmc::link_buf_t(0, 0), &out)) << "empty";
  std::string big(33 * 10, 'x');
  EXPECT_FALSE(t.New(big.data(), big.size())) << "needs 11 nodes of 10";
  shmc::link_buf_t b = t.New(big.data(), 320);
  ASSERT_TRUE(b) << "exactly 10 nodes";
  EXPECT_EQ(t.free_nodes(), 0u);
  EXPECT_FALSE(t.New("", 0));
  // A node reused by a new value invalidates the old handle.
  ASSERT_TRUE(t.Free(b));
  shmc::link_buf_t c = t.New("new", 3);
  EXPECT_EQ(c.head(), b.head());
  EXPECT_FALSE(t.Read(b, &out));
  ASSERT_TRUE(t.Read(c, &out));
  EXPECT_EQ(out, "new");
}

// Overwrite (shmc addition) changes bytes of a live value in place, across
// node boundaries, and refuses, writing nothing, a range past the value's
// end or a stale handle.
TYPED_TEST(ShmLinkTableTest, OverwriteChangesBytesInPlaceOrNone) {
  shmc::ShmLinkTable<TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 16, 100));
  const size_t cap = t.node_capacity();
  std::string v = shmc_test::MakeValue(3, 7, 10 * cap + 5);
  shmc::link_buf_t lb = t.New(v.data(), v.size());
  ASSERT_TRUE(lb);
  std::string out;
  for (size_t offset : {size_t{0}, size_t{3}, cap - 1, cap, 3 * cap + 5,
                        v.size() - 1}) {
    for (size_t n : {size_t{1}, size_t{2}, size_t{9}, cap + 3, 4 * cap}) {
      if (n > v.size() - offset) continue;
      const std::string bytes = shmc_test::MakeValue(offset, n, n);
      ASSERT_TRUE(t.Overwrite(lb, offset, bytes.data(), n)) << offset << "+" << n;
      v.replace(offset, n, bytes);
      ASSERT_TRUE(t.Read(lb, &out));
      ASSERT_EQ(out, v) << offset << "+" << n;
    }
  }
  EXPECT_TRUE(t.Overwrite(lb, v.size(), "x", 0)) << "nothing to write";
  EXPECT_FALSE(t.Overwrite(lb, v.size(), "x", 1)) << "past the end";
  EXPECT_FALSE(t.Overwrite(lb, v.size() - 1, "xy", 2)) << "past the end";
  EXPECT_FALSE(t.Overwrite(lb, size_t{1} << 40, "x", 1)) << "far past";
  EXPECT_FALSE(t.Overwrite(shmc::link_buf_t(99999, 1), 0, "x", 1));
  EXPECT_FALSE(t.Overwrite(shmc::link_buf_t(lb.head(), lb.tag() + 1), 0, "x", 1))
      << "another tag";
  ASSERT_TRUE(t.Read(lb, &out));
  EXPECT_EQ(out, v) << "a refused call wrote";
  shmc::link_buf_t w = t.New("abc", 3);
  ASSERT_TRUE(t.Free(w));
  EXPECT_FALSE(t.Overwrite(w, 0, "x", 1)) << "freed";
}

TYPED_TEST(ShmLinkTableTest, HealthCheckFindsAndFixesDamage) {
  if (!shmc_test::AllocTraits<TypeParam>::kNamed) {
    GTEST_SKIP() << "an ANON or HEAP segment has no name: nothing can "
                    "attach it to find or fix its damage";
  }
  shmc::ShmLinkTable<TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 16, 100));
  std::vector<shmc::link_buf_t> lbs;
  for (int i = 0; i < 10; ++i) lbs.push_back(t.New("0123456789abcdefXYZ", 19));
  typename shmc::ShmLinkTable<TypeParam>::HealthStat hs;
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_EQ(hs.total_link_bufs, 10u);
  EXPECT_EQ(hs.total_free_nodes, 80u);
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(hs.counter_mismatches, 0u);
  // Damage: clear a head node's tag behind the library's back (a stray
  // write from another process): its two nodes leak.
  shmc::ShmLinkTable<TypeParam> r;
  ASSERT_TRUE(r.InitForRead(this->key_));
  // Reach the node through a writable mapping of the same segment.
  TypeParam alloc;
  size_t mapped = 0;
  char* base = static_cast<char*>(alloc.Attach(this->key_, 0, 0, &mapped));
  ASSERT_NE(base, nullptr);
  uint64_t stride = 16 + 16;
  auto* head = reinterpret_cast<shmc::detail::LinkNodeHead*>(
      base + 512 + 256 + lbs[3].head() * stride);
  head->tag.store(0);
  alloc.Detach(base, mapped);
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_EQ(hs.leaked_nodes, 2u);
  EXPECT_EQ(hs.total_link_bufs, 9u);
  ASSERT_TRUE(t.HealthCheck(&hs, true));
  EXPECT_EQ(hs.recycled_leaked_nodes, 2u);
  ASSERT_TRUE(t.HealthCheck(&hs, false));
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(hs.counter_mismatches, 0u);
  EXPECT_EQ(t.free_nodes(), 82u);
  EXPECT_EQ(t.link_bufs(), 9u);
}

// The seqlock check after each node's copy, for one-node values (their own
// path) and chains: a value freed while a reader is in the middle of it,
// and its nodes reused or not, fails the read instead of handing out bytes
// that are no longer the value's. The visitor runs between a node's copy
// and its check, where the writer of another process could strike.
TYPED_TEST(ShmLinkTableTest, AValueFreedDuringAReadFailsTheRead) {
  shmc::ShmLinkTable<TypeParam> t;
  ASSERT_TRUE(t.InitForWrite(this->key_, 64, 100));
  struct Case {
    size_t len;    // 64 fits one node; longer values are chains
    size_t piece;  // the piece (0-based) during which the value is freed
    bool reuse;    // a new value then takes the freed nodes
  };
  for (Case c : {Case{0, 0, false}, Case{64, 0, false}, Case{64, 0, true},
                 Case{200, 0, true}, Case{200, 3, false}, Case{200, 3, true}}) {
    SCOPED_TRACE(testing::Message() << "len " << c.len << " piece " << c.piece
                                    << " reuse " << c.reuse);
    std::string v = shmc_test::MakeValue(c.len, 7, c.len);
    shmc::link_buf_t lb = t.New(v.data(), v.size());
    ASSERT_TRUE(lb);
    // Untouched, the same visit succeeds and sees the value.
    std::string seen;
    ASSERT_TRUE(t.Visit(lb, [&](const char* p, size_t n) { seen.append(p, n); }));
    ASSERT_EQ(seen, v);
    size_t pieces = 0;
    shmc::link_buf_t other;
    bool ok = t.Visit(lb, [&](const char*, size_t) {
      if (pieces++ != c.piece) return;
      ASSERT_TRUE(t.Free(lb));
      if (c.reuse) {
        std::string w = shmc_test::MakeValue(c.len, 8, c.len);
        other = t.New(w.data(), w.size());
        ASSERT_TRUE(other);
        EXPECT_EQ(other.head(), lb.head()) << "the freed nodes are taken first";
      }
    });
    EXPECT_FALSE(ok) << "the read must fail: its value was freed mid-read";
    EXPECT_EQ(pieces, c.piece + 1) << "no node read after the failed check";
    if (other) {
      ASSERT_TRUE(t.Free(other));
    }
  }
  EXPECT_EQ(t.free_nodes(), 100u);
}

// A reader process reads values while the writer replaces them from a
// pool so small that a freed value's nodes are reused by the very next
// New: every Read that returns true must return one whole version of a
// value, never bytes of two. One-node values (read inline) and chains
// (three nodes) both churn. The handles travel through a shared page, as
// a map's index would carry them.
TEST(ShmLinkTableRace, ReaderProcessNeverSeesTornValues) {
  ScopedKey<shmc::POSIX> key("race");
  constexpr size_t kSlots = 4, kNode = 104;
  shmc::ShmLinkTable<shmc::POSIX> t;
  // Room for every slot's value (three nodes at most) plus one spare value:
  // each New takes the nodes the last Free gave back.
  ASSERT_TRUE(t.InitForWrite(key, kNode, 3 * (kSlots + 1)))
      << t.last_error().message;
  auto* slots = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0));
  ASSERT_NE(slots, MAP_FAILED);
  auto value_len = [](uint64_t ver) -> size_t {
    return ver % 3 == 0 ? 3 * kNode - 5 : 16 + ver % (kNode - 15);
  };
  for (uint64_t s = 0; s < kSlots; ++s) {
    std::string v = shmc_test::MakeValue(s, s + 1, value_len(s + 1));
    // Relaxed: the fork below orders it before the reader.
    slots[s].store(t.New(v.data(), v.size()).packed(),
                   std::memory_order_relaxed);
  }
  pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    shmc::ShmLinkTable<shmc::POSIX> r;
    if (!r.InitForRead(key)) _exit(10);
    std::string v;
    char buf[3 * kNode];
    uint64_t whole = 0;
    for (int i = 0; i < 4000000; ++i) {
      uint64_t s = static_cast<uint64_t>(i) % kSlots;
      shmc::link_buf_t lb =
          shmc::link_buf_t::Unpack(slots[s].load(std::memory_order_acquire));
      if (i % 2 == 0) {
        if (!r.Read(lb, &v)) continue;  // replaced meanwhile: allowed
      } else {
        size_t len = sizeof(buf);
        if (!r.Read(lb, buf, &len)) continue;
        v.assign(buf, len);
      }
      if (!shmc_test::ValidValue(s, v, nullptr)) _exit(11);
      ++whole;
    }
    _exit(whole > 1000 ? 0 : 12);
  }
  int status = 0;
  for (uint64_t ver = kSlots + 1; waitpid(reader, &status, WNOHANG) == 0;
       ++ver) {
    uint64_t s = ver % kSlots;
    std::string v = shmc_test::MakeValue(s, ver, value_len(ver));
    // Relaxed: this process is the slot's only writer.
    shmc::link_buf_t old = shmc::link_buf_t::Unpack(
        slots[s].load(std::memory_order_relaxed));
    ASSERT_TRUE(t.Free(old));
    shmc::link_buf_t lb = t.New(v.data(), v.size());
    ASSERT_TRUE(lb);
    slots[s].store(lb.packed(), std::memory_order_release);
  }
  munmap(slots, 4096);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "11: torn value, 12: too few reads";
}

// The copy out of shared memory, each way the build may make it (a word a
// load; 16 bytes a load on x86-64): exactly n bytes, in order, for every
// length up to a few values' worth and every destination alignment; the
// bytes after them are left alone.
using LoadFn = void (*)(void*, const std::atomic<uint64_t>*, size_t);
std::vector<std::pair<const char*, LoadFn>> LoadWays() {
  std::vector<std::pair<const char*, LoadFn>> ways = {
      {"LoadWords", &shmc::detail::LoadWords},
      {"LoadByWords", &shmc::detail::LoadByWords}};
#if SHMC_LOAD_BY_16
  ways.push_back({"LoadBy16", &shmc::detail::LoadBy16});
#endif
  return ways;
}

TEST(LoadWords, EveryLengthExactlyItsBytes) {
  std::vector<std::atomic<uint64_t>> words(26);
  for (size_t w = 0; w < words.size(); ++w) {
    words[w].store(0x0706050403020100ull + w * 0x0808080808080808ull);
  }
  for (auto [name, load] : LoadWays()) {
    for (size_t align = 0; align < 16; ++align) {
      // LoadBy16 takes 16 bytes and up; below that LoadWords uses words.
      size_t from = std::string(name) == "LoadBy16" ? 16 : 0;
      for (size_t n = from; n <= 8 * words.size(); ++n) {
        std::vector<unsigned char> dst(8 * words.size() + 32, 0xee);
        load(dst.data() + align, words.data(), n);
        for (size_t i = 0; i < dst.size(); ++i) {
          bool inside = i >= align && i < align + n;
          ASSERT_EQ(dst[i], inside ? (i - align) & 0xff : 0xee)
              << name << " n " << n << " align " << align << " byte " << i;
        }
      }
    }
  }
}

// Neither way reads past the words that hold the n bytes: the source ends
// where an unmapped page begins, so a read beyond it faults.
TEST(LoadWords, ReadsNoFurtherThanTheLastWord) {
  long page = sysconf(_SC_PAGESIZE);
  char* map = static_cast<char*>(mmap(nullptr, 2 * page,
                                      PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(mprotect(map + page, page, PROT_NONE), 0);
  std::memset(map, 0x5a, page);
  std::vector<unsigned char> dst(512);
  for (auto [name, load] : LoadWays()) {
    size_t from = std::string(name) == "LoadBy16" ? 16 : 1;
    for (size_t n = from; n <= 256; ++n) {
      size_t words = (n + 7) / 8;
      const auto* src = reinterpret_cast<const std::atomic<uint64_t>*>(
          map + page - 8 * words);
      std::fill(dst.begin(), dst.end(), 0);
      load(dst.data(), src, n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(dst[i], 0x5a) << name << " n " << n << " byte " << i;
      }
    }
  }
  munmap(map, 2 * page);
}

}  // namespace
