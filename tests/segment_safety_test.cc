// What shmc may touch: it never removes or replaces a name it has not proven
// to be its own (empty files, device nodes, FIFOs, other programs' data),
// a key never names a half-made segment, segments get exactly the mode asked
// for on every backend, a read-only SysV attach needs only read permission,
// and a writer refuses a segment another user owns or may write.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "shmc/shm_array.h"
#include "tests/support/test_util.h"

namespace {

using shmc::ErrorCode;
using shmc_test::RunInChild;
using shmc_test::ScopedCreateFlags;
using shmc_test::ScopedKey;

struct Rec {
  uint64_t id;
  uint64_t value;
};

// A private directory for the test's files, removed with what is left in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/shmc_safety_XXXXXX";
    char* d = mkdtemp(tmpl);
    if (d != nullptr) path_ = d;
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::string cmd = "rm -rf '" + path_ + "'";
    (void)!std::system(cmd.c_str());
  }
  const std::string& path() const { return path_; }
  std::string File(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::string out;
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return "<missing>";
  char buf[256];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fd);
  return out;
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) return false;
  bool ok = write(fd, bytes.data(), bytes.size()) ==
            static_cast<ssize_t>(bytes.size());
  close(fd);
  return ok;
}

const int kEveryCreateFlags[] = {
    shmc::kNoCreate, shmc::kCreateIfNotExist, shmc::kCreateIfExtending,
    shmc::kCreateIfNotExist | shmc::kCreateIfExtending};

// Every create flag set: InitForWrite fails with `code` and `path` is
// unchanged (same type, same bytes).
void ExpectUntouched(const std::string& key, const std::string& path,
                     ErrorCode code) {
  struct stat before;
  ASSERT_EQ(lstat(path.c_str(), &before), 0);
  std::string bytes = S_ISREG(before.st_mode) ? ReadAll(path) : "";
  for (int flags : kEveryCreateFlags) {
    ScopedCreateFlags f(flags);
    shmc::ShmArray<Rec, shmc::MAPFILE> w;
    EXPECT_FALSE(w.InitForWrite(key, 100)) << "flags " << flags;
    EXPECT_EQ(w.last_error().code, code)
        << "flags " << flags << ": " << w.last_error().message;
    struct stat after;
    ASSERT_EQ(lstat(path.c_str(), &after), 0) << "removed with flags " << flags;
    EXPECT_EQ(after.st_ino, before.st_ino) << "replaced, flags " << flags;
    EXPECT_EQ(after.st_mode, before.st_mode);
    if (S_ISREG(before.st_mode)) {
      EXPECT_EQ(ReadAll(path), bytes);
    }
  }
  shmc::ShmArray<Rec, shmc::MAPFILE> r;
  EXPECT_FALSE(r.InitForRead(key));
}

TEST(NeverTouchForeign, EmptyRegularFileSurvivesInitForWrite) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::string path = dir.File("empty");
  ASSERT_TRUE(WriteFile(path, ""));
  ExpectUntouched(path, path, ErrorCode::kNotReady);
}

TEST(NeverTouchForeign, EmptyPosixObjectSurvivesInitForWrite) {
  ScopedKey<shmc::POSIX> key;
  int fd = shm_open(key.str().c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string path = "/dev/shm" + key.str();
  struct stat before;
  ASSERT_EQ(stat(path.c_str(), &before), 0);
  for (int flags : kEveryCreateFlags) {
    ScopedCreateFlags f(flags);
    shmc::ShmArray<Rec, shmc::POSIX> w;
    EXPECT_FALSE(w.InitForWrite(key, 100));
    struct stat after;
    ASSERT_EQ(stat(path.c_str(), &after), 0) << "removed, flags " << flags;
    EXPECT_EQ(after.st_ino, before.st_ino);
    EXPECT_EQ(after.st_size, 0);
  }
}

TEST(NeverTouchForeign, ForeignDataSurvivesInitForWrite) {
  TempDir dir;
  std::string path = dir.File("notes.txt");
  ASSERT_TRUE(WriteFile(path, std::string(4096, 'x') + "someone's data"));
  ExpectUntouched(path, path, ErrorCode::kBadMagic);
}

TEST(NeverTouchForeign, DeviceNodeSurvivesInitForWrite) {
  TempDir dir;
  std::string path = dir.File("null");
  if (mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "cannot make a device node here: " << strerror(errno);
  }
  ExpectUntouched(path, path, ErrorCode::kInvalidArgument);
  shmc::ShmArray<Rec, shmc::MAPFILE> w;
  EXPECT_FALSE(w.InitForWrite(path, 100));
  EXPECT_NE(w.last_error().message.find("not a regular file"),
            std::string::npos) << w.last_error().message;
}

TEST(NeverTouchForeign, FifoNeitherHangsNorIsRemoved) {
  TempDir dir;
  std::string path = dir.File("fifo");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  ExpectUntouched(path, path, ErrorCode::kInvalidArgument);
}

// The reference-API allocator refuses to map anything but a regular file,
// so even ShmHandle-style kCreateIfExtending cannot unlink a device node.
TEST(NeverTouchForeign, AllocatorRefusesNonRegularFiles) {
  TempDir dir;
  std::string path = dir.File("dir");
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  shmc::MAPFILE a;
  EXPECT_EQ(a.Attach_AutoCreate(path, 4096,
                                shmc::kCreateIfNotExist |
                                    shmc::kCreateIfExtending),
            nullptr);
  EXPECT_EQ(a.last_errno(), shmc::impl::kErrNotRegular);
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0);
}

