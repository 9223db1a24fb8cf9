// shmc_demo: one process writes a ShmArray, another process (this program
// re-executed with --read) attaches it read-only and checks every record.
// Then it shows what a mistaken attach looks like: a clear error, no crash.
//
//   shmc_demo [--name /shm_name] [--records N] [--keep]
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "shmc/shm_array.h"

namespace {

struct Record {
  uint64_t id;
  uint64_t checksum;  // id * golden ratio constant: detects torn records
};

uint64_t Expected(uint64_t id) { return id * 0x9e3779b97f4a7c15ULL; }

int Read(const std::string& name) {
  shmc::ShmArray<Record, shmc::POSIX> array;
  if (!array.InitForRead(name)) {
    std::fprintf(stderr, "reader: %s\n", array.last_error().message.c_str());
    return 1;
  }
  const auto& ro = array;
  uint64_t bad = 0;
  for (size_t i = 0; i < ro.size(); ++i) {
    if (ro[i].id != i || ro[i].checksum != Expected(i)) ++bad;
  }
  std::printf("reader pid %d: attached %s read-only, %zu records, %" PRIu64
              " bad\n", static_cast<int>(getpid()), name.c_str(), ro.size(),
              bad);
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string name = "/shmc_demo";
  size_t records = 1000000;
  bool keep = false;
  bool read_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--name" && i + 1 < argc) {
      name = argv[++i];
    } else if (a == "--records" && i + 1 < argc) {
      records = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--read") {
      read_only = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--name /shm_name] [--records N] [--keep]\n",
                   argv[0]);
      return 2;
    }
  }
  if (read_only) return Read(name);

  shmc::POSIX().Unlink(name);
  {
    shmc::ShmArray<Record, shmc::POSIX> array;
    if (!array.InitForWrite(name, records)) {
      std::fprintf(stderr, "writer: %s\n", array.last_error().message.c_str());
      return 1;
    }
    for (size_t i = 0; i < array.size(); ++i) {
      array[i].id = i;
      array[i].checksum = Expected(i);
    }
    std::printf("writer pid %d: created %s with %zu records (%zu bytes)\n",
                static_cast<int>(getpid()), name.c_str(), array.size(),
                array.size() * sizeof(Record));
  }  // the writer detaches; the data stays in the segment

  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    execl("/proc/self/exe", argv[0], "--read", "--name", name.c_str(),
          static_cast<char*>(nullptr));
    std::perror("exec");
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  bool reader_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

  // A program that expects another record type is refused, with the reason.
  shmc::ShmArray<uint32_t, shmc::POSIX> wrong;
  if (!wrong.InitForRead(name)) {
    std::printf("attaching as ShmArray<uint32_t> is refused: %s\n",
                wrong.last_error().message.c_str());
  }
  if (!keep) shmc::POSIX().Unlink(name);
  std::printf("%s\n", reader_ok ? "demo ok" : "demo FAILED");
  return reader_ok ? 0 : 1;
}
