// shmkv behind twemproxy (Debian's nutcracker), as examples/twemproxy
// sets it up: keys spread over three shmkv servers by ketama, hash tags
// keep related keys on one shard, multi-key commands the proxy splits
// (MGET, MSET, DEL) answer whole, the commands the proxy refuses are
// refused (it closes the connection), and a hot restart of one shard
// under load through the proxy fails no request.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/redis_oracle.h"
#include "tests/support/shmkv_server.h"
#include "tests/support/temp_files.h"

namespace {

using shmkv_test::Client;
using shmkv_test::ReadAll;
using shmkv_test::Server;
using shmkv_test::TempDir;
using namespace std::chrono_literals;

constexpr const char* kNutcracker = "/usr/sbin/nutcracker";

// The example's configuration with these ports: the proxy's and the
// shards'.
std::string Config(int listen, const std::vector<int>& shards) {
  std::ifstream in(std::string(SHMKV_SOURCE_DIR) +
                   "/examples/twemproxy/nutcracker.yml");
  std::string out, line;
  int shard = 0;
  while (std::getline(in, line)) {
    if (line.find("listen: 127.0.0.1:6400") != std::string::npos) {
      line = "  listen: 127.0.0.1:" + std::to_string(listen);
    } else if (line.find("- 127.0.0.1:700") != std::string::npos) {
      line = "    - 127.0.0.1:" + std::to_string(shards.at(shard)) +
             ":1 shard" + std::to_string(shard + 1);
      ++shard;
    }
    out += line + "\n";
  }
  EXPECT_EQ(shard, 3) << "the example names three shards";
  return out;
}

class Proxy {
 public:
  Proxy(const TempDir& dir, const std::vector<int>& shards) {
    port_ = shmkv_test::FreePort();
    const int stats = shmkv_test::FreePort();
    const std::string conf = dir.path + "/nutcracker.yml";
    EXPECT_TRUE(shmkv_test::WriteAll(conf, Config(port_, shards)));
    log_ = dir.path + "/nutcracker.log";
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      execl(kNutcracker, kNutcracker, "-c", conf.c_str(), "-s",
            std::to_string(stats).c_str(), "-a", "127.0.0.1", "-o",
            log_.c_str(), "-p", (dir.path + "/nutcracker.pid").c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      Client c(port_);
      if (c.ok() && c.Call({"GET", "probe"}) == "$-1\r\n") return;
      std::this_thread::sleep_for(10ms);
    }
  }
  ~Proxy() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string log() const { return ReadAll(log_); }

