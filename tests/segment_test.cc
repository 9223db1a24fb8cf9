// The common segment format: golden layout, the ready protocol, and every
// kind of bad segment giving its own error (never a crash).
#include "shmc/detail/segment.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "shmc/shm_array.h"
#include "tests/support/test_util.h"

namespace {

using shmc::ErrorCode;
using shmc::detail::SegmentHeader;
using shmc_test::ScopedKey;

struct FieldPos {
  const char* name;
  size_t offset;
  size_t size;
};

// Golden layouts of the common header, one per format version. Moving a field
// breaks every segment already on a machine: such a change must bump
// kFormatVersion and add its table here.
const std::map<uint32_t, std::vector<FieldPos>>& GoldenHeaders() {
  static const std::map<uint32_t, std::vector<FieldPos>> golden = {
      {1,
       {{"magic", 0, 8},           {"format_version", 8, 4},
        {"kind", 12, 4},           {"kind_name", 16, 16},
        {"layout_version", 32, 4}, {"header_size", 36, 4},
        {"total_size", 40, 8},     {"fingerprint", 48, 8},
        {"creator_pid", 56, 8},    {"create_time_ns", 64, 8},
        {"param_count", 72, 4},    {"header_checksum", 80, 8},
        {"state", 128, 4},         {"lease_pid", 136, 8},
        {"lease_start", 144, 8},   {"lease_epoch", 152, 8},
        {"params", 256, 192},      {"sizeof", 512, 0}}},
  };
  return golden;
}

#define SHMC_FIELD(f) \
  {#f, offsetof(SegmentHeader, f), sizeof(static_cast<SegmentHeader*>(nullptr)->f)}

TEST(SegmentLayout, MatchesGoldenTableOfItsVersion) {
  auto it = GoldenHeaders().find(shmc::detail::kFormatVersion);
  ASSERT_NE(it, GoldenHeaders().end())
      << "kFormatVersion " << shmc::detail::kFormatVersion
      << " has no golden layout: add its table";
  std::vector<FieldPos> actual = {
      SHMC_FIELD(magic),          SHMC_FIELD(format_version),
      SHMC_FIELD(kind),           SHMC_FIELD(kind_name),
      SHMC_FIELD(layout_version), SHMC_FIELD(header_size),
      SHMC_FIELD(total_size),     SHMC_FIELD(fingerprint),
      SHMC_FIELD(creator_pid),    SHMC_FIELD(create_time_ns),
      SHMC_FIELD(param_count),    SHMC_FIELD(header_checksum),
      SHMC_FIELD(state),          SHMC_FIELD(lease_pid),
      SHMC_FIELD(lease_start),    SHMC_FIELD(lease_epoch),
      SHMC_FIELD(params),         {"sizeof", sizeof(SegmentHeader), 0}};
  ASSERT_EQ(actual.size(), it->second.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_STREQ(actual[i].name, it->second[i].name);
    EXPECT_EQ(actual[i].offset, it->second[i].offset)
        << actual[i].name << " moved: bump kFormatVersion";
    EXPECT_EQ(actual[i].size, it->second[i].size)
        << actual[i].name << " resized: bump kFormatVersion";
  }
}

TEST(SegmentLayout, FingerprintAndHashAreFixed) {
  // Golden vectors: a change here means segments made by earlier builds are
  // refused; bump the format version if that is intended.
  EXPECT_EQ(shmc::detail::Fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(shmc::detail::Fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);  // published
  EXPECT_EQ(shmc::detail::Fnv1a64("shmc", 4), 0x46e35b18e2943d9eULL);
  shmc::detail::SegmentSpec spec;
  spec.kind = shmc::detail::ContainerKind::kArray;
  spec.params = {{"node_size", 8, shmc::detail::ParamRole::kLayout},
                 {"node_num", 5, shmc::detail::ParamRole::kGeometry}};
  uint64_t fp = shmc::detail::SpecFingerprint(spec);
  spec.params[1].value = 99;  // geometry is not part of the fingerprint
  EXPECT_EQ(shmc::detail::SpecFingerprint(spec), fp);
  spec.params[0].value = 16;
  EXPECT_NE(shmc::detail::SpecFingerprint(spec), fp);
}

struct Node {
  uint64_t id;
  uint64_t val;
};
using Array = shmc::ShmArray<Node, shmc::POSIX>;

// Fixture: a valid POSIX array segment plus raw read-write access to it.
class BadSegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Array a;
    ASSERT_TRUE(a.InitForWrite(key_, 1000)) << a.last_error().message;
  }
  // Maps the whole segment read-write, bypassing shmc's checks.
  char* Raw(size_t* size) {
    shmc::POSIX alloc;
    void* p = alloc.Attach(key_, 0, 0, size);
    raw_.push_back({p, *size});
    return static_cast<char*>(p);
  }
  SegmentHeader* RawHeader() {
    size_t n = 0;
    return reinterpret_cast<SegmentHeader*>(Raw(&n));
  }
  void Reseal(SegmentHeader* h) {
    h->header_checksum = shmc::detail::HeaderChecksum(h);
  }
  ErrorCode ReadError() {
    Array r;
    EXPECT_FALSE(r.InitForRead(key_));
    last_message_ = r.last_error().message;
    return r.last_error().code;
  }
  void Truncate(off_t size) {
    int fd = shm_open(key_.str().c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, size), 0);
    close(fd);
  }
  void TearDown() override {
    for (auto& m : raw_) shmc::POSIX().Detach(m.first, m.second);
  }
  ScopedKey<shmc::POSIX> key_;
  std::vector<std::pair<void*, size_t>> raw_;
  std::string last_message_;
};

