// Segment<Alloc>: attaches, creates and validates a shmc segment; every
// container is built on it. The protocol (docs/design.md, "Segment format"):
//
//  * The creator is whoever wins the exclusive create. It writes the whole
//    header and lets the container initialize its area, then publishes
//    `state = kStateReady` with a release store, last.
//  * Attachers load `state` with acquire and wait (bounded) for ready. A
//    creator that died before publishing leaves an abandoned segment: readers
//    get kNotReady at once; a writer allowed to create replaces it.
//  * Then each field is checked in turn and the first that differs is named in
//    the error: magic, format version, checksum, kind, layout version, header
//    size, each parameter, fingerprint, size.
//
// Segment contents are untrusted input: nothing read from the header is used
// before it has been bounds-checked against the mapped size.
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <initializer_list>
#include <utility>
#include <vector>

#include "shmc/detail/alloc_base.h"
#include "shmc/detail/alloc_errors.h"
#include "shmc/detail/hash.h"
#include "shmc/detail/process.h"
#include "shmc/detail/segment_header.h"
#include "shmc/detail/writer_lease.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"

namespace shmc {
namespace detail {

// How long an attacher waits for a live creator to publish a segment.
constexpr uint64_t kReadyWaitNs = 1000ULL * 1000 * 1000;
// Exclusive-create races retried before giving up.
constexpr int kMaxCreateRounds = 8;

enum class ParamRole {
  kLayout,    // must equal this build's value (node size, alignment, hash id)
  kGeometry,  // chosen at creation (node count); read back by readers
};

struct ParamSpec {
  const char* name;
  uint64_t value;
  ParamRole role;
};

struct SegmentSpec {
  ContainerKind kind = ContainerKind::kArray;
  uint32_t layout_version = 1;
  uint32_t header_size = sizeof(SegmentHeader);  // where the data starts
  uint64_t total_size = 0;                       // whole segment, for create
  std::vector<ParamSpec> params;
  // For create, when nonzero: only the first `reserve_bytes` have their
  // pages reserved (the container reserves the rest as it uses it,
  // Segment::Reserve). Not part of the geometry or the fingerprint.
  uint64_t reserve_bytes = 0;

