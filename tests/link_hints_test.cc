// How ShmLinkTable reads chains: read-ahead hints (shmc/detail/link_hints.h)
// -- the hint layout lets a reader learn a block of m nodes in about
// log2(m) rounds, the writer names every node's hint by that layout, and a
// hint is never trusted: damaged hints change no read and no health
// check -- and truncated reads, which visit only the nodes they copy.
#include "shmc/detail/link_hints.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "shmc/shm_link_table.h"
#include "tests/support/raw_segment.h"
#include "tests/support/test_util.h"
#include "tests/support/values.h"

namespace {

using shmc_test::ScopedKey;
using Table = shmc::ShmLinkTable<shmc::POSIX>;
namespace sd = shmc::detail;

constexpr size_t kNodeSize = 32;
constexpr size_t kNodesAt = sizeof(sd::SegmentHeader) + sizeof(sd::LinkTableHeader);
constexpr size_t kStride = Table::NodeCost(kNodeSize);

// The least T with 2^T - 1 >= m: the rounds a block of m nodes needs.
uint32_t RoundsFor(uint32_t m) {
  uint32_t t = 0;
  while ((1u << t) - 1 < m) ++t;
  return t;
}

TEST(ChainHints, EveryBlockIsLearnedInLogRounds) {
  const sd::ChainHintTable& hints = sd::ChainHints();
  for (uint32_t m = 1; m <= sd::kChainHintBlock; ++m) {
    const uint8_t* to = hints.to[m];
    std::vector<int> hinted(m, 0);
    for (uint32_t p = 0; p < m; ++p) {
      if (to[p] == 0) continue;
      ASSERT_GT(to[p], p + 1) << "m " << m << " p " << p << ": no later node";
      ASSERT_LT(to[p], m) << "m " << m << " p " << p;
      ++hinted[to[p]];
    }
    for (uint32_t p = 0; p < m; ++p) {
      EXPECT_LE(hinted[p], 1) << "m " << m << " p " << p << " hinted twice";
    }
    for (uint32_t p = m; p < sd::kChainHintBlock; ++p) {
      ASSERT_EQ(to[p], 0) << "m " << m << " p " << p << ": past the block";
    }
    // Round at which each node is learned, following links and hints
    // together (positions only grow along both, so one pass in order).
    std::vector<uint32_t> round(m, ~0u);
    round[0] = 0;
    for (uint32_t p = 0; p < m; ++p) {
      ASSERT_NE(round[p], ~0u) << "m " << m << " p " << p << " unreached";
      if (p + 1 < m) round[p + 1] = std::min(round[p + 1], round[p] + 1);
      if (to[p] != 0) round[to[p]] = std::min(round[to[p]], round[p] + 1);
    }
    uint32_t last = 0;
    for (uint32_t r : round) last = std::max(last, r);
    EXPECT_LE(last + 1, RoundsFor(m)) << "m " << m;
  }
  // 128 nodes in 8 rounds, where links alone take 128.
  EXPECT_EQ(RoundsFor(sd::kChainHintBlock), 8u);
}

class LinkHints : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(t_.InitForWrite(key_, kNodeSize, 4000)) << t_.last_error().message;
  }
  sd::LinkNodeHead* Node(shmc_test::RawSegment& raw, uint64_t i) {
    return raw.at<sd::LinkNodeHead>(kNodesAt + i * kStride);
  }
  // The chain of a value, by its links.
  std::vector<uint32_t> Chain(shmc_test::RawSegment& raw, shmc::link_buf_t lb,
                              size_t len) {
    std::vector<uint32_t> chain;
    uint32_t i = lb.head();
    for (size_t k = 0; k < (len + kNodeSize - 1) / kNodeSize; ++k) {
      chain.push_back(i);
      i = Node(raw, i)->next.load();
    }
    return chain;
  }
  ScopedKey<shmc::POSIX> key_{"hints"};
  Table t_;
};

