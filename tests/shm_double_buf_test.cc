// ShmDoubleBuf: whole versions only, across processes; pins that block the
// writer only while their reader lives; slots, lease and bad input.
#include "shmc/shm_double_buf.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

#include "tests/support/test_util.h"

namespace {

using shmc_test::ScopedKey;

// A version's blob: every byte is the version's low byte, and its length
// depends on the version, so a mix of two versions cannot pass.
std::string Blob(uint64_t v) {
  return std::string(64 + (v * 37) % 3000, static_cast<char>(v & 0xff));
}

bool Whole(const void* data, size_t n, uint64_t v) {
  if (n != Blob(v).size()) return false;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<unsigned char>(v & 0xff)) return false;
  }
  return true;
}

template <class Alloc>
class ShmDoubleBufTest : public ::testing::Test {};
using Allocs = ::testing::Types<shmc::SVIPC, shmc::POSIX, shmc::MAPFILE>;
TYPED_TEST_SUITE(ShmDoubleBufTest, Allocs, shmc_test::AllocNames);

TYPED_TEST(ShmDoubleBufTest, PublishAndRead) {
  ScopedKey<TypeParam> key;
  shmc::ShmDoubleBuf<TypeParam> w, r;
  ASSERT_TRUE(w.InitForWrite(key, 4096)) << w.last_error().message;
  ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
  std::string out;
  EXPECT_FALSE(r.Read(&out)) << "nothing published yet";
  EXPECT_EQ(r.version(), 0u);
  ASSERT_TRUE(w.Publish("first"));
  uint64_t v = 0;
  ASSERT_TRUE(r.Read(&out, &v));
  EXPECT_EQ(out, "first");
  EXPECT_EQ(v, 1u);
  // Zero-copy, committing fewer bytes than prepared.
  char* buf = static_cast<char*>(w.BeginWrite(100));
  ASSERT_NE(buf, nullptr);
  std::memcpy(buf, "second!", 7);
  ASSERT_TRUE(w.Commit(6));
  {
    auto g = r.ReadInPlace();
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(std::string(static_cast<const char*>(g.data()), g.size()),
              "second");
    EXPECT_EQ(g.version(), 2u);
  }
  ASSERT_TRUE(w.Publish(std::string()));
  ASSERT_TRUE(r.Read(&out));
  EXPECT_TRUE(out.empty()) << "an empty blob is a version too";
  EXPECT_EQ(w.BeginWrite(4097), nullptr);
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.BeginWrite(1), nullptr) << "a reader cannot write";
}

// A writer process publishes versions as fast as it can while two reader
// processes read 1M times in all, in place and by copy: no mixed read.
TEST(ShmDoubleBuf, ReadersNeverSeeAMix) {
  ScopedKey<shmc::POSIX> key;
  auto* done = static_cast<std::atomic<int>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0));
  ASSERT_NE(done, MAP_FAILED);
  done->store(0);
  {
    shmc::ShmDoubleBuf<shmc::POSIX> init;
    ASSERT_TRUE(init.InitForWrite(key, 4096));
    ASSERT_TRUE(init.Publish(Blob(1)));
  }
  pid_t writer = fork();
  if (writer == 0) {
    shmc::ShmDoubleBuf<shmc::POSIX> w;
    if (!w.InitForWrite(key, 4096)) _exit(1);
    for (uint64_t v = w.version() + 1; done->load() < 2; ++v) {
      if (!w.Publish(Blob(v))) _exit(2);
      if (v % 64 == 0) sched_yield();  // let readers run on a busy host
    }
    _exit(0);
  }
  int bad_total = 0;
  pid_t readers[2];
  for (int i = 0; i < 2; ++i) {
    readers[i] = fork();
    if (readers[i] == 0) {
      shmc::ShmDoubleBuf<shmc::POSIX> r;
      if (!r.InitForRead(key)) _exit(3);
      int bad = 0;
      std::string copy;
      for (int n = 0; n < 500000; ++n) {
        if (n % 2 == 0) {
          auto g = r.ReadInPlace();
          if (!g.ok() || !Whole(g.data(), g.size(), g.version())) ++bad;
        } else {
          uint64_t v = 0;
          if (!r.Read(&copy, &v) || !Whole(copy.data(), copy.size(), v)) {
            ++bad;
          }
        }
      }
      done->fetch_add(1);
      _exit(bad == 0 ? 0 : 4);
    }
  }
  for (pid_t p : readers) {
    int st = 0;
    waitpid(p, &st, 0);
    bad_total += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  int st = 0;
  waitpid(writer, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "writer status " << st;
  EXPECT_EQ(bad_total, 0) << "a reader saw a mixed or failed read";
  shmc::ShmDoubleBuf<shmc::POSIX> look;
  ASSERT_TRUE(look.InitForRead(key));
  EXPECT_GT(look.version(), 2u) << "the writer published while they read";
  munmap(done, 4096);
}

TEST(ShmDoubleBuf, DeadPinnerDoesNotBlockLivePinnerTimesOut) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmDoubleBuf<shmc::POSIX> w;
  ASSERT_TRUE(w.InitForWrite(key, 1024, 4));
  w.set_publish_wait_ms(200);
  ASSERT_TRUE(w.Publish("v1"));
  // A reader pins version 1 and is killed while pinning.
  pid_t child = fork();
  if (child == 0) {
    shmc::ShmDoubleBuf<shmc::POSIX> r;
    if (!r.InitForRead(key)) _exit(1);
    auto g = r.ReadInPlace();
    raise(SIGKILL);
  }
  int st = 0;
  waitpid(child, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  ASSERT_TRUE(w.Publish("v2"));
  EXPECT_TRUE(w.Publish("v3")) << "v1's half: its pinner is dead";
  // A live reader pinning the spare half past the bound: kTimeout.
  shmc::ShmDoubleBuf<shmc::POSIX> r;
  ASSERT_TRUE(r.InitForRead(key));
  auto g = r.ReadInPlace();
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(std::string(static_cast<const char*>(g.data()), g.size()), "v3");
  ASSERT_TRUE(w.Publish("v4")) << "the other half is free";
  EXPECT_FALSE(w.Publish("v5")) << "v3's half is pinned";
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kTimeout);
  EXPECT_EQ(std::string(static_cast<const char*>(g.data()), g.size()), "v3")
      << "the pinned version was not touched";
  g.Release();
  EXPECT_TRUE(w.Publish("v5"));
}

TEST(ShmDoubleBuf, SlotsLeaseAndBadInput) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmDoubleBuf<shmc::POSIX> w;
  EXPECT_FALSE(w.InitForWrite(key, 0));
  EXPECT_EQ(w.last_error().code, shmc::ErrorCode::kInvalidArgument);
  ASSERT_TRUE(w.InitForWrite(key, 1024, 2));
  shmc::ShmDoubleBuf<shmc::POSIX> r1, r2, r3;
  ASSERT_TRUE(r1.InitForRead(key));
  ASSERT_TRUE(r2.InitForRead(key));
  EXPECT_FALSE(r3.InitForRead(key));
  EXPECT_EQ(r3.last_error().code, shmc::ErrorCode::kNoSlot);
  int rc = shmc_test::RunInChild([&] {
    shmc::ShmDoubleBuf<shmc::POSIX> w2;
    if (w2.InitForWrite(key, 1024, 2)) return 1;
    return w2.last_error().code == shmc::ErrorCode::kWriterBusy ? 0 : 2;
  });
  EXPECT_EQ(rc, 0) << "a second live writer is refused";
}

}  // namespace
