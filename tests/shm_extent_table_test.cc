// ShmExtentTable as a map's value pool: values whole in extents of their
// own size, free extents reused (exact, split, merged by a rebuild), the
// counters, damage found and repaired, a full pool refused cleanly.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "tests/support/raw_segment.h"
#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace {

using Pool = shmc::ShmExtentTable<shmc::POSIX>;
using Map = shmc::ShmHashMap<uint64_t, shmc::POSIX, Pool>;
using shmc_test::MakeValue;

struct Segs : shmc_test::MapSegments {
  Segs() : shmc_test::MapSegments("extmap") {}
};

// The map's whole health, as a recovered or repaired map must have it.
void ExpectHealthy(Map* m) {
  Map::HealthStat hs;
  ASSERT_TRUE(m->HealthCheck(&hs, false));
  EXPECT_EQ(hs.bad_key_values, 0u);
  EXPECT_EQ(hs.leaked_values, 0u);
  EXPECT_EQ(hs.lt_stat.broken_at, 0u);
  EXPECT_EQ(hs.lt_stat.bad_free_list, 0u);
  EXPECT_EQ(hs.lt_stat.counter_mismatches, 0u);
  EXPECT_EQ(hs.total_key_values, m->size());
}

void ExpectSame(Map* m, const std::map<uint64_t, std::string>& model) {
  size_t n = 0;
  for (const auto& kv : model) {
    std::string v;
    ASSERT_TRUE(m->Find(kv.first, &v)) << kv.first;
    ASSERT_EQ(v, kv.second) << kv.first;
    ++n;
  }
  EXPECT_EQ(m->size(), n);
}

TEST(ShmExtentTable, ValuesOfEveryLengthReadBackWhole) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 4000, 64, 1 << 16));
  std::map<uint64_t, std::string> model;
  for (uint64_t k = 0; k < 600; ++k) {
    model[k] = MakeValue(k, 1, k);  // lengths 0 .. 599
    ASSERT_TRUE(m.Insert(k, model[k])) << k;
  }
  for (uint64_t k : {1000, 1001}) {
    model[k] = MakeValue(k, 1, k == 1000 ? 100000 : 8 * 4096 + 3);
    ASSERT_TRUE(m.Insert(k, model[k]));
  }
  ExpectSame(&m, model);
  // A copy-free read with a short buffer reports the whole length.
  char buf[10];
  size_t len = sizeof(buf);
  ASSERT_TRUE(m.Find(300, buf, &len));
  EXPECT_EQ(len, 300u);
  EXPECT_EQ(std::string(buf, 10), model[300].substr(0, 10));
  // A reader attached apart sees the same.
  Map r;
  ASSERT_TRUE(r.InitForRead(s.base));
  ExpectSame(&r, model);
  ExpectHealthy(&m);
  EXPECT_EQ(m.link_table().link_bufs(), model.size());
}

TEST(ShmExtentTable, AValueCostsItsBytesRoundedToEightPlusAHead) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 2000, 64, 1 << 16));
  const Pool& p = m.link_table();
  for (uint64_t k = 0; k < 1000; ++k) {
    ASSERT_TRUE(m.Insert(k, std::string(130, 'v')));
  }
  // 130 bytes: 17 data granules and a head, 144 bytes a value.
  EXPECT_EQ(Pool::NodesFor(130), 18u);
  EXPECT_EQ(p.used_nodes(), 1000u * 18);
  EXPECT_EQ(Pool::NodesFor(0), 1u);  // the head alone
  EXPECT_EQ(Pool::NodesFor(1), 2u);
  EXPECT_EQ(Pool::NodesFor(8), 2u);
  EXPECT_EQ(Pool::NodesFor(9), 3u);
}