TEST_F(LinkHints, WriterNamesEachNodesHintByTheLayout) {
  // Churn first, so that chains are scattered over the pool as they are in
  // a long-lived segment.
  std::mt19937 rng(7);
  std::vector<shmc::link_buf_t> junk;
  for (int i = 0; i < 200; ++i) {
    std::string v = shmc_test::MakeValue(i, 3, 1 + rng() % 700);
    junk.push_back(t_.New(v.data(), v.size()));
    if (rng() % 2) t_.Free(junk[rng() % junk.size()]);  // stale: no-op
  }
  const sd::ChainHintTable& hints = sd::ChainHints();
  for (size_t nodes : {1, 2, 3, 17, 64, 128, 129, 300}) {
    size_t len = nodes * kNodeSize - 5;
    std::string v = shmc_test::MakeValue(nodes, 9, len);
    shmc::link_buf_t lb = t_.New(v.data(), v.size());
    ASSERT_TRUE(lb) << nodes;
    shmc_test::RawSegment raw(key_);
    ASSERT_TRUE(raw.ok());
    std::vector<uint32_t> chain = Chain(raw, lb, len);
    ASSERT_EQ(chain.size(), nodes);
    for (size_t k = 0; k < nodes; ++k) {
      size_t block = k / sd::kChainHintBlock * sd::kChainHintBlock;
      uint32_t m = static_cast<uint32_t>(
          std::min<size_t>(nodes - block, sd::kChainHintBlock));
      uint8_t to = hints.to[m][k - block];
      uint32_t want = to == 0 ? 0 : chain[block + to];
      EXPECT_EQ(Node(raw, chain[k])->hint.load(), want)
          << nodes << " nodes, node " << k;
    }
    std::string out;
    ASSERT_TRUE(t_.Read(lb, &out));
    EXPECT_EQ(out, v);
  }
}

TEST_F(LinkHints, DamagedHintsChangeNoReadAndNoHealthCheck) {
  std::vector<std::pair<shmc::link_buf_t, std::string>> values;
  for (size_t len : {40, 100, 1000, 4100, 9000}) {
    std::string v = shmc_test::MakeValue(len, 5, len);
    shmc::link_buf_t lb = t_.New(v.data(), v.size());
    ASSERT_TRUE(lb) << len;
    values.push_back({lb, v});
  }
  std::mt19937 rng(11);
  const uint32_t nodes = static_cast<uint32_t>(t_.total_nodes());
  // Every kind of wrong hint: none, past the pool, the largest index, a
  // node of another value, a free node, the node itself, random bits.
  const uint32_t bad[] = {0, nodes + 1, 0xffffffffu, values[0].first.head(),
                          nodes, 1};
  for (int round = 0; round < 20; ++round) {
    {
      shmc_test::RawSegment raw(key_);
      ASSERT_TRUE(raw.ok());
      for (uint64_t i = 1; i <= nodes; ++i) {
        uint32_t h = round == 0   ? static_cast<uint32_t>(i)
                     : round % 2  ? bad[rng() % (sizeof(bad) / sizeof(bad[0]))]
                                  : static_cast<uint32_t>(rng());
        Node(raw, i)->hint.store(h);
      }
    }
    for (const auto& [lb, v] : values) {
      std::string out;
      ASSERT_TRUE(t_.Read(lb, &out)) << "round " << round;
      ASSERT_EQ(out, v) << "round " << round;
      std::string seen;
      ASSERT_TRUE(t_.Visit(lb, [&](const char* p, size_t n) { seen.append(p, n); }));
      ASSERT_EQ(seen, v) << "round " << round;
    }
    Table::HealthStat hs;
    ASSERT_TRUE(t_.HealthCheck(&hs, false));
    EXPECT_EQ(hs.leaked_nodes, 0u);
    EXPECT_EQ(hs.total_link_bufs, values.size());
  }
}

TEST_F(LinkHints, ATruncatedReadVisitsOnlyTheNodesItCopies) {
  const size_t len = 300 * kNodeSize + 7;  // three blocks of hints
  std::string v = shmc_test::MakeValue(1, 2, len);
  shmc::link_buf_t lb = t_.New(v.data(), v.size());
  ASSERT_TRUE(lb);
  shmc_test::RawSegment raw(key_);
  ASSERT_TRUE(raw.ok());
  std::vector<uint32_t> chain = Chain(raw, lb, len);
  ASSERT_EQ(chain.size(), 301u);
  // The value's node 200 is taken from it behind the table's back: a read
  // that reaches it fails, one that stops before it does not.
  Node(raw, chain[200])->tag.store(0);
  std::string whole;
  EXPECT_FALSE(t_.Read(lb, &whole));
  for (size_t want : {size_t{1}, kNodeSize, kNodeSize + 1, 130 * kNodeSize,
                      200 * kNodeSize}) {
    std::string buf(want, '\0');
    size_t n = want;
    ASSERT_TRUE(t_.Read(lb, buf.data(), &n)) << want;
    EXPECT_EQ(n, len) << want << ": the full length";
    EXPECT_EQ(buf, v.substr(0, want)) << want;
  }
  std::string buf(200 * kNodeSize + 1, '\0');
  size_t n = buf.size();
  EXPECT_FALSE(t_.Read(lb, buf.data(), &n)) << "its last byte is in node 200";
  // A length-only read (no buffer) visits the head alone.
  n = 0;
  EXPECT_TRUE(t_.Read(lb, nullptr, &n));
  EXPECT_EQ(n, len);
}

}  // namespace
