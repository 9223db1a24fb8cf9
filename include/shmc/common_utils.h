// Small helpers the reference API exposes as shmc::Utils, kept so programs
// written against it still compile. New code in shmc uses shmc::detail.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "shmc/global_options.h"

#define SHMC_NOT_COPYABLE_AND_MOVABLE(ClassName) \
  ClassName(const ClassName&) = delete;          \
  void operator=(const ClassName&) = delete;     \
  ClassName(ClassName&&) = delete;               \
  void operator=(ClassName&&) = delete

namespace shmc {

class Utils {
 public:
  __attribute__((format(printf, 2, 3))) static void Log(LogLevel level,
                                                        const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    detail::VLog(level, fmt, args);
    va_end(args);
  }

  // strerror(errno) without the non-thread-safe static buffer.
  static const char* Perror() {
    static thread_local char buf[128];
    return Strerror(errno, buf, sizeof(buf));
  }

  static size_t GetPageSize() {
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? static_cast<size_t>(page) : 4096;
  }

  static uint32_t MakeVer(size_t major, size_t minor) {
    return static_cast<uint32_t>((major << 16) | (minor & 0xffffu));
  }
  static size_t MajorVer(uint32_t ver) { return ver >> 16; }
  static size_t MinorVer(uint32_t ver) { return ver & 0xffffu; }

  template <size_t N, class T>
  static T RoundAlign(T num) {
    return (num + N - 1) / N * N;
  }
  template <class T>
  static T RoundAlign(T num, size_t n) {
    return (num + n - 1) / n * n;
  }

 private:
  // Handles both the GNU (returns char*) and XSI (returns int) strerror_r.
  static const char* StrerrorResult(char* r, char*) { return r; }
  static const char* StrerrorResult(int, char* buf) { return buf; }
  static const char* Strerror(int err, char* buf, size_t len) {
    buf[0] = '\0';
    return StrerrorResult(strerror_r(err, buf, len), buf);
  }
};

}  // namespace shmc
