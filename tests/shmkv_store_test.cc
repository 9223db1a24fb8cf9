// shmkv's store without the server around it: what happens to the write
// lock and the map when a worker process dies, at a chosen point (holding
// the lock) and at random points (SIGKILL in the middle of writes).
#include "server/store/store.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <chrono>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/store/blob.h"
#include "server/store/journal.h"
#include "server/store/key_hash.h"
#include "server/store/latency.h"
#include "server/store/stats.h"
#include "shmc/hash.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "tests/support/latency_streams.h"
#include "tests/support/test_util.h"
#include "tests/support/value_pool.h"

namespace {

using shmc_test::ScopedKey;

// A 1,000-byte part, its byte 10 + i marked (the patch record tests).
std::string PatchPart(uint64_t i, char fill) {
  std::string v(1000, fill);
  v[10 + i] = 'x';
  return v;
}

// A store config on a fresh key; the control segment is removed with it.
class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_.name = key_.str();
    cfg_.capacity = 4096;
    cfg_.memory = 8ULL << 20;
    cfg_.extents = shmc_test::TestValuePoolExtents();
    std::string err;
    // A segment left by an earlier run (a reused pid) must not be attached.
    ASSERT_TRUE(shmkv::RemoveStore(cfg_, &err)) << err;
    master_ = shmkv::Store::Open(cfg_, true, &err);
    ASSERT_NE(master_, nullptr) << err;
  }
  void TearDown() override {
    master_.reset();
    std::string err;
    EXPECT_TRUE(shmkv::RemoveStore(cfg_, &err)) << err;
  }

  // A worker's store in a child process; exits 90 when it cannot open.
  std::unique_ptr<shmkv::Store> OpenWorker() {
    std::string err;
    auto s = shmkv::Store::Open(cfg_, false, &err);
    if (s == nullptr) {
      std::fprintf(stderr, "worker open: %s\n", err.c_str());
      _exit(90);
    }
    return s;
  }

  // A child process that takes the store's write lock and holds it until
  // killed; returns once it holds the lock (ASSERTs otherwise).
  void ForkLockHolder(pid_t* holder) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    *holder = fork();
    if (*holder == 0) {
      auto s = OpenWorker();
      if (pthread_mutex_lock(&s->control()->write_lock) != 0) _exit(91);
      char c = 'x';
      if (write(ready[1], &c, 1) != 1) _exit(92);
      pause();
      _exit(93);
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1) << "the holder never took the lock";
    close(ready[0]);
  }

  // Waits up to `timeout` for `pid`; kills it and returns -2 past that.
  static int Wait(pid_t pid, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int st = 0;
    while (waitpid(pid, &st, WNOHANG) != pid) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -2;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  // A new collection of `n` parts, part i PatchPart(i, 'a'), committed.
  uint64_t CommitPatchParts(uint64_t n) {
    auto t = master_->Begin();
    const uint64_t id = t->NewCollection();
    for (uint64_t i = 0; i < n; ++i) {
      EXPECT_EQ(t->WritePart(id, i, PatchPart(i, 'a')), shmkv::Store::Status::kOk);
    }
    EXPECT_EQ(t->Commit(), shmkv::Store::Status::kOk);
    return id;
  }

  // A child that takes the write lock, leaves `rec` (`count` records,
  // `done` of them counted applied) in the journal as a commit being
  // applied, and dies holding the lock; returns once it is gone.
  void PlantApplyingCommit(const std::string& rec, uint64_t count,
                           uint64_t done) {
    using J = shmkv::Journal;
    pid_t pid = fork();
    if (pid == 0) {
      auto s = OpenWorker();
      shmc::ShmArray<uint64_t, shmc::POSIX> rj, wj;
      if (!rj.InitForRead(shmkv::JournalKey(cfg_)) ||
          !wj.InitForWrite(shmkv::JournalKey(cfg_), rj.size())) {
        _exit(90);
      }
      if (pthread_mutex_lock(&s->control()->write_lock) != 0) _exit(91);
      auto* w = const_cast<uint64_t*>(&wj[0]);
      std::memcpy(&w[J::kRecords], rec.data(), rec.size());
      w[J::kCount] = count;
      w[J::kBytes] = rec.size();
      w[J::kSum] = shmc::HashBytes(rec.data(), rec.size());
      w[J::kDone] = done;
      w[J::kState] = J::kApplying;
      w[J::kSeq] |= 1;
      _exit(0);  // holding the lock
    }
    ASSERT_GT(pid, 0);
    ASSERT_EQ(Wait(pid, std::chrono::seconds(10)), 0);
  }

  ScopedKey<shmc::POSIX> key_;
  shmkv::StoreConfig cfg_;
  std::unique_ptr<shmkv::Store> master_;
};

using Status = shmkv::Store::Status;
using SetMode = shmkv::Store::SetMode;

// A worker SIGKILLed while it holds the write lock: a writer already
// blocked on the lock and later ones get it, the map's recovery runs once,
// and the data written before is intact.
TEST_F(StoreFixture, WorkerKilledHoldingTheLock) {
  ASSERT_EQ(master_->Set("before", "1", 0, SetMode::kAlways, false),
            Status::kOk);
  pid_t holder = 0;
  ASSERT_NO_FATAL_FAILURE(ForkLockHolder(&holder));
  pid_t waiter = fork();
  if (waiter == 0) {
    auto s = OpenWorker();
    // Blocks until the holder is gone.
    Status st = s->Set("during", "2", 0, SetMode::kAlways, false);
    _exit(st == Status::kOk ? 0 : 94);
  }
  // The waiter is blocked: nothing it wrote is visible.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(master_->Exists("during"));
  ASSERT_EQ(kill(holder, SIGKILL), 0);
  EXPECT_EQ(Wait(holder, std::chrono::seconds(10)), -1);  // killed
  EXPECT_EQ(Wait(waiter, std::chrono::seconds(10)), 0)
      << "-2: the waiter never got the lock of a dead holder";

  EXPECT_EQ(master_->control()->lock_recoveries, 1u);
  std::string v;
  ASSERT_TRUE(master_->GetString("before", &v));
  EXPECT_EQ(v, "1");
  ASSERT_TRUE(master_->GetString("during", &v));
  EXPECT_EQ(v, "2");
  // The lock is usable again, and consistent: no second recovery.
  EXPECT_EQ(master_->Set("after", "3", 0, SetMode::kAlways, false),
            Status::kOk);
  EXPECT_EQ(master_->control()->lock_recoveries, 1u);
}

// Progress shared between the writers and the test.
struct Progress {
  std::atomic<uint64_t> acked[2];  // steps whose every write returned
};

std::string Payload(int writer, uint64_t step) {
  std::string p = std::to_string(writer) + ":" + std::to_string(step) + ":";
  size_t len = 1 + (step * 7919 + static_cast<uint64_t>(writer) * 31) % 3000;
  while (p.size() < len) p += static_cast<char>('a' + p.size() % 26);
  return p;
}
std::string StepKey(int writer, uint64_t step) {
  return "k" + std::to_string(writer) + "_" + std::to_string(step);
}

constexpr uint64_t kWindow = 64;  // each writer keeps its last 64 keys

