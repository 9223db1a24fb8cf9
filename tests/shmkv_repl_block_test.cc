// The replication state's segment (server/store/repl.h, SEG.ctl.repl):
// its layout pinned word by word (a running server of an older build
// reads the same words), and a block damaged every way read without a
// crash: INFO, ROLE, REPLICAOF and every write command's check answer,
// and a damaged mode never lets a write through on a replica's data.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "server/store/repl.h"
#include "tests/support/command_harness.h"

namespace {

using shmkv::ReplBlock;
using shmkv::ReplMode;
using shmkv::SharedRepl;
using shmkv_test::CommandHarness;

const uint64_t* Words(SharedRepl* r) {
  return reinterpret_cast<const uint64_t*>(r->block());
}

TEST(ReplBlockGolden, WordsAreWhereAnOlderBuildReadsThem) {
  CommandHarness h("replgold");
  ASSERT_TRUE(h.ok()) << h.error();
  SharedRepl* r = h.store()->Repl();
  ASSERT_NE(r, nullptr);
  const uint64_t* w = Words(r);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&w[0]), 8), "smkvrpl1");
  EXPECT_EQ(w[1], 0u) << "a new store is a master";
  EXPECT_EQ(h.Run({"REPLICAOF", "example.org", "17001"}), "+OK\r\n");
  EXPECT_EQ(w[1], 1u);  // kReplica
  EXPECT_EQ(w[2] % 2, 0u);  // the target's sequence: even when written
  EXPECT_EQ(w[3], 1u);  // the generation
  EXPECT_EQ(w[4], 17001u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&w[5])), "example.org");
  r->block()->offset.store(12345);
  EXPECT_EQ(w[43], 12345u);
  r->SetReplId(std::string(40, 'a'));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&w[44]), 40),
            std::string(40, 'a'));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&w[53]), 40).size(), 40u);
  EXPECT_EQ(h.Run({"SET", "k", "v"}),
            "-READONLY You can't write against a read only replica.\r\n");
  // Loading its master's dataset: INFO says so, and reads wait.
  r->SetMode(ReplMode::kLoading);
  EXPECT_EQ(w[1], 2u);
  EXPECT_NE(h.Run({"INFO", "persistence"}).find("\r\nloading:1\r\n"),
            std::string::npos);
  EXPECT_EQ(h.Run({"GET", "k"}),
            "-LOADING Redis is loading the dataset in memory\r\n");
  EXPECT_EQ(h.Run({"REPLICAOF", "NO", "ONE"}),
            "-LOADING Redis is loading the dataset in memory\r\n");
  r->SetMode(ReplMode::kReplica);
  EXPECT_NE(h.Run({"INFO", "persistence"}).find("\r\nloading:0\r\n"),
            std::string::npos);
  EXPECT_EQ(h.Run({"REPLICAOF", "NO", "ONE"}), "+OK\r\n");
  EXPECT_EQ(w[1], 0u);
  // The master's id became the second, from the next offset.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&w[58]), 40),
            std::string(40, 'a'));
  EXPECT_EQ(w[63], 12346u);
  EXPECT_EQ(h.Run({"SET", "k", "v"}), "+OK\r\n");
}

TEST(ReplBlockFuzz, ADamagedBlockIsReadWithoutACrash) {
  CommandHarness h("replfuzz");
  ASSERT_TRUE(h.ok()) << h.error();
  SharedRepl* r = h.store()->Repl();
  ASSERT_NE(r, nullptr);
  auto* w = reinterpret_cast<uint64_t*>(r->block());
  std::mt19937_64 rng(2026);
  const size_t words = sizeof(ReplBlock) / 8;
  for (int round = 0; round < 500; ++round) {
    for (size_t i = 1; i < words; ++i) {  // the magic stays: it is checked
      switch (rng() % 4) {
        case 0: w[i] = rng(); break;                 // anything
        case 1: w[i] = rng() % 8; break;             // small numbers
        case 2: w[i] = ~uint64_t{0} - rng() % 4; break;
        default: break;                              // left as it was
      }
    }
    if (round % 3 == 0) std::memset(&w[5], 'x', 8 * shmkv::kReplHostWords);
    if (round % 5 == 0) w[2] |= 1;  // a writer that died half way
    const uint64_t mode = w[1];
    std::string info = h.Run({"INFO", "replication"});
    EXPECT_EQ(info.substr(0, 1), "$") << info;
    std::string role = h.Run({"ROLE"});
    EXPECT_EQ(role.substr(0, 1), "*") << role;
    std::string set = h.Run({"SET", "k", "v"});
    // Any mode but a master's refuses the write.
    if (mode == 0) {
      EXPECT_EQ(set, "+OK\r\n");
    } else if (mode == 2) {
      EXPECT_EQ(set.substr(0, 9), "-READONLY") << set;
    } else {
      EXPECT_EQ(set.substr(0, 9), "-READONLY") << set;
    }
    EXPECT_EQ(h.Run({"GET", "k"}).substr(0, 1), mode == 2 ? "-" : "$");
  }
  // REPLICAOF puts a damaged block right.
  w[1] = 77;
  EXPECT_EQ(h.Run({"REPLICAOF", "NO", "ONE"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"SET", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"ROLE"}).substr(0, 14), "*3\r\n$6\r\nmaster");
}

}  // namespace
