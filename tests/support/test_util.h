// Helpers shared by shmc's tests: unique segment keys per test (so that
// `ctest -j` is safe), RAII removal, fork with a timeout, log capture.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "shmc/detail/hash.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc_test {

// Per-allocator facts the typed tests need.
template <class Alloc>
struct AllocTraits {
  static constexpr bool kNamed = true;    // attachable by key from elsewhere
  static constexpr bool kShared = true;   // writes visible to other processes
  static constexpr bool kHuge = false;
  static constexpr const char* kName = "?";
};
template <>
struct AllocTraits<shmc::SVIPC> {
  static constexpr bool kNamed = true, kShared = true, kHuge = false;
  static constexpr const char* kName = "SVIPC";
};
template <>
struct AllocTraits<shmc::SVIPC_HugeTLB> {
  static constexpr bool kNamed = true, kShared = true, kHuge = true;
  static constexpr const char* kName = "SVIPC_HugeTLB";
};
template <>
struct AllocTraits<shmc::POSIX> {
  static constexpr bool kNamed = true, kShared = true, kHuge = false;
  static constexpr const char* kName = "POSIX";
};
template <>
struct AllocTraits<shmc::MAPFILE> {
  static constexpr bool kNamed = true, kShared = true, kHuge = false;
  static constexpr const char* kName = "MAPFILE";
};
template <>
struct AllocTraits<shmc::ANON> {
  static constexpr bool kNamed = false, kShared = true, kHuge = false;
  static constexpr const char* kName = "ANON";
};
template <>
struct AllocTraits<shmc::HEAP> {
  static constexpr bool kNamed = false, kShared = false, kHuge = false;
  static constexpr const char* kName = "HEAP";
};

using AllAllocs = ::testing::Types<shmc::SVIPC, shmc::SVIPC_HugeTLB,
                                   shmc::POSIX, shmc::MAPFILE, shmc::ANON,
                                   shmc::HEAP>;
using NamedAllocs = ::testing::Types<shmc::SVIPC, shmc::SVIPC_HugeTLB,
                                     shmc::POSIX, shmc::MAPFILE>;

struct AllocNames {
  template <class T>
  static std::string GetName(int) {
    return AllocTraits<T>::kName;
  }
};

// A hash of this process and the running test: unique across `ctest -j`.
inline uint64_t TestTag(const std::string& extra) {
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::to_string(getpid()) + "/" +
                     (info ? std::string(info->test_suite_name()) + "." +
                                 info->name()
                           : std::string("none")) +
                     "/" + extra;
  return shmc::detail::Fnv1a64(name.data(), name.size());
}

template <class Alloc>
std::string MakeKey(const std::string& extra = "") {
  uint64_t tag = TestTag(extra);
  if (std::is_same<Alloc, shmc::SVIPC>::value ||
      std::is_same<Alloc, shmc::SVIPC_HugeTLB>::value) {
    char buf[32];
    // 0x5c...... : a range unlikely to meet other programs' keys.
    std::snprintf(buf, sizeof(buf), "0x5c%06llx",
                  static_cast<unsigned long long>(tag & 0xffffff));
    return buf;
  }
  char buf[96];
  if (std::is_same<Alloc, shmc::MAPFILE>::value) {
    std::snprintf(buf, sizeof(buf), "/tmp/shmc_test_%d_%016llx.seg",
                  static_cast<int>(getpid()),
                  static_cast<unsigned long long>(tag));
  } else {
    std::snprintf(buf, sizeof(buf), "/shmc_test_%d_%016llx",
                  static_cast<int>(getpid()),
                  static_cast<unsigned long long>(tag));
  }
  return buf;
}

// Sets the default create flags for a scope and restores the previous ones
// at its end, also when an assertion leaves the test early (a flag left set
// would change every later test in the binary).
class ScopedCreateFlags {
 public:
  explicit ScopedCreateFlags(int flags) : saved_(shmc::DefaultCreateFlags()) {
    shmc::SetDefaultCreateFlags(flags);
  }
  ~ScopedCreateFlags() { shmc::SetDefaultCreateFlags(saved_); }
  ScopedCreateFlags(const ScopedCreateFlags&) = delete;
  ScopedCreateFlags& operator=(const ScopedCreateFlags&) = delete;

 private:
  int saved_;
};

