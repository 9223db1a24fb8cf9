// The values scripts and pub/sub keep in shared memory, damaged at
// random (server/store/scripts.h, server/store/pubsub_shared.h): every
// length and count is checked before use, so a damaged value reads as
// missing (or as "nobody"), never as a crash or a read out of bounds.
// Run under the sanitizer build too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "server/store/key_hash.h"
#include "server/store/pubsub_shared.h"
#include "server/store/scripts.h"
#include "shmc/global_options.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_sync_buf.h"

namespace {

using shmkv::KeyHash;

struct Segments {
  shmkv::StoreConfig cfg;
  explicit Segments(const std::string& tag) {
    cfg.name = "/shmkv_values_" + tag + "_" + std::to_string(getpid());
    std::string err;
    shmkv::RemoveStore(cfg, &err);
  }
  ~Segments() {
    std::string err;
    shmkv::RemoveStore(cfg, &err);
  }
};

std::string RandomBytes(std::mt19937_64& r, size_t max) {
  std::string s(r() % (max + 1), '\0');
  for (char& c : s) c = static_cast<char>(r());
  return s;
}

// A second writer of one of the store's segments, as damage would come:
// any bytes under any key the readers look up.
template <class T, class... Sizes>
bool OpenRaw(T* t, const std::string& key, Sizes... sizes) {
  int flags = shmc::DefaultCreateFlags();
  shmc::SetDefaultCreateFlags(shmc::kSharedWriters);
  bool ok = t->InitForWrite(key, sizes...);
  shmc::SetDefaultCreateFlags(flags);
  return ok;
}

TEST(SharedValues, DamagedScriptsReadAsMissing) {
  Segments seg("scripts");
  shmkv::ScriptCache cache;
  std::string err;
  ASSERT_TRUE(cache.Open(seg.cfg, &err)) << err;
  shmc::ShmHashMap<KeyHash, shmc::POSIX> writer;
  ASSERT_TRUE(OpenRaw(&writer, shmkv::ScriptsKey(seg.cfg),
                      shmkv::ScriptCache::kCapacity, size_t{64},
                      shmkv::ScriptCache::kMemory / 80));
  const std::string sha(40, 'a'), other(40, 'b');
  ASSERT_TRUE(cache.Put(sha, "return 1", &err)) << err;
  std::string body;
  ASSERT_TRUE(cache.Get(sha, &body));
  EXPECT_EQ(body, "return 1");
  std::mt19937_64 r(1);
  for (int i = 0; i < 2000; ++i) {
    std::string v = RandomBytes(r, 200);
    if (i % 3 == 0) v = other + v;  // another script's digits
    ASSERT_TRUE(writer.Replace(shmkv::HashKey(sha), v));
    bool found = cache.Get(sha, &body);
    EXPECT_EQ(found, v.size() >= 40 && v.compare(0, 40, sha) == 0);
    EXPECT_EQ(cache.Has(sha), found);
    EXPECT_FALSE(cache.Has(other));  // not under its own key
  }
  EXPECT_FALSE(cache.Get("short", &body));
  EXPECT_FALSE(cache.Has(""));
  cache.Flush();
  EXPECT_EQ(cache.Count(), 0u);
}

TEST(SharedValues, DamagedRegistryReadsAsNobody) {
  Segments seg("registry");
  shmkv::PubSubShared ps;
  std::string err;
  ASSERT_TRUE(ps.Open(seg.cfg, &err)) << err;
  shmc::ShmHashMap<KeyHash, shmc::POSIX> writer;
  ASSERT_TRUE(OpenRaw(&writer, shmkv::PubSubKey(seg.cfg),
                      shmkv::PubSubShared::kCapacity, size_t{64},
                      shmkv::PubSubShared::kMemory / 80));
  ASSERT_TRUE(ps.Change('c', "news", 42, 3));
  ASSERT_TRUE(ps.Change('p', "n*", 42, 1));
  std::vector<shmkv::PubSubShared::Holder> h;
  ps.Holders('c', "news", &h);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].pid, 42u);
  EXPECT_EQ(h[0].count, 3u);
  std::mt19937_64 r(2);
  const std::string keys[] = {"cnews", "pn*", "\1", "sshard"};
  for (int i = 0; i < 3000; ++i) {
    std::string v = RandomBytes(r, 120);
    if (i % 4 == 0 && v.size() >= 4) {  // a plausible name length
      uint32_t len = static_cast<uint32_t>(r() % 8);
      std::memcpy(&v[0], &len, 4);
    }
    ASSERT_TRUE(writer.Replace(shmkv::HashKey(keys[r() % 4]), v));
    h.clear();
    ps.Holders('c', "news", &h);
    ps.Holders('p', "n*", &h);
    ps.Holders('s', "shard", &h);
    std::vector<std::string> patterns;
    ps.Patterns(&patterns);
    if (i % 250 == 0) {  // the walks over the whole registry
      uint64_t total = 0;
      for (char kind : {'c', 'p', 's'}) {
        ps.Names(kind, [&](std::string_view, uint64_t n) { total += n; });
      }
      ps.Forget(42);
      ps.ForgetDead();
      ASSERT_TRUE(ps.Change('c', "news", 7, 1));
    }
  }
}

