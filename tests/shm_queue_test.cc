// ShmQueue: the reference behaviour, wrap-around at every offset, batches,
// the producer lease, damage detection, and a producer and a consumer
// process streaming records with sequence numbers and checksums.
#include "shmc/shm_queue.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "shmc/detail/copy.h"
#include "tests/support/queue_stream.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::Record;
using shmc_test::ScopedKey;
using shmc_test::Stream;

template <class Alloc>
class ShmQueueTest : public ::testing::Test {
 protected:
  void SetUp() override { SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, 2); }
  ScopedKey<Alloc> key_;
};
using QueueAllocs = ::testing::Types<shmc::SVIPC, shmc::SVIPC_HugeTLB,
                                     shmc::POSIX, shmc::MAPFILE>;
TYPED_TEST_SUITE(ShmQueueTest, QueueAllocs, shmc_test::AllocNames);

TYPED_TEST(ShmQueueTest, PushPopAndZeroCopy) {
  shmc::ShmQueue<TypeParam> p, c;
  ASSERT_TRUE(p.InitForWrite(this->key_, 4096)) << p.last_error().message;
  ASSERT_TRUE(c.InitForRead(this->key_)) << c.last_error().message;
  std::string out;
  EXPECT_FALSE(c.Pop(&out)) << "empty";
  ASSERT_TRUE(p.Push("hello", 5));
  ASSERT_TRUE(p.Push(std::string()));  // empty records are records
  char small[3];
  size_t len = sizeof(small);
  EXPECT_FALSE(c.Pop(small, &len)) << "buffer too small";
  EXPECT_EQ(len, sizeof(small)) << "and nothing consumed";
  char big[16];
  len = sizeof(big);
  ASSERT_TRUE(c.Pop(big, &len));
  EXPECT_EQ(std::string(big, len), "hello");
  ASSERT_TRUE(c.Pop(&out));
  EXPECT_TRUE(out.empty());
  // Zero-copy push committing fewer bytes than prepared.
  shmc::ZeroCopyBuf zcb;
  ASSERT_TRUE(p.ZeroCopyPushPrepare(100, &zcb));
  std::memcpy(zcb.ptr, "abcdef", 6);
  zcb.len = 6;
  ASSERT_TRUE(p.ZeroCopyPushCommit(zcb));
  shmc::ZeroCopyBuf bad = zcb;
  bad.len = 1000;
  EXPECT_FALSE(p.ZeroCopyPushCommit(bad)) << "nothing prepared any more";
  ASSERT_TRUE(c.ZeroCopyPopPrepare(&zcb));
  EXPECT_EQ(std::string(static_cast<char*>(zcb.ptr), zcb.len), "abcdef");
  ASSERT_TRUE(c.ZeroCopyPopCommit(zcb));
  // Dropping the head record.
  ASSERT_TRUE(p.Push("drop me", 7));
  ASSERT_TRUE(p.Push("keep", 4));
  ASSERT_TRUE(c.Pop(static_cast<std::string*>(nullptr)));
  ASSERT_TRUE(c.Pop(&out));
  EXPECT_EQ(out, "keep");
  EXPECT_EQ(p.pushed(), 5u);
  EXPECT_EQ(c.popped(), 5u);
  // Full: refused, counted, nothing lost.
  size_t n = 0;
  while (p.Push(Record(n, 100))) ++n;
  EXPECT_GT(p.full_spins(), 0u);
  EXPECT_GT(p.high_water(), 3000u);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(c.Pop(&out));
    ASSERT_EQ(out, Record(i, 100));
  }
  EXPECT_FALSE(c.Pop(&out));
}

