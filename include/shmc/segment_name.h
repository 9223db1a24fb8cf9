// How shmc's tools name a segment, one syntax for all of them (`shmc`,
// `shmkv --name`): BACKEND:KEY, where BACKEND is
//   posix  a shm_open name, "posix:/name" (or "posix:name")
//   sysv   a System V key, "sysv:53670", "sysv:0xd1a6", "sysv:0150646"
//   file   a path, "file:/var/lib/shmkv.seg"
// and KEY is what the allocator of that backend takes (shmc::POSIX,
// shmc::SVIPC, shmc::MAPFILE). A container made with InitForWrite(KEY) is
// named by that KEY; a hash map's two segments are KEY + "0" and KEY + "1".
#pragma once

#include <string>

#include "shmc/svipc_shm_alloc.h"

namespace shmc {

enum class SegmentBackend { kPosix, kSysv, kFile };

struct SegmentName {
  SegmentBackend backend = SegmentBackend::kPosix;
  std::string key;  // as the backend's allocator takes it

  // The name as the tools print and take it: "posix:/x", "sysv:123", ...
  std::string Display() const {
    switch (backend) {
      case SegmentBackend::kPosix: return "posix:" + key;
      case SegmentBackend::kSysv: return "sysv:" + key;
      case SegmentBackend::kFile: return "file:" + key;
    }
    return key;
  }
  SegmentName Suffixed(const char* suffix) const {
    return SegmentName{backend, key + suffix};
  }
  // Whether `arg` starts with a backend ("posix:", "sysv:", "file:").
  static bool HasBackend(const std::string& arg) {
    for (const char* b : {"posix:", "sysv:", "file:"}) {
      if (arg.compare(0, std::string(b).size(), b) == 0) return true;
    }
    return false;
  }

  // Parses BACKEND:KEY. False, with a message saying what is wrong, for a
  // missing or unknown backend, an empty key, a POSIX name of more than
  // one component, or a SysV key that is not a number 1..0xffffffff.
  static bool Parse(const std::string& arg, SegmentName* out,
                    std::string* err) {
    size_t colon = arg.find(':');
    if (colon == std::string::npos) {
      *err = "'" + arg + "': name a segment as posix:NAME, sysv:KEY or "
             "file:PATH";
      return false;
    }
    std::string scheme = arg.substr(0, colon);
    std::string rest = arg.substr(colon + 1);
    if (rest.empty()) {
      *err = "'" + arg + "': nothing after '" + scheme + ":'";
      return false;
    }
    if (scheme == "posix") {
      std::string name;
      if (rest[0] != '/') name = "/";
      name += rest;
      if (name.size() < 2 || name.find('/', 1) != std::string::npos ||
          name.size() > 255) {
        *err = "'" + arg + "': a POSIX name is one component: posix:/name";
        return false;
      }
      *out = SegmentName{SegmentBackend::kPosix, name};
      return true;
    }
    if (scheme == "sysv") {
      key_t k;
      if (!impl::ParseSysvKey(rest, &k)) {
        *err = "'" + arg + "': a SysV key is a number 1..0xffffffff "
               "(decimal, 0octal or 0xhex)";
        return false;
      }
      *out = SegmentName{SegmentBackend::kSysv, rest};
      return true;
    }
    if (scheme == "file") {
      *out = SegmentName{SegmentBackend::kFile, rest};
      return true;
    }
    *err = "'" + arg + "': unknown backend '" + scheme +
           "' (posix, sysv or file)";
    return false;
  }
};

}  // namespace shmc