// --- staged creation ------------------------------------------------------

// While a segment is being made, its key names either nothing or the whole,
// ready segment: an observer never maps an empty or unready one.
TEST(StagedCreate, KeyNeverNamesAHalfMadeSegment) {
  TempDir dir;
  std::string key = dir.File("big.seg");
  int odd = 0, seen = 0;
  for (int round = 0; round < 4; ++round) {
    unlink(key.c_str());
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      shmc::ShmArray<Rec, shmc::MAPFILE> w;  // 64 MiB: sizing takes a while
      _exit(w.InitForWrite(key, 4 << 20) ? 0 : 1);
    }
    for (;;) {
      shmc::MAPFILE a;
      size_t mapped = 0;
      void* p = a.Attach(key, 0, shmc::impl::kReadOnly, &mapped);
      if (p != nullptr) {
        ++seen;
        auto* h = static_cast<const shmc::detail::SegmentHeader*>(p);
        if (mapped < sizeof(*h) ||
            h->state.load(std::memory_order_acquire) !=
                shmc::detail::kStateReady) {
          ++odd;
        }
        a.Detach(p, mapped);
        break;
      }
      if (a.last_errno() != shmc::impl::kErrNotExist) ++odd;
      int status = 0;
      if (waitpid(child, &status, WNOHANG) == child) {
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        child = 0;
      }
    }
    if (child != 0) {
      int status = 0;
      waitpid(child, &status, 0);
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  EXPECT_EQ(seen, 4);
  EXPECT_EQ(odd, 0);
  unlink(key.c_str());
}

// A creator killed between staging and publishing leaves its private stage
// file; the next creator in the directory removes it once its process is
// gone and it is old, and only if it is empty or a shmc segment.
TEST(StagedCreate, StaleStagesOfDeadCreatorsAreCollected) {
  TempDir dir;
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  std::string d = std::to_string(dead);
  std::string me = std::to_string(getpid());
  std::string stale_empty = dir.File((".shmc-new." + d + ".0").c_str());
  std::string stale_seg = dir.File((".shmc-new." + d + ".1").c_str());
  std::string fresh = dir.File((".shmc-new." + d + ".2").c_str());
  std::string foreign = dir.File((".shmc-new." + d + ".3").c_str());
  std::string live = dir.File((".shmc-new." + me + ".999").c_str());
  std::string odd_name = dir.File((".shmc-new." + d + ".4x").c_str());
  ASSERT_TRUE(WriteFile(stale_empty, ""));
  ASSERT_TRUE(WriteFile(stale_seg, std::string("shmc.seg") +
                                       std::string(600, '\0')));
  ASSERT_TRUE(WriteFile(fresh, ""));
  ASSERT_TRUE(WriteFile(foreign, "not a segment"));
  ASSERT_TRUE(WriteFile(live, ""));
  ASSERT_TRUE(WriteFile(odd_name, ""));
  struct timeval old[2] = {{time(nullptr) - 3600, 0},
                           {time(nullptr) - 3600, 0}};
  for (const std::string& f : {stale_empty, stale_seg, foreign, live,
                               odd_name}) {
    ASSERT_EQ(utimes(f.c_str(), old), 0);
  }
  shmc::ShmArray<Rec, shmc::MAPFILE> w;
  ASSERT_TRUE(w.InitForWrite(dir.File("a.seg"), 10))
      << w.last_error().message;
  auto exists = [](const std::string& f) { return access(f.c_str(), F_OK) == 0; };
  EXPECT_FALSE(exists(stale_empty));
  EXPECT_FALSE(exists(stale_seg));
  EXPECT_TRUE(exists(fresh)) << "younger than a minute: may be sizing";
  EXPECT_TRUE(exists(foreign)) << "not empty and not a segment";
  EXPECT_TRUE(exists(live)) << "its process is alive";
  EXPECT_TRUE(exists(odd_name)) << "not a stage name";
}

// --- modes ----------------------------------------------------------------

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t m) : saved_(umask(m)) {}
  ~ScopedUmask() { umask(saved_); }

 private:
  mode_t saved_;
};

