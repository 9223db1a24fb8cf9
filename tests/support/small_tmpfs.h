// A tmpfs of a test's own size, mounted for the test and unmounted at its
// end (tests of a full /dev/shm or disk: skipped where mounting is not
// allowed), and the bytes a file holds blocks for.
#pragma once

#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace shmc_test {

class SmallTmpfs {
 public:
  explicit SmallTmpfs(const std::string& size) {
    char tmpl[] = "/tmp/shmc_tmpfs_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    const std::string opts = "size=" + size + ",mode=0700";
    mounted_ =
        mount("shmc_test_tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

// Bytes of the file that hold blocks (-1 when it cannot be read): what a
// POSIX segment under /dev/shm, or a file segment, takes of its tmpfs.
inline long long FileBlocks(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_blocks) * 512;
}

}  // namespace shmc_test
