// last_error() describes the last call: after every successful InitFor*
// path of every container (creating, attaching, attaching beside another
// handle, reading, and replacing a segment its creator abandoned) it says
// kOk, and a condition the call got past leaves no error-level log line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shmc/detail/segment_header.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "shmc/shm_double_buf.h"
#include "shmc/shm_hash_map.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_hash_table_m.h"
#include "shmc/shm_link_table.h"
#include "shmc/shm_queue.h"
#include "shmc/shm_sorted_array.h"
#include "shmc/shm_sync_buf.h"
#include "tests/support/test_util.h"

namespace {

using shmc::Error;
using shmc::ErrorCode;
using shmc_test::ScopedKey;

struct Node {
  uint64_t key;
  uint64_t value;
  bool IsEmpty() const { return key == 0; }
  void Clear() { key = 0; }
  uint64_t Key() const { return key; }
};

// One InitFor* call on a fresh object: whether it succeeded, and the
// object's last_error() afterwards. The object lives until `keep` is
// cleared, so that a second handle can attach beside it.
using Attempt = std::function<std::pair<bool, Error>()>;

template <class C, class Init>
Attempt Make(std::vector<std::shared_ptr<void>>* keep, Init init) {
  return [keep, init]() {
    auto c = std::make_shared<C>();
    bool ok = init(c.get());
    keep->push_back(c);
    return std::make_pair(ok, c->last_error());
  };
}

// Marks the segment at `key` as still being built by a creator that has
// since died, as a crash in the middle of creating it leaves it.
void Abandon(const std::string& key) {
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  shmc::POSIX alloc;
  size_t size = 0;
  void* p = alloc.Attach(key, 0, 0, &size);
  ASSERT_NE(p, nullptr) << key;
  auto* h = static_cast<shmc::detail::SegmentHeader*>(p);
  h->state.store(shmc::detail::kStateInitializing, std::memory_order_relaxed);
  h->creator_pid = static_cast<uint64_t>(dead);
  alloc.Detach(p, size);
}

void ExpectClear(const std::pair<bool, Error>& r, const char* what) {
  ASSERT_TRUE(r.first) << what << ": " << r.second.message;
  EXPECT_EQ(r.second.code, ErrorCode::kOk) << what << ": " << r.second.message;
  EXPECT_TRUE(r.second.message.empty()) << what << ": " << r.second.message;
}

// Every path, for one container: `segments` are the keys of its segments.
void CheckEveryPath(const Attempt& write, const Attempt& read,
                    const std::vector<std::string>& segments,
                    std::vector<std::shared_ptr<void>>* keep) {
  ExpectClear(write(), "create");
  ExpectClear(write(), "attach beside a live handle");
  ExpectClear(read(), "read");
  keep->clear();
  ExpectClear(write(), "attach again");
  keep->clear();
  for (const std::string& seg : segments) {
    Abandon(seg);
    shmc_test::LogCapture log;
    ExpectClear(write(), ("replace abandoned " + seg).c_str());
    EXPECT_TRUE(log.Contains(shmc::kWarning, "abandoned")) << seg;
    EXPECT_FALSE(log.Contains(shmc::kError, "")) << seg;
    keep->clear();
  }
  ExpectClear(read(), "read after replacing");
  keep->clear();
}

TEST(LastError, ShmArray) {
  ScopedKey<shmc::POSIX> key;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmArray<Node, shmc::POSIX>;
  CheckEveryPath(Make<C>(&keep, [&](C* c) { return c->InitForWrite(key, 100); }),
                 Make<C>(&keep, [&](C* c) { return c->InitForRead(key); }),
                 {key}, &keep);
}

TEST(LastError, ShmHashTable) {
  ScopedKey<shmc::POSIX> key;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmHashTable<uint64_t, Node, shmc::POSIX>;
  CheckEveryPath(Make<C>(&keep, [&](C* c) { return c->InitForWrite(key, 1000); }),
                 Make<C>(&keep, [&](C* c) { return c->InitForRead(key); }),
                 {key}, &keep);
}

TEST(LastError, ShmHashTableM) {
  ScopedKey<shmc::POSIX> key;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmHashTableM<uint64_t, Node, shmc::POSIX>;
  CheckEveryPath(
      Make<C>(&keep, [&](C* c) { return c->InitForWrite(key, 1000, 20); }),
      Make<C>(&keep, [&](C* c) { return c->InitForRead(key); }), {key}, &keep);
}

TEST(LastError, ShmLinkTable) {
  ScopedKey<shmc::POSIX> key;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmLinkTable<shmc::POSIX>;
  CheckEveryPath(
      Make<C>(&keep, [&](C* c) { return c->InitForWrite(key, 64, 1000); }),
      Make<C>(&keep, [&](C* c) { return c->InitForRead(key); }), {key}, &keep);
}

TEST(LastError, ShmHashMap) {
  shmc_test::MapKeys<shmc::POSIX> keys;
  const std::string base = keys.base;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmHashMap<uint64_t, shmc::POSIX>;
  CheckEveryPath(
      Make<C>(&keep, [&](C* c) { return c->InitForWrite(base, 1000, 64, 1000); }),
      Make<C>(&keep, [&](C* c) { return c->InitForRead(base); }),
      {base + "0", base + "1"}, &keep);
}

TEST(LastError, ShmQueue) {
  ScopedKey<shmc::POSIX> key;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmQueue<shmc::POSIX>;
  CheckEveryPath(
      Make<C>(&keep, [&](C* c) { return c->InitForWrite(key, 1 << 16); }),
      Make<C>(&keep, [&](C* c) { return c->InitForRead(key); }), {key}, &keep);
}

TEST(LastError, ShmSyncBuf) {
  ScopedKey<shmc::POSIX> key;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmSyncBuf<shmc::POSIX>;
  CheckEveryPath(
      Make<C>(&keep, [&](C* c) { return c->InitForWrite(key, 1 << 16); }),
      Make<C>(&keep, [&](C* c) { return c->InitForRead(key); }), {key}, &keep);
}

TEST(LastError, ShmDoubleBuf) {
  ScopedKey<shmc::POSIX> key;
  std::vector<std::shared_ptr<void>> keep;
  using C = shmc::ShmDoubleBuf<shmc::POSIX>;
  CheckEveryPath(
      Make<C>(&keep, [&](C* c) { return c->InitForWrite(key, 4096); }),
      Make<C>(&keep, [&](C* c) { return c->InitForRead(key); }), {key}, &keep);
}

// A sorted array is built whole, not attached for writing: a build and
// the reads around it leave last_error() clear.
TEST(LastError, ShmSortedArray) {
  ScopedKey<shmc::POSIX> key;
  // Builds write data segments beside the directory: removed at the end.
  struct DataSlots {
    std::string dir;
    ~DataSlots() {
      for (uint64_t slot : {0, 1}) {
        shmc::POSIX().Unlink(shmc::detail::SortedDataKey(dir, slot));
      }
    }
  } slots{key};
  using C = shmc::ShmSortedArray<uint64_t, uint64_t, shmc::POSIX>;
  C builder;
  ASSERT_TRUE(builder.Build(key, {{1, 10}, {2, 20}})) << builder.last_error().message;
  EXPECT_EQ(builder.last_error().code, ErrorCode::kOk);
  C reader;
  EXPECT_FALSE(reader.InitForRead(key.str() + "_missing"));
  EXPECT_NE(reader.last_error().code, ErrorCode::kOk);
  ASSERT_TRUE(reader.InitForRead(key)) << reader.last_error().message;
  EXPECT_EQ(reader.last_error().code, ErrorCode::kOk)
      << "a failed call before does not linger";
  ASSERT_TRUE(builder.Build(key, {{3, 30}})) << builder.last_error().message;
  bool changed = false;
  ASSERT_TRUE(reader.Refresh(&changed));
  EXPECT_TRUE(changed);
  EXPECT_EQ(reader.last_error().code, ErrorCode::kOk);
}

}  // namespace