class ScopedDefaultMode {
 public:
  explicit ScopedDefaultMode(mode_t m) : saved_(shmc::DefaultSegmentMode()) {
    shmc::SetDefaultSegmentMode(m);
  }
  ~ScopedDefaultMode() { shmc::SetDefaultSegmentMode(saved_); }

 private:
  mode_t saved_;
};

template <class Alloc>
constexpr bool kSysv = std::is_same_v<Alloc, shmc::SVIPC> ||
                       std::is_same_v<Alloc, shmc::SVIPC_HugeTLB>;

// A SysV segment's id and state (false if there is none).
bool SysvStat(const std::string& key, int* id, struct shmid_ds* ds) {
  key_t k;
  if (!shmc::impl::ParseSysvKey(key, &k)) return false;
  *id = shmget(k, 0, 0);
  return *id >= 0 && shmctl(*id, IPC_STAT, ds) == 0;
}

// Where a POSIX or file segment is in the file system.
template <class Alloc>
std::string PathOf(const std::string& key) {
  return std::is_same_v<Alloc, shmc::POSIX> ? "/dev/shm" + key : key;
}

// The permission bits and owner of a named segment, from the system.
template <class Alloc>
bool StatSegment(const std::string& key, mode_t* mode, uid_t* uid) {
  if constexpr (kSysv<Alloc>) {
    int id;
    struct shmid_ds ds;
    if (!SysvStat(key, &id, &ds)) return false;
    *mode = ds.shm_perm.mode & 0777;
    *uid = ds.shm_perm.uid;
  } else {
    struct stat st;
    if (stat(PathOf<Alloc>(key).c_str(), &st) != 0) return false;
    *mode = st.st_mode & 0777;
    *uid = st.st_uid;
  }
  return true;
}

// Gives a named segment another owner and mode, as a hostile user could.
template <class Alloc>
bool SetOwner(const std::string& key, uid_t uid, mode_t mode) {
  if constexpr (kSysv<Alloc>) {
    int id;
    struct shmid_ds ds;
    if (!SysvStat(key, &id, &ds)) return false;
    ds.shm_perm.uid = uid;
    ds.shm_perm.mode = mode;
    return shmctl(id, IPC_SET, &ds) == 0;
  } else {
    std::string path = PathOf<Alloc>(key);
    return chown(path.c_str(), uid, static_cast<gid_t>(-1)) == 0 &&
           chmod(path.c_str(), mode) == 0;
  }
}

// Creates an array segment on a fresh key and reads its mode and owner
// (0 when either step fails, with a test failure).
template <class Alloc>
void CreateAndStat(mode_t* mode, uid_t* uid) {
  ScopedKey<Alloc> key;
  shmc::ShmArray<Rec, Alloc> w;
  ASSERT_TRUE(w.InitForWrite(key, 100)) << w.last_error().message;
  ASSERT_TRUE(StatSegment<Alloc>(key, mode, uid));
}

template <class Alloc>
class SegmentModeTest : public ::testing::Test {};
using ModeAllocs = ::testing::Types<shmc::SVIPC, shmc::SVIPC_HugeTLB,
                                    shmc::POSIX, shmc::MAPFILE>;
TYPED_TEST_SUITE(SegmentModeTest, ModeAllocs, shmc_test::AllocNames);

TYPED_TEST(SegmentModeTest, DefaultIs0600WhateverTheUmask) {
  SHMC_SKIP_WITHOUT_HUGEPAGES(TypeParam, 2);
  for (mode_t mask : {mode_t{0}, mode_t{0022}, mode_t{0077}}) {
    ScopedUmask u(mask);
    mode_t mode = 0;
    uid_t uid = 0;
    CreateAndStat<TypeParam>(&mode, &uid);
    EXPECT_EQ(mode, 0600u) << "umask " << std::oct << mask;
    EXPECT_EQ(uid, geteuid());
  }
}