TEST_F(BadSegmentTest, GoodSegmentAttaches) {
  Array r;
  ASSERT_TRUE(r.InitForRead(key_)) << r.last_error().message;
  EXPECT_EQ(r.size(), 1000u);
  EXPECT_TRUE(r.last_error().ok());
}

TEST_F(BadSegmentTest, GarbageHeaderIsBadMagic) {
  SegmentHeader* h = RawHeader();
  std::memset(static_cast<void*>(h), 0xA5, 512);
  EXPECT_EQ(ReadError(), ErrorCode::kBadMagic);
  EXPECT_NE(last_message_.find("not a shmc segment"), std::string::npos);
}

TEST_F(BadSegmentTest, TruncatedBelowHeader) {
  Truncate(300);
  EXPECT_EQ(ReadError(), ErrorCode::kSizeMismatch);
  EXPECT_NE(last_message_.find("truncated"), std::string::npos);
}

TEST_F(BadSegmentTest, TruncatedData) {
  Truncate(4096);
  EXPECT_EQ(ReadError(), ErrorCode::kSizeMismatch);
  EXPECT_NE(last_message_.find("truncated"), std::string::npos);
  Array w;
  EXPECT_FALSE(w.InitForWrite(key_, 1000));
  EXPECT_EQ(w.last_error().code, ErrorCode::kSizeMismatch);
}

TEST_F(BadSegmentTest, OtherNodeTypeIsLayoutMismatch) {
  shmc::ShmArray<uint32_t, shmc::POSIX> r;
  EXPECT_FALSE(r.InitForRead(key_));
  EXPECT_EQ(r.last_error().code, ErrorCode::kLayoutMismatch);
  EXPECT_NE(r.last_error().message.find("node_size: 16 in the segment, 4"),
            std::string::npos)
      << r.last_error().message;
  shmc::ShmArray<uint32_t, shmc::POSIX> w;
  EXPECT_FALSE(w.InitForWrite(key_, 1000));
  EXPECT_EQ(w.last_error().code, ErrorCode::kLayoutMismatch);
}

TEST_F(BadSegmentTest, OtherKindIsLayoutMismatch) {
  ScopedKey<shmc::POSIX> other("queue");
  shmc::detail::SegmentSpec spec;
  spec.kind = shmc::detail::ContainerKind::kQueue;
  spec.total_size = 4096;
  shmc::detail::Segment<shmc::POSIX> seg;
  shmc::Error err;
  ASSERT_TRUE(seg.OpenForWrite(other, spec, shmc::kCreateIfNotExist, nullptr,
                               "test", &err))
      << err.message;
  Array r;
  EXPECT_FALSE(r.InitForRead(other));
  EXPECT_EQ(r.last_error().code, ErrorCode::kLayoutMismatch);
  EXPECT_NE(r.last_error().message.find("holds a queue"), std::string::npos)
      << r.last_error().message;
}

