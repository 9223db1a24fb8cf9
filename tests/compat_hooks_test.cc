// The test hooks compiled only with -DUNIT_TEST (this binary's only
// definition of it): ShmLinkTable befriends ::ShmLinkTableTest<Alloc> and
// ShmHashMap befriends ::ShmHashMapTest<Alloc>, as in the reference, whose
// tests damage nodes through them and expect HealthCheck to report and fix
// the damage. Here the same kinds of damage, done through the hooks, must
// land on the real fields: HealthCheck (and readers) see each one.
#ifndef UNIT_TEST
#error "compile with -DUNIT_TEST"
#endif

#include <gtest/gtest.h>

#include <string>

#include "shmc/shm_hash_map.h"
#include "shmc/shm_link_table.h"
#include "tests/support/test_util.h"

using shmc_test::ScopedKey;

constexpr size_t kNodeSize = 32;
constexpr size_t kNodeNum = 1000;

template <class Alloc>
class ShmLinkTableTest : public ::testing::Test {
 protected:
  using Table = shmc::ShmLinkTable<Alloc>;
  using HealthStat = typename Table::HealthStat;
  void SetUp() override {
    ASSERT_TRUE(t_.InitForWrite(key_, kNodeSize, kNodeNum))
        << t_.last_error().message;
  }
  uint32_t AllocNode() { return t_.AllocNode(); }
  void FreeNode(uint32_t n) { t_.FreeNode(n); }
  volatile typename Table::NodeHead* GetNode(size_t i) { return t_.GetNode(i); }
  HealthStat Check() {
    HealthStat hs;
    EXPECT_TRUE(t_.HealthCheck(&hs, true));
    EXPECT_EQ(hs.total_free_nodes, t_.free_nodes());
    return hs;
  }

  ScopedKey<Alloc> key_;
  Table t_;
};
using Allocs = ::testing::Types<shmc::POSIX, shmc::SVIPC, shmc::ANON,
                                shmc::HEAP>;
TYPED_TEST_SUITE(ShmLinkTableTest, Allocs, shmc_test::AllocNames);

TYPED_TEST(ShmLinkTableTest, AllocAndFreeSingleNodes) {
  for (size_t i = 0; i < kNodeNum; ++i) {
    ASSERT_NE(this->AllocNode(), 0u);
    ASSERT_EQ(this->t_.free_nodes(), kNodeNum - i - 1);
  }
  EXPECT_EQ(this->AllocNode(), 0u);
  this->FreeNode(5);
  EXPECT_EQ(this->t_.free_nodes(), 1u);
  EXPECT_EQ(this->AllocNode(), 5u);
  for (uint32_t i = 1; i <= kNodeNum; ++i) this->FreeNode(i);
  EXPECT_EQ(this->t_.free_nodes(), kNodeNum);
  EXPECT_EQ(this->GetNode(0), nullptr);
  EXPECT_EQ(this->GetNode(kNodeNum + 1), nullptr);
}