// TryPop tells an empty queue from a buffer too small for the head
// record (Pop answers false to both, as the reference does).
TYPED_TEST(ShmQueueTest, TryPopTellsEmptyFromTooSmall) {
  using Q = shmc::ShmQueue<TypeParam>;
  Q p, c;
  ASSERT_TRUE(p.InitForWrite(this->key_, 4096)) << p.last_error().message;
  ASSERT_TRUE(c.InitForRead(this->key_)) << c.last_error().message;
  char buf[8];
  size_t len = 99;
  EXPECT_EQ(c.TryPop(buf, sizeof(buf), &len), Q::PopResult::kEmpty);
  EXPECT_EQ(len, 0u);
  ASSERT_TRUE(p.Push("0123456789", 10));
  EXPECT_EQ(c.TryPop(buf, sizeof(buf), &len), Q::PopResult::kBufferTooSmall);
  EXPECT_EQ(len, 10u) << "the length the record needs";
  size_t small = sizeof(buf);
  EXPECT_FALSE(c.Pop(buf, &small));
  EXPECT_EQ(small, sizeof(buf)) << "Pop leaves *len for the next call";
  EXPECT_FALSE(c.Pop(nullptr, &small)) << "a drop that does not fit *len";
  char big[16];
  ASSERT_EQ(c.TryPop(big, sizeof(big), &len), Q::PopResult::kOk);
  EXPECT_EQ(std::string(big, len), "0123456789");
  ASSERT_TRUE(p.Push("abc", 3));
  ASSERT_EQ(c.TryPop(nullptr, 0, &len), Q::PopResult::kOk) << "dropped";
  EXPECT_EQ(len, 3u);
  EXPECT_EQ(c.TryPop(big, sizeof(big), &len), Q::PopResult::kEmpty);
  if (shmc::impl::AllocTraits<TypeParam>::is_named) {
    EXPECT_EQ(p.TryPop(big, sizeof(big), &len), Q::PopResult::kNotConsumer);
  }
}

TYPED_TEST(ShmQueueTest, WrapAroundAtEveryOffset) {
  shmc::ShmQueue<TypeParam> p, c;
  ASSERT_TRUE(p.InitForWrite(this->key_, 1024));
  ASSERT_TRUE(c.InitForRead(this->key_));
  std::string out;
  uint64_t seq = 0;
  // Move the ring position by 8 bytes at a time over a whole lap, and at
  // each one push records that straddle the end.
  for (size_t shift = 0; shift < 1024 / 8 + 2; ++shift) {
    ASSERT_TRUE(p.Push(std::string()));  // an 8-byte record
    ASSERT_TRUE(c.Pop(&out));
    for (size_t len : {0, 1, 8, 100, 300, 500}) {
      ASSERT_TRUE(p.Push(Record(seq, len))) << shift << "/" << len;
      ASSERT_TRUE(c.Pop(&out));
      ASSERT_EQ(out, Record(seq, len)) << shift << "/" << len;
      ++seq;
    }
  }
  EXPECT_EQ(c.used_bytes(), 0u);
}

// SetWriteAhead: the default, the cut to half the ring, and records that
// stay whole with the claims off, short, default and at the cut.
TEST(ShmQueue, WriteAheadSettingsKeepEveryRecord) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmQueue<shmc::POSIX> p, c;
  ASSERT_TRUE(p.InitForWrite(key, 1024));
  ASSERT_TRUE(c.InitForRead(key));
  std::string out;
  shmc_test::CheckWriteAheadSettings(p, 1024, {0, 8, 256, 512}, 300,
                                     [&](uint64_t seq) {
    size_t len = (seq * 37) % 300;
    ASSERT_TRUE(p.Push(Record(seq, len)));
    ASSERT_TRUE(c.Pop(&out));
    ASSERT_EQ(out, Record(seq, len));
  });
  EXPECT_EQ(c.used_bytes(), 0u);
}

// high_water: never above the most bytes really in use, at most a
// sixteenth of the ring below it, and measured when the ring fills. A queue
// kept nearly empty over many laps reports its small peak (the mark was
// once computed from a cached head up to a ring behind, and read 4080 of
// 4096 bytes where 24 were ever in use).
TEST(ShmQueue, HighWaterIsTheMostBytesInUse) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmQueue<shmc::POSIX> p, c;
  constexpr uint64_t kCap = 4096;
  ASSERT_TRUE(p.InitForWrite(key, kCap));
  ASSERT_TRUE(c.InitForRead(key));
  std::string out;
  // Records of 32 bytes with their headers: the ring holds 128, no pads.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(p.Push("0123456789abcdef01234567", 24));
    ASSERT_TRUE(c.Pop(&out));
  }
  EXPECT_EQ(p.high_water(), 32u) << "one record at a time";
  // Random traffic: the peak is the most bytes in use after any push (a
  // pad before a wrapped record counts: it is in use until popped).
  std::mt19937_64 rng(7);
  uint64_t peak = 32, seq = 0;
  for (int step = 0; step < 200000; ++step) {
    if (rng() % 100 < 52) {
      size_t len = rng() % 200;
      if (!p.Push(Record(seq, len))) continue;
      ++seq;
      peak = std::max(peak, p.used_bytes());
    } else {
      c.Pop(&out);
    }
    ASSERT_LE(p.high_water(), peak) << "step " << step;
    ASSERT_GE(p.high_water() + kCap / 16, peak) << "step " << step;
  }
  EXPECT_GT(p.full_spins(), 0u) << "the walk reached a full ring";
  // Measured when full: a push of up to 208 bytes (and a pad as long)
  // found no room.
  EXPECT_GE(p.high_water(), kCap - 8 - 2 * 208);
  // Another handle reads the same mark.
  shmc::ShmQueue<shmc::POSIX> look;
  ASSERT_TRUE(look.InitForInspect(key));
  EXPECT_EQ(look.high_water(), p.high_water());
  // Filled with 32-byte records to the refusal, then drained: the mark is
  // the full ring's 127 records, not where it was last measured before.
  ScopedKey<shmc::POSIX> key2;
  shmc::ShmQueue<shmc::POSIX> p2, c2;
  ASSERT_TRUE(p2.InitForWrite(key2, kCap));
  ASSERT_TRUE(c2.InitForRead(key2));
  while (p2.Push("0123456789abcdef01234567", 24)) {
  }
  while (c2.Pop(&out)) {
  }
  EXPECT_EQ(p2.high_water(), kCap - 32);
}

