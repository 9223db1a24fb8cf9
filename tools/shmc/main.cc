// shmc: see, check, dump and remove shmc segments (docs/cli.md).
//
//   shmc ls [--json] [--all] [--dir DIR]...
//   shmc info SEG [--json]
//   shmc check SEG [--fix] [--json]
//   shmc dump SEG [--limit N] [--format json|hex]
//   shmc rm SEG [--force] [--json]
//
// Exit codes: 0 ok, 1 error, 2 usage, 3 problems found. Read-only unless
// `rm` or `check --fix` is given.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shmc/detail/segment_header.h"
#include "shmc/detail/writer_lease.h"
#include "shmc/global_options.h"
#include "shmc/shm_hash_map.h"
#include "shmc/version.h"
#include "tools/shmc/inspect.h"
#include "tools/shmc/json.h"
#include "tools/shmc/resolve.h"
#include "tools/shmc/segments.h"

namespace shmc_tool {
namespace {

const char kUsage[] =
    "usage: shmc COMMAND [ARGS]\n"
    "\n"
    "  ls [--json] [--all] [--dir DIR]...   list shmc segments (POSIX, SysV,\n"
    "                                       and files in each DIR)\n"
    "  info SEG [--json]                    kind, layout, fill, writer lease\n"
    "  check SEG [--fix] [--json]           full integrity check; --fix\n"
    "                                       repairs what can be repaired\n"
    "  dump SEG [--limit N] [--format json|hex]\n"
    "                                       records as JSON lines\n"
    "  rm SEG [--force] [--json]            remove a container's segments\n"
    "\n"
    "SEG is posix:NAME, sysv:KEY or file:PATH: a segment, or a container by\n"
    "the key given to its InitForWrite (a hash map KEY is KEY0 + KEY1).\n"
    "Exit codes: 0 ok, 1 error, 2 usage, 3 problems found.\n";

int Usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "shmc: %s\n", why.c_str());
  std::fputs(kUsage, stderr);
  return kExitUsage;
}

struct Args {
  std::string command;
  std::vector<std::string> positional;
  bool json = false, all = false, fix = false, force = false;
  std::vector<std::string> dirs;
  size_t limit = 0;
  std::string format = "json";
};

// Flags allowed per command.
bool Allowed(const std::string& cmd, const std::string& flag) {
  static const std::map<std::string, std::vector<std::string>> kFlags = {
      {"ls", {"--json", "--all", "--dir"}},
      {"info", {"--json"}},
      {"check", {"--json", "--fix"}},
      {"dump", {"--limit", "--format"}},
      {"rm", {"--json", "--force"}},
  };
  auto it = kFlags.find(cmd);
  if (it == kFlags.end()) return false;
  for (const std::string& f : it->second) {
    if (f == flag) return true;
  }
  return false;
}

bool ParseArgs(int argc, char** argv, Args* a, std::string* why) {
  a->command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      a->positional.push_back(arg);
      continue;
    }
    std::string value;
    size_t eq = arg.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (!Allowed(a->command, arg)) {
      *why = "'" + arg + "' is not an option of '" + a->command + "'";
      return false;
    }
    bool takes_value = arg == "--dir" || arg == "--limit" ||
                       arg == "--format";
    if (takes_value && !has_value) {
      if (i + 1 >= argc) {
        *why = arg + " needs a value";
        return false;
      }
      value = argv[++i];
    } else if (!takes_value && has_value) {
      *why = arg + " takes no value";
      return false;
    }
    if (arg == "--json") a->json = true;
    if (arg == "--all") a->all = true;
    if (arg == "--fix") a->fix = true;
    if (arg == "--force") a->force = true;
    if (arg == "--dir") a->dirs.push_back(value);
    if (arg == "--format") {
      if (value != "json" && value != "hex") {
        *why = "--format is json or hex";
        return false;
      }
      a->format = value;
    }
    if (arg == "--limit") {
      char* end = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-') {
        *why = "--limit takes a whole number (0: no limit)";
        return false;
      }
      a->limit = static_cast<size_t>(n);
    }
  }
  return true;
}

void Print(const Json& j, bool json) {
  std::string s = json ? Line(j) + "\n" : Text(j);
  std::fwrite(s.data(), 1, s.size(), stdout);
}

std::string Human(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f%s" : "%.1f%s", v, units[u]);
  return buf;
}

// How `ls` shows a segment: SysV keys in hex, as ipcs shows them (any
// form of the key is taken back by the other commands).
std::string ListedName(const SegName& n) {
  key_t k;
  if (n.backend != Backend::kSysv || !shmc::impl::ParseSysvKey(n.key, &k)) {
    return n.Display();
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "sysv:0x%08x", static_cast<uint32_t>(k));
  return buf;
}