// Two writer processes, each step: SET its step key (values of 1..3000
// bytes, so blob nodes are allocated and freed), INCR a shared counter, DEL
// the key kWindow steps back, then record the step as acknowledged. The
// test SIGKILLs a random writer at random moments, in or out of the lock,
// and restarts it from its last acknowledged step. At the end every
// acknowledged write is there, with its bytes, and the counter counts each
// acknowledged INCR exactly once (plus at most one per kill, the INCR of an
// interrupted step that is redone).
TEST_F(StoreFixture, RandomKillsLoseNoAcknowledgedWrite) {
  void* mem = mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* prog = new (mem) Progress{};
  auto spawn = [&](int w) {
    pid_t pid = fork();
    if (pid == 0) {
      auto s = OpenWorker();
      for (uint64_t step = prog->acked[w].load();; ++step) {
        if (s->Set(StepKey(w, step), Payload(w, step), 0, SetMode::kAlways,
                   false) != Status::kOk) {
          _exit(95);
        }
        int64_t n = 0;
        if (s->IncrBy("counter", 1, &n) != Status::kOk) _exit(96);
        if (step >= kWindow) s->Del(StepKey(w, step - kWindow));
        prog->acked[w].store(step + 1);
      }
    }
    return pid;
  };
  pid_t writers[2] = {spawn(0), spawn(1)};
  ASSERT_GT(writers[0], 0);
  ASSERT_GT(writers[1], 0);
  std::mt19937 rng(7);
  constexpr int kKills = 200;
  for (int k = 0; k < kKills; ++k) {
    int w = static_cast<int>(rng() % 2);
    // Let the writer get into its loop, then kill it anywhere in a step.
    uint64_t from = prog->acked[w].load();
    while (prog->acked[w].load() < from + 2) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
    kill(writers[w], SIGKILL);
    int st = 0;
    ASSERT_EQ(waitpid(writers[w], &st, 0), writers[w]);
    ASSERT_TRUE(WIFSIGNALED(st)) << "writer " << w << " exited with "
                                 << WEXITSTATUS(st);
    writers[w] = spawn(w);
    ASSERT_GT(writers[w], 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (pid_t pid : writers) {
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFSIGNALED(st)) << "a writer failed: " << WEXITSTATUS(st);
  }
  // The last kills may have landed inside a write, which the next process
  // to take the write lock finishes (EOWNERDEAD -> Recover). Until then a
  // lock-free count can be one off: the key's slot is already cleared but
  // the live-value counter not yet lowered. Take the lock once, by a write,
  // before counting; it also shows the store still takes writes.
  ASSERT_EQ(master_->Set("after", "x", 0, SetMode::kAlways, false),
            Status::kOk);
  const uint64_t kills = kKills + 2;
  uint64_t acked_total = 0;
  for (int w = 0; w < 2; ++w) {
    uint64_t acked = prog->acked[w].load();
    acked_total += acked;
    EXPECT_GT(acked, kWindow) << "writer " << w << " made too little progress";
    // The interrupted step `acked` may already have deleted the key
    // kWindow steps back; the later ones were acknowledged as written.
    for (uint64_t step = acked >= kWindow ? acked - kWindow + 1 : 0;
         step < acked; ++step) {
      std::string v;
      ASSERT_TRUE(master_->GetString(StepKey(w, step), &v))
          << "acknowledged write lost: " << StepKey(w, step);
      ASSERT_EQ(v, Payload(w, step)) << StepKey(w, step);
    }
    if (acked > kWindow) {
      EXPECT_FALSE(master_->Exists(StepKey(w, acked - kWindow - 1)))
          << "acknowledged DEL lost";
    }
  }
  std::string counter;
  ASSERT_TRUE(master_->GetString("counter", &counter));
  uint64_t n = std::stoull(counter);
  EXPECT_GE(n, acked_total) << "an acknowledged INCR was lost";
  EXPECT_LE(n, acked_total + kills) << "an INCR was applied twice";
  // Live keys: each writer's window, the unacknowledged step's key at most,
  // the counter and "after".
  EXPECT_LE(master_->Keys(), 2 * (kWindow + 1) + 2);
  // Every value the map counts is reachable from a key: nothing leaked.
  uint64_t cursor = 0, scanned = 0;
  do {
    master_->Scan(&cursor, 1024, [&](std::string_view, shmkv::ValueType) { ++scanned; });
  } while (cursor != 0);
  EXPECT_EQ(scanned, master_->Keys());
  EXPECT_GT(master_->control()->lock_recoveries, 0u)
      << "no kill landed inside the lock: the test proved little";
  munmap(mem, sizeof(Progress));
}

// WATCH across FLUSHALL and a dead writer. FLUSHALL fails the watch of a
// key it deleted and keeps that of a key that was not there (as Redis).
// A writer SIGKILLed while holding the lock (which a worker killed in the
// middle of a FLUSHALL is: it bumps each key's version as it goes, so the
// keys not yet erased would keep theirs) fails every watch: the lock's
// recovery bumps the epoch.
TEST_F(StoreFixture, WatchAcrossFlushAllAndADeadWriter) {
  ASSERT_EQ(master_->Set("there", "1", 0, SetMode::kAlways, false),
            Status::kOk);
  shmkv::WatchStamp there = master_->Watch("there");
  shmkv::WatchStamp missing = master_->Watch("missing");
  master_->FlushAll();
  {
    auto t = master_->Begin();
    EXPECT_FALSE(t->Unchanged("there", there)) << "its key was deleted";
    EXPECT_TRUE(t->Unchanged("missing", missing)) << "nothing touched it";
  }
  missing = master_->Watch("missing");
  pid_t holder = 0;
  ASSERT_NO_FATAL_FAILURE(ForkLockHolder(&holder));
  ASSERT_EQ(kill(holder, SIGKILL), 0);
  EXPECT_EQ(Wait(holder, std::chrono::seconds(10)), -1);  // killed
  auto t = master_->Begin();  // takes the dead holder's lock: recovery
  EXPECT_EQ(master_->control()->lock_recoveries, 1u);
  EXPECT_FALSE(t->Unchanged("missing", missing))
      << "a watch survived a writer that died holding the lock";
}

// --- multi-key commits (the journal) ------------------------------------

constexpr int kGroup = 100;  // keys one commit changes together

std::string GroupKey(int i) { return "g" + std::to_string(i); }
// Generation `gen` of a group value: 300..800 bytes, so each key's blob
// spans several nodes and a commit takes a while to apply.
std::string GroupValue(uint64_t gen, int i) {
  std::string v = std::to_string(gen) + ":";
  v.resize(300 + static_cast<size_t>((gen * 131 + static_cast<uint64_t>(i)) % 500),
           static_cast<char>('a' + gen % 26));
  return v;
}
// The generation the group holds, or -1 if its keys disagree or one is
// missing.
int64_t GroupGeneration(shmkv::Store* s, shmkv::Store::Txn* t = nullptr) {
  int64_t gen = -2;
  for (int i = 0; i < kGroup; ++i) {
    std::string v;
    if (t != nullptr ? t->ReadString(GroupKey(i), &v, nullptr) != Status::kOk
                     : !s->GetString(GroupKey(i), &v)) {
      return -1;
    }
    int64_t g = std::stoll(v.substr(0, v.find(':')));
    if (v != GroupValue(static_cast<uint64_t>(g), i)) return -1;
    if (gen != -2 && g != gen) return -1;
    gen = g;
  }
  return gen;
}
shmkv::Store::Status CommitGroup(shmkv::Store* s, uint64_t gen) {
  auto t = s->Begin();
  for (int i = 0; i < kGroup; ++i) {
    Status st = t->Put(GroupKey(i), GroupValue(gen, i), 0);
    if (st != Status::kOk) return st;
  }
  return t->Commit();
}

// A writer SIGKILLed at random moments while it commits 100-key groups:
// after each kill, the next process to take the lock finishes (or undoes)
// the interrupted commit, and the group holds one generation, never a mix.
// Some kills must land while a commit is being applied, or the test proved
// nothing; the journal counts them.
TEST_F(StoreFixture, MultiKeyCommitIsAllOrNothingUnderKills) {
  ASSERT_EQ(CommitGroup(master_.get(), 0), Status::kOk);
  // Commits the writer finished and how long one takes: the kill waits
  // for the first and then lands anywhere in the next two, however slow
  // the build (sanitizers) makes them.
  struct Shared {
    std::atomic<uint64_t> commits{0};
    std::atomic<uint64_t> us_per_commit{1000};
  };
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* shared = new (mem) Shared();
  std::atomic<uint64_t>* commits = &shared->commits;
  std::mt19937 rng(11);
  uint64_t gen_base = 1;
  int kills = 0;
  for (; kills < 400 && master_->journal_stats().recovered < 5; ++kills) {
    uint64_t before = commits->load();
    pid_t pid = fork();
    if (pid == 0) {
      auto s = OpenWorker();
      for (uint64_t g = gen_base;; ++g) {
        auto t0 = std::chrono::steady_clock::now();
        if (CommitGroup(s.get(), g) != Status::kOk) _exit(97);
        shared->us_per_commit.store(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(
                std::chrono::steady_clock::now() - t0).count()) + 1);
        commits->fetch_add(1);
      }
    }
    ASSERT_GT(pid, 0);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (commits->load() == before &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(
        rng() % (2 * shared->us_per_commit.load())));
    kill(pid, SIGKILL);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(st)) << "the writer exited with " << WEXITSTATUS(st);
    // Take the lock (a write elsewhere): this runs the recovery.
    ASSERT_EQ(master_->Set("probe", "x", 0, SetMode::kAlways, false),
              Status::kOk);
    int64_t gen = GroupGeneration(master_.get());
    ASSERT_GE(gen, 0) << "a mixed group after kill " << kills;
    gen_base = static_cast<uint64_t>(gen) + 1000;
  }
  uint64_t us = shared->us_per_commit.load();
  munmap(mem, sizeof(Shared));
  EXPECT_GT(master_->journal_stats().recovered, 0u)
      << "no kill landed inside a commit in " << kills << " kills";
  EXPECT_EQ(master_->journal_stats().dropped, 0u);
  std::printf("%d kills (a commit takes ~%llu us), %llu interrupted "
              "commits finished by recovery\n",
              kills, static_cast<unsigned long long>(us),
              static_cast<unsigned long long>(
                  master_->journal_stats().recovered));
}

