// Records and a producer/consumer stream for ShmQueue tests.
#pragma once

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>

#include "shmc/hash.h"
#include "shmc/shm_queue.h"
#include "tests/support/test_util.h"

namespace shmc_test {

// A record of `len` bytes carrying its sequence number and a checksum.
inline std::string Record(uint64_t seq, size_t len) {
  std::string r(len, '\0');
  uint64_t x = shmc::Mix64(seq);
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w = x ^ (i * 0x9e3779b97f4a7c15ULL);
    std::memcpy(&r[i], &w, 8);
  }
  for (; i < len; ++i) r[i] = static_cast<char>(x >> (i % 8 * 8));
  if (len >= 8) std::memcpy(&r[0], &seq, 8);
  return r;
}

// Producer and consumer processes; records of random length 0..2 KiB.
inline void Stream(uint64_t records) {
  ScopedKey<shmc::POSIX> key;
  {
    shmc::ShmQueue<shmc::POSIX> create;
    ASSERT_TRUE(create.InitForWrite(key, 1 << 16));
  }
  std::string k = key;
  pid_t producer = fork();
  ASSERT_GE(producer, 0);
  if (producer == 0) {
    shmc::ShmQueue<shmc::POSIX> p;
    if (!p.InitForWrite(k, 1 << 16)) _exit(20);
    std::mt19937_64 rng(1);
    for (uint64_t seq = 0; seq < records; ++seq) {
      std::string r = Record(seq, rng() % 2049);
      while (!p.Push(r)) sched_yield();  // the machine may give one core
    }
    _exit(0);
  }
  shmc::ShmQueue<shmc::POSIX> c;
  ASSERT_TRUE(c.InitForRead(k));
  std::mt19937_64 rng(1);
  std::string out;
  uint64_t bad = 0;
  for (uint64_t seq = 0; seq < records; ++seq) {
    size_t len = rng() % 2049;
    while (!c.Pop(&out)) {
      ASSERT_TRUE(c.last_error().ok()) << c.last_error().message;
      sched_yield();
    }
    if (out != Record(seq, len)) ++bad;  // lost, reordered or corrupted
  }
  int status = 0;
  ASSERT_EQ(waitpid(producer, &status, 0), producer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(bad, 0u);
  EXPECT_FALSE(c.Pop(&out)) << "nothing extra";
  EXPECT_EQ(c.popped(), records);
}

}  // namespace shmc_test
