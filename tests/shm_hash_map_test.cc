// ShmHashMap over every allocator: the reference behaviour, copy-free reads,
// travel, health checks, and readers in another process while the writer
// replaces and erases (no torn or mixed value, ever).
#include "shmc/shm_hash_map.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/support/tag_damage.h"
#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace {

using shmc_test::AllocTraits;
using shmc_test::MakeValue;

template <class Alloc>
class ShmHashMapTest : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 8); }
};
TYPED_TEST_SUITE(ShmHashMapTest, shmc_test::AllAllocs, shmc_test::AllocNames);

using shmc_test::MapKeys;

TYPED_TEST(ShmHashMapTest, InsertFindReplaceErase) {
  MapKeys<TypeParam> keys;
  shmc::ShmHashMap<uint64_t, TypeParam> m;
  ASSERT_TRUE(m.InitForWrite(keys.base, 1000, 100, 5000))
      << m.last_error().message;
  std::map<uint64_t, std::string> model;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    uint64_t k = rng() % 600 + 1;
    int op = static_cast<int>(rng() % 4);
    std::string v = MakeValue(k, static_cast<uint64_t>(i), rng() % 400);
    if (op == 0) {
      EXPECT_EQ(m.Insert(k, v), model.count(k) == 0);
      model.emplace(k, v);
    } else if (op == 1) {
      ASSERT_TRUE(m.Replace(k, v));
      model[k] = v;
    } else if (op == 2) {
      EXPECT_EQ(m.Erase(k), model.erase(k) == 1);
    } else {
      std::string out;
      bool found = m.Find(k, &out);
      ASSERT_EQ(found, model.count(k) == 1) << k;
      if (found) {
        ASSERT_EQ(out, model[k]);
      }
    }
  }
  EXPECT_EQ(m.size(), model.size());
  for (const auto& kv : model) {
    std::string out;
    ASSERT_TRUE(m.Find(kv.first, &out));
    ASSERT_EQ(out, kv.second);
    // Copy-free: into a caller buffer, truncating, with the full length.
    char buf[64];
    size_t len = sizeof(buf);
    ASSERT_TRUE(m.Find(kv.first, buf, &len));
    ASSERT_EQ(len, kv.second.size());
    ASSERT_EQ(std::string(buf, std::min(len, sizeof(buf))),
              kv.second.substr(0, sizeof(buf)));
    std::string seen;
    ASSERT_EQ(m.Visit(kv.first, [&](const char* p, size_t n) {
                seen.append(p, n);
              }),
              (shmc::ShmHashMap<uint64_t, TypeParam>::kVisitFound));
    ASSERT_EQ(seen, kv.second);
  }
  size_t travelled = 0;
  m.Travel([&](const uint64_t& k, const std::string& v) {
    ++travelled;
    EXPECT_EQ(model[k], v);
  });
  EXPECT_EQ(travelled, model.size());
  typename shmc::ShmHashMap<uint64_t, TypeParam>::HealthStat hs;
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.total_key_values, model.size());
  EXPECT_EQ(hs.bad_key_values, 0u);
  EXPECT_EQ(hs.leaked_values, 0u);
  EXPECT_EQ(hs.lt_stat.leaked_nodes, 0u);
  EXPECT_EQ(hs.lt_stat.counter_mismatches, 0u);
  EXPECT_LE(m.free_percentage(), 100u);
}

// FindMany against single Finds and a model: keys present and absent in
// random order, every batch size around the pipeline's batches, values
// longer than the stride (truncated, full length reported) and values
// spread over several nodes; stride 0 reports lengths only.
TYPED_TEST(ShmHashMapTest, FindManyAgreesWithFind) {
  MapKeys<TypeParam> keys;
  using Map = shmc::ShmHashMap<uint64_t, TypeParam>;
  Map m;
  ASSERT_TRUE(m.InitForWrite(keys.base, 2000, 40, 20000));
  std::map<uint64_t, std::string> model;
  std::mt19937_64 rng(17);
  for (uint64_t k = 1; k <= 1500; ++k) {
    if (rng() % 3 == 0) continue;  // absent
    model[k] = MakeValue(k, 1, rng() % 200);
    ASSERT_TRUE(m.Insert(k, model[k]));
  }
  for (size_t n : {0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 100, 1500}) {
    for (size_t stride : {size_t{0}, size_t{24}, size_t{256}}) {
      std::vector<uint64_t> q(n);
      for (auto& k : q) k = rng() % 1600 + 1;
      std::vector<char> bufs(n * stride + 1);
      std::vector<size_t> lens(n, 12345);
      size_t found = m.FindMany(q.data(), n, bufs.data(), stride, lens.data());
      size_t want_found = 0;
      for (size_t i = 0; i < n; ++i) {
        auto it = model.find(q[i]);
        if (it == model.end()) {
          ASSERT_EQ(lens[i], Map::kNotFound) << q[i];
          continue;
        }
        ++want_found;
        ASSERT_EQ(lens[i], it->second.size()) << q[i];
        size_t shown = std::min(stride, it->second.size());
        ASSERT_EQ(std::string(&bufs[i * stride], shown),
                  it->second.substr(0, shown));
      }
      ASSERT_EQ(found, want_found) << n << " keys, stride " << stride;
    }
  }
  // No buffers at all: lengths only, whatever the stride says.
  uint64_t q[2] = {1, 1601};
  size_t lens[2];
  size_t want = model.count(1);
  ASSERT_EQ(m.FindMany(q, 2, nullptr, 64, lens), want);
  EXPECT_EQ(lens[0], want ? model[1].size() : Map::kNotFound);
  EXPECT_EQ(lens[1], Map::kNotFound);
}

