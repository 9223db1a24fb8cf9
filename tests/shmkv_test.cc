// shmkv, started as a real server and spoken to over sockets: every
// command, pipelining, binary and large values, 1,000 connections, bad
// RESP and bad HTTP, kill -9 of every process then a restart with nothing
// lost, and a hot restart under load with no failed request. redis-cli is
// used too when it is installed (Debian redis-tools; .ci/run installs it).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/store/pages.h"
#include "server/store/store.h"
#include "shmc/hash.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "shmc/shm_hash_table.h"
#include "tests/support/redis_oracle.h"
#include "tests/support/shmkv_server.h"
#include "tests/support/test_util.h"

namespace {

using namespace std::chrono_literals;
using shmkv_test::Bulk;
using shmkv_test::Client;
using shmkv_test::Connect;
using shmkv_test::FreePort;
using shmkv_test::InfoField;
using shmkv_test::NonLoopbackIPv4;
using shmkv_test::RedisOracle;
using shmkv_test::Server;
using shmkv_test::WorkersAnonRss;

// Raw HTTP exchange on a fresh or given connection.
std::string HttpExchange(int fd, const std::string& req) {
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 3000) <= 0) break;
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
    size_t he = resp.find("\r\n\r\n");
    if (he != std::string::npos) {
      size_t cl = resp.find("Content-Length: ");
      if (cl != std::string::npos && cl < he) {
        size_t len = std::stoul(resp.substr(cl + 16));
        if (resp.size() >= he + 4 + len) break;
      }
    }
  }
  return resp;
}

// One whole SCAN pass (cursor 0 back to 0) with COUNT `count`: the keys
// in the order returned, and in *calls how many calls it took.
std::vector<std::string> ScanPass(Client& c, const std::string& count,
                                  size_t* calls) {
  std::vector<std::string> seen;
  std::string cursor = "0";
  *calls = 0;
  do {
    std::string r = c.Call({"SCAN", cursor, "COUNT", count});
    ++*calls;
    EXPECT_EQ(r.compare(0, 4, "*2\r\n"), 0) << r;
    if (r.compare(0, 4, "*2\r\n") != 0) break;
    size_t p = r.find("\r\n", 4);
    size_t q = r.find("\r\n", p + 2);
    cursor = r.substr(p + 2, q - p - 2);
    std::string rest = r.substr(q + 2);
    size_t n = std::stoul(rest.substr(1));
    size_t pos = rest.find("\r\n") + 2;
    for (size_t i = 0; i < n; ++i) {
      size_t e = rest.find("\r\n", pos);
      size_t len = std::stoul(rest.substr(pos + 1, e - pos - 1));
      seen.push_back(rest.substr(e + 2, len));
      pos = e + 2 + len + 2;
    }
  } while (cursor != "0");
  return seen;
}

// Tests running at once never start servers on the same port: two
// processes drawing 400 ports each get no port twice, none in the kernel's
// ephemeral range (where a client's connect() could take it first). With
// ports drawn by binding port 0, as before, the two lists shared some.
TEST(ShmkvTestPorts, TwoProcessesNeverDrawTheSamePort) {
  constexpr int kEach = 400;
  int fds[2], done[2];  // the child's ports; the parent is done drawing
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    close(done[1]);
    for (int i = 0; i < kEach; ++i) {
      int p = FreePort();
      if (write(fds[1], &p, sizeof(p)) != sizeof(p)) _exit(1);
    }
    close(fds[1]);
    char c;
    (void)!read(done[0], &c, 1);  // hold the claims while the parent draws
    _exit(0);
  }
  close(fds[1]);
  close(done[0]);
  std::set<int> mine;
  for (int i = 0; i < kEach; ++i) mine.insert(FreePort());
  EXPECT_EQ(mine.size(), static_cast<size_t>(kEach));
  int p = 0, shared = 0;
  std::vector<int> their_ports;
  while (read(fds[0], &p, sizeof(p)) == sizeof(p)) their_ports.push_back(p);
  close(fds[0]);
  close(done[1]);
  int low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    ASSERT_EQ(std::fscanf(f, "%d", &low), 1);
    std::fclose(f);
  }
  for (int q : their_ports) {
    shared += static_cast<int>(mine.count(q));
    EXPECT_LT(q, low);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(their_ports.size(), static_cast<size_t>(kEach));
  EXPECT_EQ(shared, 0);
  for (int q : mine) EXPECT_LT(q, low);
}

