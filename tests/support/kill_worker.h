// Kill tests through the command layer (tests/support/command_harness.h):
// a forked process runs commands on the harness's store until SIGKILLed
// at a random point, as a worker process dies.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <new>
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

// What a killed worker acknowledged of a count it raises (a counter, a
// script's runs): shared with the forked worker, which calls Begin
// before each raise and Acked once it is acknowledged. After the kill,
// Settle(found) holds when the store has every acknowledged raise and at
// most the one in flight, and starts the next round from `found`.
class AckedCount {
 public:
  AckedCount() {
    void* m = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    sh_ = m == MAP_FAILED ? nullptr : new (m) Shared();
  }
  ~AckedCount() {
    if (sh_ != nullptr) munmap(sh_, sizeof(Shared));
  }
  AckedCount(const AckedCount&) = delete;
  AckedCount& operator=(const AckedCount&) = delete;
  bool ok() const { return sh_ != nullptr; }

  void Begin() { sh_->inflight = 1; }
  void Acked() {
    sh_->acked++;
    sh_->inflight = 0;
  }
  int64_t acked() const { return sh_->acked; }

  ::testing::AssertionResult Settle(int64_t found) {
    const int64_t acked = sh_->acked;
    const bool inflight = sh_->inflight != 0;
    sh_->acked = found;
    sh_->inflight = 0;
    if (found == acked || (inflight && found == acked + 1)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << found << " found, " << acked << " acknowledged"
           << (inflight ? " and one in flight" : "");
  }

 private:
  struct Shared {
    std::atomic<int64_t> acked{0};
    std::atomic<int> inflight{0};
  };
  Shared* sh_ = nullptr;
};

}  // namespace shmkv_test