int List(const Args& a) {
  if (!a.positional.empty()) return Usage("ls takes no segment name");
  std::string warnings;
  std::vector<SegName> names = AllSegments(a.dirs, &warnings);
  std::fputs(warnings.c_str(), stderr);
  std::vector<SegName> listed;
  std::map<std::string, HeaderPeek> peeks;
  for (const SegName& n : names) {
    HeaderPeek p = PeekHeader(n);
    if (p.status != HeaderPeek::kOk && !a.all) continue;
    peeks[n.Display()] = p;
    listed.push_back(n);
  }
  // The resolver's rule over the peeks taken: a segment that is part of
  // a container another segment names (a map's values, a sorted array's
  // data) is listed with it, not on its own.
  const PeekFn peek = [&peeks](const SegName& n) {
    auto it = peeks.find(n.Display());
    return it != peeks.end() ? it->second : HeaderPeek();
  };
  std::vector<Container> containers(listed.size());
  std::set<std::string> member;
  const std::string index_suffix = shmc::kMapIndexSuffix;
  for (size_t i = 0; i < listed.size(); ++i) {
    const SegName& n = listed[i];
    const HeaderPeek& p = peeks[n.Display()];
    const std::string display = n.Display();
    Container& c = containers[i];
    std::string err;
    if (p.status == HeaderPeek::kOk &&
        p.kind() == static_cast<uint32_t>(shmc::detail::ContainerKind::kHashTable) &&
        display.size() > index_suffix.size() &&
        display.compare(display.size() - index_suffix.size(),
                        index_suffix.size(), index_suffix) == 0) {
      // NAME0 may be a map's index: the map is named NAME.
      SegName base = n;
      base.key.resize(base.key.size() - index_suffix.size());
      Container m;
      if (Resolve(base, peek, &m, &err) == kExitOk &&
          (m.kind == "hash_map" || m.kind == "extent_map")) {
        c = std::move(m);
      }
    }
    if (c.segments.empty() && p.status == HeaderPeek::kOk) {
      Resolve(n, peek, &c, &err);
    }
    if (c.segments.empty()) {  // not a shmc header: the segment alone
      c.name = n;
      c.segments = {n};
      c.peeks = {p};
    }
    for (size_t k = 1; k < c.segments.size(); ++k) {
      member.insert(c.segments[k].Display());
    }
  }
  Json rows = Json::array();
  for (size_t i = 0; i < listed.size(); ++i) {
    const Container& c = containers[i];
    if (member.count(listed[i].Display()) != 0) continue;
    const HeaderPeek& first = c.peeks[0];
    Json row = Json::object();
    if (first.status != HeaderPeek::kOk) {
      row["name"] = ListedName(c.name);
      row["kind"] = first.status == HeaderPeek::kForeign ? "foreign"
                      : first.status == HeaderPeek::kTruncated
                          ? "truncated" : "unreadable";
      row["size"] = static_cast<uint64_t>(first.mapped);
      row["note"] = first.message;
      rows.push_back(std::move(row));
      continue;
    }
    Json summary = HeaderSummary(c.segments[0], first);
    std::string kind = c.kind.empty() ? Plain(*Find(summary, "kind")) : c.kind;
    uint64_t size = 0;
    Json segments = Json::array();
    for (size_t k = 0; k < c.segments.size(); ++k) {
      if (c.peeks[k].status == HeaderPeek::kOk) {
        size += c.peeks[k].header()->total_size;
      } else {
        size += c.peeks[k].mapped;
      }
      segments.push_back(ListedName(c.segments[k]));
    }
    if (kind == "hash_map") {
      // The map's writer lease lives in its values segment.
      summary["writer"] = *Find(HeaderSummary(c.segments[1], c.peeks[1]), "writer");
    }
    // A map keeps the key its program gave (its segments are that key
    // with a digit appended); a lone SysV segment shows its key in hex.
    std::string display =
        kind == "hash_map" ? c.name.Display() : ListedName(c.segments[0]);
    row["name"] = display;
    row["backend"] = display.substr(0, display.find(':'));
    row["kind"] = kind;
    row["size"] = size;
    row["creator_pid"] = *Find(summary, "creator_pid");
    row["age_s"] = *Find(summary, "age_s");
    row["writer"] = *Find(summary, "writer");
    row["segments"] = std::move(segments);
    rows.push_back(std::move(row));
  }
  if (a.json) {
    Print(rows, true);
    return kExitOk;
  }
  // Names wider than the column widen it, so every row stays aligned.
  int width = 32;
  for (const Json& row : rows) {
    width = std::max(width, static_cast<int>(Plain(*Find(row, "name")).size()));
  }
  std::printf("%-*s %-12s %10s %8s %9s  %s\n", width, "NAME", "KIND", "SIZE",
              "CREATOR", "AGE", "WRITER");
  for (const Json& row : rows) {
    const Json* pid = Find(row, "creator_pid");
    const Json* age = Find(row, "age_s");
    const Json* w = Find(row, "writer");
    std::string writer = "-";
    if (w != nullptr && w->is_object()) {
      writer = Plain(*Find(*w, "pid")) +
               (Plain(*Find(*w, "alive")) == "true" ? " (alive)" : " (dead)");
    } else if (const Json* note = Find(row, "note")) {
      writer = Plain(*note);
    }
    uint64_t size = std::strtoull(Plain(*Find(row, "size")).c_str(),
                                  nullptr, 10);
    std::printf("%-*s %-12s %10s %8s %9s  %s\n", width,
                Plain(*Find(row, "name")).c_str(),
                Plain(*Find(row, "kind")).c_str(), Human(size).c_str(),
                pid ? Plain(*pid).c_str() : "-",
                age ? (Plain(*age) + "s").c_str() : "-", writer.c_str());
  }
  return kExitOk;
}

