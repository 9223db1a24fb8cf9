// The oracle of shmkv's differential tests: a real redis-server (Debian
// redis-server 7) started on a free loopback port, stopped with the test.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shmkv_server.h"

namespace shmkv_test {

inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::strcmp(ci, "true") == 0;
}

// The seeds a randomized differential test runs: its own, or the range
// SHMKV_TEST_SEEDS names ("first-last") for a longer hunt by hand (a
// failure names its seed; the test then runs that one alone).
inline std::vector<uint64_t> TestSeeds(uint64_t first, uint64_t last) {
  if (const char* e = std::getenv("SHMKV_TEST_SEEDS")) {
    char* end = nullptr;
    uint64_t a = std::strtoull(e, &end, 10), b = a;
    if (end != nullptr && *end == '-') b = std::strtoull(end + 1, nullptr, 10);
    if (b >= a && b - a < 1000000) {
      first = a;
      last = b;
    }
  }
  std::vector<uint64_t> out;
  for (uint64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

// A real redis-server (Debian redis-server 7) on a free loopback port: the
// oracle the differential tests compare shmkv's replies with.
class RedisOracle {
 public:
  explicit RedisOracle(std::vector<std::string> extra = {}) {
    if (access("/usr/bin/redis-server", X_OK) != 0) return;
    port_ = FreePort();
    std::vector<std::string> args = {"/usr/bin/redis-server", "--port",
                                     std::to_string(port_), "--bind",
                                     "127.0.0.1", "--save", "",
                                     "--appendonly", "no", "--dir", "/tmp"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(&a[0]);
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      Client c(port_);
      if (c.ok()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~RedisOracle() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0; }
  int port() const { return port_; }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
};

// Without redis-server a differential test skips, except in CI (CI=true),
// where a missing oracle fails the run instead of passing it silently.
#define SKIP_WITHOUT_REDIS(o)                                              \
  if ((o).ok()) {                                                          \
  } else if (::shmkv_test::InCi()) {                                       \
    FAIL() << "redis-server is missing in CI (apt-get install "             \
              "redis-server)";                                             \
  } else                                                                   \
    GTEST_SKIP() << "redis-server not installed (apt-get install "          \
                    "redis-server)"

}  // namespace shmkv_test