TYPED_TEST(ShmQueueTest, BatchesPublishOnce) {
  shmc::ShmQueue<TypeParam> p, c;
  ASSERT_TRUE(p.InitForWrite(this->key_, 4096));
  ASSERT_TRUE(c.InitForRead(this->key_));
  std::vector<std::string> recs;
  for (int i = 0; i < 100; ++i) recs.push_back(Record(i, 40));
  size_t pushed = p.PushBatch(recs.data(), recs.size());
  EXPECT_GT(pushed, 10u);
  EXPECT_LT(pushed, 100u) << "stops at the first record that does not fit";
  std::vector<std::string> got;
  size_t popped = c.PopBatch([&](const void* d, size_t n) {
    got.emplace_back(static_cast<const char*>(d), n);
  }, 1000);
  EXPECT_EQ(popped, pushed);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], recs[i]);
}

TYPED_TEST(ShmQueueTest, PeekShowsPendingRecordsWithoutConsuming) {
  shmc::ShmQueue<TypeParam> p, c, look;
  ASSERT_TRUE(p.InitForWrite(this->key_, 1024));
  ASSERT_TRUE(c.InitForRead(this->key_));
  ASSERT_TRUE(look.InitForInspect(this->key_)) << look.last_error().message;
  std::string out;
  EXPECT_FALSE(look.Pop(&out)) << "an inspector never consumes";
  EXPECT_FALSE(look.Push("x", 1)) << "nor produces";
  uint64_t seq = 0;
  // At every ring offset, the pending records (some straddling the end,
  // behind a pad) are seen in order, and are still there for the consumer.
  for (size_t shift = 0; shift < 1024 / 8 + 2; ++shift) {
    ASSERT_TRUE(p.Push(std::string()));
    ASSERT_TRUE(c.Pop(&out));
    std::vector<std::string> pushed;
    for (size_t len : {0, 1, 100, 300}) {
      pushed.push_back(Record(seq++, len));
      ASSERT_TRUE(p.Push(pushed.back()));
    }
    std::vector<std::string> seen;
    auto keep = [&](const std::string& r) { seen.push_back(r); };
    ASSERT_EQ(look.Peek(0, keep), decltype(look)::kPeekDone);
    ASSERT_EQ(seen, pushed) << "shift " << shift;
    seen.clear();
    ASSERT_EQ(look.Peek(2, keep), decltype(look)::kPeekDone);
    EXPECT_EQ(seen.size(), 2u);
    for (const std::string& r : pushed) {
      shmc::ZeroCopyBuf zcb;
      ASSERT_TRUE(c.ZeroCopyPopPrepare(&zcb));
      ASSERT_EQ(std::string(static_cast<char*>(zcb.ptr), zcb.len), r);
      ASSERT_TRUE(c.ZeroCopyPopCommit(zcb)) << "shift " << shift;
    }
  }
  EXPECT_EQ(look.used_bytes(), 0u);
}