// The one segment name a command takes, resolved to its container: the
// exit code, with *err saying why when it is not kExitOk (a usage error
// has been printed already).
int ResolveOne(const Args& a, SegName* name, Container* c, std::string* err) {
  if (a.positional.size() != 1) {
    return Usage(a.command + " takes exactly one segment name");
  }
  if (!ParseSegName(a.positional[0], name, err)) return Usage(*err);
  return Resolve(*name, c, err);
}

int OneSegment(const Args& a, Container* c) {
  SegName name;
  std::string err;
  int rc = ResolveOne(a, &name, c, &err);
  if (rc != kExitOk && rc != kExitUsage) {
    std::fprintf(stderr, "shmc %s: %s\n", a.command.c_str(), err.c_str());
  }
  return rc;
}

// `rm` resolves a damaged container too: removing it is often the point.
// Remove() then takes only the segments that prove to be shmc's.
int ResolveForRemoval(const Args& a, Container* c) {
  if (a.positional.size() != 1) {
    return Usage(a.command + " takes exactly one segment name");
  }
  SegName name;
  std::string err;
  if (!ParseSegName(a.positional[0], &name, &err)) return Usage(err);
  int rc = shmc_tool::ResolveForRemoval(name, c, &err);
  if (rc != kExitOk) std::fprintf(stderr, "shmc rm: %s\n", err.c_str());
  return rc;
}

int Run(int argc, char** argv) {
  if (argc < 2) return Usage("");
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    std::printf("shmc %s\n", SHMC_VERSION_STRING);
    return kExitOk;
  }
  Args a;
  std::string why;
  if (cmd != "ls" && cmd != "info" && cmd != "check" && cmd != "dump" &&
      cmd != "rm") {
    return Usage("unknown command '" + cmd + "'");
  }
  if (!ParseArgs(argc, argv, &a, &why)) return Usage(why);
  if (cmd == "ls") return List(a);
  Container c;
  std::string err;
  int rc = cmd == "rm" ? ResolveForRemoval(a, &c) : OneSegment(a, &c);
  if (rc != kExitOk) return rc;
  Json out;
  if (cmd == "info") {
    rc = Info(c, &out, &err);
  } else if (cmd == "check") {
    rc = Check(c, a.fix, &out, &err);
  } else if (cmd == "rm") {
    rc = Remove(c, a.force, &out, &err);
  } else {
    DumpOptions opt;
    opt.limit = a.limit;
    opt.hex = a.format == "hex";
    rc = Dump(c, opt, [](const Json& j) { Print(j, true); }, &err);
    std::fflush(stdout);
  }
  if (!err.empty()) std::fprintf(stderr, "shmc %s: %s\n", cmd.c_str(),
                                 err.c_str());
  if (out.is_null() == false) Print(out, a.json);
  return rc;
}

}  // namespace
}  // namespace shmc_tool

int main(int argc, char** argv) {
  // Errors come back in shmc::Error and are printed once, by the tool;
  // warnings (e.g. a recovery done by check --fix) go to stderr.
  shmc::SetLogHandler(shmc::kWarning, [](shmc::LogLevel level,
                                         const char* msg) {
    if (level == shmc::kWarning) std::fprintf(stderr, "shmc: %s", msg);
  });
  // Never create a segment: a name that vanished is an error.
  shmc::SetDefaultCreateFlags(0);
  return shmc_tool::Run(argc, argv);
}
