// Kill tests through the command layer (tests/support/command_harness.h):
// a forked process runs commands on the harness's store until SIGKILLed
// at a random point, as a worker process dies.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>

#include "tests/support/command_harness.h"

namespace shmkv_test {

// Forks a process that opens h's store as a worker does and runs
// step(worker, rng) over and over (rng seeded with `seed`) until it is
// SIGKILLed `after_ms` later; then writes once through h, which finishes
// a commit the death left in the journal, so what h reads next is final.
inline ::testing::AssertionResult KillAWorker(
    CommandHarness* h, uint64_t seed, int after_ms,
    const std::function<void(CommandWorker&, std::mt19937_64&)>& step) {
  pid_t pid = fork();
  if (pid == 0) {
    CommandWorker w(h->config());
    if (!w.ok()) _exit(90);
    std::mt19937_64 r(seed);
    for (;;) step(w, r);
  }
  if (pid < 0) return ::testing::AssertionFailure() << "fork failed";
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFSIGNALED(st)) {
    return ::testing::AssertionFailure()
           << "the worker exited " << WEXITSTATUS(st);
  }
  h->Run({"DEL", "recovery-probe"});
  return ::testing::AssertionSuccess();
}

}  // namespace shmkv_test
