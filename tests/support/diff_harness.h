// Differential tests of shmkv's command layer in process: each command
// runs through shmkv's dispatch (CommandHarness, no server) and on a real
// redis-server (RedisOracle), and the two RESP replies must be identical
// byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/command_harness.h"
#include "tests/support/redis_oracle.h"

namespace shmkv_test {

using Commands = std::vector<std::vector<std::string>>;

// The command as one line, for a failure message.
inline std::string CommandLine(const std::vector<std::string>& cmd) {
  std::string line;
  for (const std::string& w : cmd) line += w + " ";
  return line;
}

// Runs every command in both, in order, on the given Redis connection.
inline void ExpectSameAsRedis(CommandHarness* h, Client* redis,
                              const Commands& cmds) {
  for (const auto& cmd : cmds) {
    EXPECT_EQ(h->Run(cmd), redis->Call(cmd)) << "command: " << CommandLine(cmd);
  }
}

// The same on a new connection to the redis-server on `redis_port`.
inline void ExpectSameAsRedis(CommandHarness* h, int redis_port,
                              const Commands& cmds) {
  Client redis(redis_port);
  ASSERT_TRUE(redis.ok());
  ExpectSameAsRedis(h, &redis, cmds);
}

// Runs body(&harness, &redis_client) twice: against a fresh harness and
// the oracle flushed, in RESP2, then both switched to RESP3.
template <class F>
void ForBothProtocols(const RedisOracle& redis, const std::string& tag,
                      F body, uint64_t keys = 4096,
                      uint64_t memory = 8ULL << 20) {
  for (bool resp3 : {false, true}) {
    CommandHarness h(tag + (resp3 ? "3" : "2"), keys, memory);
    ASSERT_TRUE(h.ok()) << h.error();
    Client c(redis.port());
    c.Call({"FLUSHALL"});
    if (resp3) {
      h.Run({"HELLO", "3"});
      c.Call({"HELLO", "3"});
    }
    body(&h, &c);
  }
}

}  // namespace shmkv_test