TEST(ShmQueue, OneProducerAndDamageIsAnError) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmQueue<shmc::POSIX> p;
  ASSERT_TRUE(p.InitForWrite(key, 4096));
  int rc = shmc_test::RunInChild([&] {
    shmc::ShmQueue<shmc::POSIX> p2;
    if (p2.InitForWrite(key, 4096)) return 1;
    return p2.last_error().code == shmc::ErrorCode::kWriterBusy ? 0 : 2;
  });
  EXPECT_EQ(rc, 0) << "a second live producer is refused";
  ASSERT_TRUE(p.Push("ok", 2));
  // Overwrite the record header behind the queue's back.
  shmc::POSIX raw;
  size_t mapped = 0;
  char* base = static_cast<char*>(raw.Attach(key, 0, 0, &mapped));
  ASSERT_NE(base, nullptr);
  {
    shmc::ShmQueue<shmc::POSIX> look;
    ASSERT_TRUE(look.InitForInspect(key));
    EXPECT_EQ(look.PublishedPastTail(), 0);
    std::memset(base + 512 + 256 + 16, 0x77, 8);  // the zero word at tail
    uint64_t bad = 0;
    EXPECT_EQ(look.PublishedPastTail(&bad), -1);
    EXPECT_EQ(bad, 16u);
    std::memset(base + 512 + 256 + 16, 0, 8);
  }
  std::memset(base + 512 + 256, 0xff, 8);
  raw.Detach(base, mapped);
  shmc::ShmQueue<shmc::POSIX> c;
  ASSERT_TRUE(c.InitForRead(key));
  std::string out;
  EXPECT_FALSE(c.Pop(&out));
  EXPECT_EQ(c.last_error().code, shmc::ErrorCode::kCorrupted);
  shmc::ShmQueue<shmc::POSIX> look;
  ASSERT_TRUE(look.InitForInspect(key));
  uint64_t bad = 1;
  EXPECT_EQ(look.Peek(0, [](const std::string&) {}, &bad),
            shmc::ShmQueue<shmc::POSIX>::kPeekCorrupted);
  EXPECT_EQ(bad, 0u) << "the damaged record is the first one";
}

TEST(ShmQueue, DamagedPositionsRefusedAndLeaseReleased) {
  ScopedKey<shmc::POSIX> key;
  {
    shmc::ShmQueue<shmc::POSIX> p;
    ASSERT_TRUE(p.InitForWrite(key, 4096));
  }
  shmc::POSIX raw;
  size_t mapped = 0;
  char* base = static_cast<char*>(raw.Attach(key, 0, 0, &mapped));
  ASSERT_NE(base, nullptr);
  uint64_t bad_tail = 12345;  // not a multiple of 8, beyond the ring
  std::memcpy(base + 512, &bad_tail, 8);
  raw.Detach(base, mapped);
  // The lease is taken before the positions are checked: refusing must not
  // crash, and must give the lease back.
  shmc::ShmQueue<shmc::POSIX> p;
  EXPECT_FALSE(p.InitForWrite(key, 4096));
  EXPECT_EQ(p.last_error().code, shmc::ErrorCode::kCorrupted);
  // The refused handle has no role: every call refuses, none touches the
  // segment it unmapped (Push once wrote through the ring pointer).
  EXPECT_FALSE(p.Push("abc", 3));
  std::string out;
  EXPECT_FALSE(p.Pop(&out));
  shmc::ZeroCopyBuf zcb;
  EXPECT_FALSE(p.ZeroCopyPushPrepare(8, &zcb));
  const std::string recs[2] = {"a", "b"};
  EXPECT_EQ(p.PushBatch(recs, 2), 0u);
  size_t len = 0;
  EXPECT_EQ(p.TryPop(nullptr, 0, &len),
            shmc::ShmQueue<shmc::POSIX>::PopResult::kNotConsumer);
  EXPECT_EQ(p.used_bytes(), 0u);
  EXPECT_EQ(p.PublishedPastTail(), 0);
  int rc = shmc_test::RunInChild([&] {
    shmc::ShmQueue<shmc::POSIX> p2;
    if (p2.InitForWrite(key, 4096)) return 1;
    return p2.last_error().code == shmc::ErrorCode::kCorrupted ? 0 : 2;
  });
  EXPECT_EQ(rc, 0) << "2: the lease was left held by a refused producer";
}

