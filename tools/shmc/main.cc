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
#include <string>
#include <vector>

#include "shmc/detail/segment_header.h"
#include "shmc/detail/writer_lease.h"
#include "shmc/global_options.h"
#include "shmc/shm_hash_map.h"
#include "shmc/version.h"
#include "tools/shmc/inspect.h"
#include "tools/shmc/json.h"
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
  std::string s = json ? j.Dump() + "\n" : j.Text();
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
  struct Entry {
    SegName name;
    HeaderPeek peek;
  };
  std::vector<Entry> entries;
  std::map<std::string, size_t> by_name;
  for (const SegName& n : names) {
    Entry e{n, PeekHeader(n)};
    if (e.peek.status != HeaderPeek::kOk && !a.all) continue;
    by_name[n.Display()] = entries.size();
    entries.push_back(e);
  }
  Json rows = Json::Array();
  std::vector<bool> merged(entries.size(), false);
  // A sorted array's data segments NAME0/NAME1 are listed with NAME.
  const uint32_t kDir =
      static_cast<uint32_t>(shmc::detail::ContainerKind::kSortedDir);
  const uint32_t kData =
      static_cast<uint32_t>(shmc::detail::ContainerKind::kSortedArray);
  std::map<size_t, std::vector<size_t>> sorted_data;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].peek.status != HeaderPeek::kOk ||
        entries[i].peek.kind() != kDir) {
      continue;
    }
    for (const char* slot : {"0", "1"}) {
      auto it = by_name.find(entries[i].name.Display() + slot);
      if (it == by_name.end() ||
          entries[it->second].peek.status != HeaderPeek::kOk ||
          entries[it->second].peek.kind() != kData) {
        continue;
      }
      merged[it->second] = true;
      sorted_data[i].push_back(it->second);
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (merged[i]) continue;
    const Entry& e = entries[i];
    Json row = Json::Object();
    if (e.peek.status != HeaderPeek::kOk) {
      row.Set("name", ListedName(e.name));
      row.Set("kind", e.peek.status == HeaderPeek::kForeign ? "foreign"
                      : e.peek.status == HeaderPeek::kTruncated
                          ? "truncated" : "unreadable");
      row.Set("size", static_cast<uint64_t>(e.peek.mapped));
      row.Set("note", e.peek.message);
      rows.Push(std::move(row));
      continue;
    }
    Json summary = HeaderSummary(e.name, e.peek);
    std::string kind = summary.Get("kind")->Dump();
    kind = kind.substr(1, kind.size() - 2);
    std::string display = e.name.Display();
    uint64_t size = e.peek.header()->total_size;
    Json segments = Json::Array();
    segments.Push(ListedName(e.name));
    // A map's index NAME0 beside its values NAME1 is listed as NAME.
    const std::string index_suffix = shmc::kMapIndexSuffix;
    if (kind == "hash_table" && display.size() > index_suffix.size() &&
        display.compare(display.size() - index_suffix.size(),
                        index_suffix.size(), index_suffix) == 0) {
      std::string sib = display.substr(0, display.size() - index_suffix.size()) +
                        shmc::kMapValuesSuffix;
      auto it = by_name.find(sib);
      if (it != by_name.end() && entries[it->second].peek.status ==
              HeaderPeek::kOk && entries[it->second].peek.kind() ==
              static_cast<uint32_t>(shmc::detail::ContainerKind::kLinkTable)) {
        merged[it->second] = true;
        kind = "hash_map";
        display.resize(display.size() - index_suffix.size());
        size += entries[it->second].peek.header()->total_size;
        segments.Push(ListedName(entries[it->second].name));
        // The map's writer lease lives in its values segment.
        summary.Set("writer", *HeaderSummary(entries[it->second].name,
                                             entries[it->second].peek)
                                   .Get("writer"));
      }
    }
    if (e.peek.kind() == kDir) {
      kind = "sorted_array";
      for (size_t d : sorted_data[i]) {
        size += entries[d].peek.header()->total_size;
        segments.Push(ListedName(entries[d].name));
      }
    }
    // A map keeps the key its program gave (its segments are that key
    // with a digit appended); a lone SysV segment shows its key in hex.
    if (kind != "hash_map") display = ListedName(e.name);
    row.Set("name", display);
    row.Set("backend", display.substr(0, display.find(':')));
    row.Set("kind", kind);
    row.Set("size", size);
    row.Set("creator_pid", *summary.Get("creator_pid"));
    row.Set("age_s", *summary.Get("age_s"));
    row.Set("writer", *summary.Get("writer"));
    row.Set("segments", std::move(segments));
    rows.Push(std::move(row));
  }
  if (a.json) {
    Print(rows, true);
    return kExitOk;
  }
  // Names wider than the column widen it, so every row stays aligned.
  int width = 32;
  for (const Json& row : rows.items()) {
    width = std::max(width, static_cast<int>(row.Get("name")->Plain().size()));
  }
  std::printf("%-*s %-12s %10s %8s %9s  %s\n", width, "NAME", "KIND", "SIZE",
              "CREATOR", "AGE", "WRITER");
  for (const Json& row : rows.items()) {
    const Json* pid = row.Get("creator_pid");
    const Json* age = row.Get("age_s");
    const Json* w = row.Get("writer");
    std::string writer = "-";
    if (w != nullptr && w->type() == Json::Type::kObject) {
      writer = w->Get("pid")->Plain() +
               (w->Get("alive")->Plain() == "true" ? " (alive)" : " (dead)");
    } else if (const Json* note = row.Get("note")) {
      writer = note->Plain();
    }
    uint64_t size = std::strtoull(row.Get("size")->Plain().c_str(),
                                  nullptr, 10);
    std::printf("%-*s %-12s %10s %8s %9s  %s\n", width,
                row.Get("name")->Plain().c_str(),
                row.Get("kind")->Plain().c_str(), Human(size).c_str(),
                pid ? pid->Plain().c_str() : "-",
                age ? (age->Plain() + "s").c_str() : "-", writer.c_str());
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
  SegName name;
  std::string err;
  int rc = ResolveOne(a, &name, c, &err);
  if (rc == kExitOk || rc == kExitUsage) return rc;
  Container d;
  d.name = name;
  d.kind = "damaged";
  HeaderPeek p = PeekHeader(name);
  if (p.status != HeaderPeek::kNotFound) {
    d.segments = {name};
    d.peeks = {p};
  } else {
    // What may be a map's pair.
    for (const char* half : {shmc::kMapIndexSuffix, shmc::kMapValuesSuffix}) {
      HeaderPeek h = PeekHeader(name.Suffixed(half));
      if (h.status == HeaderPeek::kNotFound) continue;
      d.segments.push_back(name.Suffixed(half));
      d.peeks.push_back(h);
    }
  }
  if (d.segments.empty() || p.status == HeaderPeek::kError) {
    std::fprintf(stderr, "shmc rm: %s\n", err.c_str());
    return rc;
  }
  *c = std::move(d);
  return kExitOk;
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
  if (out.type() != Json::Type::kNull) Print(out, a.json);
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