TEST_F(BadSegmentTest, OtherLayoutVersion) {
  SegmentHeader* h = RawHeader();
  h->layout_version = 7;
  Reseal(h);
  EXPECT_EQ(ReadError(), ErrorCode::kVersionMismatch);
  EXPECT_NE(last_message_.find("layout version 7"), std::string::npos);
}

TEST_F(BadSegmentTest, OtherFormatVersion) {
  SegmentHeader* h = RawHeader();
  h->format_version = 2;
  EXPECT_EQ(ReadError(), ErrorCode::kVersionMismatch);
}

TEST_F(BadSegmentTest, FlippedByteIsCorrupted) {
  SegmentHeader* h = RawHeader();
  h->params[2].value ^= 0x100;  // node_num, without resealing
  EXPECT_EQ(ReadError(), ErrorCode::kCorrupted);
  EXPECT_NE(last_message_.find("checksum"), std::string::npos);
}

TEST_F(BadSegmentTest, GeometryThatLiesIsCorrupted) {
  SegmentHeader* h = RawHeader();
  h->params[2].value = 999;  // node_num no longer matches total_size
  Reseal(h);
  EXPECT_EQ(ReadError(), ErrorCode::kCorrupted);
}

TEST_F(BadSegmentTest, ForeignFingerprint) {
  SegmentHeader* h = RawHeader();
  h->fingerprint ^= 1;
  Reseal(h);
  EXPECT_EQ(ReadError(), ErrorCode::kLayoutMismatch);
  EXPECT_NE(last_message_.find("fingerprint"), std::string::npos);
}

TEST_F(BadSegmentTest, GarbageStateWord) {
  SegmentHeader* h = RawHeader();
  h->state.store(0x12345678, std::memory_order_relaxed);
  EXPECT_EQ(ReadError(), ErrorCode::kCorrupted);
}

TEST_F(BadSegmentTest, LiveCreatorNeverReadyTimesOut) {
  SegmentHeader* h = RawHeader();
  h->state.store(shmc::detail::kStateInitializing, std::memory_order_relaxed);
  h->creator_pid = static_cast<uint64_t>(getpid());  // alive: we wait
  EXPECT_EQ(ReadError(), ErrorCode::kNotReady);
  EXPECT_NE(last_message_.find("still initializing"), std::string::npos);
  // A writer does not steal a segment a live creator is still building.
  Array w;
  EXPECT_FALSE(w.InitForWrite(key_, 1000));
  EXPECT_EQ(w.last_error().code, ErrorCode::kNotReady);
}

TEST_F(BadSegmentTest, DeadCreatorIsAbandonedAndReplacedByWriter) {
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  SegmentHeader* h = RawHeader();
  h->state.store(shmc::detail::kStateInitializing, std::memory_order_relaxed);
  h->creator_pid = static_cast<uint64_t>(dead);
  EXPECT_EQ(ReadError(), ErrorCode::kNotReady);
  EXPECT_NE(last_message_.find("died"), std::string::npos);
  shmc_test::LogCapture log;
  Array w;
  ASSERT_TRUE(w.InitForWrite(key_, 1000)) << w.last_error().message;
  EXPECT_TRUE(log.Contains(shmc::kWarning, "abandoned"));
  EXPECT_EQ(w.last_error().code, ErrorCode::kOk)
      << "the replaced segment is not this call's error: "
      << w.last_error().message;
  EXPECT_FALSE(log.Contains(shmc::kError, "died")) << "recovered: no error line";
  Array r;
  EXPECT_TRUE(r.InitForRead(key_)) << r.last_error().message;
}

