// Records and a producer/consumer stream for ShmQueue tests.
#pragma once

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

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

// SetWriteAhead on a writer (ShmQueue producer or ShmSyncBuf writer) just
// attached to a ring of `ring` bytes, under 8 KiB: a quarter of the ring by
// default, anything over half cut to half. Then, for each distance in
// `aheads`, sets it, checks it took, and calls round_trip(seq) for `per`
// records in a row (seq counts on across distances); round_trip pushes
// record `seq` and reads it back whole (its assertions end the walk).
template <class Writer, class F>
void CheckWriteAheadSettings(Writer& w, uint64_t ring,
                             std::initializer_list<uint64_t> aheads, int per,
                             F&& round_trip) {
  EXPECT_EQ(w.write_ahead(), ring / 4) << "a quarter of a ring under 8 KiB";
  w.SetWriteAhead(uint64_t{1} << 40);
  EXPECT_EQ(w.write_ahead(), ring / 2) << "cut to half the ring";
  uint64_t seq = 0;
  for (uint64_t ahead : aheads) {
    w.SetWriteAhead(ahead);
    ASSERT_EQ(w.write_ahead(), ahead);
    for (int i = 0; i < per; ++i, ++seq) {
      SCOPED_TRACE(testing::Message()
                   << "write-ahead " << ahead << ", record " << seq);
      round_trip(seq);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
}

// Producer and consumer processes; records of random length 0..2 KiB. With
// `mixed_forms` each side picks, step by step at random, among the single,
// batched (1-16 records) and zero-copy forms.
inline void Stream(uint64_t records, bool mixed_forms = false) {
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
    std::mt19937_64 rng(1), form(7);
    std::vector<std::string> batch;
    for (uint64_t seq = 0; seq < records;) {
      int f = mixed_forms ? static_cast<int>(form() % 3) : 0;
      if (f == 1) {
        uint64_t n = std::min<uint64_t>(1 + form() % 16, records - seq);
        batch.clear();
        for (uint64_t i = 0; i < n; ++i) {
          batch.push_back(Record(seq + i, rng() % 2049));
        }
        for (uint64_t done = 0; done < n;) {
          size_t d = p.PushBatch(batch.data() + done, n - done);
          if (d == 0) sched_yield();
          done += d;
        }
        seq += n;
        continue;
      }
      std::string r = Record(seq, rng() % 2049);
      if (f == 2) {
        shmc::ZeroCopyBuf zcb;
        while (!p.ZeroCopyPushPrepare(r.size(), &zcb)) sched_yield();
        std::memcpy(zcb.ptr, r.data(), r.size());
        if (!p.ZeroCopyPushCommit(zcb)) _exit(21);
      } else {
        while (!p.Push(r)) sched_yield();  // the machine may give one core
      }
      ++seq;
    }
    _exit(0);
  }
  shmc::ShmQueue<shmc::POSIX> c;
  ASSERT_TRUE(c.InitForRead(k));
  std::mt19937_64 rng(1), form(9);
  std::string out;
  uint64_t bad = 0;
  for (uint64_t seq = 0; seq < records;) {
    int f = mixed_forms ? static_cast<int>(form() % 3) : 0;
    size_t got = 0;
    if (f == 1) {
      size_t max = static_cast<size_t>(
          std::min<uint64_t>(1 + form() % 16, records - seq));
      got = c.PopBatch([&](const void* d, size_t n) {
        // lost, reordered or corrupted
        if (std::string(static_cast<const char*>(d), n) !=
            Record(seq, rng() % 2049)) {
          ++bad;
        }
        ++seq;
      }, max);
    } else if (f == 2) {
      shmc::ZeroCopyBuf zcb;
      if (c.ZeroCopyPopPrepare(&zcb)) {
        if (std::string(static_cast<const char*>(zcb.ptr), zcb.len) !=
            Record(seq, rng() % 2049)) {
          ++bad;
        }
        ASSERT_TRUE(c.ZeroCopyPopCommit(zcb));
        ++seq;
        got = 1;
      }
    } else if (c.Pop(&out)) {
      if (out != Record(seq, rng() % 2049)) ++bad;
      ++seq;
      got = 1;
    }
    if (got == 0) {
      ASSERT_TRUE(c.last_error().ok()) << c.last_error().message;
      sched_yield();
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(producer, &status, 0), producer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(bad, 0u);
  EXPECT_FALSE(c.Pop(&out)) << "nothing extra";
  EXPECT_EQ(c.popped(), records);
}

}  // namespace shmc_test