// Lock-free readers in another process bracket their reads with
// ReadBegin/ReadValid and never see half of a commit, while a writer
// commits group after group; a reader that keeps meeting commits falls
// back to reading under the lock (as MGET does), so it is not starved.
TEST_F(StoreFixture, ReadersNeverSeeHalfACommit) {
  ASSERT_EQ(CommitGroup(master_.get(), 0), Status::kOk);
  pid_t writer = fork();
  if (writer == 0) {
    auto s = OpenWorker();
    for (uint64_t g = 1;; ++g) {
      if (CommitGroup(s.get(), g) != Status::kOk) _exit(97);
    }
  }
  ASSERT_GT(writer, 0);
  pid_t reader = fork();
  if (reader == 0) {
    auto s = OpenWorker();
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    int64_t last = 0, changes = 0;
    while (std::chrono::steady_clock::now() < end) {
      // As MGET reads: lock-free a few times, then under the lock.
      int64_t gen = -1;
      bool valid = false;
      for (int attempt = 0; attempt < 4 && !valid; ++attempt) {
        uint64_t t = s->ReadBegin();
        gen = GroupGeneration(s.get());
        valid = s->ReadValid(t);
      }
      if (!valid) gen = GroupGeneration(s.get(), s->Begin().get());
      if (gen < 0) _exit(1);  // saw a mix
      if (gen < last) _exit(2);  // went back in time
      // Single reads check the sequence too: once a GET of the commit's
      // first key shows its new value, a later GET of its last key does.
      for (int pair = 0; pair < 50; ++pair) {
        std::string v0, v1;
        if (s->GetString(GroupKey(0), &v0) && s->GetString(GroupKey(kGroup - 1), &v1) &&
            std::stoll(v1) < std::stoll(v0)) {
          _exit(4);
        }
      }
      changes += gen != last;
      last = gen;
    }
    std::fprintf(stderr, "reader: %lld generations seen change\n",
                 static_cast<long long>(changes));
    _exit(changes >= 10 ? 0 : 3);  // it saw the writer make progress
  }
  ASSERT_GT(reader, 0);
  int rc = Wait(reader, std::chrono::seconds(30));
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  EXPECT_EQ(rc, 0) << "1: a reader saw a mixed group; 2: an older one; "
                      "3: the writer made no progress; 4: a single GET saw "
                      "a newer value than a later one";
}

// A commit larger than the journal is refused whole.
TEST_F(StoreFixture, CommitLargerThanTheJournalChangesNothing) {
  master_.reset();
  std::string err;
  ASSERT_TRUE(shmkv::RemoveStore(cfg_, &err)) << err;
  cfg_.journal = 16 << 10;
  master_ = shmkv::Store::Open(cfg_, true, &err);
  ASSERT_NE(master_, nullptr) << err;
  ASSERT_EQ(master_->Set("a", "old", 0, SetMode::kAlways, false), Status::kOk);
  std::string big(1000, 'x');
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back("m" + std::to_string(i));
  pairs.emplace_back("a", "new");
  for (const std::string& k : keys) pairs.emplace_back(k, big);
  EXPECT_EQ(master_->MSet(pairs), Status::kTxnTooLarge);
  std::string v;
  ASSERT_TRUE(master_->GetString("a", &v));
  EXPECT_EQ(v, "old");
  EXPECT_FALSE(master_->Exists("m0"));
  pairs.resize(5);  // 4 KiB fits
  EXPECT_EQ(master_->MSet(pairs), Status::kOk);
  ASSERT_TRUE(master_->GetString("a", &v));
  EXPECT_EQ(v, "new");
}

// A transaction's reads see its own writes whether it touched a few keys
// or many (past the point where its entries are found through an index),
// one left without Commit changes nothing, and the next starts with none
// of its keys: the entries are the store's, reused between transactions.
TEST_F(StoreFixture, TransactionsSeeOwnWritesAndStartClean) {
  std::string v;
  {
    auto t = master_->Begin();
    ASSERT_EQ(t->Put("s1", "abandoned", 0), Status::kOk);
  }
  {
    auto t = master_->Begin();
    EXPECT_EQ(t->ReadString("s1", &v, nullptr), Status::kNotFound);
    ASSERT_EQ(t->Put("s2", "kept", 0), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);
  }
  EXPECT_FALSE(master_->Exists("s1"));
  ASSERT_TRUE(master_->GetString("s2", &v));
  EXPECT_EQ(v, "kept");
  {
    auto t = master_->Begin();
    for (int i = 0; i < 20; ++i) {
      std::string k = "k" + std::to_string(i);
      ASSERT_EQ(t->Put(k, "v" + std::to_string(i), 0), Status::kOk);
      if (i == 3) {
        ASSERT_EQ(t->Put("k3", "again", 0), Status::kOk);
        ASSERT_EQ(t->ReadString("k3", &v, nullptr), Status::kOk);
        EXPECT_EQ(v, "again");
      }
    }
    ASSERT_EQ(t->Put("k15", "later", 0), Status::kOk);
    ASSERT_EQ(t->Delete("k5"), Status::kOk);
    ASSERT_EQ(t->ReadString("k15", &v, nullptr), Status::kOk);
    EXPECT_EQ(v, "later");
    ASSERT_EQ(t->ReadString("k3", &v, nullptr), Status::kOk);
    EXPECT_EQ(v, "again");
    EXPECT_EQ(t->ReadString("k5", &v, nullptr), Status::kNotFound);
    ASSERT_EQ(t->ReadString("k19", &v, nullptr), Status::kOk);
    EXPECT_EQ(v, "v19");
  }  // never committed
  EXPECT_FALSE(master_->Exists("k3"));
  EXPECT_FALSE(master_->Exists("k15"));
  {
    auto t = master_->Begin();
    EXPECT_EQ(t->ReadString("k15", &v, nullptr), Status::kNotFound);
    EXPECT_EQ(t->ReadString("k0", &v, nullptr), Status::kNotFound);
    ASSERT_EQ(t->Put("k0", "one", 0), Status::kOk);
    ASSERT_EQ(t->Put("x", std::string(100 << 10, 'x'), 0), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);
  }
  ASSERT_TRUE(master_->GetString("k0", &v));
  EXPECT_EQ(v, "one");
  ASSERT_TRUE(master_->GetString("x", &v));
  EXPECT_EQ(v.size(), 100u << 10);
  EXPECT_FALSE(master_->Exists("k1"));
  {
    auto t = master_->Begin();
    ASSERT_EQ(t->ReadString("x", &v, nullptr), Status::kOk);
    EXPECT_EQ(v.size(), 100u << 10);
    ASSERT_EQ(t->Delete("x"), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);
  }
  EXPECT_FALSE(master_->Exists("x"));
}