// Prefetch is a hint: over keys present and absent, every batch size
// around its groups of 16, and a null list, it changes no key and no
// count, and every lookup after it answers as before.
TYPED_TEST(ShmHashMapTest, PrefetchChangesNothing) {
  MapKeys<TypeParam> keys;
  using Map = shmc::ShmHashMap<uint64_t, TypeParam>;
  Map m;
  ASSERT_TRUE(m.InitForWrite(keys.base, 2000, 40, 20000));
  std::map<uint64_t, std::string> model;
  std::mt19937_64 rng(23);
  for (uint64_t k = 1; k <= 1500; ++k) {
    if (rng() % 3 == 0) continue;
    model[k] = MakeValue(k, 1, rng() % 300);
    ASSERT_TRUE(m.Insert(k, model[k]));
  }
  const size_t size = m.size(), free_nodes = m.free_percentage();
  m.Prefetch(nullptr, 5);
  for (size_t n : {0, 1, 15, 16, 17, 33, 64, 100, 1600}) {
    std::vector<uint64_t> q(n);
    for (auto& k : q) k = rng() % 1600 + 1;
    m.Prefetch(q.data(), n);
    for (uint64_t k : q) {
      std::string v;
      auto it = model.find(k);
      ASSERT_EQ(m.Find(k, &v), it != model.end()) << k;
      if (it != model.end()) {
        ASSERT_EQ(v, it->second) << k;
      }
    }
  }
  EXPECT_EQ(m.size(), size);
  EXPECT_EQ(m.free_percentage(), free_nodes);
  size_t seen = 0;
  m.Travel([&](const uint64_t& k, const std::string& v) {
    ++seen;
    EXPECT_EQ(v, model[k]) << k;
  });
  EXPECT_EQ(seen, model.size());
}