  // The spec of a container whose params are all geometry (sizes chosen
  // at creation and read back by readers; no element type to match).
  static SegmentSpec Geometry(
      ContainerKind kind, uint32_t layout_version, uint64_t header_size,
      uint64_t total_size,
      std::initializer_list<std::pair<const char*, uint64_t>> params) {
    SegmentSpec spec;
    spec.kind = kind;
    spec.layout_version = layout_version;
    spec.header_size = static_cast<uint32_t>(header_size);
    spec.total_size = total_size;
    for (const auto& p : params) {
      spec.params.push_back({p.first, p.second, ParamRole::kGeometry});
    }
    return spec;
  }
};

// ABI facts folded into every fingerprint: segments are shared only between
// builds that agree on byte order, pointer width and the cache-line constant.
inline uint64_t AbiFingerprintSeed() {
  uint64_t h = kFnvOffset;
  const uint32_t endian_probe = 0x01020304;
  h = Fnv1a64(&endian_probe, sizeof(endian_probe), h);
  h = Fnv1a64U64(sizeof(void*), h);
  h = Fnv1a64U64(kCacheLine, h);
  return h;
}

inline uint64_t SpecFingerprint(const SegmentSpec& spec) {
  uint64_t h = AbiFingerprintSeed();
  h = Fnv1a64U64(static_cast<uint32_t>(spec.kind), h);
  h = Fnv1a64U64(spec.layout_version, h);
  for (const ParamSpec& p : spec.params) {
    if (p.role != ParamRole::kLayout) continue;
    h = Fnv1a64(p.name, std::strlen(p.name), h);
    h = Fnv1a64U64(p.value, h);
  }
  return h;
}

inline uint64_t HeaderChecksum(const SegmentHeader* h) {
  uint64_t sum = Fnv1a64(h, kChecksumIdentityBytes);
  return Fnv1a64(h->params, sizeof(h->params), sum);
}

constexpr uint64_t RoundUp(uint64_t n, uint64_t align) {
  return (n + align - 1) / align * align;
}

constexpr bool PowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// The value of the header's param `name` (0, and *found false, when it has
// none). Layouts read their params by name, never by position.
inline uint64_t ParamByName(const SegmentHeader& h, const char* name,
                            bool* found = nullptr) {
  uint32_t n = h.param_count < kMaxParams ? h.param_count : kMaxParams;
  for (uint32_t i = 0; i < n; ++i) {
    if (std::strncmp(h.params[i].name, name, kParamNameLen) == 0) {
      if (found != nullptr) *found = true;
      return h.params[i].value;
    }
  }
  if (found != nullptr) *found = false;
  return 0;
}

// Where an array of nodes aligned to `node_align` starts when it follows
// `offset` bytes of headers: on a cache line, or the node's own alignment
// if larger. Containers and the `shmc` tool (which knows only the params)
// both derive their layouts from it.
constexpr uint64_t NodesStart(uint64_t offset, uint64_t node_align) {
  return RoundUp(offset, node_align > kCacheLine ? node_align : kCacheLine);
}

// Plain header fields are written by the creator before the release store of
// `state`; an attacher that wants the creator pid before `state` is ready must
// read it atomically (it may be in the middle of being written).
inline uint64_t LoadRelaxed(const uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}

// A shared 8-byte word inside raw segment bytes (a ring's record header),
// stored or loaded whole; `at` must be 8-byte aligned.
inline void StoreWord(void* at, uint64_t v, bool release) {
  if (release) {
    __atomic_store_n(static_cast<uint64_t*>(at), v, __ATOMIC_RELEASE);
  } else {
    __atomic_store_n(static_cast<uint64_t*>(at), v, __ATOMIC_RELAXED);
  }
}
inline uint64_t LoadWordAcquire(const void* at) {
  return __atomic_load_n(static_cast<const uint64_t*>(at), __ATOMIC_ACQUIRE);
}

inline std::string PrintableBytes(const void* data, size_t n) {
  std::string out;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
      out += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", p[i]);
      out += buf;
    }
  }
  return out;
}

inline std::string FieldString(const char* field, size_t max) {
  return std::string(field, strnlen(field, max));
}

enum class RemoveResult {
  kRemoved,
  kAbsent,   // no such segment
  kForeign,  // exists but is not a shmc segment (of that kind): left alone
  kFailed,   // could not look at it or remove it: see the allocator errors
};

// Removes `key` only when it proves to be a shmc segment: it maps, it starts
// with the shmc magic and, when `kind` is given and the header is whole, it
// holds that kind. Empty files, device nodes and foreign data are left.
template <class Alloc>
RemoveResult RemoveOwnSegment(const std::string& key, Alloc* alloc,
                              ContainerKind kind = ContainerKind{}) {
  size_t mapped = 0;
  void* addr = alloc->Attach(key, 0, impl::kReadOnly, &mapped);
  if (addr == nullptr) {
    switch (alloc->last_errno()) {
      case impl::kErrNotExist: return RemoveResult::kAbsent;
      case impl::kErrEmpty:
      case impl::kErrNotRegular: return RemoveResult::kForeign;
      default: return RemoveResult::kFailed;
    }
  }
  const SegmentHeader* h = static_cast<const SegmentHeader*>(addr);
  bool ours = mapped >= sizeof(kSegmentMagic) &&
              std::memcmp(h->magic, kSegmentMagic, sizeof(kSegmentMagic)) ==
                  0 &&
              (kind == ContainerKind{} || mapped < sizeof(SegmentHeader) ||
               h->kind == static_cast<uint32_t>(kind));
  alloc->Detach(addr, mapped);
  if (!ours) return RemoveResult::kForeign;
  if (alloc->Unlink(key)) return RemoveResult::kRemoved;
  return alloc->last_errno() == impl::kErrNotExist ? RemoveResult::kAbsent
                                                   : RemoveResult::kFailed;
}

// Whether an allocator can build a segment under a private name and publish
// it whole (fd_alloc.h): then a key never names an incomplete segment.
template <class A, class = void>
struct CanStage : std::false_type {};
template <class A>
struct CanStage<A, std::void_t<decltype(&A::AttachStaged)>>
    : std::true_type {};