// Another key's blob under a key's 128-bit hash (planted: a real collision
// is never seen): writes to the key are refused and leave that blob alone,
// whether the other key is shorter, as long, or longer. A blob too short
// for its own key is damage and is taken as no key, as reads take it.
// The store's own map, attached behind its back, over the pool the store
// was made with (server/store/store.cc sizes both so).
template <class Map>
void OpenStoreMap(const shmkv::StoreConfig& cfg, uint64_t size,
                  uint64_t count, Map* map) {
  shmc::SetDefaultCreateFlags(shmc::kSharedWriters | shmc::kNoCreate);
  ASSERT_TRUE(map->InitForWrite(cfg.name, cfg.capacity, size, count))
      << map->last_error().message;
}

template <class Map>
void WriteOverAnotherKeysBlob(Map& map, shmkv::Store* master_) {
  const shmkv::KeyHash h = shmkv::HashKey("victim");
  for (std::string other : {"vic", "victin", "victim-but-longer"}) {
    std::string blob;
    shmkv::MakeBlob(&blob, other, shmkv::ValueType::kString,
                    shmkv::kStringAsGiven, "theirs", 0);
    ASSERT_TRUE(map.Replace(h, blob));
    EXPECT_EQ(master_->Set("victim", "mine", 0, SetMode::kAlways, false),
              Status::kCollision) << other;
    EXPECT_FALSE(master_->Del("victim")) << other;
    std::vector<std::pair<std::string_view, std::string_view>> pairs = {
        {"fine", "1"}, {"victim", "2"}};
    EXPECT_EQ(master_->MSet(pairs), Status::kCollision) << other;
    EXPECT_FALSE(master_->Exists("fine")) << other;
    std::string now;
    ASSERT_TRUE(map.Find(h, &now));
    EXPECT_EQ(now, blob) << other;
  }
  std::string damaged(shmkv::kBlobHeader + 2, '\0');
  damaged[8] = 100;  // key_len 100 in a blob of 18 bytes
  ASSERT_TRUE(map.Replace(h, damaged));
  EXPECT_EQ(master_->Set("victim", "mine", 0, SetMode::kAlways, false),
            Status::kOk);
  std::string v;
  ASSERT_TRUE(master_->GetString("victim", &v));
  EXPECT_EQ(v, "mine");
}

TEST_F(StoreFixture, WriteOverAnotherKeysBlobIsRefused) {
  if (cfg_.extents) {
    shmc::ShmHashMap<shmkv::KeyHash, shmc::POSIX,
                     shmc::ShmExtentTable<shmc::POSIX>> map;
    const uint64_t g = std::max<uint64_t>(256, cfg_.memory / 8);
    ASSERT_NO_FATAL_FAILURE(OpenStoreMap(cfg_, 8, g + g / 8, &map));
    WriteOverAnotherKeysBlob(map, master_.get());
  } else {
    shmc::ShmHashMap<shmkv::KeyHash, shmc::POSIX> map;
    ASSERT_NO_FATAL_FAILURE(OpenStoreMap(cfg_, 64, cfg_.memory / 80, &map));
    WriteOverAnotherKeysBlob(map, master_.get());
  }
}

// A commit whose new blobs need more nodes than the pool has free is
// refused before anything is written: every key keeps its old value, and
// nothing was applied, so nothing is undone.
TEST_F(StoreFixture, CommitThatDoesNotFitIsRefusedWhole) {
  // 8 MiB of values: 100 keys of 300..800 bytes, then a commit that makes
  // each of them 200 KB.
  ASSERT_EQ(CommitGroup(master_.get(), 1), Status::kOk);
  auto t = master_->Begin();
  std::string huge(200 << 10, 'h');
  for (int i = 0; i < kGroup; ++i) {
    ASSERT_EQ(t->Put(GroupKey(i), huge, 0), Status::kOk);
  }
  EXPECT_EQ(t->Commit(), Status::kFull);
  t.reset();
  EXPECT_EQ(GroupGeneration(master_.get()), 1);
  EXPECT_EQ(master_->journal_stats().undone, 0u);
  EXPECT_EQ(CommitGroup(master_.get(), 2), Status::kOk);
  EXPECT_EQ(GroupGeneration(master_.get()), 2);
}

// A commit that replaces the group and adds more new keys than the index
// holds: the index fills part-way through the new keys, which are applied
// first, so undoing erases them alone. The group keeps its old values
// (its records keep no old blob: they were never applied), the count of
// keys is what it was, and the room is back.
TEST_F(StoreFixture, CommitWhoseNewKeysDoNotFitIsUndone) {
  ASSERT_EQ(CommitGroup(master_.get(), 1), Status::kOk);
  const uint64_t keys = master_->Keys();
  auto t = master_->Begin();
  for (int i = 0; i < kGroup; ++i) {
    ASSERT_EQ(t->Put(GroupKey(i), GroupValue(2, i), 0), Status::kOk);
  }
  const int added = static_cast<int>(cfg_.capacity) * 3;
  for (int i = 0; i < added; ++i) {
    ASSERT_EQ(t->Put("new" + std::to_string(i), "v", 0), Status::kOk);
  }
  EXPECT_EQ(t->Commit(), Status::kFull);
  t.reset();
  EXPECT_EQ(master_->journal_stats().undone, 1u);
  EXPECT_EQ(GroupGeneration(master_.get()), 1);
  EXPECT_EQ(master_->Keys(), keys);
  for (int i = 0; i < added; i += 97) {
    EXPECT_FALSE(master_->Exists("new" + std::to_string(i))) << i;
  }
  EXPECT_EQ(CommitGroup(master_.get(), 3), Status::kOk);
  EXPECT_EQ(GroupGeneration(master_.get()), 3);
}

// A journal left "applying" with damaged records by a dead writer is
// dropped with a message, not replayed out of bounds.
TEST_F(StoreFixture, DamagedJournalIsDropped) {
  ASSERT_EQ(master_->Set("a", "1", 0, SetMode::kAlways, false), Status::kOk);
  shmc::ShmArray<uint64_t, shmc::POSIX> jnl;
  ASSERT_TRUE(jnl.InitForRead(shmkv::JournalKey(cfg_)))
      << jnl.last_error().message;
  using J = shmkv::Journal;
  ASSERT_GT(jnl.size(), J::kRecords + 512);
  std::mt19937_64 rng(3);
  for (int round = 0; round < 50; ++round) {
    pid_t pid = fork();
    if (pid == 0) {
      auto s = OpenWorker();  // also sets the shared-writer create flags
      shmc::ShmArray<uint64_t, shmc::POSIX> wj;
      if (!wj.InitForWrite(shmkv::JournalKey(cfg_), jnl.size())) _exit(90);
      if (pthread_mutex_lock(&s->control()->write_lock) != 0) _exit(91);
      // Plant a committed journal with random counts, lengths and bytes,
      // then die holding the lock.
      auto* w = const_cast<uint64_t*>(&wj[0]);
      w[J::kState] = J::kApplying;
      w[J::kCount] = rng() % 4 == 0 ? ~0ULL : rng() % 64;
      w[J::kDone] = rng() % 8;
      w[J::kBytes] = rng() % 2 ? rng() : rng() % 4096;
      for (size_t i = 0; i < 512; ++i) w[J::kRecords + i] = rng();
      // Half the rounds with a matching checksum, so the bounds checks
      // behind it are what stands between the records and the map.
      const char* area = reinterpret_cast<const char*>(&w[J::kRecords]);
      size_t cap = (wj.size() - J::kRecords) * 8;
      w[J::kSum] = round % 2 == 0 && w[J::kBytes] <= cap
                       ? shmc::HashBytes(area, w[J::kBytes])
                       : rng();
      _exit(0);
    }
    ASSERT_GT(pid, 0);
    ASSERT_EQ(Wait(pid, std::chrono::seconds(10)), 0);
    ASSERT_EQ(master_->Set("b", "2", 0, SetMode::kAlways, false), Status::kOk);
    std::string v;
    ASSERT_TRUE(master_->GetString("a", &v));
    EXPECT_EQ(v, "1");
    rng();
  }
  shmkv::Store::JournalStats js = master_->journal_stats();
  EXPECT_EQ(js.recovered, 50u);  // each planted commit was met
  EXPECT_GE(js.dropped, 25u) << "random records rarely parse";
}