TEST(Shmkv, EveryCommand) {
  Server s("cmds");
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  struct Case {
    std::vector<std::string> cmd;
    std::string want;
  };
  std::vector<Case> cases = {
      {{"PING"}, "+PONG\r\n"},
      {{"ping", "hi"}, Bulk("hi")},
      {{"ECHO", "x y"}, Bulk("x y")},
      {{"GET", "k"}, "$-1\r\n"},
      {{"SET", "k", "v1"}, "+OK\r\n"},
      {{"GET", "k"}, Bulk("v1")},
      {{"SET", "k", "v2", "NX"}, "$-1\r\n"},
      {{"SET", "k2", "v", "XX"}, "$-1\r\n"},
      {{"SET", "k", "v3", "XX"}, "+OK\r\n"},
      {{"SET", "k", "v", "EX", "0"}, "-ERR invalid expire time in 'set' command\r\n"},
      {{"SET", "k", "v", "BOGUS"}, "-ERR syntax error\r\n"},
      {{"EXISTS", "k", "k", "nope"}, ":2\r\n"},
      {{"MSET", "a", "1", "b", "2"}, "+OK\r\n"},
      {{"MGET", "a", "nope", "b"}, "*3\r\n" + Bulk("1") + "$-1\r\n" + Bulk("2")},
      {{"INCR", "a"}, ":2\r\n"},
      {{"INCRBY", "a", "40"}, ":42\r\n"},
      {{"DECR", "a"}, ":41\r\n"},
      {{"DECRBY", "a", "50"}, ":-9\r\n"},
      {{"INCR", "k"}, "-ERR value is not an integer or out of range\r\n"},
      {{"SET", "big", "9223372036854775807"}, "+OK\r\n"},
      {{"INCR", "big"}, "-ERR increment or decrement would overflow\r\n"},
      {{"APPEND", "ap", "abc"}, ":3\r\n"},
      {{"APPEND", "ap", "de"}, ":5\r\n"},
      {{"STRLEN", "ap"}, ":5\r\n"},
      {{"STRLEN", "nope"}, ":0\r\n"},
      {{"TTL", "ap"}, ":-1\r\n"},
      {{"TTL", "nope"}, ":-2\r\n"},
      {{"EXPIRE", "ap", "100"}, ":1\r\n"},
      {{"TTL", "ap"}, ":100\r\n"},
      {{"PERSIST", "ap"}, ":1\r\n"},
      {{"PERSIST", "ap"}, ":0\r\n"},
      {{"PEXPIRE", "ap", "100000"}, ":1\r\n"},
      {{"EXPIRE", "nope", "10"}, ":0\r\n"},
      {{"DEL", "b", "nope"}, ":1\r\n"},
      {{"DBSIZE"}, ":4\r\n"},
      {{"KEYS", "a*"}, "*2\r\n"},  // order varies: checked below
      {{"CONFIG", "GET", "save"}, "*2\r\n" + Bulk("save") + Bulk("")},
      {{"SELECT", "0"}, "+OK\r\n"},
      {{"NOSUCH", "x"}, "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"},
      {{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
  };
  for (const Case& k : cases) {
    std::string got = c.Call(k.cmd);
    if (k.cmd[0] == "KEYS") {
      EXPECT_EQ(got.compare(0, 4, "*2\r\n"), 0) << got;
      EXPECT_NE(got.find(Bulk("a")), std::string::npos);
      EXPECT_NE(got.find(Bulk("ap")), std::string::npos);
      continue;
    }
    EXPECT_EQ(got, k.want) << k.cmd[0];
  }
  std::string pttl = c.Call({"PTTL", "ap"});
  ASSERT_EQ(pttl[0], ':');
  EXPECT_GT(std::stol(pttl.substr(1)), 90000);
  // SCAN walks everything with cursors, MATCH filters.
  size_t calls = 0;
  std::vector<std::string> seen = ScanPass(c, "500", &calls);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "ap", "big", "k"}));
  std::string all;
  std::string cursor = "0";
  do {  // MATCH filters each batch; a batch may well be empty
    std::string r = c.Call({"SCAN", cursor, "MATCH", "b*", "COUNT", "5000"});
    size_t p = r.find("\r\n", 4);
    cursor = r.substr(p + 2, r.find("\r\n", p + 2) - p - 2);
    all += r.substr(r.find("\r\n", p + 2) + 2);
  } while (cursor != "0");
  EXPECT_NE(all.find(Bulk("big")), std::string::npos) << all;
  EXPECT_EQ(all.find(Bulk("ap")), std::string::npos) << all;
  // INFO carries the sections and the latency percentiles.
  std::this_thread::sleep_for(250ms);  // stats are published every 100 ms
  std::string info = c.Call({"INFO"});
  for (const char* f : {"# Server", "redis_version:", "connected_clients:",
                        "instantaneous_ops_per_sec:",
                        "used_memory:", "total_commands_processed:",
                        "cmdstat_get:calls=", "latency_percentiles_usec_set:p50=",
                        "db0:keys=4"}) {
    EXPECT_NE(info.find(f), std::string::npos) << f << "\n" << info;
  }
  EXPECT_EQ(c.Call({"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(c.Call({"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(c.Call({"QUIT"}), "+OK\r\n");
  EXPECT_TRUE(c.Closed());
}

// SCAN over an index sized for a million keys: with 8 keys a pass takes
// a few calls, not one per 4,096 slots (272 before); with 5,000 keys
// about keys / COUNT; every key once.
TEST(Shmkv, ScanOfASparseIndexTakesAboutKeysOverCountCalls) {
  Server s("sparse");
  ASSERT_TRUE(s.Start({"--capacity", "1000000"})) << s.log();
  Client c(s.port());
  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i) keys.push_back("k" + std::to_string(i));
  for (const std::string& k : keys) ASSERT_EQ(c.Call({"SET", k, "v"}), "+OK\r\n");
  size_t calls = 0;
  std::vector<std::string> seen = ScanPass(c, "10", &calls);
  std::sort(seen.begin(), seen.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(seen, keys);
  EXPECT_LE(calls, 3u);
  for (int i = 8; i < 5000; ++i) keys.push_back("k" + std::to_string(i));
  for (int i = 8; i < 5000; ++i) {
    ASSERT_EQ(c.Call({"SET", "k" + std::to_string(i), "v"}), "+OK\r\n");
  }
  seen = ScanPass(c, "100", &calls);
  std::sort(seen.begin(), seen.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(seen, keys) << "every key once";
  EXPECT_GE(calls, 5000u / (100 + 1024));
  EXPECT_LE(calls, 5000u / 100 + 3);
}

// LATENCY HISTOGRAM on both servers after the same five SETs: Redis 7's
// shape (a map per command: calls, histogram_usec of rising bucket
// bounds to cumulative counts), five calls, and Redis's bucket names.
TEST(Shmkv, LatencyHistogramHasRedisShape) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("lathist");
  ASSERT_TRUE(s.Start({"--workers", "1"})) << s.log();
  for (int port : {redis.port(), s.port()}) {
    Client c(port);
    for (int i = 0; i < 5; ++i) ASSERT_EQ(c.Call({"SET", "k", "v"}), "+OK\r\n");
    std::this_thread::sleep_for(250ms);  // shmkv publishes every 100 ms
    std::string r = c.Call({"LATENCY", "HISTOGRAM", "set", "nosuchcmd"});
    const std::string head = "*2\r\n$3\r\nset\r\n*4\r\n$5\r\ncalls\r\n:5\r\n"
                             "$14\r\nhistogram_usec\r\n*";
    ASSERT_EQ(r.compare(0, head.size(), head), 0) << port << ": " << r;
    // The pairs: bucket (Redis's: 1, 2, 4, 8, 16, 33, 66, ...) and a
    // cumulative count that rises to 5.
    std::vector<int64_t> ints;
    for (size_t at = r.find(':', head.size()); at != std::string::npos;
         at = r.find(':', at + 1)) {
      ints.push_back(std::stoll(r.substr(at + 1)));
    }
    ASSERT_FALSE(ints.empty()) << r;
    ASSERT_EQ(ints.size() % 2, 0u) << r;
    const std::vector<int64_t> names = {1, 2, 4, 8, 16, 33, 66, 132, 264, 528,
                                        1056, 2113, 4227, 8454, 16908};
    int64_t last = 0;
    for (size_t i = 0; i < ints.size(); i += 2) {
      EXPECT_NE(std::find(names.begin(), names.end(), ints[i]), names.end())
          << port << ": bucket " << ints[i];
      EXPECT_GT(ints[i + 1], last) << port;
      last = ints[i + 1];
    }
    EXPECT_EQ(last, 5) << port << ": " << r;
  }
}

TEST(Shmkv, ExpiryLazyAndActive) {
  Server s("ttl");
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  EXPECT_EQ(c.Call({"SET", "short", "v", "PX", "100"}), "+OK\r\n");
  EXPECT_EQ(c.Call({"GET", "short"}), Bulk("v"));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(c.Call({"GET", "short"}), "$-1\r\n") << "lazily expired";
  for (int i = 0; i < 200; ++i) {
    c.SendRaw(Client::Encode({"SET", "t" + std::to_string(i), "v", "PX", "50"}));
  }
  for (int i = 0; i < 200; ++i) ASSERT_EQ(c.Reply(), "+OK\r\n");
  EXPECT_EQ(c.Call({"SET", "keep", "v"}), "+OK\r\n");
  // Never read again: only the master's sweep can remove them.
  std::string n;
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(50ms);
    n = c.Call({"DBSIZE"});
    if (n == ":1\r\n") break;
  }
  EXPECT_EQ(n, ":1\r\n") << "the active sweep removed expired keys";
  EXPECT_EQ(c.Call({"SET", "gone", "v"}), "+OK\r\n");
  EXPECT_EQ(c.Call({"EXPIRE", "gone", "-1"}), ":1\r\n");
  EXPECT_EQ(c.Call({"EXISTS", "gone"}), ":0\r\n") << "a past deadline deletes";
}

TEST(Shmkv, PipeliningBinaryAndLargeValues) {
  Server s("pipe");
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  std::string batch;
  for (int i = 0; i < 20000; ++i) {
    batch += Client::Encode({"SET", "p" + std::to_string(i), std::to_string(i * 7)});
    batch += Client::Encode({"GET", "p" + std::to_string(i)});
  }
  ASSERT_TRUE(c.SendRaw(batch));
  for (int i = 0; i < 20000; ++i) {
    ASSERT_EQ(c.Reply(), "+OK\r\n") << i;
    ASSERT_EQ(c.Reply(), Bulk(std::to_string(i * 7))) << i;
  }
  std::string bin;
  for (int i = 0; i < 256; ++i) bin.push_back(static_cast<char>(i));
  bin += "\r\n*1\r\n$";
  std::string key = std::string("k\0\r\n y", 6);
  EXPECT_EQ(c.Call({"SET", key, bin}), "+OK\r\n");
  EXPECT_EQ(c.Call({"GET", key}), Bulk(bin));
  std::string large(3 << 20, 'x');
  for (size_t i = 0; i < large.size(); i += 4099) large[i] = static_cast<char>(i);
  EXPECT_EQ(c.Call({"SET", "large", large}), "+OK\r\n");
  EXPECT_EQ(c.Call({"GET", "large"}), Bulk(large));
  EXPECT_EQ(c.Call({"STRLEN", "large"}), ":" + std::to_string(large.size()) + "\r\n");
  EXPECT_EQ(c.Call({"SET", "huge", std::string(17 << 20, 'y')}).substr(0, 4), "-ERR")
      << "over --max-value";
  // Inline commands, as typed into telnet.
  ASSERT_TRUE(c.SendRaw("SET inl 42\r\nINCR inl\r\n"));
  EXPECT_EQ(c.Reply(), "+OK\r\n");
  EXPECT_EQ(c.Reply(), ":43\r\n");
}

// INFO counts the asking client (and every client of its worker) at once,
// not at the worker's next 100 ms publication: each new connection's
// first command is an INFO that sees it.
TEST(Shmkv, InfoCountsTheAskingClientAtOnce) {
  Server s("infocc");
  s.set_workers(1);
  ASSERT_TRUE(s.Start()) << s.log();
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 1; i <= 20; ++i) {
    cs.push_back(std::make_unique<Client>(s.port()));
    ASSERT_TRUE(cs.back()->ok()) << i;
    EXPECT_EQ(InfoField(cs.back().get(), "connected_clients"),
              std::to_string(i));
  }
}

TEST(Shmkv, ThousandConnections) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 1100) GTEST_SKIP() << "needs ulimit -n >= 1100";
  Server s("conns");
  ASSERT_TRUE(s.Start()) << s.log();
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < 1000; ++i) {
    cs.push_back(std::make_unique<Client>(s.port()));
    ASSERT_TRUE(cs.back()->ok()) << i;
  }
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(cs[i]->SendRaw(Client::Encode({"SET", "c" + std::to_string(i), std::to_string(i)})));
  }
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(cs[i]->Reply(), "+OK\r\n") << i;
  for (int i = 999; i >= 0; --i) {
    ASSERT_EQ(cs[i]->Call({"GET", "c" + std::to_string(i)}), Bulk(std::to_string(i)));
  }
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(InfoField(cs[0].get(), "connected_clients"), "1000");
}