TEST(ShmExtentTable, FreedExtentsAreReusedBeforeThePoolGrows) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 2000, 64, 1 << 16));
  const Pool& p = m.link_table();
  for (uint64_t k = 0; k < 100; ++k) ASSERT_TRUE(m.Insert(k, MakeValue(k, 1, 200)));
  const size_t top = p.used_nodes();
  // Same sizes again: the exact lists.
  for (uint64_t k = 0; k < 100; ++k) ASSERT_TRUE(m.Replace(k, MakeValue(k, 2, 200)));
  // Replace needs the new extent before the old one goes: one more.
  EXPECT_LE(p.used_nodes(), top + Pool::NodesFor(200));
  // Smaller values split the larger free extents (every other value
  // stays, so that the free ones cannot merge).
  std::map<uint64_t, std::string> model;
  for (uint64_t k = 0; k < 100; ++k) {
    if (k % 2 == 0) {
      ASSERT_TRUE(m.Erase(k));
    } else {
      model[k] = MakeValue(k, 2, 200);
    }
  }
  const size_t after = p.used_nodes();
  for (uint64_t k = 100; k < 250; ++k) {
    model[k] = MakeValue(k, 3, 40);
    ASSERT_TRUE(m.Insert(k, model[k]));
  }
  EXPECT_EQ(p.used_nodes(), after);
  ExpectSame(&m, model);
  ExpectHealthy(&m);
}

// A freed value merges with the free extents on both sides at once, and
// free space at the end lowers the top: the gap between two values is one
// extent, whatever order its values left in.
TEST(ShmExtentTable, FreedNeighboursMergeAndTheTopComesDown) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 2000, 64, 1 << 16));
  const Pool& p = m.link_table();
  std::mt19937_64 rng(11);
  std::vector<size_t> len(400);
  std::vector<uint64_t> gone;
  for (uint64_t k = 0; k < 400; ++k) {
    len[k] = rng() % 300;
    ASSERT_TRUE(m.Insert(k, MakeValue(k, 1, len[k])));
    if (k % 10 != 0) gone.push_back(k);
  }
  const size_t top = p.used_nodes();
  std::shuffle(gone.begin(), gone.end(), rng);
  for (size_t i = 0; i < gone.size(); ++i) {
    ASSERT_TRUE(m.Erase(gone[i]));
    if (i % 37 == 0) ExpectHealthy(&m);  // merged, marked, trimmed
  }
  ExpectHealthy(&m);
  // Keys 391..399 were the last: the top came down to key 390's end.
  size_t end = 0;
  for (uint64_t k = 0; k <= 390; ++k) end += Pool::NodesFor(len[k]);
  EXPECT_EQ(p.used_nodes(), end);
  EXPECT_LT(p.used_nodes(), top);
  // Each gap of nine values is one free extent: a value of its whole size
  // fits there without the pool growing.
  std::map<uint64_t, std::string> model;
  for (uint64_t k = 0; k < 390; k += 10) {
    uint64_t gap = 0;
    for (uint64_t j = k + 1; j < k + 10; ++j) gap += Pool::NodesFor(len[j]);
    model[1000 + k] = MakeValue(1000 + k, 2, (gap - 1) * 8);
    ASSERT_TRUE(m.Insert(1000 + k, model[1000 + k]));
    ASSERT_EQ(p.used_nodes(), end) << "gap after key " << k;
  }
  EXPECT_EQ(p.free_nodes() - (p.total_nodes() - end), 0u);
  for (uint64_t k = 0; k < 400; k += 10) model[k] = MakeValue(k, 1, len[k]);
  ExpectSame(&m, model);
  ExpectHealthy(&m);
  // Everything gone: the pool is empty again.
  for (const auto& kv : model) ASSERT_TRUE(m.Erase(kv.first));
  EXPECT_EQ(p.used_nodes(), 0u);
  EXPECT_EQ(p.free_nodes(), p.total_nodes());
  ExpectHealthy(&m);
}