// --- Collections held in parts (server/store/blob.h) -----------------

// A collection at `key` of `n` parts ("part <i>"), as a family of a
// large type writes one: a fresh id, the parts, a root that names them.
// The first status that is not kOk, in *st.
uint64_t MakeCollection(shmkv::Store* s, const std::string& key, uint64_t n,
                        int64_t expire_ms, Status* st) {
  auto t = s->Begin();
  uint64_t id = t->NewCollection();
  *st = Status::kOk;
  for (uint64_t i = 0; i < n && *st == Status::kOk; ++i) {
    *st = t->WritePart(id, i, "part " + std::to_string(i));
  }
  shmkv::PartsRoot r{id, n};
  std::string root(reinterpret_cast<const char*>(&r), sizeof(r));
  root += "the type's own header";
  if (*st == Status::kOk) {
    *st = t->Write(key, shmkv::ValueType::kHash, shmkv::kEncodingParts | 1,
                   root, expire_ms);
  }
  if (*st == Status::kOk) *st = t->Commit();
  return id;
}

uint64_t MakeCollection(shmkv::Store* s, const std::string& key, uint64_t n,
                        int64_t expire_ms = 0) {
  Status st;
  uint64_t id = MakeCollection(s, key, n, expire_ms, &st);
  EXPECT_EQ(st, Status::kOk) << key;
  return id;
}

// The collection id `key`'s root names (0: none).
uint64_t RootId(shmkv::Store* s, const std::string& key) {
  shmkv::Value v;
  if (!s->Get(key, &v) || v.bytes.size() < sizeof(shmkv::PartsRoot)) return 0;
  shmkv::PartsRoot r;
  std::memcpy(&r, v.bytes.data(), sizeof(r));
  return r.id;
}

// Parts are not keys; each stays with the one key that owns it: RENAME
// moves the root alone, COPY gives the copy parts of its own, DEL and an
// overwrite take them away, and a Redis key with a part's very bytes is
// another key.
TEST_F(StoreFixture, PartsFollowTheKeyThatOwnsThem) {
  uint64_t id = MakeCollection(master_.get(), "h", 3);
  EXPECT_EQ(master_->Keys(), 1u);
  EXPECT_EQ(master_->Parts(), 3u);
  std::string part;
  ASSERT_TRUE(master_->GetPart(id, 2, &part));
  EXPECT_EQ(part, "part 2");
  EXPECT_FALSE(master_->GetPart(id, 3, &part));
  uint64_t cursor = 0;
  std::vector<std::string> seen;
  do {
    master_->Scan(&cursor, 100, [&](std::string_view k, shmkv::ValueType) {
      seen.emplace_back(k);
    });
  } while (cursor != 0);
  EXPECT_EQ(seen, std::vector<std::string>{"h"});
  std::string rk;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(master_->RandomKey(&rk));
    EXPECT_EQ(rk, "h");
  }
  // A key whose bytes are a part's key is a key of its own.
  char kb[16];
  std::string same(shmkv::PartKeyBytes(shmkv::PartKey{id, 0}, kb));
  ASSERT_EQ(master_->Set(same, "x", 0, SetMode::kAlways, false), Status::kOk);
  ASSERT_TRUE(master_->GetPart(id, 0, &part));
  EXPECT_EQ(part, "part 0");
  ASSERT_TRUE(master_->Del(same));
  {  // RENAME h h2
    auto t = master_->Begin();
    shmkv::Value v;
    ASSERT_EQ(t->Read("h", &v), Status::kOk);
    ASSERT_EQ(t->Write("h2", v.type, v.encoding, v.bytes, 0), Status::kOk);
    ASSERT_EQ(t->Delete("h"), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);
  }
  EXPECT_EQ(RootId(master_.get(), "h2"), id);
  EXPECT_EQ(master_->Parts(), 3u);
  {  // COPY h2 h3
    auto t = master_->Begin();
    shmkv::Value v;
    ASSERT_EQ(t->Read("h2", &v), Status::kOk);
    ASSERT_EQ(t->Write("h3", v.type, v.encoding, v.bytes, 0), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);
  }
  uint64_t copy = RootId(master_.get(), "h3");
  EXPECT_NE(copy, id);
  EXPECT_EQ(master_->Parts(), 6u);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(master_->GetPart(copy, i, &part)) << i;
    EXPECT_EQ(part, "part " + std::to_string(i));
  }
  EXPECT_TRUE(master_->Del("h2"));
  EXPECT_EQ(master_->Parts(), 3u);
  EXPECT_FALSE(master_->GetPart(id, 0, &part));
  ASSERT_EQ(master_->Set("h3", "now a string", 0, SetMode::kAlways, false),
            Status::kOk);
  EXPECT_EQ(master_->Parts(), 0u);
  EXPECT_FALSE(master_->GetPart(copy, 0, &part));
  EXPECT_EQ(master_->Keys(), 1u);
}

// The bytes of a part and of a collection's root in the map, pinned: a
// hot reload reads what the build before wrote.
TEST(ShmkvLayout, PartsAndRootsKeepTheirBytes) {
  shmkv::PartsRoot r{0x0102030405060708ULL, 3};
  std::string root(reinterpret_cast<const char*>(&r), sizeof(r));
  EXPECT_EQ(root, std::string("\x08\x07\x06\x05\x04\x03\x02\x01"
                              "\x03\0\0\0\0\0\0\0", 16));
  char kb[16];
  std::string blob;
  shmkv::MakeBlob(&blob, shmkv::PartKeyBytes(shmkv::PartKey{7, 2}, kb),
                  static_cast<shmkv::ValueType>(shmkv::kPartType), 0, "ab",
                  0);
  EXPECT_EQ(blob, std::string("\0\0\0\0\0\0\0\0" "\x10\0\0\0" "\x80\0\0\0"
                              "\x07\0\0\0\0\0\0\0" "\x02\0\0\0\0\0\0\0" "ab",
                              34));
  EXPECT_EQ(shmkv::kGraveIndex, ~0ULL);
  EXPECT_EQ(shmkv::kEncodingParts, 0x80);
  shmkv::KeyHash h = shmkv::HashPart(7, 2);
  EXPECT_EQ(h.a, shmkv::HashPart(7, 2).a);
  EXPECT_NE(h.a, shmkv::HashPart(2, 7).a);
  EXPECT_NE(h.a, shmkv::HashKey(std::string(kb, 16)).a);
}

// A root whose count of parts is damaged (past what the map can hold) is
// refused by a copy and removed by DEL in bounded work; a root written
// with an id the transaction neither made nor read is a copy.
TEST_F(StoreFixture, DamagedPartCountsAreBounded) {
  MakeCollection(master_.get(), "d", 2);
  shmkv::Value v;
  ASSERT_TRUE(master_->Get("d", &v));
  shmkv::PartsRoot r;
  std::memcpy(&r, v.bytes.data(), sizeof(r));
  r.parts = 1ULL << 60;
  std::memcpy(&v.bytes[0], &r, sizeof(r));
  {
    auto t = master_->Begin();
    ASSERT_EQ(t->Write("d", v.type, v.encoding, v.bytes, 0), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);
  }
  {
    auto t = master_->Begin();
    ASSERT_EQ(t->Write("e", v.type, v.encoding, v.bytes, 0), Status::kOk);
    EXPECT_EQ(t->Commit(), Status::kTooLarge);
  }
  EXPECT_TRUE(master_->Del("d"));
  for (int i = 0; i < 10 && master_->Parts() > 0; ++i) master_->Sweep(100000);
  EXPECT_EQ(master_->Parts(), 0u);
  EXPECT_EQ(master_->Keys(), 0u);
}

