// Process-wide options of the reference API: the log handler and the default
// create flags. These are the only mutable globals in shmc; both are meant to
// be set once, before any container is initialized (they are not guarded by a
// lock, exactly as in the reference).
#pragma once

#include <sys/types.h>

#include <cstdarg>
#include <cstdio>
#include <functional>
#include <utility>

namespace shmc {

enum LogLevel {
  kError = 1,
  kWarning,
  kInfo,
  kDebug,
};

// Bit flags deciding when InitForWrite may create a segment.
enum ShmCreateFlag {
  kNoCreate = 0x0,           // attach an existing segment only
  kCreateIfNotExist = 0x1,   // create the segment when it does not exist
  kCreateIfExtending = 0x2,  // recreate (losing its data) a segment that is
                             // smaller than requested; logged as a warning
  // shmc addition: skip the writer lease, for programs that serialize their
  // writer processes themselves (the reference's behaviour). Crash recovery
  // then runs only when the last lease holder is gone.
  kSharedWriters = 0x100,
  // shmc addition: let a writer adopt an existing segment that another user
  // owns or that others may write (refused by default: such a segment may
  // have been crafted to attack a privileged writer).
  kAllowForeignOwner = 0x200,
  // shmc addition: a ShmLinkTable created with it reserves its pool's
  // memory in steps as values fill it (2 MiB at a time), not all at once;
  // a step the system cannot reserve fails the write that needed it
  // (kNoSpace) instead of raising SIGBUS later. Other containers ignore it.
  kGrowInSteps = 0x400,
};

namespace detail {

struct GlobalOptions {
  int log_level = 0;  // nothing is logged until a handler is installed
  std::function<void(LogLevel, const char*)> log_func;
  int create_flags = kCreateIfNotExist;
  mode_t segment_mode = 0600;
};

inline GlobalOptions& Options() {
  static GlobalOptions options;
  return options;
}

// Depth of LogMute scopes on this thread.
inline int& LogMuteDepth() {
  thread_local int depth = 0;
  return depth;
}

// Silences this thread's logging for a scope: for speculative attempts whose
// failure is expected and handled (the caller logs the final outcome).
class LogMute {
 public:
  LogMute() { ++LogMuteDepth(); }
  ~LogMute() { --LogMuteDepth(); }
  LogMute(const LogMute&) = delete;
  LogMute& operator=(const LogMute&) = delete;
};

inline void VLog(LogLevel level, const char* fmt, va_list args) {
  GlobalOptions& o = Options();
  if (level > o.log_level || !o.log_func || LogMuteDepth() > 0) return;
  char buf[2048];
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  o.log_func(level, buf);
}

__attribute__((format(printf, 2, 3))) inline void Log(LogLevel level,
                                                      const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  VLog(level, fmt, args);
  va_end(args);
}

}  // namespace detail

// Only messages with a level <= `log_level` reach `log_func`.
inline void SetLogHandler(LogLevel log_level,
                          std::function<void(LogLevel, const char*)> log_func) {
  detail::Options().log_level = log_level;
  detail::Options().log_func = std::move(log_func);
}

// Bit-OR of ShmCreateFlag used by every InitForWrite (default
// kCreateIfNotExist).
inline void SetDefaultCreateFlags(int create_flags) {
  detail::Options().create_flags = create_flags;
}

inline int DefaultCreateFlags() { return detail::Options().create_flags; }

// shmc addition: the permission bits (0..0777) every allocator gives the
// segments it creates from now on, unless its own set_mode() says otherwise
// (default 0600: the data is the process's memory). The mode is applied
// exactly, on every backend: the process umask does not reduce it.
inline void SetDefaultSegmentMode(mode_t mode) {
  detail::Options().segment_mode = mode & 0777;
}

inline mode_t DefaultSegmentMode() { return detail::Options().segment_mode; }

}  // namespace shmc
