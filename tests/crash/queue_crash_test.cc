// A ShmQueue producer SIGKILLed at random moments, again and again, while
// this process consumes: every new producer takes over the queue, no
// record is ever torn, and no record whose Push (or PushBatch) returned is
// lost, overwritten or reordered: each producer's records arrive whole and
// in order, at least as many as it was told were pushed.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "shmc/shm_queue.h"
#include "tests/support/queue_stream.h"
#include "tests/support/test_util.h"

namespace {

constexpr int kRuns = 300;

// What a producer tells the consumer through anonymous shared memory.
struct Progress {
  std::atomic<int> attached{0};     // set once InitForWrite returned
  std::atomic<uint64_t> acked{0};   // records whose push returned
};

// Producer `run` pushes records (run, 0), (run, 1), ... singly and in
// batches, and after each push that returned stores how many it pushed.
[[noreturn]] void Produce(const std::string& key, int run, Progress* prog) {
  shmc::ShmQueue<shmc::POSIX> p;
  if (!p.InitForWrite(key, 1 << 16)) _exit(2);
  prog->attached.store(1, std::memory_order_release);
  std::atomic<uint64_t>* acked = &prog->acked;
  std::mt19937_64 rng(static_cast<uint64_t>(run) * 7919 + 1);
  std::vector<std::string> batch;
  uint64_t i = 0;
  for (;;) {
    uint64_t base = static_cast<uint64_t>(run) << 32;
    if (rng() % 2 == 0) {
      std::string r = shmc_test::Record(base | i, 8 + rng() % 600);
      while (!p.Push(r)) sched_yield();
      acked->store(++i, std::memory_order_relaxed);
    } else {
      batch.clear();
      size_t n = 1 + rng() % 16;
      for (size_t j = 0; j < n; ++j) {
        batch.push_back(shmc_test::Record(base | (i + j), 8 + rng() % 600));
      }
      for (size_t done = 0; done < n;) {
        size_t d = p.PushBatch(batch.data() + done, n - done);
        if (d == 0) sched_yield();
        done += d;
        i += d;
        acked->store(i, std::memory_order_relaxed);
      }
    }
  }
}

TEST(ShmQueueCrash, ProducerKilledAtRandomLosesNoAcknowledgedRecord) {
  shmc_test::ScopedKey<shmc::POSIX> key;
  {
    shmc::ShmQueue<shmc::POSIX> create;
    ASSERT_TRUE(create.InitForWrite(key, 1 << 16));
  }
  void* mem = mmap(nullptr, sizeof(Progress) * kRuns, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* prog = static_cast<Progress*>(mem);
  for (int k = 0; k < kRuns; ++k) new (&prog[k]) Progress;

  shmc::ShmQueue<shmc::POSIX> c;
  ASSERT_TRUE(c.InitForRead(key));
  std::string out;
  int cur = 0;          // producer whose records arrive now
  uint64_t next = 0;    // the record expected next from it
  uint64_t torn = 0, disorder = 0;
  std::vector<uint64_t> got(kRuns, 0);
  auto take = [&] {
    if (!c.Pop(&out)) {
      EXPECT_TRUE(c.last_error().ok()) << c.last_error().message;
      return false;
    }
    uint64_t seq = 0;
    std::memcpy(&seq, out.data(), 8);
    if (out != shmc_test::Record(seq, out.size())) ++torn;
    int run = static_cast<int>(seq >> 32);
    uint64_t i = seq & 0xffffffffu;
    if (run != cur) {
      if (run < cur) ++disorder;
      cur = run;
      next = 0;
    }
    if (i != next) ++disorder;
    next = i + 1;
    got[run] = next;
    return true;
  };

  // When to kill is chosen against the producer's own progress, not the
  // clock alone, so a loaded machine (the producer slow to be scheduled)
  // changes nothing: a quarter of the runs kill at a random moment after
  // the attach, possibly before any push; the others first wait until
  // the producer has had a random number of records acknowledged, then
  // let it run a little longer.
  std::mt19937_64 rng(42);
  int waited_for_records = 0;
  for (int k = 0; k < kRuns; ++k) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) Produce(key, k, &prog[k]);
    uint64_t need = rng() % 4 == 0 ? 0 : 1 + rng() % 4000;
    waited_for_records += need > 0;
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool stuck = false;
    while (prog[k].attached.load(std::memory_order_acquire) == 0 ||
           prog[k].acked.load(std::memory_order_relaxed) < need) {
      take();
      if (waitpid(pid, nullptr, WNOHANG) == pid ||
          std::chrono::steady_clock::now() > give_up) {
        stuck = true;
        break;
      }
    }
    ASSERT_FALSE(stuck) << "producer " << k << " died or made no progress";
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::microseconds(rng() % 3000);
    while (std::chrono::steady_clock::now() < until) take();
    kill(pid, SIGKILL);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(st)) << "producer " << k << " exited "
                                 << WEXITSTATUS(st) << " (2: no re-attach)";
  }
  while (take()) {
  }
  EXPECT_EQ(torn, 0u) << "records not as written";
  EXPECT_EQ(disorder, 0u) << "records lost inside a run, or reordered";
  for (int k = 0; k < kRuns; ++k) {
    EXPECT_GE(got[k], prog[k].acked.load()) << "producer " << k
                                       << ": acknowledged records lost";
  }
  uint64_t total = 0, with_records = 0;
  for (int k = 0; k < kRuns; ++k) {
    total += got[k];
    with_records += got[k] > 0;
  }
  EXPECT_GE(with_records, static_cast<uint64_t>(waited_for_records))
      << "every producer waited for must have pushed before it was killed";
  RecordProperty("records", std::to_string(total));
  munmap(mem, sizeof(Progress) * kRuns);
}

}  // namespace
