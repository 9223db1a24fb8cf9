// Error reporting shared by every container: a failed call leaves a code, the
// errno of the system call that failed (0 when none did) and a sentence for
// people. The codes are documented in docs/errors.md.
//
// Each Init* call's comment lists what its last_error() can hold, by these
// two sets plus its own codes:
//  * attach errors, any call that maps an existing segment: kNotFound,
//    kPermissionDenied, kInvalidArgument (a bad key), kBadMagic,
//    kVersionMismatch, kLayoutMismatch, kSizeMismatch (truncated),
//    kNotReady, kCorrupted, kSystem;
//  * create errors, a writer's call that may also make the segment (as the
//    default create flags allow): the attach errors, kAlreadyExists,
//    kNoSpace, kNoHugePages (SVIPC_HugeTLB), kSizeMismatch (another
//    geometry: a different size or capacity asked);
//  * kWriterBusy from every call that takes the writer lease: another live
//    process holds it (kSharedWriters opts out).
// A call that succeeds leaves last_error() clear (kOk).
#pragma once

#include <string>

namespace shmc {

enum class ErrorCode : int {
  kOk = 0,
  kNotFound = 1,          // no segment under that key
  kAlreadyExists = 2,     // exclusive create found a segment
  kPermissionDenied = 3,  // the OS refused access (EACCES/EPERM)
  kNoSpace = 4,           // /dev/shm, the disk or memory is full
  kNoHugePages = 5,       // the hugepage pool cannot back the segment
  kBadMagic = 6,          // not a shmc segment
  kVersionMismatch = 7,   // a shmc segment of another format/layout version
  kLayoutMismatch = 8,    // another kind, node type or layout parameter
  kSizeMismatch = 9,      // another geometry, or a truncated segment
  kNotReady = 10,         // the creator has not finished (or died) initializing
  kCorrupted = 11,        // header or contents fail their consistency checks
  kInvalidArgument = 12,  // bad key, zero size, size overflow, ...
  kSystem = 13,           // another system-call failure (see sys_errno)
  kAlreadyInitialized = 14,  // Init* called twice on one object
  kNotInitialized = 15,      // the container was used before Init*
  kWriterBusy = 16,          // another live process holds the writer lease
  kTimeout = 17,             // a bounded wait ran out (e.g. a reader's pin)
  kNoSlot = 18,              // every per-process slot is held by a live one
};

// Stable lower-case name of a code, e.g. "layout_mismatch".
inline const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kAlreadyExists: return "already_exists";
    case ErrorCode::kPermissionDenied: return "permission_denied";
    case ErrorCode::kNoSpace: return "no_space";
    case ErrorCode::kNoHugePages: return "no_hugepages";
    case ErrorCode::kBadMagic: return "bad_magic";
    case ErrorCode::kVersionMismatch: return "version_mismatch";
    case ErrorCode::kLayoutMismatch: return "layout_mismatch";
    case ErrorCode::kSizeMismatch: return "size_mismatch";
    case ErrorCode::kNotReady: return "not_ready";
    case ErrorCode::kCorrupted: return "corrupted";
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kSystem: return "system";
    case ErrorCode::kAlreadyInitialized: return "already_initialized";
    case ErrorCode::kNotInitialized: return "not_initialized";
    case ErrorCode::kWriterBusy: return "writer_busy";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kNoSlot: return "no_slot";
  }
  return "unknown";
}

struct Error {
  ErrorCode code = ErrorCode::kOk;
  int sys_errno = 0;    // errno of the failed system call, 0 if none
  std::string message;  // what failed, on which key, and why

  bool ok() const { return code == ErrorCode::kOk; }
  void Clear() {
    code = ErrorCode::kOk;
    sys_errno = 0;
    message.clear();
  }
};

}  // namespace shmc
