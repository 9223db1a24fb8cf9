// The `shmc` tool, run as a subprocess: every command on every container
// kind, --json output parsed by an independent parser, damage found and
// repaired, the writer lease respected, bad names and bad segments answered
// with a message and the documented exit code, and a fuzz of header bytes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shmc/percentile.h"
#include "shmc/shm_array.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/shm_sorted_array.h"
#include "shmc/shm_sync_buf.h"
#include "tests/support/cli_run.h"
#include "tests/support/json_parse.h"
#include "tests/support/raw_segment.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::JsonParser;
using shmc_test::JValue;
using shmc_test::Lines;
using shmc_test::CliMapKey;
using shmc_test::Node16;
using shmc_test::ParseOrFail;
using shmc_test::Result;
using shmc_test::ScopedKey;
using shmc_test::Shmc;

template <class Alloc>
struct Names {
  CliMapKey<Alloc> base;
  std::string k0 = base.str() + "0", k1 = base.str() + "1";
  Names() { Clean(); }
  ~Names() { Clean(); }
  void Clean() {
    Alloc().Unlink(k0);
    Alloc().Unlink(k1);
  }
};

std::string Prefix(const shmc::POSIX*) { return "posix:"; }
std::string Prefix(const shmc::SVIPC*) { return "sysv:"; }
std::string Prefix(const shmc::MAPFILE*) { return "file:"; }
template <class Alloc>
std::string Seg(const std::string& key) {
  return Prefix(static_cast<const Alloc*>(nullptr)) + key;
}

template <class Alloc>
class ShmcCliTest : public ::testing::Test {};
using CliAllocs = ::testing::Types<shmc::POSIX, shmc::SVIPC, shmc::MAPFILE>;
TYPED_TEST_SUITE(ShmcCliTest, CliAllocs, shmc_test::AllocNames);