// kSharedWriters: producers that serialize their pushes themselves share
// the queue. Two handles in this process and a forked child push in turns
// (each handle caches the tail; every push must start from the segment's).
TEST(ShmQueue, SharedProducersTakingTurnsLoseNothing) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmQueue<shmc::POSIX> a, b;
  ASSERT_TRUE(shmc_test::InitSharedWriters(&a, &b, key, 4096));
  shmc::ShmQueue<shmc::POSIX> c;
  ASSERT_TRUE(c.InitForRead(key));
  std::vector<std::string> recs;
  for (int i = 0; i < 12; ++i) recs.push_back(Record(i, 8 + 60 * i));
  ASSERT_TRUE(a.Push(recs[0]));
  ASSERT_TRUE(b.Push(recs[1]));
  ASSERT_EQ(b.PushBatch(&recs[2], 2), 2u);
  shmc::ZeroCopyBuf zcb;
  ASSERT_TRUE(a.ZeroCopyPushPrepare(recs[4].size(), &zcb));
  std::memcpy(zcb.ptr, recs[4].data(), recs[4].size());
  ASSERT_TRUE(a.ZeroCopyPushCommit(zcb));
  // Wrap the ring between turns: pop what is there, then push more.
  std::string out;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c.Pop(&out));
    ASSERT_EQ(out, recs[i]) << i;
  }
  EXPECT_EQ(shmc_test::RunInChild([&] {
    return b.Push(recs[5]) && a.Push(recs[6]) && b.Push(recs[7]) ? 0 : 1;
  }), 0);
  for (int i = 8; i < 12; ++i) {
    ASSERT_TRUE((i % 2 ? a : b).Push(recs[i])) << i;
  }
  for (int i = 5; i < 12; ++i) {
    ASSERT_TRUE(c.Pop(&out)) << i;
    ASSERT_EQ(out, recs[i]) << i;
  }
  EXPECT_FALSE(c.Pop(&out));
  EXPECT_EQ(a.pushed(), 12u) << "one count, shared";
}

// A producer killed after publishing records by their headers and before
// storing tail leaves tail behind them (here: tail written back by hand,
// the state such a kill leaves). The next producer must continue after the
// published records, whether or not the consumer has already passed the
// stale tail; nothing is lost, overwritten or reordered.
TEST(ShmQueue, ProducerDeadBeforeStoringTailLosesNothing) {
  for (int consumed_first : {1, 4}) {
    SCOPED_TRACE(consumed_first);
    ScopedKey<shmc::POSIX> key;
    std::vector<std::string> recs;
    for (int i = 0; i < 8; ++i) recs.push_back(Record(i, 40));  // 48 bytes
    {
      shmc::ShmQueue<shmc::POSIX> p;
      ASSERT_TRUE(p.InitForWrite(key, 4096));
      for (int i = 0; i < 5; ++i) ASSERT_TRUE(p.Push(recs[i]));
    }
    shmc::POSIX raw;
    size_t mapped = 0;
    char* base = static_cast<char*>(raw.Attach(key, 0, 0, &mapped));
    ASSERT_NE(base, nullptr);
    uint64_t stale_tail = 2 * 48;  // as if records 2-4 never moved tail
    std::memcpy(base + 512, &stale_tail, 8);
    raw.Detach(base, mapped);

    shmc::ShmQueue<shmc::POSIX> c;
    ASSERT_TRUE(c.InitForRead(key)) << c.last_error().message;
    std::string out;
    int next = 0;
    for (; next < consumed_first; ++next) {
      ASSERT_TRUE(c.Pop(&out));
      ASSERT_EQ(out, recs[next]);
    }
    shmc::ShmQueue<shmc::POSIX> look;
    ASSERT_TRUE(look.InitForInspect(key));
    EXPECT_EQ(look.PublishedPastTail(), consumed_first == 1 ? 3 : 1)
        << "records 2-4 lie past the stale tail (only record 4 once the "
           "consumer has passed it)";
    EXPECT_LE(c.used_bytes(), 5u * 48) << "a lagging tail is not a huge count";
    shmc::ShmQueue<shmc::POSIX> p;
    ASSERT_TRUE(p.InitForWrite(key, 4096)) << p.last_error().message;
    for (int i = 5; i < 8; ++i) ASSERT_TRUE(p.Push(recs[i]));
    EXPECT_EQ(look.PublishedPastTail(), 0);
    EXPECT_EQ(c.used_bytes(), (8u - next) * 48);
    for (; next < 8; ++next) {
      ASSERT_TRUE(c.Pop(&out)) << next;
      ASSERT_EQ(out, recs[next]) << next;
    }
    EXPECT_FALSE(c.Pop(&out));
  }
}

