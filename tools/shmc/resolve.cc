#include "tools/shmc/resolve.h"

#include "shmc/detail/segment.h"
#include "shmc/shm_hash_map.h"

namespace shmc_tool {

namespace sd = shmc::detail;
using sd::ContainerKind;

namespace {

bool IsKind(const HeaderPeek& p, ContainerKind k) {
  return p.status == HeaderPeek::kOk &&
         p.kind() == static_cast<uint32_t>(k);
}

int PeekExit(const HeaderPeek& p) {
  switch (p.status) {
    case HeaderPeek::kOk: return kExitOk;
    case HeaderPeek::kTruncated: return kExitProblems;
    default: return kExitError;
  }
}

// NAME0 + NAME1 as a map's index and values, when they are.
int ResolveMap(const SegName& name, const HeaderPeek& missing,
               const PeekFn& peek, Container* out, std::string* err) {
  const SegName index = name.Suffixed(shmc::kMapIndexSuffix);
  const SegName values = name.Suffixed(shmc::kMapValuesSuffix);
  HeaderPeek p0 = peek(index);
  HeaderPeek p1 = peek(values);
  const bool links = IsKind(p1, ContainerKind::kLinkTable);
  if (IsKind(p0, ContainerKind::kHashTable) &&
      (links || IsKind(p1, ContainerKind::kExtentTable))) {
    bool found = false;
    uint64_t node_size = p0.param(sd::kParamNodeSize, &found);
    if (found && sd::MapIndexNodeOk(node_size)) {
      out->kind = links ? "hash_map" : "extent_map";
      out->segments = {index, values};
      out->peeks = {p0, p1};
      return kExitOk;
    }
  }
  if (p0.status != HeaderPeek::kNotFound ||
      p1.status != HeaderPeek::kNotFound) {
    *err = name.Display() + ": no such segment; " + index.Display() +
           " and " + values.Display() +
           " are not the index and values of one hash map";
    return kExitError;
  }
  *err = missing.message;
  return kExitError;
}

}  // namespace

int Resolve(const SegName& name, const PeekFn& peek, Container* out,
            std::string* err) {
  out->name = name;
  HeaderPeek p = peek(name);
  if (p.status == HeaderPeek::kNotFound) {
    return ResolveMap(name, p, peek, out, err);
  }
  if (p.status != HeaderPeek::kOk) {
    *err = p.message;
    return PeekExit(p);
  }
  if (p.kind() == 0) {
    *err = name.Display() + ": unknown container kind " +
           std::to_string(p.header()->kind) + " (a newer shmc made it?)";
    return kExitError;
  }
  out->kind = sd::KindName(static_cast<ContainerKind>(p.kind()));
  out->segments = {name};
  out->peeks = {p};
  if (p.kind() == static_cast<uint32_t>(ContainerKind::kSortedDir)) {
    out->kind = "sorted_array";
    for (const char* slot : {"0", "1"}) {
      // Only a sorted array's data segment (or a damaged shmc one) in a
      // slot's name is part of it; anything else there is someone else's.
      HeaderPeek d = peek(name.Suffixed(slot));
      if (!IsKind(d, ContainerKind::kSortedArray) &&
          d.status != HeaderPeek::kTruncated) {
        continue;
      }
      out->segments.push_back(name.Suffixed(slot));
      out->peeks.push_back(d);
    }
  }
  return kExitOk;
}

int Resolve(const SegName& name, Container* out, std::string* err) {
  return Resolve(name, PeekHeader, out, err);
}

int ResolveForRemoval(const SegName& name, Container* out, std::string* err) {
  int rc = Resolve(name, out, err);
  if (rc == kExitOk) return rc;
  Container d;
  d.name = name;
  d.kind = "damaged";
  HeaderPeek p = PeekHeader(name);
  if (p.status == HeaderPeek::kError) return rc;
  if (p.status != HeaderPeek::kNotFound) {
    d.segments = {name};
    d.peeks = {p};
  } else {
    for (const char* half : {shmc::kMapIndexSuffix, shmc::kMapValuesSuffix}) {
      HeaderPeek h = PeekHeader(name.Suffixed(half));
      if (h.status == HeaderPeek::kNotFound) continue;
      d.segments.push_back(name.Suffixed(half));
      d.peeks.push_back(h);
    }
  }
  if (d.segments.empty()) return rc;
  *out = std::move(d);
  err->clear();
  return kExitOk;
}

}  // namespace shmc_tool
