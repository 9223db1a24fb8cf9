// The wait board (server/store/waits.h) and a blocked client's handoff
// bytes (server/net/blocked.h): layout, line order, dead workers' rows,
// and damaged input of both kinds.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "server/net/blocked.h"
#include "server/store/waits.h"
#include "shmc/posix_shm_alloc.h"

namespace {

using shmkv::BlockedCommand;
using shmkv::WaitBoardBlock;
using shmkv::Waits;

class WaitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = "/shmkv_waits_test_" + std::to_string(getpid());
    shmc::POSIX().Unlink(key_);
    std::string err;
    ASSERT_TRUE(w_.Open(key_, &err)) << err;
  }
  void TearDown() override { shmc::POSIX().Unlink(key_); }
  std::string key_;
  Waits w_;
};

// The rows are shared between builds: their bytes stay where they are.
TEST(WaitsLayout, RowsKeepTheirPlaces) {
  EXPECT_EQ(offsetof(shmkv::WaitRow, ticket), 0u);
  EXPECT_EQ(offsetof(shmkv::WaitRow, key), 8u);
  EXPECT_EQ(offsetof(shmkv::WaitRow, pid), 16u);
  EXPECT_EQ(offsetof(shmkv::WaitRow, start), 24u);
  EXPECT_EQ(offsetof(WaitBoardBlock, next_ticket), 0u);
  EXPECT_EQ(offsetof(WaitBoardBlock, rows_used), 8u);
  EXPECT_EQ(offsetof(WaitBoardBlock, resync), 16u);
  EXPECT_EQ(offsetof(WaitBoardBlock, rows), 32u);
  EXPECT_EQ(shmkv::kWaitRows, 65536u);
}

TEST_F(WaitsTest, TheFirstToWaitIsFirstInLine) {
  EXPECT_FALSE(w_.any());
  uint64_t a = w_.Register({10, 20});
  uint64_t b = w_.Register({20});
  ASSERT_NE(a, 0u);
  ASSERT_GT(b, a);
  EXPECT_TRUE(w_.any());
  EXPECT_FALSE(w_.Older(20, a));
  EXPECT_TRUE(w_.Older(20, b));
  EXPECT_TRUE(w_.Older(20, ~0ULL));
  EXPECT_FALSE(w_.Older(30, ~0ULL));
  EXPECT_EQ(w_.Clients(), 2u);
  std::vector<uint64_t> pids;
  w_.Holders(20, &pids);
  EXPECT_EQ(pids, std::vector<uint64_t>{static_cast<uint64_t>(getpid())});
  w_.Remove(a);
  EXPECT_FALSE(w_.Older(20, b));
  // Adopt keeps the ticket: a client moved in a hot restart keeps its
  // place ahead of later ones.
  uint64_t c = w_.Register({20});
  ASSERT_TRUE(w_.Adopt(b, {20, 40}));
  EXPECT_TRUE(w_.Older(20, c));
  EXPECT_TRUE(w_.Older(40, c));
  w_.Remove(b);
  w_.Remove(c);
  EXPECT_FALSE(w_.any());
  EXPECT_EQ(w_.Clients(), 0u);
}

// A worker killed while its clients wait leaves rows that hold no one
// back: the next look frees them.
TEST_F(WaitsTest, ADeadWorkersRowsAreFreed) {
  pid_t child = fork();
  if (child == 0) {
    Waits other;
    std::string err;
    if (!other.Open(key_, &err) || other.Register({7}) == 0) _exit(1);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::vector<uint64_t> pids;
  w_.Holders(7, &pids);
  EXPECT_EQ(pids, std::vector<uint64_t>{static_cast<uint64_t>(child)});
  EXPECT_EQ(w_.Clients(), 0u) << "a dead worker's client is not counted";
  EXPECT_FALSE(w_.Older(7, ~0ULL));
  w_.Holders(7, &pids);
  EXPECT_TRUE(pids.empty()) << "freed on the way";
  EXPECT_FALSE(w_.any());
}

TEST_F(WaitsTest, AFullBoardRefusesWholeClients) {
  std::vector<uint64_t> many(shmkv::kWaitRows - 1, 5);
  uint64_t big = w_.Register(many);
  ASSERT_NE(big, 0u);
  EXPECT_EQ(w_.Register({1, 2}), 0u) << "two rows, one free";
  uint64_t one = w_.Register({3});
  EXPECT_NE(one, 0u);
  EXPECT_EQ(w_.Register({4}), 0u);
  w_.Remove(big);
  EXPECT_NE(w_.Register({1, 2}), 0u);
}

// Damage: any bytes in the board's words delay or reorder wakes at worst;
// nothing reads past the table and no pid outside the kernel's range is
// signalled.
TEST_F(WaitsTest, DamagedWordsAreBounded) {
  Waits other;
  std::string err;
  ASSERT_TRUE(other.Open(key_, &err)) << err;
  shmc::ShmArray<WaitBoardBlock, shmc::POSIX> arr;
  ASSERT_TRUE(arr.InitForWrite(key_, 1));
  auto* b = const_cast<WaitBoardBlock*>(&arr[0]);
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    b->rows_used.store(round % 3 == 0 ? ~0ULL : rng() % (shmkv::kWaitRows * 2));
    for (int i = 0; i < 64; ++i) {
      auto& r = b->rows[rng() % shmkv::kWaitRows];
      r.ticket.store(rng() % 4 == 0 ? 0 : rng());
      r.key.store(rng() % 8);
      r.pid.store(rng() % 3 == 0 ? rng() : rng() % 70000);
      r.start.store(rng());
    }
    std::vector<uint64_t> pids;
    other.Holders(rng() % 8, &pids);
    (void)other.Older(rng() % 8, rng());
    (void)other.Clients();
    uint64_t t = other.Register({rng() % 8});
    other.Remove(t);
  }
  for (size_t i = 0; i < shmkv::kWaitRows; ++i) b->rows[i].ticket.store(0);
  b->rows_used.store(0);
  EXPECT_NE(w_.Register({1}), 0u);
}

TEST(BlockedCommandBytes, RoundTripAndRefuseDamage) {
  BlockedCommand b;
  b.args = {"BLMOVE", "src", std::string("d\0st", 4), "LEFT", "RIGHT", "0"};
  b.ticket = 42;
  b.deadline_ns = 123456789;
  b.keys = {1, 2};
  std::string bytes;
  b.Encode(&bytes);
  bytes += "tail";
  std::string_view in(bytes);
  BlockedCommand back;
  ASSERT_TRUE(back.Decode(&in));
  EXPECT_EQ(back.args, b.args);
  EXPECT_EQ(back.ticket, 42u);
  EXPECT_EQ(back.deadline_ns, 123456789u);
  EXPECT_EQ(back.keys, b.keys);
  EXPECT_EQ(in, "tail");
  // Every truncation is refused; random bytes never read out of bounds.
  for (size_t n = 0; n + 4 < bytes.size(); ++n) {
    std::string_view cut(bytes.data(), n);
    BlockedCommand x;
    EXPECT_FALSE(x.Decode(&cut)) << n;
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    std::string junk = bytes;
    for (int k = 0; k < 3; ++k) {
      junk[rng() % junk.size()] = static_cast<char>(rng());
    }
    junk.resize(rng() % (junk.size() + 1));
    std::string_view j(junk);
    BlockedCommand x;
    if (x.Decode(&j)) {
      EXPECT_LE(j.size(), junk.size());
    }
  }
}

}  // namespace
