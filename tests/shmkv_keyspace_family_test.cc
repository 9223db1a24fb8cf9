// The keyspace family (server/commands/keyspace_family.cc) in process:
// the key commands keep each value's type and answer for every type.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/command_harness.h"

namespace {

using shmkv::ValueType;
using shmkv_test::CommandHarness;

TEST(KeyspaceFamily, KeyCommandsKeepTheType) {
  CommandHarness h("keys");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("h", ValueType::kHash, "packed-bytes"));
  EXPECT_EQ(h.Run({"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"PEXPIRE", "h", "100000"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"RENAME", "h", "h2"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h2"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"COPY", "h2", "h3"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h3"}), "+hash\r\n");
  EXPECT_EQ(h.Run({"PERSIST", "h3"}), ":1\r\n");
  EXPECT_EQ(h.Run({"TTL", "h3"}), ":-1\r\n");
  EXPECT_EQ(h.Run({"GET", "h3"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of "
            "value\r\n");
  shmkv::Value v;
  ASSERT_TRUE(h.store()->Get("h3", &v));
  EXPECT_EQ(v.type, ValueType::kHash);
  EXPECT_EQ(v.bytes, "packed-bytes");  // the value's bytes moved untouched
  EXPECT_EQ(h.Run({"DEL", "h2", "h3"}), ":2\r\n");
  EXPECT_EQ(h.Run({"TYPE", "h2"}), "+none\r\n");
}

// Inside MULTI a key written with a type is seen with it by the commands
// queued after, and SCAN TYPE finds a key the transaction created.
TEST(KeyspaceFamily, TypesInsideTransactions) {
  CommandHarness h("keystx");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("z", ValueType::kZSet, "x"));
  EXPECT_EQ(h.Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h.Run({"RENAME", "z", "z2"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"TYPE", "z2"}), "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"SCAN", "0", "COUNT", "100000", "TYPE", "zset"}),
            "+QUEUED\r\n");
  EXPECT_EQ(h.Run({"EXEC"}),
            "*3\r\n+OK\r\n+zset\r\n*2\r\n$1\r\n0\r\n*1\r\n$2\r\nz2\r\n");
}

// A type this build does not know (written by a newer one) is never read
// as a string: every string command answers WRONGTYPE, DEL removes it.
TEST(KeyspaceFamily, AnUnknownTypeIsNeverMisread) {
  CommandHarness h("keysunk");
  ASSERT_TRUE(h.ok()) << h.error();
  ASSERT_TRUE(h.WriteTyped("future", static_cast<ValueType>(200), "?"));
  EXPECT_EQ(h.Run({"GET", "future"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(h.Run({"APPEND", "future", "x"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(h.Run({"TYPE", "future"}), "+unknown\r\n");
  EXPECT_EQ(h.Run({"DEL", "future"}), ":1\r\n");
}

}  // namespace