TEST(Shmkv, MalformedInputClosesOnlyThatConnection) {
  Server s("bad");
  ASSERT_TRUE(s.Start()) << s.log();
  Client other(s.port());
  ASSERT_EQ(other.Call({"SET", "k", "v"}), "+OK\r\n");
  for (std::string bad : {std::string("*2\r\n$x\r\n"), std::string("*1\r\n:5\r\n"),
                          std::string("*-5x\r\n"), std::string("*1\r\n$3\r\nabcXY")}) {
    Client c(s.port());
    ASSERT_TRUE(c.SendRaw(bad));
    std::string r = c.Reply();
    EXPECT_EQ(r.compare(0, 20, "-ERR Protocol error:"), 0) << r;
    EXPECT_TRUE(c.Closed()) << bad;
  }
  // HTTP: a malformed request gets 400 and a close; chunked gets 501.
  int fd = Connect(s.http_port());
  std::string r = HttpExchange(fd, "GARBAGE\r\n\r\n");
  EXPECT_EQ(r.compare(0, 24, "HTTP/1.1 400 Bad Request"), 0) << r;
  char ch;
  EXPECT_EQ(recv(fd, &ch, 1, 0), 0) << "closed";
  close(fd);
  fd = Connect(s.http_port());
  r = HttpExchange(fd, "PUT /kv/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(r.compare(0, 12, "HTTP/1.1 501"), 0) << r;
  close(fd);
  EXPECT_EQ(other.Call({"GET", "k"}), Bulk("v")) << "the server is unharmed";
}

TEST(Shmkv, Http) {
  Server s("http");
  ASSERT_TRUE(s.Start()) << s.log();
  int fd = Connect(s.http_port());
  std::string r = HttpExchange(fd, "PUT /kv/hello%20world HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nvalue");
  EXPECT_EQ(r.compare(0, 12, "HTTP/1.1 204"), 0) << r;
  // Keep-alive: the same connection goes on.
  r = HttpExchange(fd, "GET /kv/hello%20world HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.compare(0, 15, "HTTP/1.1 200 OK"), 0) << r;
  EXPECT_EQ(r.substr(r.size() - 5), "value");
  r = HttpExchange(fd, "DELETE /kv/hello%20world HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.compare(0, 12, "HTTP/1.1 204"), 0) << r;
  r = HttpExchange(fd, "GET /kv/hello%20world HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.compare(0, 12, "HTTP/1.1 404"), 0) << r;
  r = HttpExchange(fd, "GET /stats HTTP/1.1\r\n\r\n");
  EXPECT_NE(r.find("\"http_requests\":"), std::string::npos) << r;
  EXPECT_NE(r.find("application/json"), std::string::npos) << r;
  close(fd);
  // The RESP side sees what HTTP wrote.
  fd = Connect(s.http_port());
  HttpExchange(fd, "PUT /kv/shared HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc");
  close(fd);
  Client c(s.port());
  EXPECT_EQ(c.Call({"GET", "shared"}), Bulk("abc"));
}

// HTTP runs through the same typed dispatch as RESP: over a key of another
// type (written here straight into the shared store, as a family of that
// type would), GET and PUT answer 409 with Redis's WRONGTYPE text and the
// value stays; DELETE removes it, as DEL does.
TEST(Shmkv, HttpMeetsTypesAsRespDoes) {
  Server s("httptype");
  ASSERT_TRUE(s.Start()) << s.log();
  shmkv::StoreConfig cfg;
  cfg.name = s.name();
  cfg.capacity = 100000;
  cfg.memory = 64ULL << 20;
  {
    // Store::Open sets the process's default create flags (every shmkv
    // process writes): restored after, for the tests that follow here.
    int saved_flags = shmc::DefaultCreateFlags();
    std::string err;
    auto store = shmkv::Store::Open(cfg, false, &err);
    shmc::SetDefaultCreateFlags(saved_flags);
    ASSERT_NE(store, nullptr) << err;
    auto t = store->Begin();
    ASSERT_EQ(t->Write("h", shmkv::ValueType::kHash, 0, "packed", 0),
              shmkv::Store::Status::kOk);
    ASSERT_EQ(t->Commit(), shmkv::Store::Status::kOk);
  }
  const std::string wrongtype =
      "WRONGTYPE Operation against a key holding the wrong kind of value\n";
  int fd = Connect(s.http_port());
  std::string r = HttpExchange(fd, "GET /kv/h HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.compare(0, 21, "HTTP/1.1 409 Conflict"), 0) << r;
  EXPECT_EQ(r.substr(r.size() - wrongtype.size()), wrongtype) << r;
  r = HttpExchange(fd, "PUT /kv/h HTTP/1.1\r\nContent-Length: 1\r\n\r\nx");
  EXPECT_EQ(r.compare(0, 21, "HTTP/1.1 409 Conflict"), 0) << r;
  Client c(s.port());
  EXPECT_EQ(c.Call({"TYPE", "h"}), "+hash\r\n");
  r = HttpExchange(fd, "DELETE /kv/h HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.compare(0, 12, "HTTP/1.1 204"), 0) << r;
  EXPECT_EQ(c.Call({"TYPE", "h"}), "+none\r\n");
  close(fd);
}

// Every process is SIGKILLed at once in the middle of a write stream; a
// new server finds every acknowledged write.
TEST(Shmkv, KillNineEverythingLosesNothing) {
  Server s("kill9");
  ASSERT_TRUE(s.Start()) << s.log();
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0};
  std::thread writer([&] {
    Client c(s.port());
    for (int i = 0; !stop; ++i) {
      if (c.Call({"SET", "w" + std::to_string(i), std::to_string(i)}) != "+OK\r\n") break;
      acked = i + 1;
    }
  });
  while (acked < 3000) std::this_thread::sleep_for(1ms);
  s.KillAll();
  stop = true;
  writer.join();
  int n = acked;
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(c.Call({"GET", "w" + std::to_string(i)}), Bulk(std::to_string(i))) << i;
  }
}

// With a file backend the data is in a file: a server killed with -9 and
// started again (as after a reboot, the shared-memory control block is
// made anew) finds it, TTLs included.
TEST(Shmkv, FileBackendKeepsData) {
  std::string path = "/tmp/shmkv_test_" + std::to_string(getpid()) + ".seg";
  Server s("file");
  shmkv::StoreConfig file_cfg;
  file_cfg.backend = shmkv::Backend::kFile;
  file_cfg.name = path;
  std::string err;
  ASSERT_TRUE(shmkv::RemoveStore(file_cfg, &err)) << err;
  ASSERT_TRUE(s.Start({"--backend", "file:" + path})) << s.log();
  {
    Client c(s.port());
    ASSERT_EQ(c.Call({"SET", "durable", "yes"}), "+OK\r\n");
    ASSERT_EQ(c.Call({"SET", "ttl", "v", "EX", "1000"}), "+OK\r\n");
  }
  s.KillAll();
  // A reboot empties /dev/shm: remove the control segment (named from the
  // path's hash, docs/server.md) and its stats, as a reboot would.
  char ctl[64];
  std::snprintf(ctl, sizeof(ctl), "/shmkv-%016llx.ctl",
                static_cast<unsigned long long>(shmc::HashBytes(path.data(), path.size())));
  auto clean_ctl = [&] {
    shmc::POSIX().Unlink(ctl);
    shmc::POSIX().Unlink(std::string(ctl) + ".stats");
  };
  clean_ctl();
  ASSERT_TRUE(s.Start({"--backend", "file:" + path})) << s.log();
  Client c(s.port());
  EXPECT_EQ(c.Call({"GET", "durable"}), Bulk("yes"));
  std::string ttl = c.Call({"TTL", "ttl"});
  EXPECT_GT(std::stol(ttl.substr(1)), 990) << ttl;
  s.Stop();
  EXPECT_TRUE(shmkv::RemoveStore(file_cfg, &err)) << err;
}

// SIGHUP replaces every worker while clients keep writing and reading: no
// request fails, and each connection moves, open, to a new worker process.
// A worker killed, and its replacement killed again while it starts
// (before it serves): the master replaces that one too, so no slot is
// left without a worker and every new connection is answered. (A
// replacement that died at start used to leave its slot empty: the
// connections its listening socket queued were never answered.)
TEST(Shmkv, AWorkerKilledWhileItStartsIsReplaced) {
  Server s("startkill");
  ASSERT_TRUE(s.Start()) << s.log();
  const std::vector<pid_t> before = shmkv_test::WorkerPids(s.pid());
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(kill(before[0], SIGKILL), 0);
  // Its replacement, killed as soon as it exists.
  pid_t replacement = 0;
  for (int i = 0; i < 20000 && replacement == 0; ++i) {
    for (pid_t p : shmkv_test::WorkerPids(s.pid())) {
      if (p != before[0] && p != before[1]) replacement = p;
    }
    if (replacement == 0) std::this_thread::sleep_for(50us);
  }
  ASSERT_GT(replacement, 0);
  kill(replacement, SIGKILL);
  for (int i = 0; i < 300; ++i) {
    if (shmkv_test::WorkerPids(s.pid()).size() == 2 &&
        s.log().find("failed to start") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  // Connections land on both slots' listening sockets: each answers.
  for (int i = 0; i < 40; ++i) {
    Client c(s.port());
    ASSERT_EQ(c.Call({"PING"}), "+PONG\r\n") << "connection " << i << "\n"
                                              << s.log();
  }
}

TEST(Shmkv, HotRestartUnderLoadFailsNothing) {
  Server s("hot");
  ASSERT_TRUE(s.Start()) << s.log();
  constexpr int kClients = 8;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<long> done{0};
  std::vector<std::string> before(kClients), after(kClients);
  std::vector<std::thread> ts;
  for (int t = 0; t < kClients; ++t) {
    ts.emplace_back([&, t] {
      Client c(s.port());
      before[t] = InfoField(&c, "process_id");
      for (long i = 0; !stop; ++i) {
        std::string k = "h" + std::to_string(t) + "_" + std::to_string(i % 500);
        std::string v = std::to_string(i);
        if (c.Call({"SET", k, v}) != "+OK\r\n" || c.Call({"GET", k}) != Bulk(v) ||
            c.Call({"INCR", "counter" + std::to_string(t)}).substr(0, 1) != ":") {
          ++failures;
          return;
        }
        ++done;
      }
      after[t] = InfoField(&c, "process_id");
    });
  }
  std::this_thread::sleep_for(300ms);
  long at_hup = done;
  s.Signal(SIGHUP);
  std::this_thread::sleep_for(1500ms);
  stop = true;
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures, 0) << s.log();
  EXPECT_GT(done, at_hup + 100) << "traffic went on";
  for (int t = 0; t < kClients; ++t) {
    EXPECT_NE(before[t], after[t]) << "connection " << t << " moved to a new worker";
    EXPECT_FALSE(after[t].empty());
  }
  Client c(s.port());
  EXPECT_EQ(InfoField(&c, "reloads"), "1");
  long sum = 0;
  for (int t = 0; t < kClients; ++t) {
    std::string r = c.Call({"GET", "counter" + std::to_string(t)});
    sum += std::stol(r.substr(r.find("\r\n") + 2));
  }
  EXPECT_EQ(sum, done) << "every acknowledged INCR counted once";
}

// A worker that keeps dying at start is given up on: its listening
// sockets close with it, so no new connection waits in a queue nobody
// accepts from (with every worker given up, the master stops).
TEST(Shmkv, GivingUpOnAWorkerLeavesNoClientHanging) {
  Server s("giveup");
  ASSERT_TRUE(s.Start()) << s.log();
  for (int i = 0; i < 40; ++i) {
    Client c(s.port());
    if (!c.ok()) break;
    std::string pid = InfoField(&c, "process_id");
    if (!pid.empty()) kill(std::stoi(pid), SIGKILL);
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(s.log().find("giving up"), std::string::npos) << s.log();
  for (int i = 0; i < 20; ++i) {
    Client c(s.port());
    if (!c.ok()) continue;  // refused: nobody listens any more
    ASSERT_TRUE(c.SendRaw(Client::Encode({"PING"})));
    ASSERT_TRUE(c.Answered(5000)) << "connection " << i << " left hanging";
    std::string r = c.Reply();
    EXPECT_TRUE(r.empty() || r == "+PONG\r\n") << r;
  }
}

TEST(Shmkv, ClearStartupErrors) {
  Server a("errs");
  ASSERT_TRUE(a.Start()) << a.log();
  {  // another server on a's port: refused, with the reason
    Server c("errs3");
    EXPECT_FALSE(c.Start({"--port", std::to_string(a.port())}));
    EXPECT_EQ(c.exit_code(), 1);
    EXPECT_NE(c.log().find("is in use"), std::string::npos) << c.log();
  }
  // A second server on the same segment.
  {
    Server d("errs", false);
    EXPECT_FALSE(d.Start());
    EXPECT_NE(d.log().find("already running"), std::string::npos) << d.log();
  }
  // A segment of another layout under the name.
  {
    Server e("layout");
    struct Other {
      uint64_t k, v[3];
      std::pair<bool, uint64_t> Key() const volatile { return {k != 0, k}; }
    };
    shmc::ShmHashTable<uint64_t, Other, shmc::POSIX> t;
    ASSERT_TRUE(t.InitForWrite(e.name() + "0", 1000));
    EXPECT_FALSE(e.Start());
    EXPECT_EQ(e.exit_code(), 1);
    EXPECT_NE(e.log().find("layout_mismatch"), std::string::npos) << e.log();
  }
}

// --name takes the shmc tool's syntax (posix:/NAME, sysv:KEY, file:PATH),
// and the server names its segment so in CONFIG and its log; a name that
// says its backend and --backend together are a usage error.
TEST(Shmkv, NamesSegmentsAsShmcDoes) {
  Server s("named");
  ASSERT_TRUE(s.Start({"--name", "posix:" + s.name()})) << s.log();
  EXPECT_EQ(access(("/dev/shm" + s.name() + "0").c_str(), F_OK), 0);
  Client c(s.port());
  EXPECT_EQ(c.Call({"CONFIG", "GET", "shmkv-name"}),
            "*2\r\n$10\r\nshmkv-name\r\n$" +
                std::to_string(6 + s.name().size()) + "\r\nposix:" +
                s.name() + "\r\n");
  s.Stop();
  EXPECT_NE(s.log().find("posix:" + s.name()), std::string::npos) << s.log();
  Server bad("badname");
  EXPECT_FALSE(bad.Start({"--name", "sysv:notakey"}));
  EXPECT_EQ(bad.exit_code(), 2) << bad.log();
  EXPECT_NE(bad.log().find("SysV key"), std::string::npos) << bad.log();
  Server both("both");
  EXPECT_FALSE(both.Start({"--name", "posix:/x", "--backend", "sysv"}));
  EXPECT_EQ(both.exit_code(), 2) << both.log();
}

// A SysV key for this test process: TAG (1-9) then the pid, so that the
// map's keys (KEY0, KEY1) stay under 2^32 and no two tests share one.
std::string SysvTestKey(int tag) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%d%07d", tag, static_cast<int>(getpid()) % 10000000);
  return buf;
}

bool SysvPresent(const std::string& key) {
  return shmget(static_cast<key_t>(std::stoul(key)), 0, 0) >= 0;
}

// Removes a SysV store's segments (the map's and the POSIX control ones).
void RemoveSysvStore(const std::string& key) {
  shmkv::StoreConfig cfg;
  cfg.backend = shmkv::Backend::kSysv;
  cfg.name = key;
  std::string err;
  EXPECT_TRUE(shmkv::RemoveStore(cfg, &err)) << err;
}

// --hugepages puts the map on SysV hugetlb segments: it needs a sysv: name
// (a usage error otherwise); a pool too small for the map is a clear
// error that says what the map needs and what is free, leaving no segment;
// a map made without it is attached as it is, with a warning.
TEST(Shmkv, HugepagesNeedASysvNameAndAPool) {
  Server posix("hugeposix");
  EXPECT_FALSE(posix.Start({"--hugepages"}));
  EXPECT_EQ(posix.exit_code(), 2) << posix.log();
  EXPECT_NE(posix.log().find("--hugepages puts the map on System V"),
            std::string::npos) << posix.log();

  const std::string key = SysvTestKey(7);
  RemoveSysvStore(key);
  // More than the pool holds (or any memory at all when it is empty).
  long pages = shmc_test::HugePagesFree() + 64;
  Server big("hugebig");
  EXPECT_FALSE(big.Start({"--name", "sysv:" + key, "--hugepages", "--memory",
                          std::to_string(pages * 2) + "M"}));
  EXPECT_EQ(big.exit_code(), 1) << big.log();
  EXPECT_NE(big.log().find("not enough free hugepages: the segment needs"),
            std::string::npos) << big.log();
  EXPECT_NE(big.log().find("hugepages of 2048 KiB"), std::string::npos)
      << big.log();
  EXPECT_FALSE(SysvPresent(key + "0")) << "the map's index was left behind";
  EXPECT_FALSE(SysvPresent(key + "1"));
  shmkv::StoreConfig cfg;
  cfg.backend = shmkv::Backend::kSysv;
  cfg.name = key;
  EXPECT_NE(access(("/dev/shm" + shmkv::ControlKey(cfg)).c_str(), F_OK), 0);

  // A map made on 4 KiB pages stays on them, and the log says so.
  Server small("hugesmall");
  ASSERT_TRUE(small.Start({"--name", "sysv:" + key})) << small.log();
  small.Stop();
  ASSERT_TRUE(small.Start({"--name", "sysv:" + key, "--hugepages"}))
      << small.log();
  small.Stop();
  EXPECT_NE(small.log().find("sysv:" + key + "0 was made on 4 KiB pages"),
            std::string::npos) << small.log();
  RemoveSysvStore(key);
}

// With a pool, the map lives on 2 MiB pages, and a restart finds its data.
TEST(Shmkv, HugepagesHoldTheMapAcrossARestart) {
  if (shmc_test::HugePagesFree() < 64) {
    GTEST_SKIP() << "fewer than 64 free hugepages (echo 64 > "
                    "/proc/sys/vm/nr_hugepages)";
  }
  const std::string key = SysvTestKey(6);
  RemoveSysvStore(key);
  std::vector<std::string> args = {"--name", "sysv:" + key, "--hugepages",
                                   "--memory", "32M"};
  Server s("hugeok");
  ASSERT_TRUE(s.Start(args)) << s.log();
  {
    Client c(s.port());
    EXPECT_EQ(c.Call({"SET", "k", "on hugepages"}), "+OK\r\n");
  }
  EXPECT_EQ(shmkv::SysvPageKib(s.pid(), key + "0"), 2048);
  EXPECT_EQ(shmkv::SysvPageKib(s.pid(), key + "1"), 2048);
  s.Stop();
  ASSERT_TRUE(s.Start(args)) << s.log();
  {
    Client c(s.port());
    EXPECT_EQ(c.Call({"GET", "k"}), "$12\r\non hugepages\r\n");
  }
  s.Stop();
  RemoveSysvStore(key);
  EXPECT_FALSE(SysvPresent(key + "0"));
}

// At the open files limit a worker neither spins nor floods its log: the
// connections beyond it are told "-ERR max number of clients reached" (as
// Redis answers beyond maxclients) and closed, INFO counts them as
// rejected_connections, the log says so once a second, and the clients
// already connected are served; closing some makes room again.
TEST(Shmkv, OpenFilesLimitRefusesClearly) {
  Server s("fdlimit");
  s.set_fd_limit(64);
  ASSERT_TRUE(s.Start({"--workers", "1"})) << s.log();
  std::vector<std::unique_ptr<Client>> clients;
  int refused = 0, served = 0;
  for (int i = 0; i < 120; ++i) {
    auto c = std::make_unique<Client>(s.port());
    if (!c->ok()) continue;
    std::string r = c->Call({"PING"});
    if (r.empty()) {
      ADD_FAILURE() << "connection " << i << " was neither served nor "
                    << "refused within 10 s";
      break;
    }
    if (r == "+PONG\r\n") {
      ++served;
      clients.push_back(std::move(c));
    } else {
      EXPECT_EQ(r, "-ERR max number of clients reached\r\n");
      ++refused;
    }
  }
  EXPECT_GT(served, 10);
  EXPECT_GT(refused, 30);
  EXPECT_EQ(served + refused, 120);
  for (auto& c : clients) EXPECT_EQ(c->Call({"PING"}), "+PONG\r\n");
  clients.resize(clients.size() - 5);  // room for five
  std::this_thread::sleep_for(200ms);
  Client again(s.port());
  EXPECT_EQ(again.Call({"PING"}), "+PONG\r\n");
  std::string info = again.Call({"INFO", "stats"});
  EXPECT_NE(info.find("rejected_connections:" + std::to_string(refused)),
            std::string::npos) << info;
  s.Stop();
  std::string log = s.log();
  size_t lines = 0;
  for (size_t at = 0; (at = log.find("new connections are refused", at)) !=
                      std::string::npos; ++at) {
    ++lines;
  }
  EXPECT_GE(lines, 1u) << log;
  EXPECT_LE(lines, 3u) << "once a second, not per connection:\n" << log;
}

TEST(Shmkv, RedisCli) {
  if (access("/usr/bin/redis-cli", X_OK) != 0) {
    GTEST_SKIP() << "redis-cli not installed (apt-get install redis-tools)";
  }
  Server s("cli");
  ASSERT_TRUE(s.Start()) << s.log();
  auto run = [&](const std::string& args) {
    std::string cmd = "/usr/bin/redis-cli -p " + std::to_string(s.port()) + " " + args;
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
    return out;
  };
  EXPECT_EQ(run("set greeting 'hello world'"), "OK\n");
  EXPECT_EQ(run("get greeting"), "hello world\n");
  EXPECT_EQ(run("incrby n 5"), "5\n");  // not a tty: raw replies
  std::string scan = run("--scan");
  EXPECT_NE(scan.find("greeting"), std::string::npos) << scan;
  EXPECT_NE(run("info server").find("redis_version"), std::string::npos);
  EXPECT_NE(run("nosuch").find("ERR unknown command 'nosuch'"), std::string::npos);
}

// Sends each command to both servers on one connection each and expects
// byte-identical replies.
void ExpectSameReplies(int shmkv_port, int redis_port,
                       const std::vector<std::vector<std::string>>& cmds) {
  Client a(shmkv_port), b(redis_port);
  ASSERT_TRUE(a.ok() && b.ok());
  for (const auto& cmd : cmds) {
    std::string line;
    for (const std::string& w : cmd) line += w + " ";
    EXPECT_EQ(a.Call(cmd), b.Call(cmd)) << "command: " << line;
  }
}

// Bugs found in commands shmkv already had, each
// compared with Redis: overflowing TTLs are refused and keep the key, a
// cursor out of range or negative, CLIENT subcommands, AUTH with no
// password configured.
TEST(ShmkvVsRedis, EdgeCasesReplyAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("diff");
  ASSERT_TRUE(s.Start()) << s.log();
  ExpectSameReplies(s.port(), redis.port(), {
      {"SET", "k", "v"},
      {"EXPIRE", "k", "9223370399119966"},
      {"PEXPIRE", "k", "9223372036854770000"},
      {"EXPIRE", "k", "9223372036854775807"},
      {"EXPIRE", "k", "-9223372036854775808"},
      {"SET", "k", "v", "PX", "9223372036854775807"},
      {"SET", "k", "v", "EX", "9223372036854775"},
      {"SET", "k", "v", "EX", "0"},
      {"SET", "k", "v", "PX", "-1"},
      {"GET", "k"},
      {"TTL", "k"},
      {"SCAN", "abc"},
      {"SCAN", " 1"},
      {"SCAN", "99999999999999999999999"},
      {"SCAN", "0", "COUNT", "0"},
      {"CLIENT", "GETNAME"},
      {"CLIENT", "SETNAME", "a b"},
      {"CLIENT", "SETNAME", "worker-1"},
      {"CLIENT", "GETNAME"},
      {"CLIENT", "NOSUCH"},
      {"CLIENT", "GETNAME", "extra"},
      {"AUTH", "secret"},
      {"AUTH", "someone", "secret"},
      {"AUTH", "default", "anything"},
      {"HELLO", "x"},
      {"EXPIRE", "k", "-5"},
      {"EXISTS", "k"},
  });
  // Redis reads the cursor as a C string: an empty one is 0, and a zero
  // byte ends it. (The replies are compared with each server's own SCAN 0:
  // the two servers' first pages differ.)
  for (int port : {s.port(), redis.port()}) {
    Client p(port);
    std::string first = p.Call({"SCAN", "0"});
    EXPECT_EQ(p.Call({"SCAN", ""}), first) << port;
    EXPECT_EQ(p.Call({"SCAN", std::string("0\0zz", 4)}), first) << port;
  }
  // A cursor no SCAN returned ends the scan (Redis masks it into its
  // table instead: a documented difference); it never loops forever.
  Client c(s.port());
  for (const char* bad : {"99999999999", "-1"}) {
    std::string r = c.Call({"SCAN", bad});
    EXPECT_EQ(r, "*2\r\n$1\r\n0\r\n*0\r\n") << bad;
  }
  // A multibulk count of 0 or below is skipped without a reply, as in
  // Redis, and the connection goes on (a negative count killed a worker).
  for (int port : {s.port(), redis.port()}) {
    Client p(port);
    ASSERT_TRUE(p.SendRaw("*-1\r\n*0\r\n*-5\r\n*1\r\n$4\r\nPING\r\n"));
    EXPECT_EQ(p.Reply(), "+PONG\r\n") << (port == s.port() ? "shmkv" : "redis");
  }
  // A multibulk count of 19+ digits is a protocol error, as in Redis.
  for (int port : {s.port(), redis.port()}) {
    Client p(port);
    ASSERT_TRUE(p.SendRaw("*9999999999999999999\r\n"));
    EXPECT_EQ(p.Reply(), "-ERR Protocol error: invalid multibulk length\r\n")
        << (port == s.port() ? "shmkv" : "redis");
  }
}

// SCAN's COUNT counts keys: a full scan takes about keys/COUNT calls even
// when the table is mostly empty (2,001 keys in a 100,000-key index).
TEST(ShmkvVsRedis, ScanRoundTripsFollowCount) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("scan");
  ASSERT_TRUE(s.Start()) << s.log();
  const int kKeys = 2001;
  std::map<int, size_t> calls;
  for (int port : {s.port(), redis.port()}) {
    Client c(port);
    std::string batch;
    for (int i = 0; i < kKeys; ++i) {
      batch += Client::Encode({"SET", "key:" + std::to_string(i), "v"});
    }
    ASSERT_TRUE(c.SendRaw(batch));
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(c.Reply(), "+OK\r\n");
    std::set<std::string> seen;
    std::string cursor = "0";
    size_t n = 0;
    do {
      std::string r = c.Call({"SCAN", cursor});
      ++n;
      ASSERT_GT(n, 0u);
      ASSERT_LT(n, 100000u) << "scan does not end";
      // *2 $len cursor *m ($len key)...
      size_t p = r.find("\r\n", 4);
      size_t q = r.find("\r\n", p + 2);
      cursor = r.substr(p + 2, q - p - 2);
      size_t at = r.find("key:");
      while (at != std::string::npos) {
        size_t e = r.find("\r\n", at);
        seen.insert(r.substr(at, e - at));
        at = r.find("key:", e);
      }
    } while (cursor != "0");
    EXPECT_EQ(seen.size(), static_cast<size_t>(kKeys));
    calls[port] = n;
  }
  EXPECT_LE(calls[s.port()], 2 * calls[redis.port()] + 10)
      << "shmkv " << calls[s.port()] << " calls, redis "
      << calls[redis.port()];
}

// requirepass: NOAUTH before AUTH, WRONGPASS for a wrong one, as Redis
// words them; HTTP wants the password as a bearer token.
TEST(ShmkvVsRedis, RequirePass) {
  RedisOracle redis({"--requirepass", "s3cret"});
  SKIP_WITHOUT_REDIS(redis);
  std::string pwfile = "/tmp/shmkv_test_" + std::to_string(getpid()) + ".pw";
  {
    std::ofstream f(pwfile);
    f << "s3cret\n";
  }
  Server s("auth");
  // Start() pings to see the server up; with a password that is NOAUTH.
  ASSERT_TRUE(s.Start({"--requirepass-file", pwfile})) << s.log();
  unlink(pwfile.c_str());
  Client probe(s.port());
  ASSERT_TRUE(probe.ok()) << s.log();
  ExpectSameReplies(s.port(), redis.port(), {
      {"GET", "k"},
      {"SET", "k", "v"},
      {"NOSUCH"},
      {"AUTH", "wrong"},
      {"AUTH", "default", "wrong"},
      {"AUTH", "nobody", "s3cret"},
      {"HELLO", "2"},
      {"AUTH", "s3cret"},
      {"SET", "k", "v"},
      {"GET", "k"},
      {"DEL", "k"},
  });
  ExpectSameReplies(s.port(), redis.port(), {
      {"AUTH", "default", "s3cret"},
      {"GET", "k"},
  });
  int fd = Connect(s.http_port());
  std::string r = HttpExchange(fd, "GET /kv/k HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 401") << r;
  close(fd);
  fd = Connect(s.http_port());
  r = HttpExchange(fd, "GET /kv/k HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer s3cret\r\n\r\n");
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 404") << r;
  close(fd);
  EXPECT_EQ(s.log().find("s3cret"), std::string::npos);
}

// A hot upgrade to a build whose statistics have another layout (the
// running master's segment has the old one): the new workers serve
// without publishing statistics instead of failing, so the reload goes
// through. Here the segment is swapped for one of another layout.
TEST(Shmkv, HotUpgradeAcrossAStatsLayoutChangeServes) {
  Server s("statsupg");
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  ASSERT_EQ(c.Call({"SET", "a", "1"}), "+OK\r\n");
  const std::string stats = s.name() + ".ctl.stats";
  ASSERT_TRUE(shmc::POSIX().Unlink(stats));
  struct Other {
    uint64_t words[3];
  };
  {
    shmc::ShmArray<Other, shmc::POSIX> other;
    ASSERT_TRUE(other.InitForWrite(stats, 64)) << other.last_error().message;
  }
  s.Signal(SIGHUP);
  for (int i = 0; i < 500 && InfoField(&c, "reloads") != "1"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(InfoField(&c, "reloads"), "1") << s.log();
  EXPECT_NE(s.log().find("serving without statistics"), std::string::npos)
      << s.log();
  EXPECT_EQ(s.log().find("reload stopped"), std::string::npos) << s.log();
  Client after(s.port());
  EXPECT_EQ(after.Call({"GET", "a"}), "$1\r\n1\r\n");
  EXPECT_EQ(after.Call({"SET", "b", "2"}), "+OK\r\n");
}

// A hot restart moves open connections to the new workers with what they
// carry: an authenticated client stays authenticated and keeps its name
// (and its protocol), one that never authenticated still gets NOAUTH.
TEST(Shmkv, HotRestartKeepsEachConnectionsAuth) {
  std::string pwfile = "/tmp/shmkv_test_" + std::to_string(getpid()) + ".pw2";
  {
    std::ofstream f(pwfile);
    f << "hunter2\n";
  }
  Server s("hotauth");
  ASSERT_TRUE(s.Start({"--requirepass-file", pwfile})) << s.log();
  unlink(pwfile.c_str());
  Client authed(s.port()), stranger(s.port()), resp3(s.port());
  ASSERT_EQ(authed.Call({"AUTH", "hunter2"}), "+OK\r\n");
  std::string hello = resp3.Call({"HELLO", "3", "AUTH", "default", "hunter2"});
  ASSERT_EQ(hello.substr(0, 4), "%7\r\n") << hello;
  ASSERT_EQ(authed.Call({"CLIENT", "SETNAME", "keeper"}), "+OK\r\n");
  ASSERT_EQ(authed.Call({"SET", "k", "v"}), "+OK\r\n");
  std::string id = authed.Call({"CLIENT", "ID"});
  std::string before = InfoField(&authed, "process_id");
  s.Signal(SIGHUP);
  std::string after = before;
  for (int i = 0; i < 100 && after == before; ++i) {
    std::this_thread::sleep_for(50ms);
    after = InfoField(&authed, "process_id");
  }
  ASSERT_NE(after, before) << "the connection was not moved: " << s.log();
  EXPECT_EQ(authed.Call({"GET", "k"}), Bulk("v"));
  EXPECT_EQ(authed.Call({"CLIENT", "GETNAME"}), Bulk("keeper"));
  EXPECT_EQ(authed.Call({"CLIENT", "ID"}), id);
  EXPECT_EQ(stranger.Call({"GET", "k"}), "-NOAUTH Authentication required.\r\n");
  // A RESP3 connection stays RESP3 (and authenticated).
  EXPECT_EQ(resp3.Call({"GET", "nosuch"}), "_\r\n");
  EXPECT_EQ(resp3.Call({"HGETALL", "nosuch"}), "%0\r\n");
}

// CLIENT REPLY OFF silences a connection's replies, not its pub/sub
// confirmations and messages; a hot restart moves a silenced connection
// (and one that asked to SKIP its next reply) with its mode: after it,
// the silenced one still gets nothing back until CLIENT REPLY ON, so the
// bytes it reads are what redis-server would have sent.
TEST(Shmkv, ClientReplyOffHoldsAcrossAHotRestart) {
  Server s("replyoff");
  ASSERT_TRUE(s.Start()) << s.log();
  Client quiet(s.port()), skipper(s.port()), sub(s.port()), other(s.port());
  ASSERT_TRUE(quiet.SendRaw(Client::Encode({"CLIENT", "REPLY", "OFF"}) +
                            Client::Encode({"SET", "k", "1"})));
  ASSERT_TRUE(skipper.SendRaw(Client::Encode({"CLIENT", "REPLY", "SKIP"})));
  ASSERT_TRUE(sub.SendRaw(Client::Encode({"CLIENT", "REPLY", "OFF"}) +
                          Client::Encode({"SUBSCRIBE", "ch"})));
  EXPECT_EQ(sub.Reply(), "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
  for (int i = 0; i < 200 && other.Call({"GET", "k"}) != Bulk("1"); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  std::string before = InfoField(&other, "process_id");
  s.Signal(SIGHUP);
  std::string after = before;
  for (int i = 0; i < 100 && after == before; ++i) {
    std::this_thread::sleep_for(50ms);
    after = InfoField(&other, "process_id");
  }
  ASSERT_NE(after, before) << s.log();
  // Both asked for nothing before the restart and get nothing after it
  // until the reply that ends a pipeline: ON's OK (then the GET), and for
  // the skipper the GET after the skipped INCR.
  ASSERT_TRUE(quiet.SendRaw(Client::Encode({"INCR", "k"}) +
                            Client::Encode({"CLIENT", "REPLY", "ON"}) +
                            Client::Encode({"GET", "k"})));
  EXPECT_EQ(quiet.Reply(), "+OK\r\n");
  EXPECT_EQ(quiet.Reply(), Bulk("2"));
  ASSERT_TRUE(skipper.SendRaw(Client::Encode({"INCR", "k"}) +
                              Client::Encode({"GET", "k"})));
  EXPECT_EQ(skipper.Reply(), Bulk("3"));
  for (int i = 0; i < 200 && other.Call({"PUBLISH", "ch", "hi"}) != ":1\r\n";
       ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(sub.Reply(), "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
}

// A hot restart hands a connection over only between transactions: one
// inside MULTI keeps its queue and its EXEC runs whole; one that WATCHes
// is handed over with its watches lost, so its next EXEC runs nothing and
// a retry succeeds.
TEST(Shmkv, HotRestartKeepsTransactionsWhole) {
  Server s("hottxn");
  ASSERT_TRUE(s.Start()) << s.log();
  Client queued(s.port()), watcher(s.port());
  ASSERT_EQ(queued.Call({"MULTI"}), "+OK\r\n");
  ASSERT_EQ(queued.Call({"SET", "t1", "a"}), "+QUEUED\r\n");
  ASSERT_EQ(queued.Call({"SET", "t2", "b"}), "+QUEUED\r\n");
  ASSERT_EQ(watcher.Call({"WATCH", "w"}), "+OK\r\n");
  std::string before = InfoField(&watcher, "process_id");
  s.Signal(SIGHUP);
  std::string after = before;
  for (int i = 0; i < 100 && after == before; ++i) {
    std::this_thread::sleep_for(50ms);
    after = InfoField(&watcher, "process_id");
  }
  ASSERT_NE(after, before) << "the watcher was not moved: " << s.log();
  EXPECT_EQ(queued.Call({"EXEC"}), "*2\r\n+OK\r\n+OK\r\n");
  EXPECT_EQ(queued.Call({"MGET", "t1", "t2"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  ASSERT_EQ(watcher.Call({"MULTI"}), "+OK\r\n");
  ASSERT_EQ(watcher.Call({"SET", "w", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(watcher.Call({"EXEC"}), "*-1\r\n") << "watches lost in the move";
  EXPECT_EQ(watcher.Call({"EXISTS", "w"}), ":0\r\n");
  ASSERT_EQ(watcher.Call({"WATCH", "w"}), "+OK\r\n");
  ASSERT_EQ(watcher.Call({"MULTI"}), "+OK\r\n");
  ASSERT_EQ(watcher.Call({"SET", "w", "2"}), "+QUEUED\r\n");
  EXPECT_EQ(watcher.Call({"EXEC"}), "*1\r\n+OK\r\n");
  // The queued client moves too once its transaction is over.
  std::string moved = before;
  for (int i = 0; i < 100 && moved == before; ++i) {
    moved = InfoField(&queued, "process_id");
    if (moved == before) std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(moved, before);
}

int ConnectTo(const std::string& ip, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &sa.sin_addr);
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Safe by default: loopback only; bound wider with no password, protected
// mode answers other hosts with Redis's DENIED error; segments are 0600.
TEST(Shmkv, SafeByDefault) {
  std::string ip = NonLoopbackIPv4();
  Server s("safe");
  ASSERT_TRUE(s.Start()) << s.log();
  struct stat st;
  ASSERT_EQ(stat(("/dev/shm" + s.name() + "0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(("/dev/shm" + s.name() + "1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  if (ip.empty()) GTEST_SKIP() << "no non-loopback address to test from";
  EXPECT_LT(ConnectTo(ip, s.port()), 0) << "listening beyond loopback";
  s.Stop();
  // All interfaces, no password: protected mode.
  Server p("prot");
  ASSERT_TRUE(p.Start({"--bind", "0.0.0.0"})) << p.log();
  int fd = ConnectTo(ip, p.port());
  ASSERT_GE(fd, 0);
  char buf[4096];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  close(fd);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, 41), "-DENIED Redis is running in protected mod");
  Client local(p.port());
  EXPECT_EQ(local.Call({"PING"}), "+PONG\r\n") << "loopback is served";
}

// A start that cannot listen creates no segment.
TEST(Shmkv, FailedStartLeavesNoSegments) {
  Server a("busy");
  ASSERT_TRUE(a.Start()) << a.log();
  Server b("nosegs");
  EXPECT_FALSE(b.Start({"--port", std::to_string(a.port())}));
  EXPECT_EQ(b.exit_code(), 1);
  for (const char* suffix :
       {"0", "1", ".ctl", ".ctl.stats", ".ctl.latency", ".ctl.repl",
        ".ctl.settings", ".ctl.settings.more"}) {
    EXPECT_NE(access(("/dev/shm" + b.name() + suffix).c_str(), F_OK), 0)
        << suffix << " was created";
  }
}

TEST(Shmkv, ConflictingContentLengthIsRefused) {
  Server s("smuggle");
  ASSERT_TRUE(s.Start()) << s.log();
  int fd = Connect(s.http_port());
  std::string r = HttpExchange(
      fd, "PUT /kv/a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 30\r\n"
          "\r\nxGET /kv/a HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 400") << r;
  close(fd);
  fd = Connect(s.http_port());
  std::string big(20000, 'a');
  r = HttpExchange(fd, "GET /stats HTTP/1.1\r\nX-Big: " + big + "\r\n\r\n");
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 431") << "a head over 16 KiB in one read";
  close(fd);
}


// 50 clients each send 30 MiB of a request and stop: 1.5 GB if every
// partial request were kept. The bound on all clients' buffers (256 MiB
// by default, split between the workers) closes the clients holding the
// most, with an error, and the server keeps serving; a client left open
// can still finish its request.
TEST(Shmkv, ClientBuffersAreBoundedServerWide) {
  Server s("inbound");
  ASSERT_TRUE(s.Start()) << s.log();
  Client probe(s.port());
  ASSERT_EQ(probe.Call({"CONFIG", "GET", "maxmemory-clients"}),
            "*2\r\n$17\r\nmaxmemory-clients\r\n$9\r\n268435456\r\n");
  const uint64_t before = WorkersAnonRss(s.pid());
  constexpr size_t kClients = 50;
  constexpr size_t kPartial = 30 << 20;
  const std::string head = "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" +
                           std::to_string(kPartial + 100) + "\r\n";
  const std::string chunk(256 << 10, 'v');
  struct Sender {
    int fd;
    size_t sent = 0;
    bool refused = false;
  };
  std::vector<Sender> senders;
  for (size_t i = 0; i < kClients; ++i) {
    int fd = Connect(s.port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(head.size()));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    senders.push_back({fd});
  }
  uint64_t peak = 0;
  auto deadline = std::chrono::steady_clock::now() + 90s;
  for (size_t busy = kClients; busy > 0;) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the clients stalled";
    busy = 0;
    bool moved = false;
    for (Sender& c : senders) {
      if (c.refused || c.sent == kPartial) continue;
      ++busy;
      size_t n = std::min(chunk.size(), kPartial - c.sent);
      ssize_t k = send(c.fd, chunk.data(), n, MSG_NOSIGNAL);
      if (k > 0) {
        c.sent += static_cast<size_t>(k);
        moved = true;
      } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        c.refused = true;  // closed by the server
      }
    }
    if (!moved) {
      peak = std::max(peak, WorkersAnonRss(s.pid()));
      std::this_thread::sleep_for(2ms);
    }
  }
  std::this_thread::sleep_for(300ms);  // the last reads, and stats
  peak = std::max(peak, WorkersAnonRss(s.pid()));
  // Those not refused while sending: closed since, or still held.
  size_t open = 0;
  for (Sender& c : senders) {
    if (c.refused) continue;
    char b[256];
    ssize_t k = recv(c.fd, b, sizeof(b), 0);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ++open;
      continue;
    }
    if (k > 0) {
      EXPECT_EQ(std::string(b, static_cast<size_t>(k)).rfind("-ERR client closed", 0), 0u)
          << std::string(b, static_cast<size_t>(k));
    }
    c.refused = true;
  }
  std::printf("worker heap before %.1f MiB, peak %.1f MiB; %zu of %zu "
              "partial requests still held\n", before / 1048576.0,
              peak / 1048576.0, open, kClients);
#if defined(__SANITIZE_ADDRESS__)
  // ASan keeps freed blocks in quarantine (256 MiB) and ignores mallopt:
  // the heap says nothing here. The count of held requests still does.
  (void)before;
#else
  EXPECT_LE(peak - before, (256u + 64u) << 20) << "the bound did not hold";
#endif
  EXPECT_LE(open * kPartial, size_t{256} << 20);
  EXPECT_GE(open, 1u) << "the bound leaves room for large requests";
  EXPECT_GE(std::stoull(InfoField(&probe, "evicted_clients")), kClients - open);
  EXPECT_EQ(probe.Call({"SET", "small", "v"}), "+OK\r\n");
  // A client still open finishes its request; the value is over
  // --max-value, so Redis's size error comes back, on a live connection.
  for (Sender& c : senders) {
    if (c.refused) continue;
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) & ~O_NONBLOCK);
    std::string tail = std::string(100, 'v') + "\r\nPING\r\n";
    ASSERT_EQ(send(c.fd, tail.data(), tail.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(tail.size()));
    std::string got;
    char b[512];
    while (got.find("+PONG\r\n") == std::string::npos) {
      struct pollfd p = {c.fd, POLLIN, 0};
      ASSERT_GT(poll(&p, 1, 10000), 0) << got;
      ssize_t k = recv(c.fd, b, sizeof(b), 0);
      ASSERT_GT(k, 0) << got;
      got.append(b, static_cast<size_t>(k));
    }
    EXPECT_EQ(got.rfind("-ERR", 0), 0u) << got;
    break;
  }
  for (Sender& c : senders) close(c.fd);
  std::this_thread::sleep_for(300ms);
  // What is held now is the asking INFO alone (the worker asked counts
  // its own figures as they are at the command).
  EXPECT_EQ(InfoField(&probe, "client_buffers"),
            std::to_string(Client::Encode({"INFO"}).size()))
      << "closed clients' buffers are released";
}

// --memory is what INFO reports as maxmemory (to the 80-byte node), and
// what the store's used_memory counts toward.
TEST(Shmkv, MemoryOptionIsMaxmemory) {
  Server s("maxmem");
  ASSERT_TRUE(s.Start()) << s.log();  // --memory 64M
  Client c(s.port());
  uint64_t max = std::stoull(InfoField(&c, "maxmemory"));
  EXPECT_LE(max, uint64_t{64} << 20);
  EXPECT_GT(max, (uint64_t{64} << 20) - 80);
  uint64_t before = std::stoull(InfoField(&c, "used_memory"));
  ASSERT_EQ(c.Call({"SET", "k", std::string(1000, 'v')}), "+OK\r\n");
  uint64_t after = std::stoull(InfoField(&c, "used_memory"));
  EXPECT_GE(after - before, 1000u);
  EXPECT_LE(after - before, 2000u);
}

// Redis's timeout: a client silent for longer than --timeout seconds is
// closed; one that keeps talking is not.
TEST(Shmkv, IdleClientsTimeOut) {
  Server s("timeout");
  ASSERT_TRUE(s.Start({"--timeout", "1"})) << s.log();
  Client idle(s.port());
  Client busy(s.port());
  ASSERT_EQ(idle.Call({"PING"}), "+PONG\r\n");
  EXPECT_EQ(busy.Call({"CONFIG", "GET", "timeout"}),
            "*2\r\n$7\r\ntimeout\r\n$1\r\n1\r\n");
  auto until = std::chrono::steady_clock::now() + 3500ms;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(busy.Call({"PING"}), "+PONG\r\n");
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(idle.Closed()) << "the idle client is closed";
  EXPECT_EQ(busy.Call({"PING"}), "+PONG\r\n");
  EXPECT_GE(std::stoi(InfoField(&busy, "timed_out_clients")), 1);
}

TEST(Shmkv, NoTimeoutByDefault) {
  Server s("notimeout");
  ASSERT_TRUE(s.Start()) << s.log();
  Client idle(s.port());
  ASSERT_EQ(idle.Call({"PING"}), "+PONG\r\n");
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(idle.Call({"PING"}), "+PONG\r\n");
}

// A reply past the 32 MiB a connection may have waiting stops the
// commands after it until it drains, and they run then: a pipelined PING
// behind a 40 MiB LRANGE is answered (it waited for ever when the socket
// took enough of the reply to fall under the bound before it drained).
TEST(Shmkv, CommandsBehindAHugeReplyRunWhenItDrains) {
  Server s("hugereply");
  ASSERT_TRUE(s.Start({"--memory", "512M"})) << s.log();
  Client c(s.port());
  const std::string mib(1 << 20, 'v');
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(c.Call({"RPUSH", "big", mib}),
              ":" + std::to_string(i + 1) + "\r\n");
  }
  ASSERT_TRUE(c.SendRaw(Client::Encode({"LRANGE", "big", "0", "-1"}) +
                        Client::Encode({"PING"})));
  const std::string all = c.Reply();
  EXPECT_EQ(all.size(), 5u + 40u * (12u + (1u << 20))) << all.substr(0, 40);
  EXPECT_EQ(c.Reply(), "+PONG\r\n");
}

// --maxmemory-clients too small for one largest request per worker is a
// usage error at start, before any segment exists.
TEST(Shmkv, ClientMemoryBelowOneRequestIsRefused) {
  Server s("tinyclients");
  EXPECT_FALSE(s.Start({"--maxmemory-clients", "10M"}));
  EXPECT_EQ(s.exit_code(), 2);
  EXPECT_NE(s.log().find("--maxmemory-clients"), std::string::npos) << s.log();
  EXPECT_NE(access(("/dev/shm" + s.name() + "0").c_str(), F_OK), 0);
}

}  // namespace

// A worker parses a read's commands ahead of running them (to fetch
// their keys' lines together), so a pipeline's replies must not depend
// on how its bytes arrive: random streams of commands (RESP and inline
// ones, empty lines, SELECT, MULTI/EXEC, a BLPOP that times out, values
// of 1 to 100,000 bytes) sent in random pieces, some with pauses, reply
// byte for byte as redis-server replies to the same pieces; and a
// protocol error behind good commands answers them first.
TEST(ShmkvVsRedis, PipelinesInAnyPiecesAnswerAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("pieces");
  s.set_workers(1);
  ASSERT_TRUE(s.Start()) << s.log();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    std::string stream;
    size_t commands = 0;
    auto add = [&](const std::vector<std::string>& args) {
      stream += Client::Encode(args);
      ++commands;
    };
    add({"FLUSHALL"});
    for (int i = 0; i < 400; ++i) {
      std::string k = "k" + std::to_string(rng() % 20);
      switch (rng() % 12) {
        case 0: {
          size_t len = rng() % 8 == 0 ? rng() % 100000 : rng() % 40;
          add({"SET", k, std::string(len, static_cast<char>('a' + rng() % 26))});
          break;
        }
        case 1: add({"GET", k}); break;
        case 2: add({"APPEND", k, "xy"}); break;
        case 3: add({"RPUSH", "l" + k, std::to_string(i)}); break;
        case 4: add({"LRANGE", "l" + k, "0", "3"}); break;
        case 5: add({"HSET", "h" + k, "f", std::to_string(i)}); break;
        case 6: add({"SELECT", std::to_string(rng() % 3)}); break;
        case 7:  // inline, one or several in a row
          for (int j = 0; j < 1 + static_cast<int>(rng() % 3); ++j) {
            stream += rng() % 2 ? "GET " + k + "\r\n" : "STRLEN " + k + "\n";
            ++commands;
          }
          break;
        case 8: stream += "\r\n"; break;  // an empty line: no reply
        case 9:
          add({"MULTI"});
          add({"INCR", "n" + k});
          add({"GET", k});
          add({"EXEC"});
          break;
        case 10:
          if (rng() % 10 == 0) {
            add({"BLPOP", "empty" + k, "0.05"});
          } else {
            add({"TYPE", k});
          }
          break;
        default: add({"EXISTS", k, "l" + k, "h" + k}); break;
      }
    }
    add({"SELECT", "0"});
    Client a(s.port()), b(redis.port());
    for (size_t off = 0; off < stream.size();) {
      size_t n = std::min(stream.size() - off, 1 + rng() % 6000);
      std::string piece = stream.substr(off, n);
      ASSERT_TRUE(a.SendRaw(piece) && b.SendRaw(piece));
      off += n;
      if (rng() % 8 == 0) std::this_thread::sleep_for(1ms);
    }
    for (size_t i = 0; i < commands; ++i) {
      std::string want = b.Reply();
      ASSERT_FALSE(want.empty()) << "seed " << seed << " reply " << i;
      ASSERT_EQ(a.Reply(), want) << "seed " << seed << " reply " << i;
    }
  }
  // A command that blocks with commands behind it, the last of them not
  // yet whole: they wait for it, then run once the rest arrives.
  for (size_t cut : {3, 9, 20, 40, 1000}) {
    const std::string rest = Client::Encode({"GET", "behind"}) +
                             Client::Encode({"SET", "behind", std::string(2000, 'v')}) +
                             Client::Encode({"STRLEN", "behind"});
    const std::string first =
        Client::Encode({"BLPOP", "nothing", "0.05"}) + rest.substr(0, cut);
    Client a(s.port()), b(redis.port());
    ASSERT_TRUE(a.SendRaw(first) && b.SendRaw(first));
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(a.SendRaw(rest.substr(cut)) && b.SendRaw(rest.substr(cut)));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a.Reply(), b.Reply()) << cut << " " << i;
  }
  // Good commands, then a bad bulk length: the good ones are answered,
  // then the error, then the connection closes.
  const std::string bad = Client::Encode({"SET", "x", "1"}) +
                          "GET x\r\n" + Client::Encode({"GET", "x"}) +
                          "*2\r\n$3\r\nGET\r\n$-7\r\n";
  Client a(s.port()), b(redis.port());
  ASSERT_TRUE(a.SendRaw(bad) && b.SendRaw(bad));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.Reply(), b.Reply()) << i;
  EXPECT_TRUE(a.Closed());
}

// Inline commands (as typed into telnet) split as Redis splits them:
// quotes, escapes, and unbalanced quotes refused.
TEST(ShmkvVsRedis, InlineCommandsParseQuotesAsRedis) {
  RedisOracle redis;
  SKIP_WITHOUT_REDIS(redis);
  Server s("inline");
  ASSERT_TRUE(s.Start()) << s.log();
  const std::vector<std::string> lines = {
      "SET k \"a b\"\r\n", "GET k\r\n", "SET k2 'it\\'s here'\r\n",
      "GET k2\r\n", "SET k3 \"\\x41\\x4a\\n\\t\\\\\\\"q\"\r\n", "GET k3\r\n",
      "SET k4 a\"b c\" d\r\n", "GET k4\r\n", "   \r\n", "STRLEN   k\n",
      "SET k5 \"\\xZZ\"\r\n", "GET k5\r\n", "ECHO ''\r\n",
  };
  Client a(s.port()), b(redis.port());
  for (const std::string& line : lines) {
    ASSERT_TRUE(a.SendRaw(line) && b.SendRaw(line));
    if (line.find_first_not_of(" \r\n") == std::string::npos) continue;
    EXPECT_EQ(a.Reply(), b.Reply()) << line;
  }
  for (const std::string bad : {"SET k \"open\r\n", "SET k \"a\"b\r\n",
                                "SET k 'x\r\n", "SET k a\"b c\"d\r\n"}) {
    Client x(s.port()), y(redis.port());
    ASSERT_TRUE(x.SendRaw(bad) && y.SendRaw(bad));
    EXPECT_EQ(x.Reply(), y.Reply()) << bad;
    EXPECT_TRUE(x.Closed()) << bad;
  }
}

