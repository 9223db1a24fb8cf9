// What the queue benchmarks (queue_bench, machine/line_transfer) share: the
// one spin-wait every queue is measured with, the check every consumer
// makes of every message, and the timed producer -> consumer transfer
// between two pinned processes.
#pragma once

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "bench/bench_util.h"

namespace shmc_bench {

inline double NowSeconds() { return NowNs() / 1e9; }

// Pins the calling process to one CPU.
inline void Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

// Calls f until it returns true, yielding after every 64 failed tries.
template <class F>
void Retry(F&& f) {
  for (int tries = 0; !f(); ++tries) {
    if (tries % 64 == 63) sched_yield();
  }
}

// What every consumer does with a message: check that it is 64 bytes
// starting with its sequence number, and read all of it into a checksum
// (so no compiler can drop the copy). A wrong message ends the program.
struct Received {
  uint64_t next = 0;
  uint64_t sum = 0;
  void Take(const void* m, size_t len) {
    uint64_t w[8] = {};
    std::memcpy(w, m, len < sizeof(w) ? len : sizeof(w));
    if (len != sizeof(w) || w[0] != next) {
      std::fprintf(stderr, "message %llu arrived as %llu (%zu bytes)\n",
                   static_cast<unsigned long long>(next),
                   static_cast<unsigned long long>(w[0]), len);
      std::exit(1);
    }
    ++next;
    for (uint64_t x : w) sum += x;
  }
  ~Received() { sink = sum; }
  static inline volatile uint64_t sink = 0;
};

// Runs producer() in a child pinned to CPU 0 and consumer() in this process
// pinned to CPU 1; returns n / the consumer's seconds. A producer that
// fails (exits non-zero or dies) ends the program.
inline double TransferRate(uint64_t n, const std::function<void()>& producer,
                           const std::function<void()>& consumer) {
  pid_t pid = fork();
  if (pid == 0) {
    Pin(0);
    producer();
    _exit(0);
  }
  Pin(1);
  double t0 = NowSeconds();
  consumer();
  double dt = NowSeconds() - t0;
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "the producer process failed\n");
    std::exit(1);
  }
  return static_cast<double>(n) / dt;
}

}  // namespace shmc_bench
