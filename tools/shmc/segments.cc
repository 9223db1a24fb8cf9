#include "tools/shmc/segments.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "shmc/detail/process.h"
#include "shmc/detail/segment.h"
#include "shmc/detail/writer_lease.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/svipc_shm_alloc.h"

namespace shmc_tool {

namespace sd = shmc::detail;

std::unique_ptr<shmc::impl::ShmAlloc> MakeAlloc(Backend backend) {
  switch (backend) {
    case Backend::kPosix: return std::make_unique<shmc::POSIX>();
    case Backend::kSysv: return std::make_unique<shmc::SVIPC>();
    case Backend::kFile: return std::make_unique<shmc::MAPFILE>();
  }
  return nullptr;
}

uint32_t HeaderPeek::kind() const {
  uint32_t k = header()->kind;
  return std::strcmp(sd::KindName(static_cast<sd::ContainerKind>(k)),
                     "unknown") == 0 ? 0 : k;
}

uint64_t HeaderPeek::param(const char* name, bool* found) const {
  const sd::SegmentHeader* h = header();
  uint32_t n = h->param_count < sd::kMaxParams ? h->param_count
                                               : sd::kMaxParams;
  for (uint32_t i = 0; i < n; ++i) {
    if (sd::FieldString(h->params[i].name, sd::kParamNameLen) == name) {
      if (found != nullptr) *found = true;
      return h->params[i].value;
    }
  }
  if (found != nullptr) *found = false;
  return 0;
}

HeaderPeek PeekHeader(const SegName& name) {
  HeaderPeek p;
  auto alloc = MakeAlloc(name.backend);
  size_t mapped = 0;
  void* addr = alloc->Attach(name.key, 0, shmc::impl::kReadOnly, &mapped);
  if (addr == nullptr) {
    int ae = alloc->last_errno();
    p.sys_errno = alloc->sys_errno();
    if (ae == shmc::impl::kErrNotExist) {
      p.status = HeaderPeek::kNotFound;
      p.message = name.Display() + ": no such segment";
    } else if (ae == shmc::impl::kErrEmpty ||
               ae == shmc::impl::kErrNotRegular) {
      // shmc publishes a segment only once it is sized and initialized, so
      // an empty file is never one of its own.
      p.status = HeaderPeek::kForeign;
      p.message = name.Display() + ": not a shmc segment (" +
                  (ae == shmc::impl::kErrEmpty ? "empty, 0 bytes"
                                               : "not a regular file") +
                  ")";
    } else {
      p.status = HeaderPeek::kError;
      p.message = name.Display() + ": " + sd::AllocErrorText(ae);
      if (p.sys_errno != 0) {
        p.message += std::string(" (") + std::strerror(p.sys_errno) + ")";
      }
    }
    return p;
  }
  p.mapped = mapped;
  size_t n = mapped < sizeof(p.bytes) ? mapped : sizeof(p.bytes);
  std::memcpy(p.bytes, addr, n);
  alloc->Detach(addr, mapped);
  if (n < sizeof(sd::kSegmentMagic) ||
      std::memcmp(p.bytes, sd::kSegmentMagic, sizeof(sd::kSegmentMagic))) {
    p.status = HeaderPeek::kForeign;
    p.message = name.Display() + ": not a shmc segment (starts with \"" +
                sd::PrintableBytes(p.bytes, n < 8 ? n : 8) + "\")";
    return p;
  }
  if (n < sizeof(p.bytes)) {
    p.status = HeaderPeek::kTruncated;
    p.message = name.Display() + ": truncated: " + std::to_string(mapped) +
                " bytes, smaller than the 512-byte header";
    return p;
  }
  p.status = HeaderPeek::kOk;
  return p;
}

namespace {

std::string IsoTime(uint64_t ns) {
  time_t secs = static_cast<time_t>(ns / 1000000000ULL);
  struct tm tm;
  if (gmtime_r(&secs, &tm) == nullptr) return "?";
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

Json HeaderSummary(const SegName& name, const HeaderPeek& peek) {
  const sd::SegmentHeader* h = peek.header();
  Json j = Json::object();
  j["segment"] = name.Display();
  j["kind"] = sd::FieldString(h->kind_name, sd::kKindNameLen);
  j["format_version"] = h->format_version;
  j["layout_version"] = h->layout_version;
  j["size"] = h->total_size;
  j["mapped"] = static_cast<uint64_t>(peek.mapped);
  uint32_t state = h->state.load(std::memory_order_acquire);
  j["state"] = state == sd::kStateReady ? std::string("ready")
                 : state == sd::kStateInitializing ? std::string("initializing")
                                                   : std::string("garbage");
  Json params = Json::object();
  uint32_t n = h->param_count < sd::kMaxParams ? h->param_count
                                               : sd::kMaxParams;
  for (uint32_t i = 0; i < n; ++i) {
    params[sd::FieldString(h->params[i].name, sd::kParamNameLen)] = h->params[i].value;
  }
  j["params"] = std::move(params);
  uint64_t now = sd::RealtimeNs();
  j["created"] = IsoTime(h->create_time_ns);
  j["age_s"] = now > h->create_time_ns
                     ? (now - h->create_time_ns) / 1000000000ULL : 0;
  j["creator_pid"] = h->creator_pid;
  j["creator_alive"] = sd::ProcessAlive(h->creator_pid);
  uint64_t lease = h->lease_pid.load(std::memory_order_acquire);
  Json w = Json::object();
  w["pid"] = lease;
  w["alive"] = sd::LeaseHolderAlive(h, lease);
  w["epoch"] = h->lease_epoch.load(std::memory_order_acquire);
  j["writer"] = lease == 0 ? Json() : std::move(w);
  return j;
}

std::vector<SegName> AllSegments(const std::vector<std::string>& dirs,
                                 std::string* warnings) {
  std::vector<SegName> out;
  auto scan_dir = [&](const std::string& dir, Backend backend) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) {
      *warnings += "shmc ls: cannot read " + dir + ": " +
                   std::strerror(errno) + "\n";
      return;
    }
    std::vector<std::string> names;
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      std::string path = dir + "/" + n;
      struct stat st;
      if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      names.push_back(backend == Backend::kPosix ? "/" + n : path);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) out.push_back(SegName{backend, n});
  };
  scan_dir("/dev/shm", Backend::kPosix);
  std::ifstream sysv("/proc/sysvipc/shm");
  std::string line;
  std::getline(sysv, line);  // column titles
  std::vector<long long> keys;
  while (std::getline(sysv, line)) {
    std::istringstream in(line);
    long long key = 0;
    if (in >> key && key != 0) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  for (long long k : keys) {
    // /proc shows key_t signed; keys are 32-bit patterns.
    out.push_back(SegName{Backend::kSysv,
                          std::to_string(static_cast<uint32_t>(k))});
  }
  for (const std::string& dir : dirs) scan_dir(dir, Backend::kFile);
  return out;
}

}  // namespace shmc_tool
