// Allocator over a file descriptor that is mapped MAP_SHARED: the common code
// of POSIX (shm_open under /dev/shm) and MAPFILE (a regular file). A Policy
// supplies Open(key, oflag, mode), Remove(key), Path(key) (the name in the
// file system), Dir(key) (the directory holding it), InDir(key, entry) (the
// key of a sibling entry) and kSyncOnDetach.
//
// Staged creation (AttachStaged + PublishStaged, used by every container):
// the segment is made, sized and initialized under a private name in the same
// directory (".shmc-new.<pid>.<n>") and then renamed onto the key without
// replacing anything. So a key never names a segment that is not complete,
// and an empty file at a key is never one of shmc's: it is not removed.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "shmc/detail/alloc_base.h"
#include "shmc/detail/process.h"
#include "shmc/detail/segment_header.h"

namespace shmc {
namespace impl {

// Prefix of the private names staged segments are built under.
constexpr char kStagePrefix[] = ".shmc-new.";
// A staged segment left by a dead process is removed by the next creator in
// its directory once it is this old (a creator in another pid namespace may
// look dead while it is still sizing its segment).
constexpr time_t kStaleStageSeconds = 60;

// Parses ".shmc-new.<pid>.<n>"; false for any other name.
inline bool ParseStageName(const char* name, unsigned long long* pid) {
  size_t plen = sizeof(kStagePrefix) - 1;
  if (std::strncmp(name, kStagePrefix, plen) != 0) return false;
  const char* p = name + plen;
  unsigned long long v = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 10; ++p, ++digits) {
    v = v * 10 + static_cast<unsigned>(*p - '0');
  }
  if (digits == 0 || *p != '.') return false;
  ++p;
  digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 10; ++p, ++digits) {
  }
  if (digits == 0 || *p != '\0') return false;
  *pid = v;
  return true;
}

template <class Policy>
class FdShmAlloc : public ShmAlloc {
 public:
  void* Attach(const std::string& key, size_t size, int flags,
               size_t* mapped_size = nullptr) override {
    if (key.empty()) {
      set_last_errno(kErrBadParam, EINVAL);
      return nullptr;
    }
    bool read_only = flags & kReadOnly;
    int oflag = read_only ? O_RDONLY : O_RDWR;
    if (flags & kCreate) oflag |= O_CREAT;
    if (flags & kCreateExcl) oflag |= O_EXCL;
    // O_NONBLOCK: opening a FIFO by mistake must not hang (it is then
    // refused as not a regular file); it changes nothing for files.
    oflag |= O_CLOEXEC | O_NONBLOCK;
    int fd = Policy::Open(key, oflag, mode());
    if (fd < 0) {
      if (errno == EISDIR) {
        set_last_errno(kErrNotRegular, errno);
      } else {
        set_from_errno();
      }
      return nullptr;
    }
    bool created = (flags & kCreate) && (flags & kCreateExcl);
    void* addr = MapFd(fd, key, size, flags, created, mapped_size);
    close(fd);
    return addr;
  }

  // Creates a segment of `size` bytes under a private name next to `key`
  // (*stage receives it) and maps it read-write. Nothing is at `key` yet.
  void* AttachStaged(const std::string& key, size_t size, size_t* mapped_size,
                     std::string* stage, int extra_flags = 0) {
    if (key.empty() || size == 0) {
      set_last_errno(kErrBadParam, EINVAL);
      return nullptr;
    }
    RemoveStaleStages(key);
    static std::atomic<unsigned> counter{0};
    *stage = Policy::InDir(
        key, kStagePrefix + std::to_string(getpid()) + "." +
                 std::to_string(counter.fetch_add(1) % 1000000000u));
    return Attach(*stage, size, kCreate | kCreateExcl | extra_flags,
                  mapped_size);
  }