TEST(SharedValues, DamagedRingRecordsAreSkipped) {
  Segments seg("ring");
  shmkv::PubSubShared ps;
  std::string err;
  ASSERT_TRUE(ps.Open(seg.cfg, &err)) << err;
  shmc::ShmSyncBuf<shmc::POSIX> writer;
  ASSERT_TRUE(OpenRaw(&writer, shmkv::PubSubRingKey(seg.cfg),
                      shmkv::PubSubShared::kRingBytes));
  uint64_t pos = ps.Tail();
  std::mt19937_64 r(3);
  int good = 0, read = 0;
  for (int i = 0; i < 3000; ++i) {
    if (i % 3 == 0) {
      ASSERT_TRUE(ps.Push(9, 'c', "ch", "m" + std::to_string(i)));
      ++good;
    } else {
      ASSERT_TRUE(writer.Push(RandomBytes(r, 40)));
    }
    shmkv::PubSubShared::Message m;
    int rc;
    while ((rc = ps.Next(&pos, &m)) != 0) {
      ASSERT_EQ(rc, 1);
      EXPECT_LE(m.channel.size(), 40u);
      if (m.pid == 9 && m.channel == "ch") ++read;
    }
  }
  EXPECT_GE(read, good);  // damage may look like a message, never hide one
}

// shmkv --remove (RemoveStore) takes every segment a store has made,
// the script cache's and pub/sub's included, and nothing else.
TEST(SharedValues, RemoveStoreTakesEverySegment) {
  Segments seg("remove");
  auto names = [&] {
    std::vector<std::string> out;
    std::string prefix = seg.cfg.name.substr(1);
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
      std::string n = e.path().filename();
      if (n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    return out;
  };
  std::string err;
  {
    auto store = shmkv::Store::Open(seg.cfg, true, &err);
    ASSERT_NE(store, nullptr) << err;
    ASSERT_NE(store->Scripts(&err), nullptr) << err;
    shmkv::PubSubShared ps;
    ASSERT_TRUE(ps.Open(seg.cfg, &err)) << err;
  }
  std::vector<std::string> made = names();
  // map (2), control, journal, dbs, scripts (2), pub/sub (3)
  EXPECT_GE(made.size(), 10u);
  ASSERT_TRUE(shmkv::RemoveStore(seg.cfg, &err)) << err;
  std::vector<std::string> left = names();
  std::string list;
  for (const std::string& n : left) list += n + " ";
  EXPECT_TRUE(left.empty()) << "left: " << list;
}

}  // namespace