TEST_F(BadSegmentTest, EmptySegmentIsLeftAlone) {
  Truncate(0);
  EXPECT_EQ(ReadError(), ErrorCode::kNotReady);
  EXPECT_NE(last_message_.find("empty"), std::string::npos) << last_message_;
  // shmc never leaves an empty file at a key, so nothing proves this one
  // is shmc's: a writer, even one allowed to create, leaves it in place.
  for (int flags : {static_cast<int>(shmc::kCreateIfNotExist),
                    shmc::kCreateIfNotExist | shmc::kCreateIfExtending}) {
    shmc_test::ScopedCreateFlags f(flags);
    Array w;
    EXPECT_FALSE(w.InitForWrite(key_, 1000));
    EXPECT_EQ(w.last_error().code, ErrorCode::kNotReady);
    struct stat st;
    ASSERT_EQ(stat(("/dev/shm" + key_.str()).c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 0);
  }
}

TEST_F(BadSegmentTest, RandomHeaderDamageNeverCrashes) {
  size_t size = 0;
  char* raw = Raw(&size);
  std::vector<char> pristine(raw, raw + 512);
  std::mt19937_64 rng(12345);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::memcpy(raw, pristine.data(), 512);
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      size_t off = rng() % 512;
      if (off >= 128 && off < 132) continue;  // keep the state word ready
      raw[off] = static_cast<char>(rng());
    }
    Array r;
    if (!r.InitForRead(key_)) {
      ++refused;
      EXPECT_FALSE(r.last_error().ok());
      EXPECT_FALSE(r.last_error().message.empty());
    } else {
      EXPECT_EQ(r.size(), 1000u);  // accepted only if what matters is intact
    }
  }
  EXPECT_GT(refused, 200);
}

TEST(SegmentErrors, MissingKeyIsNotFound) {
  ScopedKey<shmc::SVIPC> key;
  shmc::ShmArray<Node, shmc::SVIPC> r;
  EXPECT_FALSE(r.InitForRead(key));
  EXPECT_EQ(r.last_error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.last_error().sys_errno, ENOENT);
  shmc::ShmArray<Node, shmc::SVIPC> w;
  {
    shmc_test::ScopedCreateFlags no_create(shmc::kNoCreate);
    EXPECT_FALSE(w.InitForWrite(key, 10));
  }
  EXPECT_EQ(w.last_error().code, ErrorCode::kNotFound);
}

TEST(SegmentErrors, InvalidArguments) {
  shmc::ShmArray<Node, shmc::SVIPC> a;
  EXPECT_FALSE(a.InitForWrite("0xZZ", 10));
  EXPECT_EQ(a.last_error().code, ErrorCode::kInvalidArgument);
  shmc::ShmArray<Node, shmc::POSIX> b;
  EXPECT_FALSE(b.InitForWrite("/x", 0));
  EXPECT_EQ(b.last_error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(b.InitForWrite("/x", SIZE_MAX / 4));
  EXPECT_EQ(b.last_error().code, ErrorCode::kInvalidArgument);
}

TEST(SegmentErrors, ErrorsReachTheLogHandler) {
  ScopedKey<shmc::POSIX> key;
  shmc_test::LogCapture log;
  shmc::ShmArray<Node, shmc::POSIX> r;
  EXPECT_FALSE(r.InitForRead(key));
  EXPECT_TRUE(log.Contains(shmc::kError, "ShmArray::InitForRead"));
  EXPECT_TRUE(log.Contains(shmc::kError, "not_found"));
}

TEST(SegmentErrors, AlreadyInitialized) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmArray<Node, shmc::POSIX> a;
  ASSERT_TRUE(a.InitForWrite(key, 10));
  EXPECT_FALSE(a.InitForWrite(key, 10));
  EXPECT_EQ(a.last_error().code, ErrorCode::kAlreadyInitialized);
  EXPECT_EQ(a.size(), 10u) << "the first attach is kept";
}

TEST(SegmentErrors, PermissionDenied) {
  ScopedKey<shmc::POSIX> key;
  shmc::ShmArray<Node, shmc::POSIX> a;
  ASSERT_TRUE(a.InitForWrite(key, 10));
  int rc = shmc_test::RunInChild([&] {
    if (geteuid() == 0 && setuid(65534) != 0) return 77;
    if (geteuid() == 0) return 77;
    shmc::ShmArray<Node, shmc::POSIX> w;
    if (w.InitForWrite(key, 10)) return 1;
    return w.last_error().code == ErrorCode::kPermissionDenied ? 0 : 2;
  });
  if (rc == 77) GTEST_SKIP() << "cannot drop privileges here";
  EXPECT_EQ(rc, 0);
}

