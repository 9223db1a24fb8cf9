// A damaged ShmLinkTable segment (the values of every ShmHashMap) never
// becomes a bad memory access: links, lengths and the intent record read
// from shared memory are checked against the pool before use. Each case
// damages a real segment through a second mapping, then runs the operation
// that used to follow the bad value out of bounds, in a child process so
// that a crash fails the test instead of ending it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "shmc/shm_link_table.h"
#include "tests/support/raw_segment.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::RunInChild;
using shmc_test::ScopedKey;
using Table = shmc::ShmLinkTable<shmc::POSIX>;

constexpr size_t kNodeSize = 32;  // 4 data words: stride 48
constexpr size_t kNodes = 100;
constexpr size_t kHeaderEnd = 512;                  // SegmentHeader
constexpr size_t kNodesAt = kHeaderEnd + 256;       // + LinkTableHeader
constexpr size_t kStride = 16 + kNodeSize;

// The segment's bytes, mapped read-write beside the table.
class Raw : public shmc_test::RawSegment {
 public:
  using RawSegment::RawSegment;
  shmc::detail::LinkTableHeader* hdr() {
    return at<shmc::detail::LinkTableHeader>(kHeaderEnd);
  }
  shmc::detail::LinkNodeHead* node(uint64_t i) {
    return at<shmc::detail::LinkNodeHead>(kNodesAt + i * kStride);
  }
};

class HostileLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(t_.InitForWrite(key_, kNodeSize, kNodes))
        << t_.last_error().message;
    char buf[100] = {};
    lb_ = t_.New(buf, 100);  // four nodes
    ASSERT_TRUE(lb_);
    raw_.reset(new Raw(key_));
    ASSERT_TRUE(raw_->ok());
  }

  ScopedKey<shmc::POSIX> key_;
  Table t_;
  shmc::link_buf_t lb_;
  std::unique_ptr<Raw> raw_;
};

// Site 1: HealthCheck read a chain node's tag before checking its index.
TEST_F(HostileLinkTest, ChainLinkOutOfRangeIsBadLinkedNotAnAccess) {
  raw_->node(lb_.head())->next.store(0xfffffff0u);
  int rc = RunInChild([&] {
    std::string v;
    if (t_.Read(lb_, &v)) return 2;
    Table::HealthStat hs;
    if (!t_.HealthCheck(&hs, false)) return 3;
    if (hs.bad_linked_link_bufs != 1) return 4;
    if (!t_.HealthCheck(&hs, true) || hs.cleared_link_bufs != 1) return 5;
    if (!t_.HealthCheck(&hs, false) || hs.bad_linked_link_bufs != 0 ||
        hs.leaked_nodes != 0 || hs.total_free_nodes != kNodes) {
      return 6;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// Site 2: New followed free_head and the free list's links with no range
// check, writing the value wherever they pointed.
TEST_F(HostileLinkTest, FreeListOutOfRangeStopsTheWriteBeforeItWrites) {
  for (uint32_t bad : {0xffffffffu, static_cast<uint32_t>(kNodes + 1)}) {
    SCOPED_TRACE(bad);
    uint32_t saved = raw_->hdr()->free_head.load();
    raw_->hdr()->free_head.store(bad);
    int rc = RunInChild([&] {
      char buf[200] = {};
      if (t_.New(buf, 10)) return 2;
      if (t_.last_error().code != shmc::ErrorCode::kCorrupted) return 3;
      if (t_.last_error().message.find("free list") == std::string::npos) {
        return 4;
      }
      return 0;
    });
    EXPECT_EQ(rc, 0);
    raw_->hdr()->free_head.store(saved);
  }
  // A link deeper in the list, reached by a value of several nodes.
  uint32_t first = raw_->hdr()->free_head.load();
  uint32_t second = raw_->node(first)->next.load();
  raw_->node(second)->next.store(0x7fffffffu);
  int rc = RunInChild([&] {
    char buf[200] = {};
    if (t_.New(buf, 200)) return 2;  // 7 nodes: would follow the bad link
    return t_.last_error().code == shmc::ErrorCode::kCorrupted ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
  // The tool's repair rebuilds the list.
  Table::HealthStat hs;
  ASSERT_TRUE(t_.HealthCheck(&hs, true));
  EXPECT_EQ(hs.bad_free_list, 1u);
  char buf[200] = {};
  EXPECT_TRUE(t_.New(buf, 200));
}

// Site 3: recovery trusted the intent record's handles and counts.
TEST_F(HostileLinkTest, DamagedIntentIsRefusedByNameAndRepairable) {
  t_.~Table();
  new (&t_) Table();
  auto& in = raw_->hdr()->intent;
  in.old_lb.store(shmc::detail::PackLink(0xffffffffu, 5));
  in.old_nodes.store(1);
  in.step.store(shmc::detail::kLinkStepFill);
  in.op.store(shmc::detail::kLinkOpFree);
  int rc = RunInChild([&] {
    Table w;
    if (w.InitForWrite(key_, kNodeSize, kNodes)) return 2;
    if (w.last_error().code != shmc::ErrorCode::kCorrupted) return 3;
    if (w.last_error().message.find("old_lb.head") == std::string::npos) {
      return 4;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0);
  for (uint32_t bad_nodes : {0u, static_cast<uint32_t>(kNodes + 1)}) {
    in.old_lb.store(lb_.packed());
    in.old_nodes.store(bad_nodes);
    Table w;
    EXPECT_FALSE(w.InitForWrite(key_, kNodeSize, kNodes));
    EXPECT_NE(w.last_error().message.find("old_nodes"), std::string::npos)
        << w.last_error().message;
  }
  // `shmc check --fix` opens for repair: the record is dropped, the scan
  // rebuilds, and the value that was live stays readable.
  Table w;
  ASSERT_TRUE(shmc::detail::LinkTableWriter<shmc::POSIX>::InitForWrite(
      w, key_, kNodeSize, kNodes, nullptr, true))
      << w.last_error().message;
  Table::HealthStat hs;
  ASSERT_TRUE(w.HealthCheck(&hs, true));
  std::string v;
  EXPECT_TRUE(w.Read(lb_, &v));
  EXPECT_EQ(v.size(), 100u);
  Table again;
  EXPECT_TRUE(again.InitForWrite(key_, kNodeSize, kNodes))
      << again.last_error().message;
}

// Site 4: Read(lb, std::string*) sized the string from the head's length
// before the chain was checked: one flipped bit, 4 GiB allocated.
TEST_F(HostileLinkTest, LengthBeyondThePoolIsNotAllocated) {
  raw_->node(lb_.head())->len.store(0xffffff00u);
  std::string v;
  EXPECT_FALSE(t_.Read(lb_, &v));
  EXPECT_LT(v.capacity(), size_t{1} << 20);
  size_t len = 8;
  char buf[8];
  EXPECT_FALSE(t_.Read(lb_, buf, &len));
  EXPECT_FALSE(t_.Free(lb_)) << "a length no chain can have is not freed";
  Table::HealthStat hs;
  ASSERT_TRUE(t_.HealthCheck(&hs, true));
  EXPECT_EQ(hs.too_short_link_bufs, 1u);
  EXPECT_EQ(t_.free_nodes(), kNodes);
}

}  // namespace
