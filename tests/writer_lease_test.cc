// The writer lease of every container with a writer: a second live writer
// process is refused (kWriterBusy, naming the holder's pid), kSharedWriters
// opts out, readers need no lease, a dead holder's lease is taken over, the
// same process may init again, and a forked child writes through the
// handle it inherited (as in the reference).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "shmc/process_lease.h"
#include "shmc/shm_array.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "shmc/shm_link_table.h"
#include "tests/support/test_util.h"

namespace {

using shmc_test::ScopedKey;

struct KV {
  uint64_t key, value;
  std::pair<bool, uint64_t> Key() const volatile { return {key != 0, key}; }
};

// Per container: open as writer and as reader, and one write through a
// handle (true when it took).
struct Array {
  using C = shmc::ShmArray<uint64_t, shmc::POSIX>;
  static bool Write(C* c, const std::string& k) { return c->InitForWrite(k, 64); }
  static bool Read(C* c, const std::string& k) { return c->InitForRead(k); }
  static bool Touch(C* c) {
    (*c)[1] = 42;
    return (*c)[1] == 42u;
  }
};
// Both hash tables: read by key, written by claiming a node.
template <class Table>
struct HashTableOps {
  using C = Table;
  static bool Read(C* c, const std::string& k) { return c->InitForRead(k); }
  static bool Touch(C* c) {
    bool found = false;
    volatile KV* n = c->FindOrAlloc(7, &found);
    if (n == nullptr) return false;
    n->key = 7;
    return true;
  }
};
struct Table : HashTableOps<shmc::ShmHashTable<uint64_t, KV, shmc::POSIX>> {
  static bool Write(C* c, const std::string& k) {
    return c->InitForWrite(k, 1000);
  }
};
struct TableM : HashTableOps<shmc::ShmHashTableM<uint64_t, KV, shmc::POSIX>> {
  static bool Write(C* c, const std::string& k) {
    return c->InitForWrite(k, 1000, 20);
  }
};
struct Links {
  using C = shmc::ShmLinkTable<shmc::POSIX>;
  static bool Write(C* c, const std::string& k) {
    return c->InitForWrite(k, 32, 100);
  }
  static bool Read(C* c, const std::string& k) { return c->InitForRead(k); }
  static bool Touch(C* c) { return static_cast<bool>(c->New("kid", 3)); }
};

template <class T>
class WriterLease : public ::testing::Test {};
using Kinds = ::testing::Types<Array, Table, TableM, Links>;
TYPED_TEST_SUITE(WriterLease, Kinds, );

TYPED_TEST(WriterLease, SecondLiveWriterIsRefusedDeadOneTakenOver) {
  using C = typename TypeParam::C;
  ScopedKey<shmc::POSIX> key;
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  fflush(nullptr);
  pid_t writer = fork();
  if (writer == 0) {
    C c;
    char ch = TypeParam::Write(&c, key) ? 'y' : 'n';
    (void)!write(ready[1], &ch, 1);
    (void)!read(go[0], &ch, 1);  // hold the lease until told
    _exit(0);
  }
  char ch = 0;
  ASSERT_EQ(read(ready[0], &ch, 1), 1);
  ASSERT_EQ(ch, 'y');
  {
    C second;
    EXPECT_FALSE(TypeParam::Write(&second, key));
    EXPECT_EQ(second.last_error().code, shmc::ErrorCode::kWriterBusy);
    EXPECT_NE(second.last_error().message.find(std::to_string(writer)),
              std::string::npos)
        << second.last_error().message;
    C shared;
    {
      shmc_test::ScopedCreateFlags flags(shmc::kCreateIfNotExist |
                                         shmc::kSharedWriters);
      EXPECT_TRUE(TypeParam::Write(&shared, key))
          << "kSharedWriters opts out of the lease";
    }
    C reader;
    EXPECT_TRUE(TypeParam::Read(&reader, key)) << "readers need no lease";
  }
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  C w;
  ASSERT_TRUE(TypeParam::Write(&w, key)) << w.last_error().message;
  C again;
  EXPECT_TRUE(TypeParam::Write(&again, key)) << "same process, second object";
  EXPECT_EQ(shmc_test::RunInChild([&] { return TypeParam::Touch(&w) ? 0 : 1; }),
            0)
      << "a forked child writes through the inherited handle";
}

// The public lease: in a struct of the user's own in a shared array, one
// live holder at a time; a holder killed without releasing is taken over.
struct Roles {
  shmc::ProcessLease master;
};

TEST(ProcessLease, OneLiveHolderAndTakeoverAfterKill) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmArray<Roles, shmc::POSIX> arr;
  ASSERT_TRUE(arr.InitForWrite(key, 1)) << arr.last_error().message;
  shmc::ProcessLease& lease = const_cast<Roles&>(arr[0]).master;
  EXPECT_EQ(lease.Holder(), 0u) << "zero bytes are a free lease";
  uint64_t holder = 0;
  ASSERT_EQ(lease.Acquire(&holder), shmc::ProcessLease::Result::kAcquired);
  EXPECT_EQ(lease.Holder(), static_cast<uint64_t>(getpid()));
  EXPECT_EQ(lease.Acquire(), shmc::ProcessLease::Result::kReentered);
  // Another process finds it busy and names the holder.
  EXPECT_EQ(shmc_test::RunInChild([&] {
              uint64_t h = 0;
              bool busy = lease.Acquire(&h) == shmc::ProcessLease::Result::kBusy;
              return busy && h == static_cast<uint64_t>(getppid()) ? 0 : 1;
            }),
            0);
  lease.Release();
  EXPECT_EQ(lease.Holder(), 0u);
  // A holder killed while holding it: the next one takes it over.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    bool ok = lease.Acquire() == shmc::ProcessLease::Result::kAcquired;
    (void)!write(ready[1], ok ? "1" : "0", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  EXPECT_EQ(lease.Holder(), static_cast<uint64_t>(child));
  EXPECT_EQ(lease.Acquire(&holder), shmc::ProcessLease::Result::kBusy);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(lease.Holder(), 0u) << "a dead holder holds nothing";
  uint64_t epoch = lease.epoch();
  EXPECT_EQ(lease.Acquire(&holder), shmc::ProcessLease::Result::kTakenOver);
  EXPECT_EQ(holder, static_cast<uint64_t>(child));
  EXPECT_EQ(lease.epoch(), epoch + 1);
  lease.Release();
}

}  // namespace