// Runs `body` in a child with a private 1 MiB tmpfs on `dir`; 77 = can't.
int WithSmallTmpfs(const char* dir, const std::function<int()>& body) {
  return shmc_test::RunInChild([&] {
    if (unshare(CLONE_NEWNS) != 0) return 77;
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return 77;
    }
    mkdir(dir, 0700);
    if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) return 77;
    return body();
  });
}

struct Page {
  char bytes[4096];
};

TEST(SegmentErrors, FullDevShmIsNoSpaceNotSigbus) {
  ScopedKey<shmc::POSIX> key;
  int rc = WithSmallTmpfs("/dev/shm", [&] {
    shmc::ShmArray<Page, shmc::POSIX> big;  // 4 MiB on a 1 MiB tmpfs
    if (big.InitForWrite(key, 1024)) return 1;
    if (big.last_error().code != ErrorCode::kNoSpace) return 2;
    if (big.last_error().sys_errno != ENOSPC) return 3;
    shmc::ShmArray<Page, shmc::POSIX> small;  // and nothing was left behind
    return small.InitForWrite(key, 64) ? 0 : 4;
  });
  if (rc == 77) GTEST_SKIP() << "no mount namespaces here";
  EXPECT_EQ(rc, 0);
}

TEST(SegmentErrors, FullDiskIsNoSpaceForMapFile) {
  int rc = WithSmallTmpfs("/tmp/shmc_small_fs", [&] {
    shmc::ShmArray<Page, shmc::MAPFILE> big;
    if (big.InitForWrite("/tmp/shmc_small_fs/seg", 1024)) return 1;
    return big.last_error().code == ErrorCode::kNoSpace ? 0 : 2;
  });
  if (rc == 77) GTEST_SKIP() << "no mount namespaces here";
  EXPECT_EQ(rc, 0);
}

TEST(SegmentErrors, NoHugePagesIsClear) {
  if (shmc_test::HugePagesFree() >= 1024) GTEST_SKIP() << "pool is large";
  ScopedKey<shmc::SVIPC_HugeTLB> key;
  shmc::ShmArray<Page, shmc::SVIPC_HugeTLB> a;  // 4 GiB of hugepages
  EXPECT_FALSE(a.InitForWrite(key, 1 << 20));
  EXPECT_EQ(a.last_error().code, ErrorCode::kNoHugePages);
  const std::string& m = a.last_error().message;
  EXPECT_NE(m.find("nr_hugepages"), std::string::npos) << m;
  // How many pages it needed, and what the pool holds.
  EXPECT_NE(m.find("needs 2049 hugepages of 2048 KiB"), std::string::npos) << m;
  EXPECT_NE(m.find(" are free"), std::string::npos) << m;
}

TEST(SegmentErrors, ExtendingRecreatesWithAWarning) {
  ScopedKey<shmc::POSIX> key;
  {
    shmc::ShmArray<Node, shmc::POSIX> a;
    ASSERT_TRUE(a.InitForWrite(key, 100));
    a[5].id = 55;
  }
  {
    shmc::ShmArray<Node, shmc::POSIX> a;
    EXPECT_FALSE(a.InitForWrite(key, 200));
    EXPECT_EQ(a.last_error().code, ErrorCode::kSizeMismatch);
  }
  shmc_test::LogCapture log;
  shmc_test::ScopedCreateFlags extending(shmc::kCreateIfNotExist |
                                         shmc::kCreateIfExtending);
  shmc::ShmArray<Node, shmc::POSIX> a;
  ASSERT_TRUE(a.InitForWrite(key, 200)) << a.last_error().message;
  EXPECT_EQ(a.size(), 200u);
  EXPECT_EQ(a[5].id, 0u) << "recreated: old data is gone";
  EXPECT_TRUE(log.Contains(shmc::kWarning, "data is lost"));
  EXPECT_EQ(a.last_error().code, ErrorCode::kOk) << a.last_error().message;
  EXPECT_FALSE(log.Contains(shmc::kError, "requested")) << "recovered: no error line";
  // Shrinking is never done implicitly.
  shmc::ShmArray<Node, shmc::POSIX> b;
  EXPECT_FALSE(b.InitForWrite(key, 50));
  EXPECT_EQ(b.last_error().code, ErrorCode::kSizeMismatch);
}

}  // namespace