// Peek while a producer and a consumer process run: every record Peek
// reports is a whole record (its bytes match its embedded sequence), in
// order within one walk, even as the consumer recycles space under it.
// On a loaded machine the three processes can fall into lockstep (the
// producer fills the ring, the consumer drains it, the walk finds it empty),
// so every 20,000 records the consumer waits until a walk has reported
// records; between those points all three run freely.
TEST(ShmQueue, PeekDuringLiveTrafficReportsOnlyWholeRecords) {
  ScopedKey<shmc::POSIX> key;
  {
    shmc::ShmQueue<shmc::POSIX> create;
    ASSERT_TRUE(create.InitForWrite(key, 1 << 14));
  }
  // Walks that reported at least one record, shared with the consumer.
  void* mem = mmap(nullptr, sizeof(std::atomic<uint64_t>),
                   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* fruitful = new (mem) std::atomic<uint64_t>(0);
  shmc::ShmQueue<shmc::POSIX> look;
  ASSERT_TRUE(look.InitForInspect(key));
  std::string k = key;
  constexpr uint64_t kRecords = 200000;
  constexpr uint64_t kCheckpoint = 20000;
  pid_t producer = fork();
  if (producer == 0) {
    shmc::ShmQueue<shmc::POSIX> p;
    if (!p.InitForWrite(k, 1 << 14)) _exit(20);
    std::mt19937_64 rng(3);
    for (uint64_t seq = 0; seq < kRecords; ++seq) {
      std::string r = Record(seq, 8 + rng() % 1000);
      while (!p.Push(r)) sched_yield();
    }
    _exit(0);
  }
  pid_t consumer = fork();
  if (consumer == 0) {
    shmc::ShmQueue<shmc::POSIX> c;
    if (!c.InitForRead(k)) _exit(21);
    std::string out;
    for (uint64_t n = 0; n < kRecords;) {
      if (n % kCheckpoint == kCheckpoint - 1) {
        uint64_t before = fruitful->load();
        while (fruitful->load() == before) sched_yield();
      }
      if (c.Pop(&out)) {
        ++n;
      } else {
        sched_yield();
      }
    }
    _exit(0);
  }
  uint64_t seen = 0, bad = 0, walks = 0;
  while (look.popped() < kRecords) {
    uint64_t prev = 0, reported = 0;
    auto r = look.Peek(64, [&](const std::string& rec) {
      uint64_t seq = 0;
      std::memcpy(&seq, rec.data(), 8);
      if (rec != Record(seq, rec.size()) || (reported > 0 && seq != prev + 1)) {
        ++bad;
      }
      prev = seq;
      ++reported;
    });
    EXPECT_NE(r, decltype(look)::kPeekCorrupted);
    seen += reported;
    if (reported > 0) fruitful->fetch_add(1);
    ++walks;
    sched_yield();
  }
  for (pid_t pid : {producer, consumer}) {
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  uint64_t fruitful_walks = fruitful->load();
  munmap(mem, sizeof(std::atomic<uint64_t>));
  EXPECT_EQ(bad, 0u) << "Peek reported torn or recycled bytes";
  EXPECT_GE(fruitful_walks, kRecords / kCheckpoint)
      << walks << " walks, " << seen << " records reported";
}

// The queues' inline copy: every length up to past the memcpy cut-over
// copies exactly its bytes, at every alignment, touching nothing around.
TEST(CopyBytes, EveryLengthAndAlignmentExactlyItsBytes) {
  std::mt19937 rng(11);
  std::vector<char> src(256), dst(256);
  for (size_t n = 0; n <= 160; ++n) {
    for (size_t align = 0; align < 8; ++align) {
      for (char& c : src) c = static_cast<char>(rng());
      std::fill(dst.begin(), dst.end(), '\x5a');
      shmc::detail::CopyBytes(dst.data() + 16 + align, src.data() + align, n);
      for (size_t i = 0; i < dst.size(); ++i) {
        bool inside = i >= 16 + align && i < 16 + align + n;
        char want = inside ? src[i - 16] : '\x5a';
        ASSERT_EQ(dst[i], want) << "n=" << n << " align=" << align
                                << " byte " << i;
      }
    }
  }
}

// 300K records here; 10M in the stress suite (tests/stress).
TEST(ShmQueueStream, RecordsAcrossProcesses) { Stream(300000); }
// Batches become visible whole (their first header is stored last),
// zero-copy commits and pads in every combination with the other forms.
TEST(ShmQueueStream, MixedFormsAcrossProcesses) { Stream(300000, true); }

}  // namespace
