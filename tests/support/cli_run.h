// Helpers of the tests that run the `shmc` tool as a subprocess (SHMC_CLI
// names its binary): running it, parsing its --json output, and the names
// and nodes those tests build containers with.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "shmc/svipc_shm_alloc.h"
#include "tests/support/json_parse.h"
#include "tests/support/test_util.h"

namespace shmc_test {

struct Result {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string out, err;
};

std::string Slurp(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) s.append(buf, n);
  return s;
}

// Runs the tool; `as_uid` >= 0 drops to that uid first (root only).
Result Shmc(const std::vector<std::string>& args, int as_uid = -1) {
  int out[2], err[2];
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    if (as_uid >= 0 && (setgid(as_uid) != 0 || setuid(as_uid) != 0)) _exit(99);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(SHMC_CLI));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(SHMC_CLI, argv.data());
    _exit(98);
  }
  close(out[1]);
  close(err[1]);
  Result r;
  // stderr is small; read stdout fully first, then stderr.
  r.out = Slurp(out[0]);
  r.err = Slurp(err[0]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

JValue ParseOrFail(const std::string& text) {
  JValue v;
  EXPECT_TRUE(JsonParser::Parse(text, &v)) << "not JSON: " << text;
  return v;
}

std::vector<JValue> Lines(const std::string& text) {
  std::vector<JValue> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(ParseOrFail(line));
  return out;
}

struct Node16 {
  uint64_t key;
  uint64_t val;
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};

// Removes NAME, NAME0 and NAME1 of a backend at both ends of a test.
// SysV map keys are KEY+"0"/"1" as strings, so the base must leave room for
// one more decimal digit: a 9-digit decimal key.
template <class Alloc>
struct CliMapKey : ScopedKey<Alloc> {};
template <>
struct CliMapKey<shmc::SVIPC> {
  std::string key = std::to_string(
      100000000 + shmc_test::TestTag("map") % 100000000);
  CliMapKey() { shmc::SVIPC().Unlink(key); }
  ~CliMapKey() { shmc::SVIPC().Unlink(key); }
  const std::string& str() const { return key; }
  operator const std::string&() const { return key; }
};

}  // namespace shmc_test