  // Moves the staged segment onto `key`, never replacing what is there:
  // kErrAlreadyExist when `key` exists. The staged name is gone afterwards.
  bool PublishStaged(const std::string& stage, const std::string& key) {
    std::string from = Policy::Path(stage), to = Policy::Path(key);
    int rc = renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(),
                       RENAME_NOREPLACE);
    if (rc < 0 && (errno == EINVAL || errno == ENOSYS)) {
      // A file system without RENAME_NOREPLACE: link() never replaces either.
      rc = link(from.c_str(), to.c_str());
      if (rc == 0) {
        Policy::Remove(stage);
        set_last_errno(kErrOK);
        return true;
      }
    }
    if (rc < 0) {
      int e = errno;
      Policy::Remove(stage);
      set_last_errno(FromErrno(e), e);
      return false;
    }
    set_last_errno(kErrOK);
    return true;
  }

  bool Detach(void* addr, size_t size) override {
    if (Policy::kSyncOnDetach) Sync(addr, size);
    if (munmap(addr, size) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

  bool Unlink(const std::string& key) override {
    if (key.empty()) {
      set_last_errno(kErrBadParam, EINVAL);
      return false;
    }
    if (Policy::Remove(key) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

  size_t AlignSize() override { return 1; }

  bool Sync(void* addr, size_t size) override {
    if (!Policy::kSyncOnDetach) return true;
    if (msync(addr, size, MS_SYNC) < 0) {
      set_from_errno();
      return false;
    }
    return true;
  }

 private:
  // Staged segments of dead processes in `key`'s directory: a crash between
  // staging and publishing leaves one. Only names of the staging pattern
  // that are empty or start with the shmc magic are removed.
  void RemoveStaleStages(const std::string& key) {
    std::string dir = Policy::Dir(key);
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return;
    time_t now = time(nullptr);
    while (struct dirent* e = readdir(d)) {
      unsigned long long pid = 0;
      if (!ParseStageName(e->d_name, &pid)) continue;
      if (pid == static_cast<unsigned long long>(getpid()) ||
          detail::ProcessAlive(pid)) {
        continue;
      }
      std::string stage = Policy::InDir(key, e->d_name);
      int fd = Policy::Open(stage, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
      if (fd < 0) continue;
      struct stat st;
      char head[sizeof(detail::kSegmentMagic)] = {};
      bool ours = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  now - st.st_mtime >= kStaleStageSeconds &&
                  (st.st_size == 0 ||
                   (pread(fd, head, sizeof(head), 0) ==
                        static_cast<ssize_t>(sizeof(head)) &&
                    std::memcmp(head, detail::kSegmentMagic, sizeof(head)) ==
                        0));
      close(fd);
      if (ours) Policy::Remove(stage);
    }
    closedir(d);
  }

  void* MapFd(int fd, const std::string& key, size_t size, int flags,
              bool created, size_t* mapped_size) {
    struct stat st;
    if (fstat(fd, &st) < 0) {
      set_from_errno();
      return nullptr;
    }
    if (!S_ISREG(st.st_mode)) {
      // A device node, directory, FIFO or socket: never a segment.
      set_last_errno(kErrNotRegular, 0);
      return nullptr;
    }
    if (created && fchmod(fd, mode()) < 0) {  // exactly, whatever the umask
      set_from_errno();
      Policy::Remove(key);
      return nullptr;
    }
    size_t have = static_cast<size_t>(st.st_size);
    if (size > have) {
      if (!(flags & kCreate)) {
        set_last_errno(kErrBiggerSize, 0);
        return nullptr;
      }
      // Reserve the blocks now: on a full tmpfs or disk this fails with
      // ENOSPC instead of the mapping raising SIGBUS on first touch. A
      // sparse segment only gets its size: its creator reserves the
      // ranges it uses (ShmAlloc::Reserve) before it touches them.
      int rc = (flags & kSparse)
                   ? (ftruncate(fd, static_cast<off_t>(size)) == 0 ? 0 : errno)
                   : posix_fallocate(fd, 0, static_cast<off_t>(size));
      if (rc != 0) {
        set_last_errno(FromErrno(rc), rc);
        if (created) {
          Policy::Remove(key);
        } else {
          // Give back what a partial reservation may have grown.
          (void)!ftruncate(fd, static_cast<off_t>(have));
        }
        return nullptr;
      }
      have = size;
    }
    if (have == 0) {
      // A creator has made the name but not sized it yet, or it is not a
      // segment at all.
      set_last_errno(kErrEmpty, 0);
      return nullptr;
    }
    int prot = (flags & kReadOnly) ? PROT_READ : PROT_READ | PROT_WRITE;
    void* addr = mmap(nullptr, have, prot, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
      set_from_errno();
      if (created) Policy::Remove(key);
      return nullptr;
    }
    if (mapped_size != nullptr) *mapped_size = have;
    set_last_object(st.st_uid, created ? mode() : st.st_mode);
    set_last_errno(kErrOK);
    return addr;
  }
};

}  // namespace impl
}  // namespace shmc