template <class Alloc>
class Segment {
 public:
  Segment() = default;
  ~Segment() { Reset(); }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  bool attached() const { return base_ != nullptr; }
  bool newly_created() const { return newly_created_; }
  bool read_only() const { return read_only_; }
  const std::string& key() const { return key_; }
  size_t mapped_size() const { return mapped_size_; }
  char* base() const { return base_; }
  SegmentHeader* header() const {
    return reinterpret_cast<SegmentHeader*>(base_);
  }
  // A param by name; validation has already checked that the header holds
  // the spec's params under their names.
  uint64_t param(const char* name) const {
    return ParamByName(*header(), name);
  }

  void Reset() {
    if (base_ != nullptr && own_lease_) ReleaseLease(header());
    own_lease_ = false;
    if (base_ != nullptr) alloc_.Detach(base_, mapped_size_);
    base_ = nullptr;
    mapped_size_ = 0;
    newly_created_ = false;
    read_only_ = false;
    key_.clear();
  }

  // Takes the writer lease (docs: detail/writer_lease.h), honouring
  // kSharedWriters in `flags`; it is released by Reset() / destruction. On
  // a live holder: kWriterBusy, the segment is detached, false. *result
  // tells whether a previous holder died (recovery may be due).
  bool TakeWriterLease(int flags, const char* who, Error* err,
                       LeaseResult* result = nullptr) {
    uint64_t holder = 0;
    LeaseResult r = AcquireLease(header(), flags & kSharedWriters, &holder);
    if (result != nullptr) *result = r;
    if (r == LeaseResult::kBusy) {
      std::string key = key_;
      Reset();
      return Fail(err, ErrorCode::kWriterBusy, 0, key, who,
                  "writer lease held by live pid %llu (one writer per "
                  "segment; kSharedWriters opts out)",
                  static_cast<unsigned long long>(holder));
    }
    own_lease_ = r != LeaseResult::kShared;
    return true;
  }

  // Flushes a file-backed segment to disk (no-op for memory-only ones).
  bool Sync() { return base_ == nullptr || alloc_.Sync(base_, mapped_size_); }

  // Reserves the pages of bytes [offset, offset + size) of a segment made
  // with SegmentSpec::reserve_bytes, before they are first written: false
  // (kNoSpace in *err, nothing written) when the system has no room, where
  // a write would have raised SIGBUS.
  // With `fresh` (the range has never held data), what a failed
  // reservation took before it stopped is given back.
  bool Reserve(uint64_t offset, uint64_t size, const char* who, Error* err,
               bool fresh = false) {
    if (base_ == nullptr || offset > mapped_size_ ||
        size > mapped_size_ - offset) {
      return Fail(err, ErrorCode::kInvalidArgument, 0, key_, who,
                  "range %" PRIu64 "+%" PRIu64 " is not in the segment",
                  offset, size);
    }
    if (alloc_.Reserve(base_ + offset, static_cast<size_t>(size))) return true;
    // Only pages wholly inside the range are given back (their neighbours
    // may hold data).
    if (fresh) alloc_.Release(base_ + offset, static_cast<size_t>(size));
    return Fail(err, ErrorCode::kNoSpace, alloc_.sys_errno(), key_, who,
                "cannot reserve %" PRIu64 " more bytes of the segment "
                "(tmpfs, disk or memory full)", size);
  }

