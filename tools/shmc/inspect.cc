#include "tools/shmc/inspect.h"

#include <sys/time.h>

#include <atomic>
#include <cinttypes>
#include <cstring>
#include <limits>
#include <memory>

#include "shmc/detail/segment.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/svipc_shm_alloc.h"
#include "tools/shmc/kinds/kind.h"

namespace shmc_tool {

namespace sd = shmc::detail;

namespace {

using kinds::FindKind;
using kinds::Findings;
using kinds::KindOps;
using kinds::Sink;

template <class Alloc>
int InfoT(const Container& c, Json* out, std::string* err) {
  Json j = Json::object();
  j["name"] = c.name.Display();
  j["kind"] = c.kind;
  Json segs = Json::array();
  for (size_t i = 0; i < c.segments.size(); ++i) {
    if (c.peeks[i].status == HeaderPeek::kOk) {
      segs.push_back(HeaderSummary(c.segments[i], c.peeks[i]));
    } else {  // e.g. a sorted array's damaged leftover data segment
      Json bad = Json::object();
      bad["segment"] = c.segments[i].Display();
      bad["note"] = c.peeks[i].message;
      segs.push_back(std::move(bad));
    }
  }
  if (const KindOps<Alloc>* k = FindKind<Alloc>(c.kind)) {
    int rc = k->info(c, &j, err);
    if (rc != kExitOk) return rc;
  } else {
    *err = c.segments[0].Display() + ": a " + c.kind +
           " segment; this shmc knows its header only";
  }
  j["segments"] = std::move(segs);
  *out = std::move(j);
  return kExitOk;
}

template <class Alloc>
int CheckT(const Container& c, bool fix, Json* out, std::string* err) {
  const KindOps<Alloc>* k = FindKind<Alloc>(c.kind);
  if (k == nullptr) {
    // Resolve admits only kinds this build knows; one without a check
    // here is a gap in the tool, not a clean segment.
    *err = c.segments[0].Display() + ": no check for a " + c.kind +
           " segment";
    return kExitError;
  }
  Findings f;
  int rc = k->check(c, fix, &f, err);
  if (rc != kExitOk) return rc;
  if (fix && !f.problems.empty() && f.fixed.empty()) {
    // Nothing could be repaired: say so rather than imply success.
    f.fixed.push_back("nothing repairable");
  }
  bool ok = f.problems.empty();
  Json j = Json::object();
  j["name"] = c.name.Display();
  j["kind"] = c.kind;
  j["ok"] = ok;
  j["problems"] = std::move(f.problems);
  if (fix) j["fixed"] = std::move(f.fixed);
  j["stats"] = std::move(f.stats);
  *out = std::move(j);
  if (ok) return kExitOk;
  // With --fix, a clean second pass means everything was repaired.
  if (fix) {
    Json again;
    std::string e2;
    rc = CheckT<Alloc>(c, false, &again, &e2);
    (*out)["after_fix_ok"] = rc == kExitOk;
    return rc;
  }
  return kExitProblems;
}

template <class Alloc>
int DumpT(const Container& c, const DumpOptions& opt,
          const std::function<void(const Json&)>& emit, std::string* err) {
  const KindOps<Alloc>* k = FindKind<Alloc>(c.kind);
  if (k == nullptr || k->dump == nullptr) {
    *err = c.segments[0].Display() + ": cannot dump a " + c.kind +
           " segment";
    return kExitError;
  }
  Sink sink{opt, emit};
  return k->dump(c, &sink, err);
}

template <class F>
int WithBackend(Backend b, const F& f) {
  switch (b) {
    case Backend::kPosix: return f(shmc::POSIX());
    case Backend::kSysv: return f(shmc::SVIPC());
    case Backend::kFile: return f(shmc::MAPFILE());
  }
  return kExitError;
}

}  // namespace

int Info(const Container& c, Json* out, std::string* err) {
  return WithBackend(c.segments[0].backend, [&](auto alloc) {
    return InfoT<decltype(alloc)>(c, out, err);
  });
}

int Check(const Container& c, bool fix, Json* out, std::string* err) {
  return WithBackend(c.segments[0].backend, [&](auto alloc) {
    return CheckT<decltype(alloc)>(c, fix, out, err);
  });
}

int Dump(const Container& c, const DumpOptions& opt,
         const std::function<void(const Json&)>& emit, std::string* err) {
  return WithBackend(c.segments[0].backend, [&](auto alloc) {
    return DumpT<decltype(alloc)>(c, opt, emit, err);
  });
}

namespace {

// Whether `rm` may remove a segment: it must prove to be shmc's. A header
// with shmc's magic (whole or truncated) does; with --force, so does a
// whole-sized header whose magic is damaged in at most two of its eight
// bytes. Empty files, device nodes and other programs' data never do.
bool Removable(const HeaderPeek& p, bool force, std::string* why) {
  if (p.status == HeaderPeek::kOk || p.status == HeaderPeek::kTruncated) {
    return true;
  }
  if (p.status != HeaderPeek::kForeign) {
    *why = p.message;
    return false;
  }
  int differ = 0;
  for (size_t i = 0; i < sizeof(sd::kSegmentMagic); ++i) {
    differ += p.bytes[i] != static_cast<unsigned char>(sd::kSegmentMagic[i]);
  }
  bool damaged_magic = p.mapped >= sizeof(sd::SegmentHeader) && differ <= 2;
  if (force && damaged_magic) return true;
  *why = p.message + (damaged_magic
                          ? "; its magic is damaged: --force removes it"
                          : "; left alone");
  return false;
}

// Unlinks a segment `rm` has judged removable. One whose magic was intact
// when peeked is checked again as it is unlinked (RemoveOwnSegment), so a
// file put in its place meanwhile is left alone.
bool Unlink(const SegName& s, const HeaderPeek& p, std::string* err) {
  auto alloc = MakeAlloc(s.backend);
  bool ok;
  if (p.status == HeaderPeek::kForeign) {  // --force, damaged magic
    ok = alloc->Unlink(s.key);
  } else {
    sd::RemoveResult r = sd::RemoveOwnSegment(s.key, alloc.get());
    if (r == sd::RemoveResult::kForeign) {
      *err = s.Display() + ": changed since it was read: not a shmc "
             "segment now; left alone";
      return false;
    }
    ok = r != sd::RemoveResult::kFailed;
  }
  if (!ok) {
    *err = s.Display() + ": cannot remove: " +
           sd::AllocErrorText(alloc->last_errno());
    if (alloc->sys_errno() != 0) {
      *err += std::string(" (") + std::strerror(alloc->sys_errno()) + ")";
    }
  }
  return ok;
}

}  // namespace

int Remove(const Container& c, bool force, Json* out, std::string* err) {
  // Refuse to pull a segment from under a live writer unless forced.
  for (size_t i = 0; i < c.segments.size(); ++i) {
    if (c.peeks[i].status != HeaderPeek::kOk) continue;  // no lease to read
    const sd::SegmentHeader* h = c.peeks[i].header();
    uint64_t pid = h->lease_pid.load(std::memory_order_acquire);
    if (!force && sd::LeaseHolderAlive(h, pid)) {
      *err = c.segments[i].Display() + ": its writer (pid " +
             std::to_string(pid) + ") is alive; stop it first, or use "
             "--force (attached processes keep their mapping)";
      return kExitError;
    }
  }
  Json removed = Json::array();
  Json left = Json::array();
  std::vector<size_t> doomed;
  for (size_t i = 0; i < c.segments.size(); ++i) {
    std::string why;
    if (Removable(c.peeks[i], force, &why)) {
      doomed.push_back(i);
    } else {
      Json l = Json::object();
      l["segment"] = c.segments[i].Display();
      l["why"] = why;
      left.push_back(std::move(l));
    }
  }
  if (doomed.empty() || (!force && !left.empty())) {
    // Without --force a container goes whole or not at all.
    *err = c.name.Display() + (doomed.empty()
                                   ? ": nothing that proves to be shmc's"
                                   : ": not removed, not all of it proves "
                                     "to be shmc's (--force removes the "
                                     "rest)");
    for (const Json& l : left) {
      *err += "; " + Plain(*Find(l, "why"));
    }
    return kExitError;
  }
  for (size_t i : doomed) {
    if (!Unlink(c.segments[i], c.peeks[i], err)) return kExitError;
    removed.push_back(c.segments[i].Display());
  }
  Json j = Json::object();
  j["name"] = c.name.Display();
  j["kind"] = c.kind;
  j["removed"] = std::move(removed);
  // A segment left behind is an operand that failed, as for rm(1).
  const bool all = left.empty();
  if (!all) {
    for (const Json& l : left) {  // a warning: the rest is done
      if (!err->empty()) *err += "; ";
      *err += "left " + Plain(*Find(l, "segment")) + ": " +
              Plain(*Find(l, "why"));
    }
    j["left"] = std::move(left);
  }
  *out = std::move(j);
  return all ? kExitOk : kExitError;
}

}  // namespace shmc_tool