TYPED_TEST(ShmLinkTableTest, DamageThroughNodeHeadIsFoundAndFixed) {
  char buf[64] = {};
  // A two-node value (40 bytes in 32-byte nodes) whose second node loses
  // its tag: bad-linked; its head goes back to the pool, the untagged
  // node is leaked and recycled.
  shmc::link_buf_t lb = this->t_.New(buf, 40);
  ASSERT_TRUE(lb);
  auto* head = this->GetNode(lb.head());
  ASSERT_NE(head, nullptr);
  auto* second = this->GetNode(head->next);
  ASSERT_NE(second, nullptr);
  second->tag = 0;
  std::string out;
  EXPECT_FALSE(this->t_.Read(lb, &out)) << "a reader sees the broken chain";
  auto hs = this->Check();
  EXPECT_EQ(hs.bad_linked_link_bufs, 1u);
  EXPECT_EQ(hs.cleared_link_bufs, 1u);
  EXPECT_EQ(hs.leaked_nodes, 1u);
  EXPECT_EQ(hs.recycled_leaked_nodes, 1u);
  EXPECT_EQ(hs.total_link_bufs, 0u);
  EXPECT_EQ(this->t_.free_nodes(), kNodeNum);

  // Length shrunk to 10 through user_node: the chain is too long but reads
  // whole; it is kept, and freeing it afterwards leaks nothing.
  lb = this->t_.New(buf, 40);
  *reinterpret_cast<volatile uint32_t*>(this->GetNode(lb.head())->user_node) =
      10;
  hs = this->Check();
  EXPECT_EQ(hs.too_long_link_bufs, 1u);
  EXPECT_EQ(hs.cleared_link_bufs, 0u);
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(hs.total_link_bufs, 1u);
  EXPECT_EQ(hs.total_link_buf_bytes, 10u);
  ASSERT_TRUE(this->t_.Read(lb, &out));
  EXPECT_EQ(out.size(), 10u);
  ASSERT_TRUE(this->t_.Free(lb));
  hs = this->Check();
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(this->t_.free_nodes(), kNodeNum);

  // Length grown to 80: too short; cleared, its nodes back in the pool.
  lb = this->t_.New(buf, 40);
  *reinterpret_cast<volatile uint32_t*>(this->GetNode(lb.head())->user_node) =
      80;
  hs = this->Check();
  EXPECT_EQ(hs.too_short_link_bufs, 1u);
  EXPECT_EQ(hs.cleared_link_bufs, 1u);
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(this->t_.free_nodes(), kNodeNum);

  // Head untagged: both nodes leaked and recycled.
  lb = this->t_.New(buf, 40);
  this->GetNode(lb.head())->tag = 0;
  hs = this->Check();
  EXPECT_EQ(hs.leaked_nodes, 2u);
  EXPECT_EQ(hs.recycled_leaked_nodes, 2u);
  EXPECT_EQ(hs.total_link_bufs, 0u);
  hs = this->Check();
  EXPECT_EQ(hs.leaked_nodes, 0u);
  EXPECT_EQ(this->t_.free_nodes(), kNodeNum);
}

template <class Alloc>
class ShmHashMapTest : public ::testing::Test {
 protected:
  using Map = shmc::ShmHashMap<uint64_t, Alloc>;
  void SetUp() override {
    ASSERT_TRUE(m_.InitForWrite(keys_.base, 1000, kNodeSize, kNodeNum))
        << m_.last_error().message;
  }
  decltype(Map::hash_table_)* hash_table() { return &m_.hash_table_; }
  decltype(Map::link_table_)* link_table() { return &m_.link_table_; }

  shmc_test::MapKeys<Alloc> keys_;
  Map m_;
};
TYPED_TEST_SUITE(ShmHashMapTest, Allocs, shmc_test::AllocNames);

TYPED_TEST(ShmHashMapTest, DamageThroughMembersIsFoundAndFixed) {
  typename TestFixture::Map::HealthStat hs;
  ASSERT_TRUE(this->m_.Insert(5, "five"));
  // An index node claiming a key whose handle points at no value.
  bool found = true;
  auto* node = this->hash_table()->FindOrAlloc(1, &found);
  ASSERT_NE(node, nullptr);
  ASSERT_FALSE(found);
  node->key = 1;
  node->link_buf.m.head = 1;
  ASSERT_TRUE(this->m_.HealthCheck(&hs, true));
  EXPECT_EQ(hs.total_key_values, 1u);
  EXPECT_EQ(hs.bad_key_values, 1u);
  EXPECT_EQ(hs.cleared_key_values, 1u);
  std::string out;
  EXPECT_FALSE(this->m_.Find(1, &out));
  // A value no key points at: leaked, then recycled.
  char buf[40] = {};
  ASSERT_TRUE(this->link_table()->New(buf, sizeof(buf)));
  ASSERT_TRUE(this->m_.HealthCheck(&hs, true));
  EXPECT_EQ(hs.leaked_values, 1u);
  EXPECT_EQ(hs.recycled_leaked_values, 1u);
  ASSERT_TRUE(this->m_.HealthCheck(&hs, true));
  EXPECT_EQ(hs.bad_key_values, 0u);
  EXPECT_EQ(hs.leaked_values, 0u);
  ASSERT_TRUE(this->m_.Find(5, &out));
  EXPECT_EQ(out, "five");
}
