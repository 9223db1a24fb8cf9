// shmc::Utils: the reference API's bag of static helpers (logging, create
// flags, error strings, primes, magic numbers, hex dumps, versions,
// alignment), kept with the same names and signatures so programs written
// against shm_container compile unchanged. Every allocator and container
// header includes this one, as in the reference. New code in shmc uses
// shmc::detail instead.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>

#include "shmc/global_options.h"

#define SHMC_NOT_COPYABLE_AND_MOVABLE(ClassName) \
  ClassName(const ClassName&) = delete;          \
  void operator=(const ClassName&) = delete;     \
  ClassName(ClassName&&) = delete;               \
  void operator=(ClassName&&) = delete

// Logs at error level and returns false from the enclosing function (the
// reference's macro; shmc's own code reports through last_error()).
#define SHMC_ERR_RET(...)                    \
  do {                                       \
    ::shmc::Utils::Log(::shmc::kError, __VA_ARGS__); \
    return false;                            \
  } while (0)

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

  // The same settings as the free functions in global_options.h.
  static void SetLogHandler(LogLevel level,
                            std::function<void(LogLevel, const char*)> f) {
    shmc::SetLogHandler(level, std::move(f));
  }
  static void SetDefaultCreateFlags(int flags) {
    shmc::SetDefaultCreateFlags(flags);
  }
  static int DefaultCreateFlags() { return shmc::DefaultCreateFlags(); }

  // strerror(errno), in a buffer of the calling thread.
  static const char* Perror() {
    static thread_local char buf[128];
    return Strerror(errno, buf, sizeof(buf));
  }

  // Fills array[0, num) with the num largest primes <= top, largest first;
  // false when fewer exist. As in the reference, 1 counts as the last
  // "prime", so a request that reaches the bottom gets 1 rather than fewer
  // entries (its tables use 1 as a row length of last resort).
  static bool GetPrimeArray(size_t top, size_t num, size_t array[]) {
    size_t got = 0;
    for (; top > 0 && got < num; --top) {
      if (IsPrimeOrOne(top)) array[got++] = top;
    }
    return got == num;
  }

  // The first 8 bytes of str (zero-padded) as a little-endian word: a
  // readable magic number ("LinkTab" reads as such in a hex dump).
  static uint64_t GenMagic(const char* str) {
    char bytes[8] = {};
    for (size_t i = 0; i < sizeof(bytes) && str[i] != '\0'; ++i) {
      bytes[i] = str[i];
    }
    uint64_t magic;
    std::memcpy(&magic, bytes, sizeof(magic));
    return magic;
  }

  // Hex dump of buf[0, len): two digits a byte, a space after every second
  // byte, a newline after every sixteenth and at the end. Returns a buffer
  // of the calling thread, valid until its next call; a dump longer than
  // about 8,000 characters is cut there.
  static const char* Hex(const volatile void* buf, size_t len) {
    static const char kDigits[] = "0123456789abcdef";
    static thread_local char out[8192];
    const volatile unsigned char* p =
        static_cast<const volatile unsigned char*>(buf);
    size_t pos = 0, i = 0;
    for (; i < len && pos < 8000; ++i) {
      unsigned char b = p[i];
      out[pos++] = kDigits[b >> 4];
      out[pos++] = kDigits[b & 0xf];
      if ((i + 1) % 16 == 0) {
        out[pos++] = '\n';
      } else if ((i + 1) % 2 == 0) {
        out[pos++] = ' ';
      }
    }
    if (i % 16 != 0) out[pos++] = '\n';
    out[pos] = '\0';
    return out;
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

  // Bytes that round sizeof(T) up to a multiple of N.
  template <class T, size_t N>
  static constexpr size_t Padding() {
    return sizeof(T) % N == 0 ? 0 : N - sizeof(T) % N;
  }
  template <size_t N, class T>
  static T RoundAlign(T num) {
    return (num + N - 1) / N * N;
  }
  template <class T>
  static T RoundAlign(T num, size_t n) {
    return (num + n - 1) / n * n;
  }

 private:
  static bool IsPrimeOrOne(size_t n) {
    if (n < 4) return n != 0;
    if (n % 2 == 0) return false;
    for (size_t d = 3; d <= n / d; d += 2) {
      if (n % d == 0) return false;
    }
    return true;
  }
  // Handles both the GNU (returns char*) and XSI (returns int) strerror_r.
  static const char* StrerrorResult(char* r, char*) { return r; }
  static const char* StrerrorResult(int, char* buf) { return buf; }
  static const char* Strerror(int err, char* buf, size_t len) {
    buf[0] = '\0';
    return StrerrorResult(strerror_r(err, buf, len), buf);
  }
};

}  // namespace shmc