 private:
  int port_ = 0;
  pid_t pid_ = 0;
  std::string log_;
};

int64_t Keys(int port) {
  Client c(port);
  const std::string r = c.Call({"DBSIZE"});
  return r.size() > 1 && r[0] == ':' ? std::stoll(r.substr(1)) : -1;
}

TEST(ShmkvTwemproxy, ShardsBehindTheProxy) {
  if (access(kNutcracker, X_OK) != 0) {
    if (shmkv_test::InCi()) FAIL() << "nutcracker is missing in CI";
    GTEST_SKIP() << "nutcracker is not installed (apt-get install nutcracker)";
  }
  TempDir dir;
  std::vector<std::unique_ptr<Server>> shards;
  std::vector<int> ports;
  for (int i = 0; i < 3; ++i) {
    shards.push_back(std::make_unique<Server>("proxy" + std::to_string(i)));
    ASSERT_TRUE(shards.back()->Start()) << shards.back()->log();
    ports.push_back(shards.back()->port());
  }
  Proxy proxy(dir, ports);
  Client c(proxy.port());
  ASSERT_EQ(c.Call({"GET", "probe"}), "$-1\r\n") << proxy.log();

  // 3,000 keys land on every shard; each reads back through the proxy.
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(c.Call({"SET", "k" + std::to_string(i), std::to_string(i)}),
              "+OK\r\n");
  }
  int64_t total = 0;
  for (int p : ports) {
    const int64_t n = Keys(p);
    EXPECT_GT(n, 500) << "ketama spreads keys over the shards";
    total += n;
  }
  EXPECT_EQ(total, 3000);
  EXPECT_EQ(c.Call({"GET", "k1234"}), "$4\r\n1234\r\n");
  // MGET, MSET and DEL over shards answer as one server would.
  EXPECT_EQ(c.Call({"MSET", "a", "1", "b", "2", "c", "3"}), "+OK\r\n");
  EXPECT_EQ(c.Call({"MGET", "a", "b", "nosuch", "c"}),
            "*4\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n$1\r\n3\r\n");
  EXPECT_EQ(c.Call({"DEL", "a", "b", "c", "nosuch"}), ":3\r\n");
  // A hash tag keeps a user's keys together, so the data types and a
  // script over them work through the proxy.
  ASSERT_EQ(c.Call({"HSET", "{user:7}:profile", "name", "ann"}), ":1\r\n");
  ASSERT_EQ(c.Call({"RPUSH", "{user:7}:events", "login", "view"}), ":2\r\n");
  ASSERT_EQ(c.Call({"ZADD", "{user:7}:scores", "10", "x"}), ":1\r\n");
  int holding = 0;
  for (int p : ports) {
    Client s(p);
    const std::string n = s.Call({"EXISTS", "{user:7}:profile",
                                  "{user:7}:events", "{user:7}:scores"});
    if (n != ":0\r\n") {
      EXPECT_EQ(n, ":3\r\n") << "a tag's keys are on one shard";
      ++holding;
    }
  }
  EXPECT_EQ(holding, 1);
  EXPECT_EQ(c.Call({"EVAL",
                    "return redis.call('LLEN', KEYS[1]) + "
                    "redis.call('HLEN', KEYS[2])",
                    "2", "{user:7}:events", "{user:7}:profile"}),
            ":3\r\n");

  // What the proxy refuses: it closes the client's connection.
  for (const std::vector<std::string>& refused :
       std::vector<std::vector<std::string>>{{"KEYS", "*"},
                                             {"MULTI"},
                                             {"SCAN", "0"},
                                             {"BLPOP", "q", "1"},
                                             {"SUBSCRIBE", "ch"},
                                             {"INFO"},
                                             {"RENAME", "k1", "k2"}}) {
    Client r(proxy.port());
    ASSERT_TRUE(r.SendRaw(Client::Encode(refused)));
    const std::string reply = r.Reply();
    EXPECT_TRUE(reply.empty() || reply[0] == '-')
        << refused[0] << ": " << reply;
  }

  // A hot restart of one shard while clients write through the proxy.
  std::atomic<bool> stop{false};
  std::atomic<int> failed{0}, done{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 3; ++t) {
    load.emplace_back([&, t] {
      Client w(proxy.port());
      for (int i = 0; !stop; ++i) {
        const std::string k = "load" + std::to_string(t) + ":" +
                              std::to_string(i % 500);
        if (w.Call({"SET", k, std::to_string(i)}) != "+OK\r\n" ||
            w.Call({"GET", k}) != "$" + std::to_string(std::to_string(i).size()) +
                                      "\r\n" + std::to_string(i) + "\r\n") {
          ++failed;
          return;
        }
        ++done;
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  shards[1]->Signal(SIGHUP);
  for (int i = 0; i < 300; ++i) {
    if (shards[1]->log().find("reloading") != std::string::npos) break;
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(1500ms);
  stop = true;
  for (auto& th : load) th.join();
  EXPECT_EQ(failed, 0) << proxy.log() << shards[1]->log();
  EXPECT_GT(done, 100);
  EXPECT_NE(shards[1]->log().find("reloading"), std::string::npos);
  EXPECT_EQ(c.Call({"GET", "k1234"}), "$4\r\n1234\r\n");
}

}  // namespace
