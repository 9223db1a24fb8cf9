// A million keys through RDB files both ways (stress: about a minute):
// redis-server's SAVE of 10^6 strings, large collections of every type
// and small ones in each compact encoding, with TTLs, loads into shmkv
// (--load-rdb) equal key by key; shmkv's BGSAVE of that store passes
// redis-check-rdb and loads into redis-server equal key by key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <string>
#include <vector>

#include "server/rdb/codec.h"
#include "tests/support/redis_oracle.h"
#include "tests/support/same_data.h"
#include "tests/support/shmkv_server.h"
#include "tests/support/temp_files.h"

namespace {

using shmkv_test::Client;
using shmkv_test::Pipeline;
using shmkv_test::RunAll;
using shmkv_test::ReadAll;
using shmkv_test::RedisOracle;
using shmkv_test::Server;
using shmkv_test::TempDir;

constexpr int kStrings = 1000000;
constexpr int kBig = 100000;  // elements in each large collection

// The collections: large ones (in parts in shmkv; quicklists, hash
// tables and skiplists in Redis) and small ones (listpacks, an intset).
std::vector<std::vector<std::string>> Collections() {
  std::vector<std::vector<std::string>> cmds;
  for (int i = 0; i < kBig; ++i) {
    const std::string n = std::to_string(i);
    cmds.push_back({"ZADD", "big:z", std::to_string(i * 0.5 - 7), "m" + n});
    cmds.push_back({"HSET", "big:h", "f" + n, "value " + n});
    cmds.push_back({"RPUSH", "big:l", "e" + n});
    cmds.push_back({"SADD", "big:s", "s" + n});
    cmds.push_back({"SADD", "big:i", n});
  }
  for (int k = 0; k < 100; ++k) {
    const std::string key = std::to_string(k);
    for (int i = 0; i < 20; ++i) {
      const std::string n = std::to_string(i);
      cmds.push_back({"ZADD", "small:z" + key, n, "m" + n});
      cmds.push_back({"HSET", "small:h" + key, "f" + n, n});
      cmds.push_back({"RPUSH", "small:l" + key, n});
      cmds.push_back({"SADD", "small:i" + key, n});
    }
  }
  return cmds;
}

std::vector<std::string> CollectionKeys() {
  std::vector<std::string> keys = {"big:z", "big:h", "big:l", "big:s",
                                   "big:i"};
  for (int k = 0; k < 100; ++k) {
    for (const char* t : {"small:z", "small:h", "small:l", "small:i"}) {
      keys.push_back(t + std::to_string(k));
    }
  }
  return keys;
}

// Both servers hold the same keys: every string byte for byte with its
// TTL, every collection equal as a value.
void ExpectSame(Client* a, Client* b) {
  EXPECT_EQ(a->Call({"DBSIZE"}), b->Call({"DBSIZE"}));
  for (int i = 0; i < kStrings; i += 10000) {
    std::vector<std::vector<std::string>> gets, ttls;
    for (int j = i; j < i + 10000; ++j) {
      gets.push_back({"GET", "key:" + std::to_string(j)});
      ttls.push_back({"PEXPIRETIME", "key:" + std::to_string(j)});
    }
    ASSERT_EQ(Pipeline(a, gets), Pipeline(b, gets)) << "from key:" << i;
    ASSERT_EQ(Pipeline(a, ttls), Pipeline(b, ttls)) << "from key:" << i;
  }
  EXPECT_EQ(shmkv_test::ExpectSameKeys(a, b, CollectionKeys()), 0u);
}

TEST(RdbMillion, AMillionKeysBothWaysEqual) {
  const auto t0 = std::chrono::steady_clock::now();
  auto stage = [&](const char* what) {
    std::fprintf(stderr, "%6.1f s  %s\n",
                 std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - t0).count(), what);
  };
  TempDir dir;
  RedisOracle redis({"--dir", dir.path, "--dbfilename", "r.rdb",
                     "--enable-debug-command", "yes"});
  SKIP_WITHOUT_REDIS(redis);
  Client rc(redis.port());
  ASSERT_EQ(rc.Call({"DEBUG", "POPULATE", std::to_string(kStrings), "key",
                     "100"}),
            "+OK\r\n");
  ASSERT_TRUE(RunAll(&rc, Collections()));
  std::vector<std::vector<std::string>> ttls;
  const int64_t at = shmkv::NowMs() + 3600 * 1000;
  for (int i = 0; i < kStrings; i += 97) {
    ttls.push_back({"PEXPIREAT", "key:" + std::to_string(i),
                    std::to_string(at + i)});
  }
  ASSERT_TRUE(RunAll(&rc, ttls));
  ASSERT_EQ(rc.Call({"SAVE"}), "+OK\r\n");
  stage("redis-server filled and saved");

  // Into shmkv.
  Server kv("rdbmillion");
  const std::vector<std::string> sizes = {"--capacity", "3000000", "--memory",
                                          "1G", "--dir", dir.path,
                                          "--dbfilename", "s.rdb"};
  std::string load = std::string(SHMKV_BIN) + " --name " + kv.name();
  for (const std::string& s : sizes) load += " " + s;
  load += " --load-rdb '" + dir.path + "/r.rdb' > '" + dir.path +
          "/load.txt' 2>&1";
  ASSERT_EQ(std::system(load.c_str()), 0) << ReadAll(dir.path + "/load.txt");
  stage("loaded into shmkv (--load-rdb)");
  ASSERT_TRUE(kv.Start(sizes)) << kv.log();
  Client kc(kv.port());
  ExpectSame(&rc, &kc);
  stage("compared");

  // And back: shmkv's SAVE, checked and loaded by Redis.
  // BGSAVE at this size (a SAVE answers when done: past the client's
  // 10 s reply timeout on a loaded machine).
  ASSERT_EQ(kc.Call({"BGSAVE"}), "+Background saving started\r\n");
  for (int i = 0; i < 1200; ++i) {
    if (shmkv_test::InfoField(&kc, "rdb_bgsave_in_progress") == "0") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(shmkv_test::InfoField(&kc, "rdb_last_bgsave_status"), "ok")
      << kv.log();
  stage("shmkv saved (BGSAVE)");
  if (access("/usr/bin/redis-check-rdb", X_OK) == 0) {
    const std::string cmd = "/usr/bin/redis-check-rdb '" + dir.path +
                            "/s.rdb' > '" + dir.path + "/check.txt' 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << ReadAll(dir.path + "/check.txt");
  }
  RedisOracle back({"--dir", dir.path, "--dbfilename", "s.rdb"});
  ASSERT_TRUE(back.ok());
  for (int i = 0; i < 600; ++i) {  // it answers -LOADING until loaded
    Client probe(back.port());
    if (probe.Call({"PING"}) == "+PONG\r\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stage("checked and loaded into redis-server");
  Client bc(back.port());
  ExpectSame(&kc, &bc);
  stage("compared");
}

}  // namespace