// Values that grow a little at a time, side by side (a list's chunks under
// pushes): each rewrite frees the old extent beside other free space, and
// the merged space takes the next larger value, so the pool stays near
// what the values hold.
TEST(ShmExtentTable, GrowingValuesDoNotFragmentThePool) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 200, 64, 1 << 16));
  const Pool& p = m.link_table();
  std::map<uint64_t, std::string> model;
  size_t peak = 0;
  for (int round = 0; round < 300; ++round) {
    for (uint64_t k = 0; k < 40; ++k) {
      std::string v = model[k] + std::string(8 + k % 5, static_cast<char>('a' + k));
      ASSERT_TRUE(model.count(k) && round > 0 ? m.Replace(k, v)
                                              : m.Insert(k, v));
      model[k] = v;
    }
    peak = std::max(peak, p.used_nodes());
  }
  size_t live = 0;
  for (const auto& kv : model) live += Pool::NodesFor(kv.second.size());
  EXPECT_LE(peak, live + live / 2) << "live " << live << " granules";
  ExpectSame(&m, model);
  ExpectHealthy(&m);
}

TEST(ShmExtentTable, RandomWritesMatchAModel) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 3000, 64, 1 << 17));
  std::map<uint64_t, std::string> model;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40000; ++i) {
    uint64_t k = rng() % 2000;
    int what = static_cast<int>(rng() % 10);
    size_t len = rng() % 8 == 0 ? rng() % 6000 : rng() % 200;
    if (what < 6) {
      std::string v = MakeValue(k, i, len);
      bool had = model.count(k) != 0;
      if (had) {
        ASSERT_TRUE(m.Replace(k, v));
      } else if (!m.Insert(k, v)) {
        // Only a full pool refuses.
        EXPECT_LT(m.link_table().free_nodes(), 6000u);
        continue;
      }
      model[k] = v;
    } else if (what < 9) {
      EXPECT_EQ(m.Erase(k), model.erase(k) == 1);
    } else if (i % 1000 == 999) {
      ExpectHealthy(&m);
    } else {
      std::string v;
      EXPECT_EQ(m.Find(k, &v), model.count(k) == 1);
      if (model.count(k)) {
        EXPECT_EQ(v, model[k]);
      }
    }
  }
  ExpectSame(&m, model);
  ExpectHealthy(&m);
  size_t bytes = 0;
  for (const auto& kv : model) bytes += kv.second.size();
  EXPECT_EQ(m.link_table().link_buf_bytes(), bytes);
}

TEST(ShmExtentTable, AFullPoolRefusesAndChangesNothing) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 100, 1000, 1));  // 1,000 bytes
  std::map<uint64_t, std::string> model;
  uint64_t k = 0;
  for (; k < 100; ++k) {
    std::string v = MakeValue(k, 1, 100);
    if (!m.Insert(k, v)) break;
    model[k] = v;
  }
  EXPECT_EQ(model.size(), 8u);  // 8 x 112 bytes of 1,000
  EXPECT_EQ(m.link_table().last_error().code, shmc::ErrorCode::kOk);
  EXPECT_FALSE(m.Replace(0, std::string(500, 'x')));
  ExpectSame(&m, model);
  ExpectHealthy(&m);
}

TEST(ShmExtentTable, ADamagedFreeListIsRebuiltFromTheExtents) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 1000, 64, 1 << 14));
  std::map<uint64_t, std::string> model;
  for (uint64_t k = 0; k < 50; ++k) ASSERT_TRUE(m.Insert(k, MakeValue(k, 1, 64)));
  for (uint64_t k = 0; k < 50; k += 2) ASSERT_TRUE(m.Erase(k));
  for (uint64_t k = 1; k < 50; k += 2) model[k] = MakeValue(k, 1, 64);
  // The list of 64-byte values' extents (9 granules) now points at a
  // live value's extent.
  shmc_test::RawSegment raw(s.base + "1");
  ASSERT_TRUE(raw.ok());
  auto* hdr = raw.at<shmc::detail::ExtentTableHeader>(
      sizeof(shmc::detail::SegmentHeader));
  hdr->list[9].store(1 + 9, std::memory_order_relaxed);  // key 1's extent
  Map::HealthStat hs;
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.lt_stat.bad_free_list, 1u);
  // A write finds it, rebuilds the lists, and takes a free extent.
  model[100] = MakeValue(100, 1, 64);
  ASSERT_TRUE(m.Insert(100, model[100]));
  ExpectSame(&m, model);
  ExpectHealthy(&m);
}