// Inside one transaction: COPY twice then DEL of the source is one copy
// and one move, both with the part the transaction changed; and a part
// with no root to own it is not removed (only roots own parts).
TEST_F(StoreFixture, OneTransactionSettlesItsCollectionsOnce) {
  uint64_t id = MakeCollection(master_.get(), "a", 2);
  {
    auto t = master_->Begin();
    shmkv::Value v;
    ASSERT_EQ(t->Read("a", &v), Status::kOk);
    ASSERT_EQ(t->Write("b", v.type, v.encoding, v.bytes, 0), Status::kOk);
    ASSERT_EQ(t->Write("c", v.type, v.encoding, v.bytes, 0), Status::kOk);
    ASSERT_EQ(t->Delete("a"), Status::kOk);
    ASSERT_EQ(t->WritePart(id, 1, "changed"), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);
  }
  uint64_t b = RootId(master_.get(), "b"), c = RootId(master_.get(), "c");
  EXPECT_TRUE((b == id) != (c == id)) << b << " " << c;
  EXPECT_EQ(master_->Parts(), 4u);
  for (uint64_t owner : {b, c}) {
    std::string part;
    ASSERT_TRUE(master_->GetPart(owner, 1, &part));
    EXPECT_EQ(part, "changed");
  }
  {
    auto t = master_->Begin();
    uint64_t fresh = t->NewCollection();
    ASSERT_EQ(t->WritePart(fresh, 0, "x"), Status::kOk);
    ASSERT_EQ(t->Delete("b"), Status::kOk);
    ASSERT_EQ(t->Delete("c"), Status::kOk);
    ASSERT_EQ(t->Commit(), Status::kOk);  // fresh's part has no owner...
  }
  EXPECT_EQ(master_->Parts(), 1u);  // ...and stays: only roots own parts
  EXPECT_EQ(master_->Keys(), 0u);
}

// A large collection leaves through a grave: the commit that drops its
// root removes up to kReapBudget parts, the sweep the rest; its key is
// gone at once.
TEST_F(StoreFixture, LargeCollectionsLeaveThroughAGrave) {
  master_.reset();
  std::string err;
  ASSERT_TRUE(shmkv::RemoveStore(cfg_, &err)) << err;
  cfg_.capacity = 20000;
  cfg_.memory = 64ULL << 20;
  cfg_.journal = 8ULL << 20;
  master_ = shmkv::Store::Open(cfg_, true, &err);
  ASSERT_NE(master_, nullptr) << err;
  uint64_t id = MakeCollection(master_.get(), "big", 6000);
  EXPECT_EQ(master_->Parts(), 6000u);
  EXPECT_TRUE(master_->Del("big"));
  EXPECT_EQ(master_->Keys(), 0u);
  EXPECT_EQ(master_->Parts(), 6000u - 4096u + 1u);  // and the grave
  std::string part;
  EXPECT_TRUE(master_->GetPart(id, 6000 - 4096 - 1, &part));
  EXPECT_FALSE(master_->GetPart(id, 6000 - 4096, &part));
  for (int i = 0; i < 100 && master_->Parts() > 0; ++i) master_->Sweep(4096);
  EXPECT_EQ(master_->Parts(), 0u);
  EXPECT_EQ(master_->MemoryUsed(), 0u);
  // An expired collection goes the same way.
  MakeCollection(master_.get(), "ttl", 100, shmkv::NowMs() + 30);
  EXPECT_EQ(master_->Parts(), 100u);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  shmkv::Value v;
  EXPECT_FALSE(master_->Get("ttl", &v));
  EXPECT_EQ(master_->Parts(), 0u);
  EXPECT_EQ(master_->Keys(), 0u);
}

// Workers SIGKILLed while they delete, copy and rewrite large collections:
// every collection is whole or gone, the count of parts stays true (the
// next writer counts again after a death under the lock), and once swept
// no part is left without its key.
TEST_F(StoreFixture, KillsWhileCollectionsComeAndGoLeaveNoStrayPart) {
  master_.reset();
  std::string err;
  ASSERT_TRUE(shmkv::RemoveStore(cfg_, &err)) << err;
  cfg_.capacity = 60000;
  cfg_.memory = 128ULL << 20;
  cfg_.journal = 16ULL << 20;
  master_ = shmkv::Store::Open(cfg_, true, &err);
  ASSERT_NE(master_, nullptr) << err;
  std::mt19937_64 rng(11);
  for (int round = 0; round < 12; ++round) {
    pid_t pid = fork();
    if (pid == 0) {
      auto s = OpenWorker();
      std::mt19937_64 r(round);
      for (int i = 0;; ++i) {
        std::string key = "c" + std::to_string(r() % 4);
        switch (r() % 3) {
          case 0: {
            Status st;  // kFull may come: a fresh key does not fit
            MakeCollection(s.get(), key, 1 + r() % 3000, 0, &st);
            break;
          }
          case 1: s->Del(key); break;
          default: {
            auto t = s->Begin();
            shmkv::Value v;
            if (t->Read(key, &v) == Status::kOk) {
              t->Write("c" + std::to_string(r() % 4), v.type, v.encoding,
                       v.bytes, 0);
              t->Commit();
            }
          }
        }
      }
    }
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 200));
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    // Every key's collection is whole: all its parts are there.
    for (int k = 0; k < 4; ++k) {
      std::string key = "c" + std::to_string(k);
      shmkv::Value v;
      if (!master_->Get(key, &v)) continue;
      shmkv::PartsRoot r;
      ASSERT_GE(v.bytes.size(), sizeof(r));
      std::memcpy(&r, v.bytes.data(), sizeof(r));
      std::string part;
      for (uint64_t i = 0; i < r.parts; i += 97) {
        ASSERT_TRUE(master_->GetPart(r.id, i, &part)) << key << " " << i;
      }
      ASSERT_TRUE(master_->GetPart(r.id, r.parts - 1, &part));
    }
  }
  // Take the lock once (a dead holder's recovery recounts), sweep every
  // grave, then count the map's parts by hand: the counter agrees, and
  // every part belongs to a live key.
  ASSERT_EQ(master_->Set("x", "1", 0, SetMode::kAlways, false), Status::kOk);
  for (int i = 0; i < 200; ++i) master_->Sweep(100000);
  uint64_t owned = 0;
  for (int k = 0; k < 4; ++k) {
    shmkv::Value v;
    if (!master_->Get("c" + std::to_string(k), &v)) continue;
    shmkv::PartsRoot r;
    std::memcpy(&r, v.bytes.data(), sizeof(r));
    owned += r.parts;
  }
  EXPECT_EQ(master_->Parts(), owned);
}

// The latency percentiles INFO and /stats print come from the
// distribution-free estimator, published per worker and merged: p50 is the
// median, not the mean. Two workers record a skewed service time (90% at
// 10 us, 10% at 1000 us: mean 109 us, median 10 us, p99 1000 us).
TEST(ShmkvStats, PercentilesAreQuantilesAcrossWorkers) {
  const std::string key =
      "/shmkv_stats_test_" + std::to_string(getpid());
  shmc::POSIX().Unlink(key);
  {
    shmkv::SharedStats stats;
    std::string err;
    ASSERT_TRUE(stats.Open(key, true, &err)) << err;
    std::mt19937_64 rng(5);
    for (size_t worker = 0; worker < 2; ++worker) {
      shmkv::LocalStats local;
      for (int i = 0; i < 200000; ++i) {
        double jitter = std::uniform_real_distribution<double>(0.9, 1.1)(rng);
        local.Record(3, (rng() % 10 == 0 ? 1000 : 10) * jitter);
      }
      stats.Publish(worker, local);
    }
    shmkv::StatsTotals t = stats.Merge();
    EXPECT_EQ(t.calls[3], 400000u);
    double p50 = t.est[3 * 3 + 0].Estimate();
    double p99 = t.est[3 * 3 + 1].Estimate();
    EXPECT_NEAR(p50, 10.0, 0.3) << "the median, not the mean (109)";
    EXPECT_GT(p99, 1000 * 0.9);
    EXPECT_LT(p99, 1000 * 1.1);
  }
  shmc::POSIX().Unlink(key);
}