TYPED_TEST(SegmentModeTest, ChosenModeIsAppliedExactly) {
  SHMC_SKIP_WITHOUT_HUGEPAGES(TypeParam, 2);
  ScopedUmask u(0077);  // would strip the group bits if it applied
  for (mode_t want : {mode_t{0640}, mode_t{0660}, mode_t{0400}}) {
    ScopedDefaultMode m(want);
    mode_t mode = 0;
    uid_t uid = 0;
    CreateAndStat<TypeParam>(&mode, &uid);
    EXPECT_EQ(mode, want);
  }
  // The allocator's own option, as the reference API uses it.
  ScopedKey<TypeParam> key;
  TypeParam alloc;
  EXPECT_EQ(alloc.mode(), 0600u);
  alloc.set_mode(0644);
  size_t mapped = 0;
  void* p = alloc.Attach_ExclCreate(key, 4096, &mapped);
  ASSERT_NE(p, nullptr);
  alloc.Detach(p, mapped);
  mode_t mode = 0;
  uid_t uid = 0;
  ASSERT_TRUE(StatSegment<TypeParam>(key, &mode, &uid));
  EXPECT_EQ(mode, 0644u);
}

// A group member may read a 0640 segment read-only on every backend; the
// same process may not write it.
TYPED_TEST(SegmentModeTest, GroupReaderAttachesReadOnly) {
  SHMC_SKIP_WITHOUT_HUGEPAGES(TypeParam, 2);
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  ScopedDefaultMode m(0640);
  ScopedKey<TypeParam> key;
  shmc::ShmArray<Rec, TypeParam> w;
  ASSERT_TRUE(w.InitForWrite(key, 100)) << w.last_error().message;
  w[7].value = 77;
  if constexpr (std::is_same_v<TypeParam, shmc::MAPFILE>) {
    ASSERT_EQ(chown(key.str().c_str(), 0, getegid()), 0);
  }
  int rc = RunInChild([&] {
    gid_t group = getegid();  // the segment's group
    if (setgroups(0, nullptr) != 0 || setgid(group) != 0 ||
        setuid(65534) != 0) {
      return 77;
    }
    shmc::ShmArray<Rec, TypeParam> r;
    if (!r.InitForRead(key)) {
      std::fprintf(stderr, "%s\n", r.last_error().message.c_str());
      return 1;
    }
    if (r[7].value != 77) return 2;
    shmc::ShmArray<Rec, TypeParam> w2;
    if (w2.InitForWrite(key, 100)) return 3;
    return w2.last_error().code == ErrorCode::kPermissionDenied ? 0 : 4;
  });
  if (rc == 77) GTEST_SKIP() << "cannot drop privileges here";
  EXPECT_EQ(rc, 0);
}

// A segment another user owns, or one anyone may write, could have been
// crafted to attack this writer: refused unless kAllowForeignOwner.
TYPED_TEST(SegmentModeTest, WriterRefusesForeignOrWorldWritableSegment) {
  SHMC_SKIP_WITHOUT_HUGEPAGES(TypeParam, 2);
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a segment away";
  struct Case {
    uid_t uid;
    mode_t mode;
    const char* says;
  };
  for (Case c : {Case{65534, 0600, "owned by uid 65534"},
                 Case{65534, 0666, "owned by uid 65534"},
                 Case{geteuid(), 0666, "any user"},
                 Case{geteuid(), 0602, "any user"}}) {
    ScopedKey<TypeParam> key;
    {
      shmc::ShmArray<Rec, TypeParam> made;
      ASSERT_TRUE(made.InitForWrite(key, 100));
      made[1].value = 11;
    }
    ASSERT_TRUE(SetOwner<TypeParam>(key, c.uid, c.mode));
    shmc::ShmArray<Rec, TypeParam> w;
    EXPECT_FALSE(w.InitForWrite(key, 100));
    EXPECT_EQ(w.last_error().code, ErrorCode::kPermissionDenied);
    EXPECT_NE(w.last_error().message.find(c.says), std::string::npos)
        << w.last_error().message;
    shmc::ShmArray<Rec, TypeParam> r;  // reading is bounds-checked anyway
    ASSERT_TRUE(r.InitForRead(key)) << r.last_error().message;
    EXPECT_EQ(r[1].value, 11u);
    ScopedCreateFlags allow(shmc::kCreateIfNotExist |
                            shmc::kAllowForeignOwner);
    shmc::ShmArray<Rec, TypeParam> w2;
    EXPECT_TRUE(w2.InitForWrite(key, 100)) << w2.last_error().message;
  }
}

}  // namespace