// Attaches two writer handles of one container (a queue, a sync buffer)
// to `key` with kSharedWriters, as writers that serialize themselves do.
template <class C>
::testing::AssertionResult InitSharedWriters(C* a, C* b,
                                             const std::string& key,
                                             size_t bytes) {
  ScopedCreateFlags shared(shmc::kCreateIfNotExist | shmc::kSharedWriters);
  for (C* w : {a, b}) {
    if (!w->InitForWrite(key, bytes)) {
      return ::testing::AssertionFailure() << w->last_error().message;
    }
  }
  return ::testing::AssertionSuccess();
}

// Owns a unique key: removes any leftover segment now and at scope exit.
template <class Alloc>
class ScopedKey {
 public:
  explicit ScopedKey(const std::string& extra = "")
      : key_(MakeKey<Alloc>(extra)) {
    Alloc().Unlink(key_);
  }
  ~ScopedKey() { Alloc().Unlink(key_); }
  ScopedKey(const ScopedKey&) = delete;
  ScopedKey& operator=(const ScopedKey&) = delete;
  const std::string& str() const { return key_; }
  operator const std::string&() const { return key_; }

 private:
  std::string key_;
};

// A POSIX map's two segments (<base>0, <base>1) under a base unique to
// the test and `extra`: removed now and when the scope ends, a failed
// assertion included.
struct MapSegments {
  explicit MapSegments(const std::string& extra = "map")
      : base(MakeKey<shmc::POSIX>(extra)) {
    Remove();
  }
  ~MapSegments() { Remove(); }
  MapSegments(const MapSegments&) = delete;
  MapSegments& operator=(const MapSegments&) = delete;
  void Remove() {
    shmc::POSIX().Unlink(base + "0");
    shmc::POSIX().Unlink(base + "1");
  }
  std::string base;
};

// Keys for maps (ShmHashMap uses <base>0 and <base>1): a base whose SysV form stays a number when "0"/"1" is
// appended, and whose POSIX/file form is a name.
template <class Alloc>
std::string MapKey() {
  std::string k = MakeKey<Alloc>("map");
  if (std::is_same<Alloc, shmc::SVIPC>::value ||
      std::is_same<Alloc, shmc::SVIPC_HugeTLB>::value) {
    return k.substr(0, k.size() - 1);  // 0x5cXXXXX + "0"/"1"
  }
  return k;
}

template <class Alloc>
struct MapKeys {
  std::string base = MapKey<Alloc>();
  MapKeys() { Remove(); }
  ~MapKeys() { Remove(); }
  void Remove() {
    Alloc().Unlink(base + "0");
    Alloc().Unlink(base + "1");
  }
};

inline long HugePagesFree() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    long n = 0;
    if (std::sscanf(line.c_str(), "HugePages_Free: %ld", &n) == 1) return n;
  }
  return 0;
}

// Skips the current test when Alloc needs hugepages and fewer than `pages`
// 2 MiB pages are free.
#define SHMC_SKIP_WITHOUT_HUGEPAGES(Alloc, pages)                              \
  do {                                                                         \
    if (::shmc_test::AllocTraits<Alloc>::kHuge &&                              \
        ::shmc_test::HugePagesFree() < (pages)) {                              \
      GTEST_SKIP() << "needs " << (pages) << " free hugepages, have "          \
                   << ::shmc_test::HugePagesFree()                             \
                   << " (echo N > /proc/sys/vm/nr_hugepages)";                 \
    }                                                                          \
  } while (0)

// Runs `body` in a forked child and returns its exit code; -1 if it crashed
// (the signal is reported), -2 if it outlived `timeout` and was killed.
inline int RunInChild(const std::function<int()>& body,
                      std::chrono::milliseconds timeout =
                          std::chrono::seconds(30)) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return -3;
  if (pid == 0) {
    int rc = 99;
    rc = body();
    std::fflush(nullptr);
    _exit(rc);
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  ADD_FAILURE() << "child died of signal " << WTERMSIG(status);
  return -1;
}

// Collects library log lines while alive; restores silence afterwards.
class LogCapture {
 public:
  LogCapture() {
    shmc::SetLogHandler(shmc::kDebug, [this](shmc::LogLevel lv,
                                             const char* s) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back({lv, s});
    });
  }
  ~LogCapture() { shmc::SetLogHandler(shmc::kError, nullptr); }
  bool Contains(shmc::LogLevel lv, const std::string& needle) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& l : lines_) {
      if (l.first == lv && l.second.find(needle) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<shmc::LogLevel, std::string>> lines_;
};

}  // namespace shmc_test