// The latency INFO, /stats and LATENCY HISTOGRAM report: each worker's
// sketches, merged. Two workers time a bursty stream (the log-normal
// AR(1) of tests/support/latency_streams.h) in two uneven halves; the
// merged quantiles are within 1% of the whole stream's, in order.
TEST(ShmkvLatency, WorkersSketchesMergeWithinOnePercent) {
  ScopedKey<shmc::POSIX> key("latency_test");  // removed however the test ends
  {
    shmkv::SharedLatency lat;
    std::string err;
    ASSERT_TRUE(lat.Open(key, &err)) << err;
    std::vector<uint64_t> v =
        shmc_test::LatencyStreams()[5].make(400000, 21);  // ns
    for (size_t worker = 0; worker < 2; ++worker) {
      shmkv::LocalStats local;
      lat.Clear(worker);
      size_t from = worker == 0 ? 0 : 100000, to = worker == 0 ? 100000 : 400000;
      for (size_t i = from; i < to; ++i) local.Record(7, v[i] / 1000.0);
      lat.Publish(worker, local);
      // A second publish with nothing new writes nothing, breaks nothing.
      lat.Publish(worker, local);
    }
    shmkv::LatencyTotals t = lat.Merge();
    ASSERT_NE(t[7], nullptr);
    EXPECT_EQ(t[6], nullptr);
    EXPECT_EQ(t[7]->Count(), 400000u);
    std::sort(v.begin(), v.end());
    double last = 0;
    for (double q : shmc_test::TableQuantiles()) {
      double exact = static_cast<double>(shmc_test::NearestRank(v, q));
      double got = t[7]->Quantile(q);
      EXPECT_NEAR(got / exact, 1, 0.01) << q;
      EXPECT_GE(got, last) << q;
      last = got;
    }
  }
}

// A worker killed while writing its slot leaves the sequence odd: the
// slot is left out (not waited for), the other slots still count, and a
// slot of damaged words is left out too, not misread.
TEST(ShmkvLatency, ADeadWritersSlotAndDamagedWordsAreLeftOut) {
  ScopedKey<shmc::POSIX> key("latency_dead");  // removed however the test ends
  {
    shmkv::SharedLatency lat;
    std::string err;
    ASSERT_TRUE(lat.Open(key, &err)) << err;
    shmkv::LocalStats local;
    for (int i = 0; i < 1000; ++i) local.Record(3, 10);
    lat.Clear(0);
    lat.Publish(0, local);
    pid_t pid = fork();
    if (pid == 0) {
      shmkv::SharedLatency mine;
      std::string e;
      if (!mine.Open(key, &e)) _exit(90);
      mine.Clear(1);
      mine.Publish(1, local);
      shmc::SetDefaultCreateFlags(shmc::DefaultCreateFlags() |
                                  shmc::kSharedWriters);
      shmc::ShmArray<shmkv::LatencySlot, shmc::POSIX> raw;
      if (!raw.InitForWrite(key, shmkv::kMaxWorkerSlots)) _exit(91);
      auto* slot = const_cast<shmkv::LatencySlot*>(&raw[1]);
      slot->seq.fetch_or(1);  // dies mid-publish
      // Slot 2: records over random words, its length random too.
      auto* bad = const_cast<shmkv::LatencySlot*>(&raw[2]);
      bad->pid.store(static_cast<uint64_t>(getpid()));
      std::mt19937_64 rng(3);
      bad->used.store(rng());
      for (auto& w : bad->words) w.store(rng() >> (rng() % 64));
      // Slot 3: a plausible head (command 3, a length) over random counts.
      auto* bad3 = const_cast<shmkv::LatencySlot*>(&raw[3]);
      bad3->pid.store(static_cast<uint64_t>(getpid()));
      bad3->used.store(shmkv::kLatencyWords);
      for (auto& w : bad3->words) w.store(rng() >> (rng() % 64));
      bad3->words[0].store(3);
      bad3->words[1].store(100);
      _exit(0);
    }
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    auto t0 = std::chrono::steady_clock::now();
    shmkv::LatencyTotals t = lat.Merge();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    ASSERT_NE(t[3], nullptr);
    EXPECT_EQ(t[3]->Count(), 1000u);  // slot 0's alone
    EXPECT_NEAR(t[3]->Quantile(0.5), 10000, 10000 * 0.01);
    for (const auto& one : t) {
      if (one != nullptr) {
        EXPECT_LE(one->Quantile(0.5), one->Quantile(0.99));
      }
    }
  }
}

// A hot upgrade keeps the old master, and with it the statistics segment
// it made: one of the first layout, whose table has room for
// kLegacyCommands commands. A worker of this build publishes into it:
// counts of ids below that length go on, ids past it are left out (not
// written past the slot), and a segment of an unknown layout is refused
// as such.
TEST(ShmkvStats, WorkersPublishIntoTheFirstLayoutsSegment) {
  static_assert(sizeof(shmkv::StatsSlotOf<shmkv::kLegacyCommands>) == 149168,
                "the first layout's node size, as its masters made it");
  const std::string key =
      "/shmkv_stats_legacy_" + std::to_string(getpid());
  shmc::POSIX().Unlink(key);
  {
    // The old master's segment: 64 slots of the first layout.
    shmc::ShmArray<shmkv::StatsSlotOf<shmkv::kLegacyCommands>, shmc::POSIX>
        old;
    ASSERT_TRUE(old.InitForWrite(key, shmkv::kMaxWorkerSlots));
    shmkv::SharedStats stats;
    std::string err;
    bool other = true;
    ASSERT_TRUE(stats.Open(key, false, &err, &other)) << err;
    EXPECT_FALSE(other);
    EXPECT_EQ(stats.commands(), shmkv::kLegacyCommands);
    shmkv::LocalStats local;
    local.Record(5, 10);
    local.Record(shmkv::kLegacyCommands - 1, 10);
    local.Record(shmkv::kLegacyCommands + 10, 10);  // no room in this one
    local.commands = 3;
    stats.Publish(7, local);
    shmkv::StatsTotals t = stats.Merge();
    EXPECT_EQ(t.commands, 3u);
    EXPECT_EQ(t.calls[5], 1u);
    EXPECT_EQ(t.calls[shmkv::kLegacyCommands - 1], 1u);
    EXPECT_EQ(t.calls[shmkv::kLegacyCommands + 10], 0u);
    // The words of the slot after slot 7 are untouched.
    EXPECT_EQ(old[8].seq.load(), 0u);
    EXPECT_EQ(old[8].words[0].load(), 0u);
  }
  shmc::POSIX().Unlink(key);
  {
    // A newer build's master: a table this build does not know.
    shmc::ShmArray<shmkv::StatsSlotOf<shmkv::kMaxCommands + 64>, shmc::POSIX>
        newer;
    ASSERT_TRUE(newer.InitForWrite(key, shmkv::kMaxWorkerSlots));
    shmkv::SharedStats stats;
    std::string err;
    bool other = false;
    EXPECT_FALSE(stats.Open(key, false, &err, &other));
    EXPECT_TRUE(other) << err;
    EXPECT_FALSE(stats.open());
  }
  shmc::POSIX().Unlink(key);
}

}  // namespace

// --- Parts rewritten at the same length: patch records (journal.h) ----

// A commit that rewrites parts at their length, a few bytes changed, is
// journaled as those bytes (the journal's record area holds a few dozen
// bytes, not the parts), and every reader then sees each part whole.
TEST_F(StoreFixture, SameLengthPartRewritesAreJournaledAsTheirChanges) {
  const uint64_t id = CommitPatchParts(3);
  auto t = master_->Begin();
  for (uint64_t i = 0; i < 3; ++i) {
    std::string v;
    ASSERT_EQ(t->ReadPart(id, i, &v), Status::kOk);
    v[500] = 'y';
    v[501 + i] = 'z';
    ASSERT_EQ(t->WritePart(id, i, v), Status::kOk);
  }
  ASSERT_EQ(t->Commit(), Status::kOk);
  t.reset();
  shmc::ShmArray<uint64_t, shmc::POSIX> jnl;
  ASSERT_TRUE(jnl.InitForRead(shmkv::JournalKey(cfg_)));
  using J = shmkv::Journal;
  EXPECT_LT(jnl[J::kBytes], 3 * 64u) << "three parts journaled whole";
  auto w = OpenWorker();
  for (uint64_t i = 0; i < 3; ++i) {
    std::string want = PatchPart(i, 'a'), got;
    want[500] = 'y';
    want[501 + i] = 'z';
    ASSERT_TRUE(w->GetPart(id, i, &got));
    EXPECT_EQ(got, want) << i;
  }
  // A rewrite that changes most bytes is written whole.
  t = master_->Begin();
  ASSERT_EQ(t->WritePart(id, 0, std::string(1000, 'q')), Status::kOk);
  ASSERT_EQ(t->WritePart(id, 1, std::string(1000, 'r')), Status::kOk);
  ASSERT_EQ(t->Commit(), Status::kOk);
  EXPECT_GT(jnl[J::kBytes], 2000u);
  std::string got;
  ASSERT_TRUE(w->GetPart(id, 1, &got));
  EXPECT_EQ(got, std::string(1000, 'r'));
}