TYPED_TEST(ShmHashMapTest, EmptyValuesAndFullStorage) {
  MapKeys<TypeParam> keys;
  shmc::ShmHashMap<uint64_t, TypeParam> m;
  ASSERT_TRUE(m.InitForWrite(keys.base, 100, 32, 10));
  ASSERT_TRUE(m.Insert(1, "", 0));
  std::string out = "x";
  ASSERT_TRUE(m.Find(1, &out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(m.Insert(2, std::string(32 * 10, 'z'))) << "needs 10, 9 free";
  EXPECT_EQ(m.size(), 1u);
  EXPECT_FALSE(m.Find(2, &out));
  ASSERT_TRUE(m.Insert(2, std::string(32 * 9, 'z')));
  EXPECT_FALSE(m.Replace(1, "y", 1)) << "no node left for the new value";
  ASSERT_TRUE(m.Find(1, &out));
  EXPECT_TRUE(out.empty()) << "a failed replace keeps the old value";
}

TYPED_TEST(ShmHashMapTest, ReaderProcessNeverSeesTornValues) {
  if (!AllocTraits<TypeParam>::kNamed) {
    GTEST_SKIP() << "an ANON or HEAP segment has no name: no second "
                    "process can attach it";
  }
  MapKeys<TypeParam> keys;
  shmc::ShmHashMap<uint64_t, TypeParam> m;
  ASSERT_TRUE(m.InitForWrite(keys.base, 200, 48, 20000));
  for (uint64_t k = 1; k <= 100; ++k) ASSERT_TRUE(m.Replace(k, MakeValue(k, 0, 100)));
  std::string base = keys.base;
  pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    shmc::ShmHashMap<uint64_t, TypeParam> r;
    if (!r.InitForRead(base)) _exit(10);
    std::string v;
    uint64_t reads = 0;
    for (int i = 0; i < 300000; ++i) {
      uint64_t k = static_cast<uint64_t>(i % 100) + 1;
      if (!r.Find(k, &v)) continue;  // erased right now: allowed
      if (!shmc_test::ValidValue(k, v, nullptr)) _exit(11);
      ++reads;
    }
    // The batched read, over all keys at once, under the same churn.
    constexpr size_t kStride = 1024;
    std::vector<uint64_t> all(100);
    for (uint64_t k = 0; k < 100; ++k) all[k] = k + 1;
    std::vector<char> bufs(all.size() * kStride);
    std::vector<size_t> lens(all.size());
    for (int i = 0; i < 3000; ++i) {
      r.FindMany(all.data(), all.size(), bufs.data(), kStride, lens.data());
      for (size_t j = 0; j < all.size(); ++j) {
        if (lens[j] == r.kNotFound) continue;
        if (lens[j] > kStride) _exit(13);
        v.assign(&bufs[j * kStride], lens[j]);
        if (!shmc_test::ValidValue(all[j], v, nullptr)) _exit(11);
        ++reads;
      }
    }
    // Truncated reads (the first 200 bytes, past four nodes; only those
    // nodes are visited), under the same churn: the bytes copied are one
    // version's, of the length reported.
    char head[200];
    for (int i = 0; i < 100000; ++i) {
      uint64_t k = static_cast<uint64_t>(i % 100) + 1;
      size_t len = sizeof(head);
      if (!r.Find(k, head, &len)) continue;
      size_t got = std::min(len, sizeof(head));
      uint64_t kk = 0, ver = 0;
      if (got < 16) continue;
      std::memcpy(&kk, head, 8);
      std::memcpy(&ver, head + 8, 8);
      if (kk != k || MakeValue(k, ver, len).compare(0, got, head, got) != 0) {
        _exit(14);
      }
      ++reads;
    }
    _exit(reads > 2000 ? 0 : 12);
  }
  std::mt19937_64 rng(9);
  int status = 0;
  for (uint64_t ver = 1; waitpid(reader, &status, WNOHANG) == 0; ++ver) {
    uint64_t k = rng() % 100 + 1;
    if (rng() % 8 == 0) {
      m.Erase(k);
    } else {
      ASSERT_TRUE(m.Replace(k, MakeValue(k, ver, 16 + rng() % 885)));
    }
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "11: torn value, 12: too few reads, 13: length over the stride, "
         "14: torn truncated read";
}

TEST(ShmHashMapKeys, StructKeys) {
  struct Pair {
    uint32_t a, b;
    bool operator==(const Pair& o) const { return a == o.a && b == o.b; }
  };
  MapKeys<shmc::POSIX> keys;
  shmc::ShmHashMap<Pair, shmc::POSIX> m;
  ASSERT_TRUE(m.InitForWrite(keys.base, 100, 32, 100));
  ASSERT_TRUE(m.Insert(Pair{1, 2}, "one-two"));
  std::string v;
  ASSERT_TRUE(m.Find(Pair{1, 2}, &v));
  EXPECT_EQ(v, "one-two");
  EXPECT_FALSE(m.Find(Pair{2, 1}, &v));
}

// A key whose tag byte is damaged cannot be found; HealthCheck counts it as
// untagged (reader and writer alike) and the writer's auto_fix re-tags it,
// after which its value is found whole.
TEST(ShmHashMapHealth, DamagedTagIsReportedAndFixed) {
  MapKeys<shmc::POSIX> keys;
  shmc::ShmHashMap<uint64_t, shmc::POSIX> m;
  ASSERT_TRUE(m.InitForWrite(keys.base, 1000, 64, 2000));
  for (uint64_t k = 1; k <= 300; ++k) {
    ASSERT_TRUE(m.Insert(k, MakeValue(k, 0, 50 + k % 100)));
  }
  shmc::ShmHashMap<uint64_t, shmc::POSIX>::HealthStat hs;
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.untagged_keys, 0u);
  const auto& table = m.hash_table();
  uint64_t slot = table.node_index(table.Find(uint64_t{42}));
  ASSERT_TRUE(shmc_test::FlipTagByte(keys.base + "0", table, slot));
  std::string v;
  EXPECT_FALSE(m.Find(42, &v)) << "the damaged tag hides the key";

  shmc::ShmHashMap<uint64_t, shmc::POSIX> reader;
  ASSERT_TRUE(reader.InitForRead(keys.base));
  ASSERT_TRUE(reader.HealthCheck(&hs, false));
  EXPECT_EQ(hs.untagged_keys, 1u);
  EXPECT_FALSE(reader.HealthCheck(&hs, true)) << "a reader may not fix";

  ASSERT_TRUE(m.HealthCheck(&hs, true));
  EXPECT_EQ(hs.untagged_keys, 1u);
  EXPECT_EQ(hs.total_key_values, 300u);
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.untagged_keys, 0u);
  ASSERT_TRUE(reader.Find(42, &v));
  EXPECT_EQ(v, MakeValue(42, 0, 50 + 42 % 100));
}

