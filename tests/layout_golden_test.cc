// Golden layouts, one per container and layout version. Each container
// makes a segment of a fixed shape; its header must say exactly what the
// table of its layout version says: where its data starts, how big it is,
// and its params. Moving anything a reader relies on changes one of those
// numbers, and then the container's kLayoutVersion must be bumped (so that
// old segments are refused, not misread) and a table added here. The
// shared headers inside the segments are pinned field by field as well.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shmc/detail/fixed_layout.h"
#include "shmc/detail/segment_header.h"
#include "shmc/percentile.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_double_table.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/shm_sorted_array.h"
#include "shmc/shm_sync_buf.h"
#include "tests/support/raw_segment.h"
#include "tests/support/test_util.h"

namespace {

using shmc::POSIX;
namespace sd = shmc::detail;

struct Golden {
  uint32_t header_size;
  uint64_t total_size;
  std::vector<std::pair<std::string, uint64_t>> params;
};

// (container, layout version) -> what its test segment's header says.
const std::map<std::pair<std::string, uint32_t>, Golden>& Goldens() {
  static const std::map<std::pair<std::string, uint32_t>, Golden> g = {
#include "tests/layout_golden.inc"
  };
  return g;
}

struct Seen {
  uint32_t kind = 0, layout_version = 0, header_size = 0;
  uint64_t total_size = 0;
  std::vector<std::pair<std::string, uint64_t>> params;
};

Seen ReadHeader(const std::string& posix_key) {
  Seen s;
  shmc_test::RawSegment raw(posix_key);
  if (!raw.ok()) return s;
  const auto* h = raw.at<sd::SegmentHeader>(0);
  s.kind = h->kind;
  s.layout_version = h->layout_version;
  s.header_size = h->header_size;
  s.total_size = h->total_size;
  for (uint32_t i = 0; i < h->param_count && i < sd::kMaxParams; ++i) {
    s.params.push_back({std::string(h->params[i].name), h->params[i].value});
  }
  return s;
}

// Compares a segment with its golden table; with SHMC_PRINT_GOLDEN set,
// prints the table entry instead (to add one after a deliberate change).
void ExpectGolden(const std::string& name, uint32_t version,
                  const std::string& posix_key) {
  Seen s = ReadHeader(posix_key);
  ASSERT_NE(s.kind, 0u) << name << ": no segment " << posix_key;
  EXPECT_EQ(s.layout_version, version) << name;
  if (getenv("SHMC_PRINT_GOLDEN") != nullptr) {
    std::string p;
    for (const auto& kv : s.params) {
      p += "{\"" + kv.first + "\", " + std::to_string(kv.second) + "ULL}, ";
    }
    printf("{{\"%s\", %u}, {%u, %lluULL, {%s}}},\n", name.c_str(), version,
           s.header_size, static_cast<unsigned long long>(s.total_size),
           p.c_str());
    return;
  }
  auto it = Goldens().find({name, version});
  ASSERT_NE(it, Goldens().end())
      << name << " layout version " << version
      << " has no golden table: add one (SHMC_PRINT_GOLDEN=1 prints it)";
  const Golden& g = it->second;
  EXPECT_EQ(s.header_size, g.header_size)
      << name << ": data moved; bump its kLayoutVersion";
  EXPECT_EQ(s.total_size, g.total_size)
      << name << ": size changed; bump its kLayoutVersion";
  EXPECT_EQ(s.params, g.params)
      << name << ": params changed; bump its kLayoutVersion";
}

struct Node16 {
  uint64_t key;
  uint64_t val;
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};
struct Node40 {
  uint64_t key;
  char pad[32];
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};
struct Key24 {
  char b[24];
  bool operator==(const Key24& o) const {
    return std::memcmp(b, o.b, sizeof(b)) == 0;
  }
  bool operator<(const Key24& o) const {
    return std::memcmp(b, o.b, sizeof(b)) < 0;
  }
};

class LayoutGolden : public ::testing::Test {
 protected:
  std::string Key(const char* what) {
    return "/shmc_golden_" + std::to_string(getpid()) + "_" + what;
  }
  void TearDown() override {
    for (const std::string& k : made_) POSIX().Unlink(k);
  }
  std::string Made(const std::string& k) {
    made_.push_back(k);
    return k;
  }
  // Makes `c` at a fresh key with InitForWrite(key, args...) and checks
  // its segment against the golden table `name`.
  template <class C, class... Args>
  void MakeAndCheck(const char* name, C* c, Args... args) {
    std::string k = Made(Key(name));
    ASSERT_TRUE(c->InitForWrite(k, args...)) << c->last_error().message;
    ExpectGolden(name, c->kLayoutVersion, k);
  }
  std::vector<std::string> made_;
};

TEST_F(LayoutGolden, Array) {
  shmc::ShmArray<Node40, POSIX> a;
  MakeAndCheck("array", &a, 1000);
}

TEST_F(LayoutGolden, HashTable) {
  shmc::ShmHashTable<uint64_t, Node16, POSIX> t;
  MakeAndCheck("hash_table_16", &t, 10000);
  shmc::ShmHashTable<uint64_t, Node40, POSIX> t40;
  MakeAndCheck("hash_table_40", &t40, 777);
}

TEST_F(LayoutGolden, HashTableM) {
  shmc::ShmHashTableM<uint64_t, Node16, POSIX> t;
  MakeAndCheck("hash_table_m", &t, 1000, 20);
}

TEST_F(LayoutGolden, LinkTableAndMap) {
  shmc::ShmLinkTable<POSIX> l;
  MakeAndCheck("link_table", &l, 100, 500);
  std::string m = Key("map");
  auto keys = shmc::ShmHashMap<Key24, POSIX>::SegmentKeys(m);
  Made(keys.first);
  Made(keys.second);
  shmc::ShmHashMap<Key24, POSIX> map;
  ASSERT_TRUE(map.InitForWrite(m, 3000, 64, 2000))
      << map.last_error().message;
  ExpectGolden("map_index", shmc::ShmHashTable<int, Node16>::kLayoutVersion,
               keys.first);
  ExpectGolden("map_values", l.kLayoutVersion, keys.second);
}

TEST_F(LayoutGolden, ExtentTable) {
  shmc::ShmExtentTable<POSIX> e;
  MakeAndCheck("extent_table", &e, uint64_t{80000});
}

TEST_F(LayoutGolden, QueueAndSyncBuf) {
  shmc::ShmQueue<POSIX> q;
  MakeAndCheck("queue", &q, 1 << 16);
  shmc::ShmSyncBuf<POSIX> b;
  MakeAndCheck("sync_buf", &b, 1 << 16);
}

TEST_F(LayoutGolden, DoubleBufAndPercentile) {
  shmc::ShmDoubleBuf<POSIX> d;
  MakeAndCheck("double_buf", &d, 5000, 16);
  shmc::ShmDoubleTable<uint64_t, Node16, POSIX> dt;
  MakeAndCheck("double_table", &dt, 1000, 16);
  shmc::ShmPercentile<POSIX> pc;
  MakeAndCheck("percentile", &pc, 0.99, 8);
}

TEST_F(LayoutGolden, SortedArray) {
  std::string k = Made(Key("sorted"));
  Made(sd::SortedDataKey(k, 0));
  Made(sd::SortedDataKey(k, 1));
  shmc::ShmSortedArray<uint64_t, Node40, POSIX> s;
  std::vector<std::pair<uint64_t, Node40>> recs(100);
  for (uint64_t i = 0; i < recs.size(); ++i) recs[i].first = i * 3;
  ASSERT_TRUE(s.Build(k, recs)) << s.last_error().message;
  ExpectGolden("sorted_dir", s.kLayoutVersion, k);
  // The first build goes to slot 1 or 0: whichever exists.
  std::string data = sd::SortedDataKey(k, 0);
  if (ReadHeader(data).kind == 0) data = sd::SortedDataKey(k, 1);
  ExpectGolden("sorted_data", s.kLayoutVersion, data);
}

#define FIELD(T, f) \
  {#f, offsetof(T, f), sizeof(static_cast<T*>(nullptr)->f)}

struct Field {
  const char* name;
  size_t offset, size;
};
bool operator==(const Field& a, const Field& b) {
  return std::string(a.name) == b.name && a.offset == b.offset &&
         a.size == b.size;
}
std::ostream& operator<<(std::ostream& os, const Field& f) {
  return os << f.name << "@" << f.offset << "+" << f.size;
}

// The container headers that follow the segment header, field by field.
TEST(LayoutGoldenStructs, ContainerHeaders) {
  using TH = sd::HashTableHeader;
  std::vector<Field> table = {FIELD(TH, overflow_depth),
                              FIELD(TH, overflow_allocs),
                              {"sizeof", sizeof(TH), 0}};
  std::vector<Field> want_table = {{"overflow_depth", 0, 4},
                                   {"overflow_allocs", 8, 8},
                                   {"sizeof", 64, 0}};
  EXPECT_EQ(table, want_table) << "bump kTableLayoutVersion";
  EXPECT_EQ(sd::kTableHeaderOffset, 512u);
  EXPECT_EQ(sd::kTableBitmapOffset, 576u);
  using SD = sd::SortedDirHeader;
  std::vector<Field> dir = {FIELD(SD, current), FIELD(SD, publish_time_ns),
                            FIELD(SD, builds), {"sizeof", sizeof(SD), 0}};
  std::vector<Field> want_dir = {{"current", 0, 8},
                                 {"publish_time_ns", 8, 8},
                                 {"builds", 16, 8},
                                 {"sizeof", 64, 0}};
  EXPECT_EQ(dir, want_dir) << "bump kSortedLayoutVersion";
  using SA = sd::SortedDataHeader;
  std::vector<Field> data = {FIELD(SA, sealed), FIELD(SA, checksum),
                             FIELD(SA, build_ns), {"sizeof", sizeof(SA), 0}};
  std::vector<Field> want_data = {{"sealed", 0, 8},
                                  {"checksum", 8, 8},
                                  {"build_ns", 16, 8},
                                  {"sizeof", 64, 0}};
  EXPECT_EQ(data, want_data) << "bump kSortedLayoutVersion";
  using EH = sd::ExtentTableHeader;
  std::vector<Field> ext = {FIELD(EH, top),        FIELD(EH, reserved),
                            FIELD(EH, free_granules), FIELD(EH, bufs),
                            FIELD(EH, buf_bytes),  FIELD(EH, next_tag),
                            FIELD(EH, intent),     FIELD(EH, nonempty),
                            FIELD(EH, list),       {"sizeof", sizeof(EH), 0}};
  std::vector<Field> want_ext = {
      {"top", 0, 8},        {"reserved", 8, 8},  {"free_granules", 16, 8},
      {"bufs", 24, 8},      {"buf_bytes", 32, 8}, {"next_tag", 40, 4},
      {"intent", 64, 64},   {"nonempty", 128, 72}, {"list", 200, 2128},
      {"sizeof", 2328, 0}};
  EXPECT_EQ(ext, want_ext) << "bump kExtentLayoutVersion";
  using EI = sd::ExtentIntent;
  std::vector<Field> intent = {FIELD(EI, op), FIELD(EI, slot),
                               FIELD(EI, new_lb), FIELD(EI, old_lb)};
  std::vector<Field> want_intent = {
      {"op", 0, 4}, {"slot", 8, 8}, {"new_lb", 16, 8}, {"old_lb", 24, 8}};
  EXPECT_EQ(intent, want_intent) << "bump kExtentLayoutVersion";
  // An extent's head word: tag, size, the mark of the extent below, pad;
  // a free extent's links word.
  EXPECT_EQ(sd::ExtentHead(0x12345678, 1000, 5), 0xa00003e812345678ULL);
  EXPECT_EQ(sd::ExtentHead(0, 3, 0, 3), 0x1800000300000000ULL);
  EXPECT_EQ(sd::ExtentHead(7, sd::kExtentMaxGranules, 7, 2),
            0xf7ffffff00000007ULL);
  EXPECT_EQ(sd::ExtentLinks(5, 9), 0x0000000900000005ULL);
}

// The fixed-node layouts the tool reads: a table's tag of slot s lies in
// its bucket's little-endian tag words.
TEST(LayoutGoldenStructs, TableTagBytes) {
  sd::TableGeometry g = sd::TableGeometry::ForCapacity(1000, 4);
  sd::FixedLayout lay = sd::FixedLayout::Table(16, 8, 1, g);
  uint64_t tags = sd::TableTagsOffset(g.main_buckets);
  EXPECT_EQ(lay.tag_byte_offset(0), tags);
  EXPECT_EQ(lay.tag_byte_offset(3), tags + 3);
  EXPECT_EQ(lay.tag_byte_offset(4), tags + 4);
  sd::FixedLayout wide = sd::FixedLayout::Table(40, 8, 1, g);
  g.slots = 4;
  EXPECT_EQ(wide.nodes_offset() % 64, 0u);
  sd::TableGeometry g8 = sd::TableGeometry::ForCapacity(1000, 8);
  sd::FixedLayout lay8 = sd::FixedLayout::Table(8, 8, 1, g8);
  uint64_t tags8 = sd::TableTagsOffset(g8.main_buckets);
  EXPECT_EQ(lay8.tag_byte_offset(7), tags8 + 7);
  EXPECT_EQ(lay8.tag_byte_offset(8), tags8 + 8);
  EXPECT_EQ(lay8.tag_byte_offset(13), tags8 + 13);
}

}  // namespace
