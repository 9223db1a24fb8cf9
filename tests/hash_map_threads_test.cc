// One writer thread and two reader threads on the same ShmHashMap mapping
// (over either value pool):
// run under ThreadSanitizer (preset tsan, label tsan) it proves the
// publication protocol race-free as the C++ memory model defines it; run
// normally it checks that no reader sees a torn value.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "tests/support/values.h"

namespace {

template <class Map>
void RaceReadersAgainstTheWriter() {
  // HEAP: threads share the one mapping, so TSan sees every access alias.
  Map m;
  ASSERT_TRUE(m.InitForWrite("", 256, 64, 20000)) << m.last_error().message;
  constexpr uint64_t kKeys = 64;
  for (uint64_t k = 1; k <= kKeys; ++k) {
    ASSERT_TRUE(m.Replace(k, shmc_test::MakeValue(k, 0, 100)));
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0}, reads{0};
  auto reader = [&](uint64_t seed) {
    const auto& cm = m;
    std::mt19937_64 rng(seed);
    std::string v;
    char buf[1024];
    // FindMany over a batch of 40 random keys (all four pipeline stages).
    constexpr size_t kBatch = 40, kStride = 1024;
    std::vector<uint64_t> batch(kBatch);
    std::vector<char> bufs(kBatch * kStride);
    std::vector<size_t> lens(kBatch);
    while (!stop.load(std::memory_order_relaxed)) {
      uint64_t k = rng() % kKeys + 1;
      bool ok;
      int how = static_cast<int>(rng() % 3);
      if (how == 2) {
        for (auto& b : batch) b = rng() % kKeys + 1;
        cm.Prefetch(batch.data(), kBatch);  // reads the same lines
        cm.FindMany(batch.data(), kBatch, bufs.data(), kStride, lens.data());
        for (size_t i = 0; i < kBatch; ++i) {
          if (lens[i] == Map::kNotFound) continue;
          reads.fetch_add(1, std::memory_order_relaxed);
          v.assign(&bufs[i * kStride], std::min(lens[i], kStride));
          if (lens[i] > kStride || !shmc_test::ValidValue(batch[i], v, nullptr)) {
            torn.fetch_add(1);
          }
        }
        continue;
      }
      if (how == 1) {
        ok = cm.Find(k, &v);
      } else {
        size_t len = sizeof(buf);
        ok = cm.Find(k, buf, &len);
        if (ok) v.assign(buf, std::min(len, sizeof(buf)));
      }
      if (ok) {
        reads.fetch_add(1, std::memory_order_relaxed);
        if (!shmc_test::ValidValue(k, v, nullptr)) torn.fetch_add(1);
      }
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  std::mt19937_64 rng(7);
  for (uint64_t ver = 1; ver <= 30000; ++ver) {
    uint64_t k = rng() % kKeys + 1;
    if (rng() % 6 == 0) {
      m.Erase(k);
    } else {
      ASSERT_TRUE(m.Replace(k, shmc_test::MakeValue(k, ver, 16 + rng() % 885)));
    }
  }
  stop.store(true);
  r1.join();
  r2.join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_GT(reads.load(), 100u);
  typename Map::HealthStat hs;
  ASSERT_TRUE(m.HealthCheck(&hs, false));
  EXPECT_EQ(hs.leaked_values, 0u);
  EXPECT_EQ(hs.bad_key_values, 0u);
  EXPECT_EQ(hs.lt_stat.counter_mismatches, 0u);
}

TEST(HashMapThreads, ReadersRaceTheWriterWithoutTornValues) {
  RaceReadersAgainstTheWriter<shmc::ShmHashMap<uint64_t, shmc::HEAP>>();
}

TEST(HashMapThreads, ExtentValuesRaceTheWriterWithoutTornValues) {
  RaceReadersAgainstTheWriter<shmc::ShmHashMap<
      uint64_t, shmc::HEAP, shmc::ShmExtentTable<shmc::HEAP>>>();
}

}  // namespace