TYPED_TEST(ShmcCliTest, HashMapInfoCheckDumpRm) {
  Names<TypeParam> n;
  {
    shmc::ShmHashMap<uint64_t, TypeParam> m;
    ASSERT_TRUE(m.InitForWrite(n.base, 1000, 64, 2000));
    for (uint64_t k = 1; k <= 300; ++k) {
      ASSERT_TRUE(m.Insert(k, std::string(k % 150, static_cast<char>(k))));
    }
    ASSERT_TRUE(m.Insert(1000, std::string("bin\0\x01\xff\"\\", 8)));
  }
  std::string seg = Seg<TypeParam>(n.base);
  Result r = Shmc({"info", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue info = ParseOrFail(r.out);
  EXPECT_EQ(info.get("kind")->str, "hash_map");
  EXPECT_EQ(info.number("keys"), 301);
  EXPECT_EQ(info.get("values")->number("values"), 301);
  ASSERT_EQ(info.get("segments")->arr.size(), 2u);
  EXPECT_EQ(info.get("index")->get("rows")->arr.size(), 6u);

  r = Shmc({"info", seg});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("kind: hash_map"), std::string::npos) << r.out;

  r = Shmc({"check", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  JValue check = ParseOrFail(r.out);
  EXPECT_TRUE(check.get("ok")->b);
  EXPECT_EQ(check.get("stats")->number("keys"), 301);

  r = Shmc({"dump", seg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<JValue> recs = Lines(r.out);
  ASSERT_EQ(recs.size(), 301u);
  size_t matched = 0;
  for (const JValue& rec : recs) {
    uint64_t k = static_cast<uint64_t>(rec.number("key"));
    std::string want = k == 1000 ? std::string("bin\0\x01\xff\"\\", 8)
                                 : std::string(k % 150, static_cast<char>(k));
    matched += rec.get("value")->str == want;
  }
  EXPECT_EQ(matched, 301u) << "binary values survive the JSON escaping";
  r = Shmc({"dump", seg, "--limit", "5", "--format", "hex"});
  ASSERT_EQ(r.exit_code, 0);
  recs = Lines(r.out);
  ASSERT_EQ(recs.size(), 5u);
  for (const JValue& rec : recs) {
    const std::string& hex = rec.get("value")->str;
    EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  }

  r = Shmc({"rm", seg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Shmc({"info", seg});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no such segment"), std::string::npos) << r.err;
}

// Keys 1..keys into a table of Node16, each with its key as value.
bool FillTable(shmc::ShmHashTable<uint64_t, Node16, shmc::POSIX>* t,
               uint64_t keys) {
  for (uint64_t k = 1; k <= keys; ++k) {
    bool found = false;
    volatile Node16* node = t->FindOrAlloc(k, &found);
    if (node == nullptr) return false;
    node->val = k;
    node->key = k;
  }
  return true;
}

TEST(ShmcCli, EveryOtherKind) {
  ScopedKey<shmc::POSIX> ka("a"), kt("t"), km("m"), kl("l"), kq("q"), ks("s");
  shmc::ShmArray<Node16, shmc::POSIX> arr;
  ASSERT_TRUE(arr.InitForWrite(ka, 100));
  arr[3].key = 7;
  shmc::ShmHashTable<uint64_t, Node16, shmc::POSIX> table;
  ASSERT_TRUE(table.InitForWrite(kt, 1000));
  ASSERT_TRUE(FillTable(&table, 900));
  shmc::ShmHashTableM<uint64_t, Node16, shmc::POSIX> tm;
  ASSERT_TRUE(tm.InitForWrite(km, 1000, 10));
  for (uint64_t k = 1; k <= 100; ++k) {
    bool found = false;
    volatile Node16* node = tm.FindOrAlloc(k, &found);
    ASSERT_NE(node, nullptr);
    node->key = k;
  }
  shmc::ShmLinkTable<shmc::POSIX> lt;
  ASSERT_TRUE(lt.InitForWrite(kl, 32, 100));
  ASSERT_TRUE(lt.New("hello link", 10));
  shmc::ShmQueue<shmc::POSIX> q;
  ASSERT_TRUE(q.InitForWrite(kq, 4096));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.Push("rec" + std::to_string(i)));
  shmc::ShmSyncBuf<shmc::POSIX> sb;
  ASSERT_TRUE(sb.InitForWrite(ks, 4096));
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(sb.Push("sync" + std::to_string(i)));

  struct Case {
    std::string key, kind;
    size_t dumped;
  };
  std::vector<Case> cases = {{ka, "array", 100},   {kt, "hash_table", 900},
                             {km, "hash_table_m", 100},
                             {kl, "link_table", 1}, {kq, "queue", 10},
                             {ks, "sync_buf", 0}};
  for (const Case& c : cases) {
    std::string seg = "posix:" + c.key;
    Result r = Shmc({"info", seg, "--json"});
    ASSERT_EQ(r.exit_code, 0) << c.kind << ": " << r.err;
    JValue info = ParseOrFail(r.out);
    EXPECT_EQ(info.get("kind")->str, c.kind);
    r = Shmc({"check", seg, "--json"});
    EXPECT_EQ(r.exit_code, 0) << c.kind << ": " << r.out << r.err;
    EXPECT_TRUE(ParseOrFail(r.out).get("ok")->b) << c.kind;
    r = Shmc({"dump", seg});
    ASSERT_EQ(r.exit_code, 0) << c.kind << ": " << r.err;
    std::vector<JValue> recs = Lines(r.out);
    if (c.dumped > 0) {
      EXPECT_EQ(recs.size(), c.dumped) << c.kind;
    }
    if (c.kind == "hash_table") {
      const JValue* t = info.get("table");
      EXPECT_EQ(t->number("nonzero_nodes"), 900);
      EXPECT_TRUE(t->get("probe_depth") != nullptr);
    }
    if (c.kind == "queue") {
      EXPECT_EQ(info.get("queue")->number("pending_records"), 10);
      EXPECT_EQ(recs[0].get("data")->str, "rec0");
      EXPECT_EQ(recs[9].get("data")->str, "rec9");
    }
    if (c.kind == "sync_buf") {
      const JValue* s = info.get("sync_buf");
      ASSERT_GT(recs.size(), 10u);
      EXPECT_EQ(s->get("last")->number("seq"), 500);
      EXPECT_EQ(recs.back().get("data")->str, "sync499");
      EXPECT_EQ(recs.back().number("seq"), 500);
      EXPECT_GT(s->number("recycled"), 0) << "the ring wrapped";
    }
  }
  // Nothing was consumed by looking.
  std::string rec;
  ASSERT_TRUE(q.Push("last"));
  shmc::ShmQueue<shmc::POSIX> consumer;
  ASSERT_TRUE(consumer.InitForRead(kq));
  ASSERT_TRUE(consumer.Pop(&rec));
  EXPECT_EQ(rec, "rec0");

  Result r = Shmc({"ls", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue all = ParseOrFail(r.out);
  size_t seen = 0;
  for (const JValue& row : all.arr) {
    for (const Case& c : cases) {
      if (row.get("name")->str == "posix:" + c.key) {
        EXPECT_EQ(row.get("kind")->str, c.kind);
        EXPECT_EQ(row.get("backend")->str, "posix");
        EXPECT_GE(row.number("creator_pid"), 1);
        ++seen;
      }
    }
  }
  EXPECT_EQ(seen, cases.size());
  r = Shmc({"ls"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("NAME"), std::string::npos);
  // rm: refused while this process (the live writer of every kind) holds
  // its lease, then forced; afterwards the name is gone.
  for (const Case& c : cases) {
    std::string seg = "posix:" + c.key;
    r = Shmc({"rm", seg, "--json"});
    EXPECT_EQ(r.exit_code, 1) << c.kind << ": " << r.err;
    r = Shmc({"rm", seg, "--force", "--json"});
    EXPECT_EQ(r.exit_code, 0) << c.kind << ": " << r.err;
    EXPECT_EQ(ParseOrFail(r.out).get("removed")->arr.size(), 1u);
    EXPECT_EQ(Shmc({"info", seg}).exit_code, 1) << c.kind;
  }
}

// A sorted array is its directory plus its data segment: info follows the
// directory, check recomputes the checksum, dump walks key order (also on
// the Eytzinger layout), rm removes every segment.
TYPED_TEST(ShmcCliTest, SortedArrayInfoCheckDumpRm) {
  Names<TypeParam> n;
  using Array = shmc::ShmSortedArray<uint64_t, uint64_t, TypeParam>;
  std::vector<std::pair<uint64_t, uint64_t>> recs;
  for (uint64_t k = 0; k < 500; ++k) recs.push_back({(k * 7919) % 1000, k});
  Array a;
  ASSERT_TRUE(a.Build(n.base, recs)) << a.last_error().message;
  ASSERT_TRUE(a.Build(n.base, recs, shmc::SortedLayout::kEytzinger));
  std::string seg = Seg<TypeParam>(n.base);
  Result r = Shmc({"info", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue info = ParseOrFail(r.out);
  EXPECT_EQ(info.get("kind")->str, "sorted_array");
  const JValue* s = info.get("sorted_array");
  ASSERT_NE(s, nullptr) << r.out;
  EXPECT_EQ(s->number("version"), 2);
  EXPECT_EQ(s->number("records"), 500);
  EXPECT_EQ(s->get("layout")->str, "eytzinger");
  EXPECT_TRUE(s->get("sealed")->b);
  EXPECT_EQ(info.get("segments")->arr.size(), 2u)
      << "the directory and the one data segment left: " << r.out;

  r = Shmc({"check", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(ParseOrFail(r.out).get("ok")->b);

  r = Shmc({"dump", seg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<JValue> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 500u);
  std::sort(recs.begin(), recs.end());
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_EQ(static_cast<uint64_t>(lines[i].number("key")), recs[i].first)
        << "key order at " << i;
    uint64_t v = 0;
    std::memcpy(&v, lines[i].get("value")->str.data(), 8);
    EXPECT_EQ(v, recs[i].second);
  }

  // Damage one value byte of the published version (slot 1).
  {
    TypeParam alloc;
    size_t mapped = 0;
    char* p = static_cast<char*>(alloc.Attach(n.k1, 0, 0, &mapped));
    ASSERT_NE(p, nullptr);
    p[mapped - 100] ^= 1;
    alloc.Detach(p, mapped);
  }
  r = Shmc({"check", seg, "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << r.out;

  r = Shmc({"rm", seg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Shmc({"info", seg}).exit_code, 1);
  TypeParam alloc;
  EXPECT_EQ(alloc.Attach(n.k1, 0, shmc::impl::kReadOnly), nullptr)
      << "rm removed the data segment too";
}

TEST(ShmcCli, SortedArrayListedOnce) {
  Names<shmc::POSIX> n;
  shmc::ShmSortedArray<uint32_t, uint16_t, shmc::POSIX> a;
  ASSERT_TRUE(a.Build(n.base, {{3, 30}, {1, 10}}));
  ASSERT_TRUE(a.Build(n.base, {{4, 40}}));
  Result r = Shmc({"ls", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue rows = ParseOrFail(r.out);
  int found = 0;
  for (const JValue& row : rows.arr) {
    const std::string& name = row.get("name")->str;
    if (name.find(n.base.str()) == std::string::npos) continue;
    ++found;
    EXPECT_EQ(name, "posix:" + n.base.str());
    EXPECT_EQ(row.get("kind")->str, "sorted_array");
    EXPECT_EQ(row.get("segments")->arr.size(), 2u);
  }
  EXPECT_EQ(found, 1) << r.out;
  // An unpublished build is reported, not mistaken for damage of the
  // published version.
  ASSERT_TRUE(a.BeginBuild(n.base, 5));
  r = Shmc({"check", "posix:" + n.k0, "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("not sealed"), std::string::npos) << r.out;
  EXPECT_EQ(Shmc({"check", "posix:" + n.base.str()}).exit_code, 0);
  a.AbortBuild();
}

// A table NAME0 whose nodes no map's index can have (12 bytes: the handle
// word would not be the node's last aligned word) beside a link table
// NAME1 is not a map: ls says what info says, two containers, not one.
TEST(ShmcCli, LsAndInfoAgreeOnWhatIsAMap) {
  struct Node12 {
    uint32_t key;
    uint32_t a, b;
    std::pair<bool, uint32_t> Key() const volatile { return {key != 0, key}; }
  };
  Names<shmc::POSIX> n;
  shmc::ShmHashTable<uint32_t, Node12, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(n.k0, 100));
  shmc::ShmLinkTable<shmc::POSIX> lt;
  ASSERT_TRUE(lt.InitForWrite(n.k1, 32, 100));
  Result r = Shmc({"info", "posix:" + n.base.str()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not the index and values of one hash map"),
            std::string::npos)
      << r.err;
  r = Shmc({"ls", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> kinds;
  for (const JValue& row : ParseOrFail(r.out).arr) {
    kinds[row.get("name")->str] = row.get("kind")->str;
  }
  EXPECT_EQ(kinds.count("posix:" + n.base.str()), 0u) << r.out;
  EXPECT_EQ(kinds["posix:" + n.k0], "hash_table") << r.out;
  EXPECT_EQ(kinds["posix:" + n.k1], "link_table") << r.out;
}

// A POSIX map at `base` holding keys 1..keys, each with `value`; the
// writer is gone when it returns.
bool FillMap(const std::string& base, size_t key_num, size_t node_size,
             size_t nodes, uint64_t keys, const std::string& value) {
  shmc::ShmHashMap<uint64_t, shmc::POSIX> m;
  if (!m.InitForWrite(base, key_num, node_size, nodes)) return false;
  for (uint64_t k = 1; k <= keys; ++k) {
    if (!m.Insert(k, value)) return false;
  }
  return true;
}

TEST(ShmcCli, MapDamageFoundAndRepaired) {
  Names<shmc::POSIX> n;
  ASSERT_TRUE(FillMap(n.base, 1000, 64, 2000, 100, "value"));
  // Clear one key's handle behind the map's back: its value leaks.
  shmc::ShmHashTable<uint64_t, shmc::detail::MapNode<uint64_t>, shmc::POSIX>
      index;
  ASSERT_TRUE(index.InitForWrite(n.k0, 1000));
  volatile auto* node = index.Find(42);
  ASSERT_NE(node, nullptr);
  node->link_word()->store(0);
  std::string seg = "posix:" + n.base.str();
  Result r = Shmc({"check", seg, "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  JValue check = ParseOrFail(r.out);
  EXPECT_FALSE(check.get("ok")->b);
  ASSERT_FALSE(check.get("problems")->arr.empty());
  EXPECT_NE(check.get("problems")->arr[0].str.find("leaked"),
            std::string::npos);
  r = Shmc({"check", seg, "--fix", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(ParseOrFail(r.out).get("after_fix_ok")->b);
  r = Shmc({"check", seg});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A map over an extent table: info, check and dump as for a link-table
// map; a leaked value and a broken extent head found, and repaired with
// every key the index names kept.
TEST(ShmcCli, ExtentMapInfoCheckDumpAndRepair) {
  Names<shmc::POSIX> n;
  using EM = shmc::ShmHashMap<uint64_t, shmc::POSIX,
                              shmc::ShmExtentTable<shmc::POSIX>>;
  {
    EM m;
    ASSERT_TRUE(m.InitForWrite(n.base, 1000, 64, 2000));
    for (uint64_t k = 1; k <= 200; ++k) {
      ASSERT_TRUE(m.Insert(k, std::string(k % 90, static_cast<char>(k))));
    }
    for (uint64_t k = 10; k <= 200; k += 10) ASSERT_TRUE(m.Erase(k));
  }
  std::string seg = "posix:" + n.base.str();
  Result r = Shmc({"info", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue info = ParseOrFail(r.out);
  EXPECT_EQ(info.get("kind")->str, "extent_map");
  EXPECT_EQ(info.get("values")->number("values"), 180);
  r = Shmc({"check", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Shmc({"dump", seg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 180u);
  r = Shmc({"info", "posix:" + n.k1});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kind: extent_table"), std::string::npos) << r.out;
  // `ls` shows the pair as one map.
  r = Shmc({"ls"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string line;
  std::istringstream ls(r.out);
  size_t lines = 0;
  while (std::getline(ls, line)) {
    if (line.find(n.base.str()) == std::string::npos) continue;
    ++lines;
    EXPECT_NE(line.find("extent_map"), std::string::npos) << line;
  }
  EXPECT_EQ(lines, 1u) << r.out;

  // Key 42's handle cleared behind the map's back: its value leaks.
  {
    shmc::ShmHashTable<uint64_t, shmc::detail::MapNode<uint64_t>,
                       shmc::POSIX> index;
    ASSERT_TRUE(index.InitForWrite(n.k0, 1000));
    volatile auto* node = index.Find(42);
    ASSERT_NE(node, nullptr);
    node->link_word()->store(0);
  }
  r = Shmc({"check", seg, "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("leaked"), std::string::npos) << r.out;
  r = Shmc({"check", seg, "--fix", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(ParseOrFail(r.out).get("after_fix_ok")->b);

  // The head of key 1's extent (the first) made impossible: the walk
  // breaks there; the repair keeps every other key.
  {
    shmc_test::RawSegment raw(n.k1);
    ASSERT_TRUE(raw.ok());
    const size_t data = (sizeof(shmc::detail::SegmentHeader) +
                         sizeof(shmc::detail::ExtentTableHeader) + 63) /
                        64 * 64;
    raw.at<std::atomic<uint64_t>>(data + 8)->store(0);
  }
  r = Shmc({"check", seg});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("broken at granule 1"), std::string::npos) << r.out;
  r = Shmc({"check", seg, "--fix"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Shmc({"check", seg});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EM m;
  ASSERT_TRUE(m.InitForRead(n.base));
  size_t found = 0;
  for (uint64_t k = 2; k <= 200; ++k) {
    std::string v;
    if (k % 10 == 0 || k == 42) continue;
    ASSERT_TRUE(m.Find(k, &v)) << k;
    EXPECT_EQ(v, std::string(k % 90, static_cast<char>(k)));
    ++found;
  }
  EXPECT_EQ(found, 178u);
  std::string v;
  EXPECT_FALSE(m.Find(1, &v));  // its head was the damage: dropped
}

// The tag byte of a hash table slot, found through a raw mapping of the
// segment from its header's params (docs/layout/hash_table.md).
volatile unsigned char* RawTag(char* base, uint64_t slot) {
  const auto* h = reinterpret_cast<const shmc::detail::SegmentHeader*>(base);
  uint64_t main_buckets = 0, slots = 0;
  for (uint32_t i = 0; i < h->param_count; ++i) {
    std::string name(h->params[i].name,
                     strnlen(h->params[i].name, sizeof(h->params[i].name)));
    if (name == "main_buckets") main_buckets = h->params[i].value;
    if (name == "bucket_slots") slots = h->params[i].value;
  }
  uint64_t bitmap = ((main_buckets + 63) / 64 * 8 + 63) / 64 * 64;
  uint64_t tags = 512 + 64 + 2 * bitmap;
  uint64_t words_per_bucket = (slots + 3) / 4;
  return reinterpret_cast<volatile unsigned char*>(base) + tags +
         (slot / slots) * words_per_bucket * 4 + slot % slots;
}

// A tag changed behind the container's back hides its key from lookups:
// `shmc check` finds it (as ShmHashMap::HealthCheck does), --fix rewrites
// it from the key, and the key is found again.
TEST(ShmcCli, DamagedTagFoundAndRepaired) {
  Names<shmc::POSIX> n;
  ASSERT_TRUE(FillMap(n.base, 1000, 64, 2000, 100, "value"));
  ScopedKey<shmc::POSIX> tk("table");
  {
    shmc::ShmHashTable<uint64_t, Node16, shmc::POSIX> table;
    ASSERT_TRUE(table.InitForWrite(tk, 1000));
    ASSERT_TRUE(FillTable(&table, 100));
  }
  shmc::ShmHashTable<uint64_t, Node16, shmc::POSIX> table;
  ASSERT_TRUE(table.InitForRead(tk));
  struct Case {
    std::string key, seg;
    uint64_t slot;
  };
  shmc::ShmHashTable<uint64_t, shmc::detail::MapNode<uint64_t>, shmc::POSIX>
      index;
  ASSERT_TRUE(index.InitForRead(n.k0));
  volatile auto* in_map = index.Find(42);
  ASSERT_NE(in_map, nullptr);
  volatile Node16* in_table = table.Find(42);
  ASSERT_NE(in_table, nullptr);
  std::vector<Case> cases = {
      {n.k0, "posix:" + n.base.str(), index.node_index(in_map)},
      {tk.str(), "posix:" + tk.str(), table.node_index(in_table)}};
  for (const Case& c : cases) {
    EXPECT_EQ(Shmc({"check", c.seg}).exit_code, 0) << c.seg;
    shmc::POSIX raw;
    size_t mapped = 0;
    char* base = static_cast<char*>(raw.Attach(c.key, 0, 0, &mapped));
    ASSERT_NE(base, nullptr);
    volatile unsigned char* tag = RawTag(base, c.slot);
    unsigned char good = *tag;
    ASSERT_NE(good, 0);
    *tag = static_cast<unsigned char>(good == 0x7f ? 0x80 : 0x7f);
    Result r = Shmc({"check", c.seg, "--json"});
    EXPECT_EQ(r.exit_code, 3) << c.seg << r.out << r.err;
    EXPECT_NE(r.out.find("tag that is not their key"), std::string::npos)
        << r.out;
    if (c.key == n.k0) {
      shmc::ShmHashMap<uint64_t, shmc::POSIX> m;
      ASSERT_TRUE(m.InitForRead(n.base));
      std::string v;
      EXPECT_FALSE(m.Find(42, &v)) << "the key is unreachable";
      shmc::ShmHashMap<uint64_t, shmc::POSIX>::HealthStat hs;
      ASSERT_TRUE(m.HealthCheck(&hs, false));
      EXPECT_EQ(hs.untagged_keys, 1u) << "the library agrees";
    }
    r = Shmc({"check", c.seg, "--fix"});
    EXPECT_EQ(r.exit_code, 0) << c.seg << r.out << r.err;
    EXPECT_EQ(*tag, good) << "rewritten from the key";
    EXPECT_EQ(Shmc({"check", c.seg}).exit_code, 0) << c.seg;
    raw.Detach(base, mapped);
  }
  EXPECT_NE(table.Find(42), nullptr);
}

// A queue whose word at the tail is not zero (damage) is reported: the
// consumer would read it as a record. Records published past a stale tail
// (a producer killed before storing it) are counted, not a problem.
TEST(ShmcCli, QueueTailWordChecked) {
  ScopedKey<shmc::POSIX> key;
  {
    shmc::ShmQueue<shmc::POSIX> p;
    ASSERT_TRUE(p.InitForWrite(key, 4096));
    ASSERT_TRUE(p.Push(std::string(40, 'q')));  // 48 bytes
    ASSERT_TRUE(p.Push(std::string(40, 'r')));
  }
  shmc::POSIX raw;
  size_t mapped = 0;
  char* base = static_cast<char*>(raw.Attach(key, 0, 0, &mapped));
  ASSERT_NE(base, nullptr);
  char* tail_word = base + 512;  // QueueHeader::tail (docs/layout/queue.md)
  char* ring = base + 768;
  uint64_t stale = 48;
  std::memcpy(tail_word, &stale, 8);
  std::string seg = "posix:" + key.str();
  Result r = Shmc({"check", seg, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(ParseOrFail(r.out).get("stats")->number("records_past_tail"), 1)
      << r.out;
  uint64_t tail = 96;
  std::memcpy(tail_word, &tail, 8);
  std::memset(ring + 96, 0x5a, 8);
  r = Shmc({"check", seg, "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  JValue check = ParseOrFail(r.out);
  ASSERT_FALSE(check.get("problems")->arr.empty()) << r.out;
  EXPECT_NE(check.get("problems")->arr[0].str.find("position 96"),
            std::string::npos) << r.out;
  raw.Detach(base, mapped);
}

TEST(ShmcCli, UnreachableOverflowRowFoundAndRepaired) {
  ScopedKey<shmc::POSIX> k;
  shmc::ShmHashTable<uint64_t, Node16, shmc::POSIX> t;
  ASSERT_TRUE(t.InitForWrite(k, 1000));
  for (uint64_t key = 1;; ++key) {  // fill until something overflows
    bool found = false;
    volatile Node16* node = t.FindOrAlloc(key, &found);
    ASSERT_NE(node, nullptr);
    node->key = key;
    if (t.overflow_depth() > 0) break;
  }
  // Overwrite overflow_depth (in the table header) through a raw mapping.
  shmc::POSIX raw;
  size_t mapped = 0;
  char* base = static_cast<char*>(raw.Attach(k, 0, 0, &mapped));
  ASSERT_NE(base, nullptr);
  uint32_t zero = 0;
  std::memcpy(base + shmc::detail::kTableHeaderOffset, &zero, 4);
  Result r = Shmc({"check", "posix:" + k.str()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("cannot reach"), std::string::npos) << r.out;
  r = Shmc({"check", "posix:" + k.str(), "--fix"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  uint32_t now = 0;
  std::memcpy(&now, base + shmc::detail::kTableHeaderOffset, 4);
  EXPECT_GT(now, 0u);
  raw.Detach(base, mapped);
}

TEST(ShmcCli, LiveWriterIsRespected) {
  Names<shmc::POSIX> n;
  shmc::ShmHashMap<uint64_t, shmc::POSIX> m;
  ASSERT_TRUE(m.InitForWrite(n.base, 100, 64, 100));
  ASSERT_TRUE(m.Insert(1, "x"));
  std::string seg = "posix:" + n.base.str();
  Result r = Shmc({"info", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0);
  JValue info = ParseOrFail(r.out);
  const JValue* w = info.get("segments")->arr[1].get("writer");
  ASSERT_EQ(w->type, JValue::kObject);
  EXPECT_EQ(w->number("pid"), getpid());
  EXPECT_TRUE(w->get("alive")->b);
  r = Shmc({"check", seg, "--fix"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("writer_busy"), std::string::npos) << r.err;
  r = Shmc({"rm", seg});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("alive"), std::string::npos) << r.err;
  r = Shmc({"rm", seg, "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(ShmcCli, BadNamesAndBadSegments) {
  // Usage errors: exit 2 and the usage text.
  for (std::vector<std::string> args :
       {std::vector<std::string>{}, {"frobnicate"}, {"info"},
        {"info", "nocolon"}, {"info", "posix:/a/b"}, {"info", "sysv:abc"},
        {"info", "tape:/x"}, {"dump", "posix:/x", "--limit", "-3"},
        {"dump", "posix:/x", "--format", "xml"}, {"ls", "--fix"},
        {"info", "posix:/x", "--limit"}}) {
    Result r = Shmc(args);
    EXPECT_EQ(r.exit_code, 2) << (args.empty() ? "" : args[0]) << " "
                              << (args.size() > 1 ? args[1] : "");
    EXPECT_NE(r.err.find("usage"), std::string::npos);
  }
  // Missing: exit 1.
  Result r = Shmc({"info", "posix:/shmc_cli_test_surely_missing"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no such segment"), std::string::npos) << r.err;
  // Another program's segment: exit 1, skipped by ls, shown with --all.
  ScopedKey<shmc::POSIX> foreign("foreign");
  int fd = shm_open(foreign.str().c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "PostgreSQL shared memory....", 28), 28);
  close(fd);
  r = Shmc({"info", "posix:" + foreign.str()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a shmc segment"), std::string::npos) << r.err;
  r = Shmc({"ls", "--json"});
  EXPECT_EQ(r.out.find(foreign.str().substr(1)), std::string::npos);
  r = Shmc({"ls", "--json", "--all"});
  EXPECT_NE(r.out.find(foreign.str().substr(1)), std::string::npos);
  r = Shmc({"rm", "posix:" + foreign.str()});
  EXPECT_EQ(r.exit_code, 1) << "never removes another program's segment";
  // Truncated below the header: exit 3; rm still removes it.
  ScopedKey<shmc::POSIX> trunc("trunc");
  fd = shm_open(trunc.str().c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_EQ(write(fd, "shmc.seg and then nothing", 25), 25);
  close(fd);
  r = Shmc({"check", "posix:" + trunc.str()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  r = Shmc({"rm", "posix:" + trunc.str()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A flipped header byte: corrupted, exit 3.
  ScopedKey<shmc::POSIX> bad("bad");
  {
    shmc::ShmArray<Node16, shmc::POSIX> a;
    ASSERT_TRUE(a.InitForWrite(bad, 10));
  }
  shmc::POSIX raw;
  size_t mapped = 0;
  char* base = static_cast<char*>(raw.Attach(bad, 0, 0, &mapped));
  ASSERT_NE(base, nullptr);
  base[40] ^= 0x10;  // total_size
  raw.Detach(base, mapped);
  r = Shmc({"info", "posix:" + bad.str()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("corrupted"), std::string::npos) << r.err;
}

// `rm` removes only what proves to be shmc's: an empty file, a device node,
// another program's data and an unrelated sibling of a sorted array's
// directory all survive it, with or without --force.
TEST(ShmcCli, RmLeavesWhatIsNotShmcs) {
  char tmpl[] = "/tmp/shmc_cli_rm_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto exists = [](const std::string& f) {
    struct stat st;
    return lstat(f.c_str(), &st) == 0;
  };
  auto make = [](const std::string& f, const std::string& bytes) {
    int fd = open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
    close(fd);
  };
  std::vector<std::string> victims;
  make(dir + "/empty", "");
  victims.push_back(dir + "/empty");
  make(dir + "/text", std::string(1024, 'a'));
  victims.push_back(dir + "/text");
  if (mknod((dir + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    victims.push_back(dir + "/null");
  }
  make(dir + "/pair0", std::string(600, 'b'));  // looks like a map's pair
  make(dir + "/pair1", "");
  for (const std::string& v : victims) {
    for (bool force : {false, true}) {
      std::vector<std::string> args = {"rm", "file:" + v};
      if (force) args.push_back("--force");
      Result r = Shmc(args);
      EXPECT_EQ(r.exit_code, 1) << v << " " << r.err;
      EXPECT_TRUE(exists(v)) << "removed " << v;
    }
  }
  for (bool force : {false, true}) {
    Result r = Shmc(force ? std::vector<std::string>{"rm", "file:" + dir +
                                                     "/pair", "--force"}
                          : std::vector<std::string>{"rm", "file:" + dir +
                                                     "/pair"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(exists(dir + "/pair0") && exists(dir + "/pair1"));
  }
  // An empty POSIX object is not a segment either.
  ScopedKey<shmc::POSIX> empty("empty");
  int fd = shm_open(empty.str().c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  Result r = Shmc({"rm", "posix:" + empty.str(), "--force"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("not a shmc segment"), std::string::npos) << r.err;
  EXPECT_TRUE(exists("/dev/shm" + empty.str()));

  // A sorted array whose second slot name holds someone else's file: rm
  // takes the directory and its data, and leaves the file.
  std::string sa = dir + "/sa";
  {
    shmc::ShmSortedArray<uint64_t, uint64_t, shmc::MAPFILE> a;
    std::vector<std::pair<uint64_t, uint64_t>> recs = {{1, 1}, {2, 2}};
    ASSERT_TRUE(a.Build(sa, recs)) << a.last_error().message;
  }
  ASSERT_TRUE(exists(sa + "0"));
  make(sa + "1", "their data");
  r = Shmc({"rm", "file:" + sa, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(exists(sa));
  EXPECT_FALSE(exists(sa + "0"));
  EXPECT_TRUE(exists(sa + "1")) << "removed an unrelated sibling";
  // And a builder does not remove it either: the build stops instead.
  {
    shmc::ShmSortedArray<uint64_t, uint64_t, shmc::MAPFILE> a;
    std::vector<std::pair<uint64_t, uint64_t>> recs = {{1, 1}};
    ASSERT_TRUE(a.Build(sa, recs)) << a.last_error().message;  // slot 0
    EXPECT_FALSE(a.Build(sa, recs));                            // slot 1
    EXPECT_NE(a.last_error().message.find("left alone"), std::string::npos)
        << a.last_error().message;
  }
  EXPECT_TRUE(exists(sa + "1"));
  std::string cmd = "rm -rf '" + dir + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
}

// A one-key map at n, then `damage` done to its index segment's bytes.
::testing::AssertionResult DamagedMap(const Names<shmc::POSIX>& n,
                                      const std::function<void(char*)>& damage) {
  {
    shmc::ShmHashMap<uint64_t, shmc::POSIX> m;
    if (!m.InitForWrite(n.base, 100, 32, 100) || !m.Insert(1, "v")) {
      return ::testing::AssertionFailure() << m.last_error().message;
    }
  }
  shmc::POSIX raw;
  size_t mapped = 0;
  char* base = static_cast<char*>(raw.Attach(n.k0, 0, 0, &mapped));
  if (base == nullptr) return ::testing::AssertionFailure() << "attach";
  damage(base);
  raw.Detach(base, mapped);
  return ::testing::AssertionSuccess();
}

// A map whose index header is damaged (its magic, its kind) is still
// removed: by rm when every segment carries shmc's magic, by rm --force
// when one's magic is damaged.
TEST(ShmcCli, RmForceRemovesADamagedMap) {
  struct Damage {
    size_t at;
    const char* what;
    bool needs_force;
  };
  for (Damage d : {Damage{0, "magic", true}, Damage{5, "magic", true},
                   Damage{12, "kind", false}, Damage{80, "checksum", false}}) {
    Names<shmc::POSIX> n;
    ASSERT_TRUE(DamagedMap(n, [&](char* index) { index[d.at] ^= 0x20; }));
    std::string seg = "posix:" + n.base.str();
    Result r = Shmc({"rm", seg});
    if (d.needs_force) {
      EXPECT_EQ(r.exit_code, 1) << d.what << ": " << r.err;
      EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
      EXPECT_EQ(access(("/dev/shm" + n.k1).c_str(), F_OK), 0)
          << "without --force nothing of it goes";
      r = Shmc({"rm", seg, "--force"});
    }
    EXPECT_EQ(r.exit_code, 0) << d.what << ": " << r.err;
    EXPECT_NE(access(("/dev/shm" + n.k0).c_str(), F_OK), 0) << d.what;
    EXPECT_NE(access(("/dev/shm" + n.k1).c_str(), F_OK), 0) << d.what;
  }
}

// A map whose index segment was overwritten whole (no magic left: it
// cannot be proven shmc's): rm --force removes the values segment, leaves
// the index, says why, and exits 1, as rm(1) does when an operand fails.
TEST(ShmcCli, RmThatLeavesASegmentExitsNonZero) {
  Names<shmc::POSIX> n;
  ASSERT_TRUE(DamagedMap(n, [](char* index) { std::memset(index, 'x', 512); }));
  Result r = Shmc({"rm", "posix:" + n.base.str(), "--force", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("left posix:" + n.k0), std::string::npos) << r.err;
  JValue j = ParseOrFail(r.out);
  EXPECT_EQ(j.get("removed")->arr.size(), 1u) << r.out;
  EXPECT_EQ(j.get("left")->arr.size(), 1u) << r.out;
  EXPECT_EQ(access(("/dev/shm" + n.k0).c_str(), F_OK), 0) << "not shmc's";
  EXPECT_NE(access(("/dev/shm" + n.k1).c_str(), F_OK), 0);
}

TEST(ShmcCli, PermissionDenied) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop to another uid";
  ScopedKey<shmc::MAPFILE> k;
  {
    shmc::ShmArray<Node16, shmc::MAPFILE> a;
    ASSERT_TRUE(a.InitForWrite(k, 10));
  }
  ASSERT_EQ(chmod(k.str().c_str(), 0600), 0);
  Result r = Shmc({"info", "file:" + k.str()}, 65534);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("ermission denied"), std::string::npos) << r.err;
}

// Random header bytes: every answer is an exit code with a message, never
// a crash.
TEST(ShmcCli, FuzzedHeadersNeverCrashTheTool) {
  Names<shmc::POSIX> n;
  ASSERT_TRUE(FillMap(n.base, 200, 32, 200, 50, "v"));
  ScopedKey<shmc::POSIX> qk("q");
  {
    shmc::ShmQueue<shmc::POSIX> q;
    ASSERT_TRUE(q.InitForWrite(qk, 4096));
    ASSERT_TRUE(q.Push("abc"));
  }
  std::mt19937_64 rng(12345);
  const std::vector<std::string> keys = {n.k0, n.k1, qk.str()};
  for (int round = 0; round < 150; ++round) {
    const std::string& key = keys[round % keys.size()];
    shmc::POSIX raw;
    size_t mapped = 0;
    char* base = static_cast<char*>(raw.Attach(key, 0, 0, &mapped));
    ASSERT_NE(base, nullptr);
    // Damage 1-4 bytes of the first 1 KiB (header and container header).
    std::vector<std::pair<size_t, char>> saved;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % 1024;
      saved.push_back({at, base[at]});
      base[at] = static_cast<char>(rng());
    }
    std::string seg = "posix:" + (key == qk.str() ? key : n.base.str());
    for (const char* cmd : {"info", "check"}) {
      Result r = Shmc({cmd, seg, "--json"});
      ASSERT_EQ(r.signal, 0) << cmd << " crashed in round " << round;
      ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 3)
          << cmd << " exit " << r.exit_code << " round " << round;
      if (r.exit_code != 0) {
        EXPECT_FALSE(r.err.empty() && r.out.empty());
      }
      if (!r.out.empty()) ParseOrFail(r.out);
    }
    Result d = Shmc({"dump", seg, "--limit", "10"});
    ASSERT_EQ(d.signal, 0) << "dump crashed in round " << round;
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      base[it->first] = it->second;
    }
    raw.Detach(base, mapped);
  }
}

}  // namespace