TEST(ShmExtentTable, ABrokenExtentHeadIsRepairedKeepingEveryNamedValue) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 1000, 64, 1 << 14));
  std::map<uint64_t, std::string> model;
  for (uint64_t k = 0; k < 40; ++k) {
    model[k] = MakeValue(k, 1, 24 + k);
    ASSERT_TRUE(m.Insert(k, model[k]));
  }
  for (uint64_t k = 5; k < 40; k += 5) {
    ASSERT_TRUE(m.Erase(k));
    model.erase(k);
  }
  shmc_test::RawSegment raw(s.base + "1");
  ASSERT_TRUE(raw.ok());
  // Key 5's freed extent follows keys 0..4 (sizes 1 + ceil((24+k)/8)):
  // its head is made impossible (size 0).
  uint64_t g = 1;
  for (uint64_t k = 0; k < 5; ++k) g += Pool::NodesFor(24 + k);
  // The extents start at the first line after the two headers.
  const size_t data_offset =
      (sizeof(shmc::detail::SegmentHeader) +
       sizeof(shmc::detail::ExtentTableHeader) + 63) / 64 * 64;
  auto* head = raw.at<std::atomic<uint64_t>>(data_offset + g * 8);
  ASSERT_EQ(shmc::detail::ExtentTag(head->load()), 0u);
  head->store(0);
  Map::HealthStat hs;
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.lt_stat.broken_at, g);
  ASSERT_TRUE(m.HealthCheck(&hs, true));
  EXPECT_GT(hs.lt_stat.lost_granules, 0u);
  ExpectSame(&m, model);
  ExpectHealthy(&m);
  // And it takes writes again.
  model[99] = MakeValue(99, 1, 30);
  ASSERT_TRUE(m.Insert(99, model[99]));
  ExpectSame(&m, model);
  ExpectHealthy(&m);
}

TEST(ShmExtentTable, ALeakedValueIsFoundAndFreed) {
  Segs s;
  Map m;
  ASSERT_TRUE(m.InitForWrite(s.base, 100, 64, 1 << 12));
  ASSERT_TRUE(m.Insert(1, MakeValue(1, 1, 50)));
  ASSERT_TRUE(m.Insert(2, MakeValue(2, 1, 50)));
  // The index forgets key 1: its value is no map's.
  Map::HealthStat hs;
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.leaked_values, 0u);
  std::atomic<uint64_t>* word = nullptr;
  using Table = std::remove_const_t<
      std::remove_reference_t<decltype(m.hash_table())>>;
  const_cast<Table&>(m.hash_table()).Travel([&](volatile shmc::detail::MapNode<uint64_t>* n) {
    if (n->LoadKey() == 1) word = n->link_word();
  });
  ASSERT_NE(word, nullptr);
  word->store(0);
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.leaked_values, 1u);
  ASSERT_TRUE(m.HealthCheck(&hs, true));
  EXPECT_EQ(hs.recycled_leaked_values, 1u);
  ExpectHealthy(&m);
  EXPECT_EQ(m.link_table().link_bufs(), 1u);
}

TEST(ShmExtentTable, GrowsInStepsAndPublishesNothingPastTheTop) {
  Segs s;
  shmc::SetDefaultCreateFlags(shmc::kCreateIfNotExist | shmc::kGrowInSteps);
  Map m;
  bool ok = m.InitForWrite(s.base, 1000, 1 << 20, 256);  // 256 MiB
  shmc::SetDefaultCreateFlags(shmc::kCreateIfNotExist);
  ASSERT_TRUE(ok);
  const Pool& p = m.link_table();
  EXPECT_LE(p.reserved_bytes(), 1u << 20);
  std::map<uint64_t, std::string> model;
  for (uint64_t k = 0; k < 900; ++k) {
    model[k] = MakeValue(k, 1, 4000);
    ASSERT_TRUE(m.Insert(k, model[k]));
  }
  // 900 x 4,008 bytes: reserved in steps, a few MiB, not 256.
  EXPECT_GE(p.reserved_bytes(), 900u * 4008);
  EXPECT_LE(p.reserved_bytes(), 900u * 4008 + (4u << 20));
  ExpectSame(&m, model);
  ExpectHealthy(&m);
}

}  // namespace