  // Attaches read-write, creating the segment as `create_flags` allow. On a
  // fresh segment `init` runs on the whole mapping before it is published.
  //
  // `legacy`, when given, is the spec an earlier build made for the same
  // request (e.g. before a sizing rule changed): an existing segment that
  // matches it exactly is adopted as it is, *used_legacy is set, and the
  // caller binds the legacy geometry. New segments always follow `spec`.
  bool OpenForWrite(const std::string& key, const SegmentSpec& spec,
                    int create_flags, const std::function<void(char*)>& init,
                    const char* who, Error* err,
                    const SegmentSpec* legacy = nullptr,
                    bool* used_legacy = nullptr) {
    if (used_legacy != nullptr) *used_legacy = false;
    if (!CheckSpec(key, spec, true, who, err)) return false;
    uint64_t wait_deadline = MonotonicNs() + kReadyWaitNs;
    // Whether this call may create the segment. Removing a segment to
    // replace it (kCreateIfExtending) grants it: a removal is only ever
    // followed by creating the replacement, whatever the other flags.
    bool may_create = (create_flags & kCreateIfNotExist) != 0;
    for (int round = 0; round < kMaxCreateRounds; ++round) {
      size_t mapped = 0;
      void* addr = alloc_.Attach(key, 0, 0, &mapped);
      if (addr != nullptr) {
        if (!(create_flags & kAllowForeignOwner) &&
            !OwnerIsSafe(alloc_.last_object(), key, who, err)) {
          alloc_.Detach(addr, mapped);
          return false;
        }
        if (legacy != nullptr) {
          Error scratch;
          Verdict lv;
          {
            LogMute quiet;  // a mismatch here only means "not legacy"
            lv = Validate(static_cast<char*>(addr), mapped, *legacy, true,
                          key, who, &scratch);
          }
          if (lv == Verdict::kOk) {
            Adopt(key, addr, mapped, false, false);
            if (used_legacy != nullptr) *used_legacy = true;
            err->Clear();
            return true;
          }
        }
        // What is wrong with the segment stays quiet until it is known
        // whether this call gets past it (an abandoned segment replaced, a
        // smaller one extended): then it is not this call's error.
        Error found;
        Verdict v;
        {
          LogMute quiet;
          v = Validate(static_cast<char*>(addr), mapped, spec, true, key,
                       who, &found);
        }
        if (v == Verdict::kOk) {
          Adopt(key, addr, mapped, false, false);
          err->Clear();
          return true;
        }
        const SegmentHeader* h = static_cast<const SegmentHeader*>(addr);
        uint64_t old_total = mapped >= sizeof(SegmentHeader)
                                 ? h->total_size : mapped;
        alloc_.Detach(addr, mapped);
        if (v == Verdict::kAbandoned && (create_flags & kCreateIfNotExist)) {
          Log(kWarning, "%s(%s): replacing a segment its creator abandoned "
              "before publishing it (%s)\n", who, key.c_str(),
              found.message.c_str());
          if (!Remove(key, who, err)) return false;
          continue;
        }
        if (v == Verdict::kGeometry && (create_flags & kCreateIfExtending) &&
            old_total < spec.total_size) {
          Log(kWarning, "%s(%s): recreating the segment larger (%" PRIu64
              " -> %" PRIu64 " bytes) because of kCreateIfExtending: all of "
              "its data is lost\n", who, key.c_str(), old_total,
              spec.total_size);
          if (!Remove(key, who, err)) return false;
          may_create = true;
          continue;
        }
        *err = found;
        Log(kError, "%s\n", err->message.c_str());
        return false;
      }
      int ae = alloc_.last_errno();
      if (ae == impl::kErrEmpty) {
        // A reference-style creator (ShmHandle, or an older build) may be
        // sizing it: give it time. An empty file is never removed: nothing
        // in it proves it is shmc's.
        if (MonotonicNs() < wait_deadline) {
          SleepMs(1);
          --round;
          continue;
        }
        return FailAlloc(err, ae, key, who);
      }
      if (ae != impl::kErrNotExist) return FailAlloc(err, ae, key, who);
      if (!may_create) {
        return Fail(err, ErrorCode::kNotFound, alloc_.sys_errno(), key, who,
                    "no such segment and creation is not allowed "
                    "(create flags %d)", create_flags);
      }
      if (Create(key, spec, init, who, err)) {
        err->Clear();
        return true;
      }
      if (alloc_.last_errno() != impl::kErrAlreadyExist) return false;
      // Lost a create race: attach the winner's segment next round.
    }
    return Fail(err, ErrorCode::kSystem, 0, key, who,
                "gave up after %d rounds of create/attach races",
                kMaxCreateRounds);
  }

