// The `shmc` tool on the two-half containers (ShmDoubleBuf, ShmDoubleTable)
// and ShmPercentile, and `ls` naming: run as a subprocess, --json parsed by
// an independent parser.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdio>
#include <string>
#include <vector>

#include "shmc/detail/double_table_layout.h"
#include "shmc/percentile.h"
#include "shmc/shm_array.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_double_table.h"
#include "tests/support/cli_run.h"
#include "tests/support/raw_segment.h"
#include "tests/support/small_tmpfs.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::JValue;
using shmc_test::Lines;
using shmc_test::CliMapKey;
using shmc_test::Node16;
using shmc_test::ParseOrFail;
using shmc_test::Result;
using shmc_test::ScopedKey;
using shmc_test::Shmc;

TEST(ShmcCli, DoubleBufferAndPercentileInfo) {
  ScopedKey<shmc::POSIX> kd("d"), kp("p");
  shmc::ShmDoubleBuf<shmc::POSIX> db, reader;
  ASSERT_TRUE(db.InitForWrite(kd, 1000, 8));
  ASSERT_TRUE(db.Publish("config v1"));
  ASSERT_TRUE(db.Publish("config v2"));
  ASSERT_TRUE(reader.InitForRead(kd));
  auto pin = reader.ReadInPlace();
  shmc::ShmPercentile<shmc::POSIX> sp;
  ASSERT_TRUE(sp.InitForWrite(kp, 0.99, 4));
  shmc::PercentileEstimator local(0.99);
  for (int i = 0; i < 5600; ++i) {
    sp.Add(i % 100);
    local.Add(i % 100);
  }
  Result r = Shmc({"info", "posix:" + kd.str(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue info = ParseOrFail(r.out);
  const JValue* d = info.get("double_buf");
  ASSERT_NE(d, nullptr) << r.out;
  EXPECT_EQ(d->number("version"), 2);
  EXPECT_EQ(d->number("readers"), 1);
  EXPECT_EQ(d->number("pins"), 1);
  EXPECT_EQ(d->number("max_bytes"), 1024);
  EXPECT_EQ(reader.readers(), 1u) << "inspecting took no reader slot";
  r = Shmc({"info", "posix:" + kp.str(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  info = ParseOrFail(r.out);
  const JValue* p = info.get("percentile");
  ASSERT_NE(p, nullptr) << r.out;
  EXPECT_EQ(p->number("samples"), 5600);
  EXPECT_EQ(p->number("group_size"), 56);
  EXPECT_NEAR(p->number("estimate"), local.Estimate(), 1e-3);
  EXPECT_EQ(Shmc({"check", "posix:" + kp.str()}).exit_code, 0);
}


// ls shows a SysV segment's key in hex, as ipcs does, and that name (like
// the decimal one) is taken back by the other commands; a map over SysV
// keeps the decimal key its program gave. Long names widen the column.
TEST(ShmcCliLs, SysvKeysInHexAndLongNamesAligned) {
  CliMapKey<shmc::SVIPC> key;
  shmc::ShmArray<Node16, shmc::SVIPC> a;
  ASSERT_TRUE(a.InitForWrite(key.str(), 10)) << a.last_error().message;
  char hex[32];
  std::snprintf(hex, sizeof(hex), "sysv:0x%08x",
                static_cast<uint32_t>(std::stoul(key.str())));
  ScopedKey<shmc::POSIX> long_key("a_long_name_that_widens_the_ls_column");
  const std::string& long_name = long_key;
  shmc::ShmArray<Node16, shmc::POSIX> b;
  ASSERT_TRUE(b.InitForWrite(long_name, 10)) << b.last_error().message;
  Result r = Shmc({"ls", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool found = false;
  for (const JValue& row : ParseOrFail(r.out).arr) {
    found |= row.get("name")->str == hex;
    EXPECT_NE(row.get("name")->str, "sysv:" + key.str()) << "decimal";
  }
  EXPECT_TRUE(found) << hex << " not listed:\n" << r.out;
  EXPECT_EQ(Shmc({"info", hex}).exit_code, 0);
  // Text: every row's KIND column starts where the header's does.
  r = Shmc({"ls"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line, header;
  std::getline(lines, header);
  size_t kind_col = header.find("KIND");
  ASSERT_NE(kind_col, std::string::npos);
  size_t rows = 0;
  while (std::getline(lines, line)) {
    ASSERT_GT(line.size(), kind_col) << line;
    EXPECT_EQ(line[kind_col - 1], ' ') << line;
    EXPECT_NE(line[kind_col], ' ') << line;
    ++rows;
  }
  EXPECT_GE(rows, 2u);
}

// A double table's info shows both halves and the published table; check
// finds a flipped byte in the published half (and only notes one in the
// spare); dump prints the published half's nodes.
TEST(ShmcCli, DoubleTableInfoCheckDump) {
  using DT = shmc::ShmDoubleTable<uint64_t, Node16, shmc::POSIX>;
  ScopedKey<shmc::POSIX> key("dt");
  DT w, reader;
  ASSERT_TRUE(w.InitForWrite(key, 1000, 8));
  for (uint64_t v = 1; v <= 2; ++v) {
    DT::Table* t = w.BeginBuild();
    ASSERT_NE(t, nullptr) << w.last_error().message;
    for (uint64_t k = 1; k <= 300 * v; ++k) {
      bool found = false;
      volatile Node16* n = t->FindOrAlloc(k, &found);
      ASSERT_NE(n, nullptr);
      n->val = k + v;
      n->key = k;
    }
    ASSERT_EQ(w.Commit(), v);
  }
  ASSERT_TRUE(reader.InitForRead(key)) << reader.last_error().message;
  auto pin = reader.Pin();
  std::string seg = "posix:" + key.str();
  Result r = Shmc({"info", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue info = ParseOrFail(r.out);
  const JValue* d = info.get("double_table");
  ASSERT_NE(d, nullptr) << r.out;
  EXPECT_EQ(d->number("version"), 2);
  EXPECT_EQ(d->number("current_half"), 0);
  EXPECT_EQ(d->number("readers"), 1);
  EXPECT_EQ(d->number("pins"), 1);
  const JValue* table = d->get("table");
  ASSERT_NE(table, nullptr) << r.out;
  EXPECT_EQ(table->number("nonzero_nodes"), 600);
  r = Shmc({"check", seg});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Shmc({"dump", seg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 600u);
  pin.Release();

  shmc_test::RawSegment raw(key);
  ASSERT_TRUE(raw.ok());
  shmc::detail::DoubleTableLayout lay;
  std::string why;
  ASSERT_TRUE(shmc::detail::DoubleTableLayout::FromHeader(
      *raw.at<shmc::detail::SegmentHeader>(0), &lay, &why));
  // The spare half (version 1): noted, not a problem.
  raw.base()[lay.half_offset(1) + lay.table().node_offset(5)] ^= 1;
  r = Shmc({"check", seg, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\"spare_checksum_ok\":false"), std::string::npos)
      << r.out;
  // The published half: a problem, and dump refuses it.
  raw.base()[lay.half_offset(0) + lay.table().node_offset(5)] ^= 1;
  r = Shmc({"check", seg});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("fails its checksum"), std::string::npos) << r.out;
  r = Shmc({"dump", seg});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("fails its checksum"), std::string::npos) << r.err;
}

// An array made sparse (its memory reserved by parts, as shmkv's
// statistics are): info, check and dump read its holes as zeros without
// touching them, since a read fault on tmpfs allocates the page (and on a
// full one raises SIGBUS).
TEST(ShmcCli, SparseArrayHolesAreNotTouched) {
  struct Page {
    char b[4096];
  };
  ScopedKey<shmc::POSIX> key("sparse");
  shmc::ShmArray<Page, shmc::POSIX> a;
  ASSERT_TRUE(a.InitForWrite(key, 256, 0)) << a.last_error().message;
  ASSERT_TRUE(a.Reserve(3, 1));
  ASSERT_TRUE(a.Reserve(200, 0, 100));
  a[3].b[4000] = 'x';
  a[200].b[7] = 'y';
  const std::string path = "/dev/shm" + key.str();
  const long long before = shmc_test::FileBlocks(path);
  ASSERT_GT(before, 0);
  ASSERT_LT(before, 64 << 10) << "the array was reserved whole";
  const std::string seg = "posix:" + key.str();
  Result r = Shmc({"info", seg, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JValue info = ParseOrFail(r.out);
  const JValue* arr = info.get("array");
  ASSERT_NE(arr, nullptr) << r.out;
  EXPECT_EQ(arr->number("nonzero_nodes"), 2);
  EXPECT_EQ(Shmc({"check", seg}).exit_code, 0);
  r = Shmc({"dump", seg, "--format", "hex", "--limit", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<JValue> nodes = Lines(r.out);
  ASSERT_EQ(nodes.size(), 256u);
  std::string page3(8192, '0'), page200(8192, '0');
  page3.replace(8000, 2, "78");  // 'x' at byte 4000
  page200.replace(14, 2, "79");  // 'y' at byte 7
  ASSERT_NE(nodes[3].get("data"), nullptr) << r.out.substr(0, 200);
  EXPECT_EQ(nodes[3].number("index"), 3);
  EXPECT_EQ(nodes[3].get("data")->str, page3);
  EXPECT_EQ(nodes[200].get("data")->str, page200);
  EXPECT_EQ(nodes[100].get("data")->str, std::string(8192, '0'));
  EXPECT_EQ(shmc_test::FileBlocks(path), before)
      << "reading the array allocated its holes";
}

}  // namespace