// A map is two segments. When its values segment cannot be made, an index
// segment the same call created is removed again, and an index that was
// there before the call stays.
TEST(ShmHashMapInit, FailedValuesSegmentLeavesNoHalfMap) {
  using Map = shmc::ShmHashMap<uint64_t, shmc::POSIX>;
  MapKeys<shmc::POSIX> mk;
  const auto keys = Map::SegmentKeys(mk.base);
  auto exists = [](const std::string& k) {
    return access(("/dev/shm" + k).c_str(), F_OK) == 0;
  };
  auto put_foreign_values = [&] {
    shmc::POSIX().Unlink(keys.second);
    int fd = shm_open(keys.second.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, "not a shmc segment", 18, 0), 18);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    close(fd);
  };
  put_foreign_values();
  {
    Map m;
    EXPECT_FALSE(m.InitForWrite(mk.base, 100, 32, 100));
    EXPECT_NE(m.last_error().message.find(keys.second), std::string::npos)
        << m.last_error().message;
    EXPECT_FALSE(exists(keys.first)) << "the index it created was left";
    EXPECT_TRUE(exists(keys.second)) << "foreign bytes are left alone";
    std::string v;
    EXPECT_FALSE(m.Find(1, &v));
    EXPECT_FALSE(m.Insert(1, "x")) << "a failed handle stays unusable";
  }
  shmc::POSIX().Unlink(keys.second);
  {
    Map whole;
    ASSERT_TRUE(whole.InitForWrite(mk.base, 100, 32, 100))
        << whole.last_error().message;
    ASSERT_TRUE(whole.Insert(7, "seven"));
  }
  put_foreign_values();
  {
    Map m;
    EXPECT_FALSE(m.InitForWrite(mk.base, 100, 32, 100));
    EXPECT_TRUE(exists(keys.first)) << "an index it did not create is kept";
  }
}

// Misuse gets a refusal, not a crash: every call on a map that was never
// initialized, and writes through a read-only handle.
TEST(ShmHashMapMisuse, UninitializedAndReadOnlyHandlesRefuse) {
  using Map = shmc::ShmHashMap<uint64_t, shmc::POSIX>;
  Map none;
  std::string v;
  char buf[8];
  size_t len = sizeof(buf);
  uint64_t keys[3] = {1, 2, 3};
  size_t lens[3];
  EXPECT_FALSE(none.Find(1, &v));
  EXPECT_FALSE(none.Find(1, buf, &len));
  EXPECT_EQ(none.FindMany(keys, 3, buf, 0, lens), 0u);
  none.Prefetch(keys, 3);  // nothing to read: nothing done
  EXPECT_EQ(lens[2], Map::kNotFound);
  EXPECT_EQ(none.Visit(1, [](const char*, size_t) {}), Map::kVisitNotFound);
  EXPECT_FALSE(none.Replace(1, "x"));
  EXPECT_FALSE(none.Insert(1, "x"));
  EXPECT_FALSE(none.Erase(1));

  MapKeys<shmc::POSIX> mk;
  Map w;
  ASSERT_TRUE(w.InitForWrite(mk.base, 100, 32, 100));
  ASSERT_TRUE(w.Insert(1, "one"));
  Map r;
  ASSERT_TRUE(r.InitForRead(mk.base));
  EXPECT_FALSE(r.Replace(1, "uno")) << "existing key, read-only handle";
  EXPECT_FALSE(r.Replace(2, "two")) << "new key, read-only handle";
  EXPECT_FALSE(r.Insert(3, "three"));
  EXPECT_FALSE(r.Erase(1));
  ASSERT_TRUE(r.Find(1, &v));
  EXPECT_EQ(v, "one");
  EXPECT_FALSE(r.Find(2, &v));
  EXPECT_EQ(w.size(), 1u);
}

}  // namespace