  // Attaches an existing segment read-only (or read-write when `writable`,
  // for roles that must store into the segment, such as a queue consumer).
  // Geometry params are not compared: the caller reads them back.
  bool OpenForRead(const std::string& key, const SegmentSpec& spec,
                   bool writable, const char* who, Error* err) {
    if (!CheckSpec(key, spec, false, who, err)) return false;
    uint64_t wait_deadline = MonotonicNs() + kReadyWaitNs;
    for (;;) {
      size_t mapped = 0;
      void* addr = alloc_.Attach(key, 0, writable ? 0 : impl::kReadOnly,
                                 &mapped);
      if (addr == nullptr) {
        int ae = alloc_.last_errno();
        if (ae == impl::kErrEmpty && MonotonicNs() < wait_deadline) {
          SleepMs(1);
          continue;
        }
        return FailAlloc(err, ae, key, who);
      }
      Verdict v = Validate(static_cast<char*>(addr), mapped, spec, false, key,
                           who, err);
      if (v == Verdict::kOk) {
        Adopt(key, addr, mapped, false, !writable);
        return true;
      }
      alloc_.Detach(addr, mapped);
      return false;
    }
  }

  // For readers: the container derived `expected` from the geometry params;
  // the header's total_size must agree (else the header lies).
  bool CheckTotalSize(uint64_t expected, const char* who, Error* err) {
    uint64_t total = header()->total_size;
    if (total != expected) {
      return Fail(err, ErrorCode::kCorrupted, 0, key_, who,
                  "header says %" PRIu64 " bytes but its geometry needs %"
                  PRIu64, total, expected);
    }
    return true;
  }

  // For readers, after reading the geometry params back: they must be
  // `plausible` (else kCorrupted, "impossible <what>") and describe exactly
  // the header's total_size. On failure the segment is detached.
  bool AcceptGeometry(bool plausible, uint64_t expected_total,
                      const char* what, const char* who, Error* err) {
    if (!plausible) {
      std::string key = key_;
      Reset();
      return Fail(err, ErrorCode::kCorrupted, 0, key, who, "impossible %s",
                  what);
    }
    if (!CheckTotalSize(expected_total, who, err)) {
      Reset();
      return false;
    }
    return true;
  }

