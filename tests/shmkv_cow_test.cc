// The log of a background save (server/store/cow.h): writers log each
// blob once, the first record of a blob wins, and a log whose bytes were
// changed (lengths past its end, a head that is not one, a file shorter
// than its committed length) reads as damaged, never past its end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "server/store/cow.h"
#include "server/store/journal.h"
#include "server/store/store.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_util.h"

namespace {

using shmkv::CowLog;
using shmkv::CowReader;
using shmkv::Journal;
using shmkv::KeyHash;
using Found = CowReader::Found;
using shmkv_test::ReadAll;
using shmkv_test::TempDir;
using shmkv_test::WriteAll;

class CowFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(j_.Open(key_, 1 << 16, true, &err)) << err;
    log_path_ = shmkv::SnapshotLogPath(dir_.path, getpid());
    ASSERT_TRUE(WriteAll(log_path_, ""));
    j_.SetWord(Journal::kSnapshotLog, 0);
    j_.SetWord(Journal::kSnapshot,
               shmkv::SnapshotWord(shmkv::NowMs() / 1000, getpid()));
  }
  void TearDown() override { j_.SetWord(Journal::kSnapshot, 0); }

  shmc_test::ScopedKey<shmc::POSIX> key_{"cowjnl"};
  TempDir dir_;
  Journal j_;
  std::string log_path_;
};

TEST_F(CowFixture, EachBlobOnceAndTheFirstRecordWins) {
  CowLog a, b;  // two writing processes
  a.Init(&j_, dir_.path);
  b.Init(&j_, dir_.path);
  const KeyHash h1{1, 2}, h2{3, 4}, h3{5, 6};
  const std::string old1 = "the blob at the instant", new1 = "changed";
  ASSERT_TRUE(a.Wanted(h1));
  a.Record(h1, &old1);
  EXPECT_FALSE(a.Wanted(h1)) << "one record per blob and process";
  ASSERT_TRUE(a.Wanted(h2));
  a.Record(h2, nullptr);  // it did not exist
  ASSERT_TRUE(b.Wanted(h1));
  b.Record(h1, &new1);    // the other process, after the first change
  const uint64_t w = j_.Counter(Journal::kSnapshotLog);
  EXPECT_EQ(w & shmkv::kLogFailed, 0u);
  EXPECT_EQ(w & shmkv::kLogLength, ReadAll(log_path_).size());

  CowReader r;
  std::string err, blob;
  ASSERT_TRUE(r.Open(log_path_, &j_, &err)) << err;
  r.Refresh();
  EXPECT_FALSE(r.damaged());
  ASSERT_EQ(r.Find(h1, &blob), Found::kBlob);
  EXPECT_EQ(blob, old1);
  EXPECT_EQ(r.Find(h2, &blob), Found::kAbsent);
  EXPECT_EQ(r.Find(h3, &blob), Found::kNone);
  size_t seen = 0;
  r.Each([&](const KeyHash& h, const std::string& b2) {
    ++seen;
    EXPECT_TRUE(h == h1);
    EXPECT_EQ(b2, old1);
  });
  EXPECT_EQ(seen, 1u);
  // Records written later are taken in by the next Refresh.
  ASSERT_TRUE(a.Wanted(h3));
  a.Record(h3, &new1);
  r.Refresh();
  ASSERT_EQ(r.Find(h3, &blob), Found::kBlob);
  EXPECT_EQ(blob, new1);
  // Past the save (the word cleared) nothing is logged.
  j_.SetWord(Journal::kSnapshot, 0);
  EXPECT_FALSE(a.Wanted(KeyHash{7, 8}));
}

TEST_F(CowFixture, ALogThatCannotBeWrittenFailsTheSave) {
  CowLog a;
  a.Init(&j_, dir_.path + "/nosuchdir");
  const std::string old = "x";
  ASSERT_TRUE(a.Wanted(KeyHash{1, 1}));
  a.Record(KeyHash{1, 1}, &old);
  EXPECT_NE(j_.Counter(Journal::kSnapshotLog) & shmkv::kLogFailed, 0u);
}

TEST_F(CowFixture, DamagedLogsReadAsDamagedNeverPastTheirEnd) {
  CowLog a;
  a.Init(&j_, dir_.path);
  for (uint64_t i = 0; i < 40; ++i) {
    const std::string old(i * 7 % 50, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(a.Wanted(KeyHash{i, i + 1}));
    a.Record(KeyHash{i, i + 1}, i % 5 == 0 ? nullptr : &old);
  }
  const std::string good = ReadAll(log_path_);
  const uint64_t length = j_.Counter(Journal::kSnapshotLog) &
                          shmkv::kLogLength;
  ASSERT_EQ(good.size(), length);
  auto read = [&](const std::string& bytes, uint64_t len) {
    EXPECT_TRUE(WriteAll(log_path_, bytes));
    j_.SetWord(Journal::kSnapshotLog, len);
    CowReader r;
    std::string err, blob;
    EXPECT_TRUE(r.Open(log_path_, &j_, &err)) << err;
    r.Refresh();
    for (uint64_t i = 0; i < 40; ++i) r.Find(KeyHash{i, i + 1}, &blob);
    r.Each([](const KeyHash&, const std::string&) {});
    return r.damaged();
  };
  EXPECT_FALSE(read(good, length));
  // A length past its end, a head's zero word set, a file cut short.
  std::string bad = good;
  bad[16] = '\x7f';  // the first record's length: 0x..7f
  bad[19] = '\x7f';
  EXPECT_TRUE(read(bad, length));
  bad = good;
  bad[20] = 1;
  EXPECT_TRUE(read(bad, length));
  EXPECT_TRUE(read(good.substr(0, good.size() / 2), length));
  EXPECT_TRUE(read(good, length - 8)) << "the length cuts a record";
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    bad = good;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    read(bad, round % 3 == 0 ? rng() % (length + 64) : length);  // ASan
  }
}

}  // namespace