// A writer that dies while its patches are applied: whoever takes the
// lock next applies the commit again from the record not counted done,
// once or twice over the same bytes, and the parts end as it meant; a
// patch that does not fit its part leaves the part as it was.
TEST_F(StoreFixture, PatchesOfADeadWriterAreAppliedAgain) {
  const uint64_t id = CommitPatchParts(2);
  using J = shmkv::Journal;
  const size_t base = shmkv::kBlobHeader + 16;  // a part's key: 16 bytes
  for (int round = 0; round < 3; ++round) {
    std::string rec;
    for (uint64_t i = 0; i < 2; ++i) {
      shmkv::KeyHash h = shmkv::HashPart(id, i);
      std::string pieces;
      // Round 2: part 1's piece runs past the part's end.
      const uint32_t head[2] = {
          static_cast<uint32_t>(base + (round == 2 && i == 1 ? 995 : 100)),
          6};
      pieces.append(reinterpret_cast<const char*>(head), sizeof(head));
      pieces.append("patch" + std::to_string(round));
      J::AppendPatch(&rec, h.a, h.b, pieces);
    }
    PlantApplyingCommit(rec, 2, round == 1 ? 1 : 0);
    ASSERT_EQ(master_->Set("b", "2", 0, SetMode::kAlways, false), Status::kOk);
    for (uint64_t i = 0; i < 2; ++i) {
      std::string got;
      ASSERT_TRUE(master_->GetPart(id, i, &got));
      std::string want = PatchPart(i, 'a');
      // Round 1 counted part 0's patch done: only part 1's is applied.
      int last = round;
      if (round == 1 && i == 0) last = 0;
      if (round == 2 && i == 1) last = 1;  // did not fit: round 1's
      want.replace(100, 6, "patch" + std::to_string(last));
      EXPECT_EQ(got, want) << "round " << round << " part " << i;
    }
  }
  EXPECT_EQ(master_->journal_stats().recovered, 3u);
}

// Patch records of random pieces (offsets, lengths and bytes drawn, the
// checksum right, so the record parses): a record is written whole when
// its pieces follow each other within the part's blob, else not at all,
// and never past the part; the store goes on either way.
TEST_F(StoreFixture, RandomPatchPiecesNeverWritePastTheirPart) {
  const uint64_t id = CommitPatchParts(2);
  using J = shmkv::Journal;
  // The part's value starts after the blob's head and its 16-byte key.
  const uint64_t base = shmkv::kBlobHeader + 16, blob = base + 1000;
  std::string want = PatchPart(0, 'a');
  std::mt19937_64 rng(11);
  int applied = 0, refused = 0;
  for (int round = 0; round < 60; ++round) {
    // The record, drawn here; the child only writes it.
    std::string pieces;
    uint64_t end = 0;
    for (int k = 0, n = static_cast<int>(rng() % 4) + 1; k < n; ++k) {
      uint32_t head[2] = {static_cast<uint32_t>(end + rng() % 400),
                          static_cast<uint32_t>(rng() % 200)};
      if (end == 0) head[0] += base;
      if (rng() % 8 == 0) head[0] = static_cast<uint32_t>(base + rng() % 1200);
      if (rng() % 12 == 0) head[1] = static_cast<uint32_t>(rng());
      size_t bytes = std::min<size_t>(head[1], 200);
      if (bytes > 0 && rng() % 7 == 0) --bytes;
      pieces.append(reinterpret_cast<const char*>(head), sizeof(head));
      pieces.append(bytes, static_cast<char>('b' + rng() % 20));
      end = uint64_t{head[0]} + head[1];
    }
    // What the record must do, read by journal.h's words: pieces that
    // parse, each after the one before, the last ending within the blob.
    std::string next = want;
    bool fits = true;
    end = 0;
    for (size_t at = 0; fits && at < pieces.size();) {
      uint32_t head[2];
      fits = pieces.size() - at >= sizeof(head);
      if (!fits) break;
      std::memcpy(head, pieces.data() + at, sizeof(head));
      at += sizeof(head);
      fits = head[1] > 0 && head[1] <= pieces.size() - at && head[0] >= end;
      if (!fits) break;
      end = uint64_t{head[0]} + head[1];
      fits = head[0] >= base && end <= blob;  // (the draw keeps off the head)
      if (fits) next.replace(head[0] - base, head[1], pieces, at, head[1]);
      at += head[1];
    }
    shmkv::KeyHash h = shmkv::HashPart(id, 0);
    std::string rec;
    J::AppendPatch(&rec, h.a, h.b, pieces);
    PlantApplyingCommit(rec, 1, 0);
    ASSERT_EQ(master_->Set("b", "2", 0, SetMode::kAlways, false), Status::kOk);
    if (fits) {
      want = next;
      ++applied;
    } else {
      ++refused;
    }
    std::string got;
    ASSERT_TRUE(master_->GetPart(id, 0, &got));
    EXPECT_EQ(got, want) << "round " << round << (fits ? ": applied" : ": refused");
    ASSERT_TRUE(master_->GetPart(id, 1, &got));
    EXPECT_EQ(got, PatchPart(1, 'a')) << "a neighbour was written";
  }
  // The draw gives both kinds.
  EXPECT_GT(applied, 5);
  EXPECT_GT(refused, 5);
  EXPECT_EQ(master_->journal_stats().recovered, 60u);
}

// Diff's pieces, handed on by ApplyPieces, turn the value before into the
// value after; it declines when nothing changed or the pieces would pass
// half the value.
TEST(JournalPieces, DiffThenApplyGivesTheValueAfter) {
  using J = shmkv::Journal;
  std::mt19937_64 rng(5);
  int patched = 0, whole = 0;
  for (int round = 0; round < 2000; ++round) {
    const size_t n = 1 + rng() % 700, base = rng() % 40;
    std::string before(n, 'a');
    for (char& c : before) c = static_cast<char>('a' + rng() % 3);
    std::string after = before;
    const int changes = static_cast<int>(rng() % 6);
    for (int k = 0; k < changes; ++k) {
      const size_t at = rng() % n, len = 1 + rng() % (1 + rng() % 60);
      for (size_t j = at; j < std::min(n, at + len); ++j) after[j] = 'z';
    }
    std::string pieces;
    if (!J::Diff(before, after, base, &pieces)) {
      ++whole;
      size_t differ = 0;
      for (size_t j = 0; j < n; ++j) differ += before[j] != after[j];
      // Declined: nothing changed, or enough did: a piece of d changed
      // bytes costs at most 8 + 16d (its head, gaps under 16), so pieces
      // past half the value mean 24 * differ > n / 2.
      EXPECT_TRUE(differ == 0 || 24 * differ > n / 2)
          << "round " << round << ": " << differ << " of " << n;
      continue;
    }
    ++patched;
    EXPECT_LE(pieces.size(), n / 2);
    std::string blob = std::string(base, 'h') + before;
    ASSERT_TRUE(J::ApplyPieces(
        pieces, [&](uint32_t offset, std::string_view bytes) {
          if (offset < base || offset + bytes.size() > blob.size()) {
            return false;
          }
          blob.replace(offset, bytes.size(), bytes);
          return true;
        }))
        << "round " << round;
    EXPECT_EQ(blob, std::string(base, 'h') + after) << "round " << round;
  }
  EXPECT_GT(patched, 500);
  EXPECT_GT(whole, 100);
  // Lengths that differ are never a patch.
  std::string pieces;
  EXPECT_FALSE(J::Diff("abc", "abcd", 0, &pieces));
}