  // Fail() for this segment's key, with no errno.
  __attribute__((format(printf, 5, 6))) bool FailOn(Error* err, ErrorCode code,
                                                    const char* who,
                                                    const char* fmt,
                                                    ...) const {
    char detail[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(detail, sizeof(detail), fmt, args);
    va_end(args);
    return Fail(err, code, 0, key_, who, "%s", detail);
  }

  __attribute__((format(printf, 6, 7))) static bool Fail(
      Error* err, ErrorCode code, int sys_errno, const std::string& key,
      const char* who, const char* fmt, ...) {
    char detail[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(detail, sizeof(detail), fmt, args);
    va_end(args);
    err->code = code;
    err->sys_errno = sys_errno;
    err->message = std::string(who) + "(" + key + "): " +
                   ErrorCodeName(code) + ": " + detail;
    if (sys_errno != 0) {
      err->message += " (";
      err->message += std::strerror(sys_errno);
      err->message += ")";
    }
    Log(kError, "%s\n", err->message.c_str());
    return false;
  }

 private:
  enum class Verdict { kOk, kAbandoned, kGeometry, kFatal };

  static void SleepMs(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, nullptr);
  }

  bool FailAlloc(Error* err, int ae, const std::string& key, const char* who) {
    return Fail(err, AllocErrorCode(ae), alloc_.sys_errno(), key, who, "%s",
                AllocErrorText(ae));
  }

  void Adopt(const std::string& key, void* addr, size_t mapped, bool created,
             bool read_only) {
    key_ = key;
    base_ = static_cast<char*>(addr);
    mapped_size_ = mapped;
    newly_created_ = created;
    read_only_ = read_only;
  }

  bool Remove(const std::string& key, const char* who, Error* err) {
    if (alloc_.Unlink(key) || alloc_.last_errno() == impl::kErrNotExist) {
      return true;
    }
    return Fail(err, AllocErrorCode(alloc_.last_errno()), alloc_.sys_errno(),
                key, who, "cannot remove the old segment");
  }

  bool CheckSpec(const std::string& key, const SegmentSpec& spec, bool write,
                 const char* who, Error* err) {
    if (base_ != nullptr) {
      return Fail(err, ErrorCode::kAlreadyInitialized, 0, key, who,
                  "already attached to %s", key_.c_str());
    }
    if (spec.params.size() > kMaxParams ||
        spec.header_size < sizeof(SegmentHeader)) {
      return Fail(err, ErrorCode::kInvalidArgument, 0, key, who,
                  "bad segment spec");
    }
    if (write && spec.total_size < spec.header_size) {
      return Fail(err, ErrorCode::kInvalidArgument, 0, key, who,
                  "size overflows or is smaller than the header");
    }
    return true;
  }

  // A writer adopts an existing segment only if this user owns it and no
  // one else may write it: otherwise another local user could have crafted
  // it (kAllowForeignOwner opts out).
  bool OwnerIsSafe(const impl::ObjectInfo& o, const std::string& key,
                   const char* who, Error* err) {
    if (!o.known) return true;
    uid_t me = geteuid();
    if (o.uid != me) {
      return Fail(err, ErrorCode::kPermissionDenied, 0, key, who,
                  "owned by uid %u, not by this process's uid %u: a writer "
                  "refuses another user's segment (kAllowForeignOwner "
                  "allows it)", static_cast<unsigned>(o.uid),
                  static_cast<unsigned>(me));
    }
    if (o.mode & 0002) {
      return Fail(err, ErrorCode::kPermissionDenied, 0, key, who,
                  "mode %04o lets any user write it: a writer refuses it "
                  "(chmod o-w, or kAllowForeignOwner allows it)",
                  static_cast<unsigned>(o.mode));
    }
    return true;
  }

  bool Create(const std::string& key, const SegmentSpec& spec,
              const std::function<void(char*)>& init, const char* who,
              Error* err) {
    size_t mapped = 0;
    std::string stage;
    void* addr;
    const bool sparse =
        spec.reserve_bytes != 0 && spec.reserve_bytes < spec.total_size;
    const int extra = sparse ? impl::kSparse : 0;
    if constexpr (CanStage<Alloc>::value) {
      addr = alloc_.AttachStaged(key, spec.total_size, &mapped, &stage, extra);
    } else {
      addr = alloc_.Attach(key, spec.total_size,
                           impl::kCreate | impl::kCreateExcl | extra, &mapped);
    }
    if (addr != nullptr && sparse &&
        !alloc_.Reserve(addr, static_cast<size_t>(spec.reserve_bytes))) {
      // Not even the first part fits: the segment made here goes.
      int se = alloc_.sys_errno();
      alloc_.Detach(addr, mapped);
      if constexpr (CanStage<Alloc>::value) {
        alloc_.Unlink(stage);
      } else {
        alloc_.Unlink(key);
      }
      return Fail(err, ErrorCode::kNoSpace, se, key, who,
                  "cannot reserve the first %" PRIu64 " bytes of the segment "
                  "(tmpfs, disk or memory full)", spec.reserve_bytes);
    }
    if (addr == nullptr) {
      int ae = alloc_.last_errno();
      if (ae == impl::kErrAlreadyExist) return false;
      if (ae == impl::kErrNoHugePages) {
        return Fail(err, ErrorCode::kNoHugePages, alloc_.sys_errno(), key,
                    who, "%s", HugePoolText(spec.total_size).c_str());
      }
      return FailAlloc(err, ae, key, who);
    }
    char* base = static_cast<char*>(addr);
    SegmentHeader* h = reinterpret_cast<SegmentHeader*>(base);
    // Fresh pages are zero, but HEAP/ANON callers and recreated files must
    // not inherit anything: clear the header (state stays initializing).
    std::memset(static_cast<void*>(base), 0, spec.header_size);
    std::memcpy(h->magic, kSegmentMagic, sizeof(h->magic));
    h->format_version = kFormatVersion;
    h->kind = static_cast<uint32_t>(spec.kind);
    std::strncpy(h->kind_name, KindName(spec.kind), kKindNameLen - 1);
    h->layout_version = spec.layout_version;
    h->header_size = spec.header_size;
    h->total_size = spec.total_size;
    h->fingerprint = SpecFingerprint(spec);
    __atomic_store_n(&h->creator_pid, static_cast<uint64_t>(getpid()),
                     __ATOMIC_RELAXED);
    h->create_time_ns = RealtimeNs();
    h->param_count = static_cast<uint32_t>(spec.params.size());
    for (size_t i = 0; i < spec.params.size(); ++i) {
      std::strncpy(h->params[i].name, spec.params[i].name, kParamNameLen - 1);
      h->params[i].value = spec.params[i].value;
    }
    h->header_checksum = HeaderChecksum(h);
    if (init) init(base);
    // SYNC POINT (release): publishes every header field and whatever `init`
    // wrote; paired with the acquire load in WaitReady().
    h->state.store(kStateReady, std::memory_order_release);
    if constexpr (CanStage<Alloc>::value) {
      if (!alloc_.PublishStaged(stage, key)) {
        int ae = alloc_.last_errno();
        alloc_.Detach(addr, mapped);
        if (ae == impl::kErrAlreadyExist) return false;  // lost a race
        return FailAlloc(err, ae, key, who);
      }
    }
    Adopt(key, addr, mapped, true, false);
    return true;
  }

  // Waits for `state` to become ready. Returns kOk, kAbandoned (not ready and
  // its creator is gone) or kFatal (timed out, or a garbage state word).
  Verdict WaitReady(const SegmentHeader* h, const std::string& key,
                    const char* who, Error* err) {
    uint64_t deadline = MonotonicNs() + kReadyWaitNs;
    for (;;) {
      // SYNC POINT (acquire): pairs with the creator's release in Create().
      uint32_t state = h->state.load(std::memory_order_acquire);
      if (state == kStateReady) return Verdict::kOk;
      if (state != kStateInitializing) {
        Fail(err, ErrorCode::kCorrupted, 0, key, who,
             "state word is 0x%08x, neither initializing nor ready", state);
        return Verdict::kFatal;
      }
      uint64_t creator = LoadRelaxed(&h->creator_pid);
      if (creator != 0 && !ProcessAlive(creator)) {
        Fail(err, ErrorCode::kNotReady, 0, key, who,
             "creator pid %" PRIu64 " died before the segment was ready",
             creator);
        return Verdict::kAbandoned;
      }
      if (MonotonicNs() >= deadline) {
        Fail(err, ErrorCode::kNotReady, 0, key, who,
             "not ready after %" PRIu64 " ms (creator pid %" PRIu64
             " still initializing)", kReadyWaitNs / 1000000, creator);
        // A creator that never even wrote its pid is as good as gone.
        return creator == 0 ? Verdict::kAbandoned : Verdict::kFatal;
      }
      SleepMs(1);
    }
  }

  Verdict Validate(char* base, size_t mapped, const SegmentSpec& spec,
                   bool write, const std::string& key, const char* who,
                   Error* err) {
    const SegmentHeader* h = reinterpret_cast<const SegmentHeader*>(base);
    if (mapped < sizeof(h->magic) ||
        std::memcmp(h->magic, kSegmentMagic, sizeof(h->magic)) != 0) {
      Fail(err, ErrorCode::kBadMagic, 0, key, who,
           "not a shmc segment (starts with \"%s\", expected \"shmc.seg\")",
           PrintableBytes(base, std::min<size_t>(mapped, 8)).c_str());
      return Verdict::kFatal;
    }
    if (mapped < sizeof(SegmentHeader)) {
      Fail(err, ErrorCode::kSizeMismatch, 0, key, who,
           "truncated: %zu bytes, smaller than the %zu-byte header", mapped,
           sizeof(SegmentHeader));
      return Verdict::kFatal;
    }
    Verdict ready = WaitReady(h, key, who, err);
    if (ready != Verdict::kOk) return ready;
    if (h->format_version != kFormatVersion) {
      Fail(err, ErrorCode::kVersionMismatch, 0, key, who,
           "segment format version %u, this build reads %u",
           h->format_version, kFormatVersion);
      return Verdict::kFatal;
    }
    if (h->header_checksum != HeaderChecksum(h)) {
      Fail(err, ErrorCode::kCorrupted, 0, key, who,
           "header checksum mismatch (stored %016" PRIx64 ", computed %016"
           PRIx64 ")", h->header_checksum, HeaderChecksum(h));
      return Verdict::kFatal;
    }
    if (h->kind != static_cast<uint32_t>(spec.kind)) {
      Fail(err, ErrorCode::kLayoutMismatch, 0, key, who,
           "kind: the segment holds a %s (kind %u), not a %s (kind %u)",
           FieldString(h->kind_name, kKindNameLen).c_str(), h->kind,
           KindName(spec.kind), static_cast<uint32_t>(spec.kind));
      return Verdict::kFatal;
    }
    if (h->layout_version != spec.layout_version) {
      Fail(err, ErrorCode::kVersionMismatch, 0, key, who,
           "%s layout version %u in the segment, this build uses %u",
           KindName(spec.kind), h->layout_version, spec.layout_version);
      return Verdict::kFatal;
    }
    if (h->header_size != spec.header_size) {
      Fail(err, ErrorCode::kLayoutMismatch, 0, key, who,
           "header_size: %u in the segment, %u in this build", h->header_size,
           spec.header_size);
      return Verdict::kFatal;
    }
    if (h->param_count != spec.params.size()) {
      Fail(err, ErrorCode::kLayoutMismatch, 0, key, who,
           "param_count: %u in the segment, %zu in this build",
           h->param_count, spec.params.size());
      return Verdict::kFatal;
    }
    bool geometry_differs = false;
    for (size_t i = 0; i < spec.params.size(); ++i) {
      const ParamSpec& p = spec.params[i];
      std::string name = FieldString(h->params[i].name, kParamNameLen);
      if (name != p.name) {
        Fail(err, ErrorCode::kLayoutMismatch, 0, key, who,
             "param %zu is '%s' in the segment, '%s' in this build", i,
             name.c_str(), p.name);
        return Verdict::kFatal;
      }
      uint64_t have = h->params[i].value;
      if (p.role == ParamRole::kLayout && have != p.value) {
        Fail(err, ErrorCode::kLayoutMismatch, 0, key, who,
             "%s: %" PRIu64 " in the segment, %" PRIu64 " in this program",
             p.name, have, p.value);
        return Verdict::kFatal;
      }
      if (p.role == ParamRole::kGeometry && write && have != p.value &&
          !geometry_differs) {
        geometry_differs = true;
        Fail(err, ErrorCode::kSizeMismatch, 0, key, who,
             "%s: %" PRIu64 " in the segment, %" PRIu64 " requested", p.name,
             have, p.value);
      }
    }
    if (h->fingerprint != SpecFingerprint(spec)) {
      Fail(err, ErrorCode::kLayoutMismatch, 0, key, who,
           "fingerprint: %016" PRIx64 " in the segment, %016" PRIx64
           " in this build (another ABI or cache-line constant)",
           h->fingerprint, SpecFingerprint(spec));
      return Verdict::kFatal;
    }
    if (geometry_differs) return Verdict::kGeometry;
    if (h->total_size < h->header_size || h->total_size > mapped) {
      Fail(err, ErrorCode::kSizeMismatch, 0, key, who,
           "truncated: header says %" PRIu64 " bytes, %zu are mapped",
           h->total_size, mapped);
      return Verdict::kFatal;
    }
    if (write && h->total_size != spec.total_size) {
      Fail(err, ErrorCode::kSizeMismatch, 0, key, who,
           "%" PRIu64 " bytes in the segment, %" PRIu64 " requested",
           h->total_size, spec.total_size);
      return Verdict::kGeometry;
    }
    return Verdict::kOk;
  }

  Alloc alloc_;
  std::string key_;
  char* base_ = nullptr;
  size_t mapped_size_ = 0;
  bool newly_created_ = false;
  bool read_only_ = false;
  bool own_lease_ = false;  // this object holds the writer lease
};

}  // namespace detail
}  // namespace shmc
