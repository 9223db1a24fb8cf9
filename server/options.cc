// shmkv's command line (server/options.h).
#include "server/commands/notify.h"
#include "server/options.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "server/commands/command.h"
#include "server/store/stats.h"
#include "shmc/segment_name.h"

namespace shmkv {

const char kUsage[] =
    "usage: shmkv [options]\n"
    "  --port N          RESP (Redis protocol) port            [6380]\n"
    "  --http-port N     HTTP port (0: none)                   [8080]\n"
    "  --udp-port N      UDP port for GET, SET, DEL and INCR, one\n"
    "                    request per datagram (0: none; not with a\n"
    "                    password)                             [0]\n"
    "  --workers N       worker processes                      [cores]\n"
    "  --name SEG        the map's segment, named as shmc names it:\n"
    "                    posix:/NAME, sysv:KEY or file:PATH [posix:/shmkv]\n"
    "                    (a bare name is posix, or --backend's)\n"
    "  --backend B       posix | sysv | file:PATH (older form)  [posix]\n"
    "  --hugepages       create the map on 2 MiB hugepages (needs a\n"
    "                    sysv: name and a reserved pool:\n"
    "                    /proc/sys/vm/nr_hugepages)             [off]\n"
    "  --value-pool P    extents | nodes: how a new store keeps its\n"
    "                    values (each whole in an extent of its size,\n"
    "                    or in 64-byte nodes); an existing store keeps\n"
    "                    its own                             [extents]\n"
    "  --capacity KEYS   keys the index holds                  [1000000]\n"
    "  --memory BYTES    size of the key and value store, its\n"
    "                    bookkeeping included (K/M/G ok)        [256M]\n"
    "  --max-value BYTES largest value                         [16M]\n"
    "  --journal-size BYTES  largest multi-key commit (MSET,\n"
    "                    RENAME, MULTI/EXEC), its old values included [64M]\n"
    "  --timeout SECS    close a client idle this long (0: never) [0]\n"
    "  --dir DIR         where SAVE and BGSAVE write the RDB   [cwd]\n"
    "  --dbfilename NAME the RDB file's name in DIR        [dump.rdb]\n"
    "  --save \"SECS CHANGES ...\"  BGSAVE when SECS have passed and\n"
    "                    CHANGES keys changed since the last save,\n"
    "                    as Redis's save points (\"\": none)        [\"\"]\n"
    "  --maxmemory-clients BYTES  bound on all clients' buffered\n"
    "                    requests and replies; above it the client\n"
    "                    holding most is closed [256M, at least\n"
    "                    workers x (2 x 2 x max-value + 5M)]\n"
    "  --bind ADDR...    addresses to listen on     [127.0.0.1 ::1]\n"
    "  --protected-mode yes|no  refuse non-loopback clients when\n"
    "                    no password is set                    [yes]\n"
    "  --requirepass-file FILE  clients must AUTH with the password\n"
    "                    in FILE's first line (or set SHMKV_REQUIREPASS;\n"
    "                    --requirepass PASS works but shows in ps)\n"
    "  --shm-mode MODE   permission bits of new segments       [0600]\n"
    "  --notify-keyspace-events CLASSES  keyspace events, Redis's\n"
    "                    letters (KEA: all)                    [none]\n"
    "  --reload          tell the running master to replace its workers\n"
    "  --load-rdb FILE   load an RDB file (Redis's, or SAVE's) into the\n"
    "                    store, which must be empty, and exit\n"
    "  --remove          remove the store's segments (its data) and exit;\n"
    "                    refused while a server runs on them\n"
    "  --help\n"
    "The data lives in shared memory: restarting shmkv keeps it (with\n"
    "--name file:PATH it also survives a reboot). docs/server.md\n";

bool ParseSize(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s) return false;
  uint64_t mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1ULL << 10, ++end;
  else if (*end == 'M' || *end == 'm') mul = 1ULL << 20, ++end;
  else if (*end == 'G' || *end == 'g') mul = 1ULL << 30, ++end;
  if (*end != '\0' || v > UINT64_MAX / mul) return false;
  *out = v * mul;
  return true;
}

std::string ModeText() {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o",
                static_cast<unsigned>(shmc::DefaultSegmentMode()));
  return buf;
}

bool ParseSavePoints(std::string_view text, std::vector<SavePoint>* out,
                     std::string* why) {
  out->clear();
  std::vector<int64_t> nums;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t e = text.find(' ', i);
    if (e == std::string_view::npos) e = text.size();
    const std::string word(text.substr(i, e - i));
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(word.c_str(), &end, 10);
    if (word.empty() || *end != '\0' || errno != 0 || v < 0) {
      *why = "'" + word + "' is not a number of seconds or changes";
      return false;
    }
    nums.push_back(v);
    i = e;
  }
  if (nums.size() % 2 != 0) {
    *why = "give pairs: SECS CHANGES [SECS CHANGES ...]";
    return false;
  }
  for (size_t k = 0; k < nums.size(); k += 2) {
    out->push_back(SavePoint{nums[k], nums[k + 1]});
  }
  return true;
}

bool NormalizeSavePoints(std::string_view text, std::string* out,
                         std::string* why) {
  std::vector<SavePoint> points;
  if (!ParseSavePoints(text, &points, why)) return false;
  out->clear();
  for (const SavePoint& p : points) {
    if (!out->empty()) out->push_back(' ');
    *out += std::to_string(p.secs) + " " + std::to_string(p.changes);
  }
  return true;
}

int Usage(const char* why) {
  std::fprintf(stderr, "shmkv: %s\n%s", why, kUsage);
  return 2;
}

int ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char** v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    const char* v = nullptr;
    uint64_t n = 0;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--reload") {
      o->reload = true;
    } else if (a == "--remove") {
      o->remove = true;
    } else if (a == "--hugepages") {
      o->hugepages = true;
    } else if (a == "--bind") {
      // One or more addresses, up to the next option.
      o->bind.clear();
      o->bind_given = true;
      while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
        o->bind.push_back(argv[++i]);
      }
      if (o->bind.empty()) return Usage("--bind needs an address");
    } else if (!next(&v)) {
      return Usage(("unknown option or missing value: " + a).c_str());
    } else if (a == "--port" || a == "--http-port" || a == "--udp-port" ||
               a == "--workers") {
      if (!ParseSize(v, &n) || n > 65535 ||
          (a == "--port" && n == 0) || (a == "--workers" && (n == 0 || n > 32))) {
        return Usage((a + ": bad value " + v).c_str());
      }
      (a == "--port"        ? o->port
       : a == "--http-port" ? o->http_port
       : a == "--udp-port"  ? o->udp_port
                            : o->workers) = static_cast<int>(n);
    } else if (a == "--notify-keyspace-events") {
      if (!cmd::ParseNotifyClasses(v, &o->notify_events)) {
        return Usage("--notify-keyspace-events: use the letters "
                     "Ag$lshzxeKEtmdn");
      }
    } else if (a == "--name") {
      o->seg = v;
    } else if (a == "--backend") {
      o->backend = v;
      o->backend_given = true;
    } else if (a == "--timeout") {
      if (!ParseSize(v, &n) || n > INT32_MAX) {
        return Usage(("--timeout: bad number of seconds " + std::string(v)).c_str());
      }
      o->timeout_s = n;
    } else if (a == "--dir") {
      char* real = realpath(v, nullptr);
      struct stat st;
      if (real == nullptr || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        std::free(real);
        return Usage(("--dir: " + std::string(v) + " is not a directory")
                         .c_str());
      }
      o->dir = real;
      std::free(real);
    } else if (a == "--load-rdb") {
      o->load_rdb = v;
    } else if (a == "--dbfilename") {
      std::string f = v;
      if (f.empty() || f.find('/') != std::string::npos || f == "." ||
          f == "..") {
        return Usage("--dbfilename: a file name, not a path (see --dir)");
      }
      o->dbfilename = f;
    } else if (a == "--save") {
      std::string why;
      if (!NormalizeSavePoints(v, &o->save, &why)) {
        return Usage(("--save: " + why).c_str());
      }
    } else if (a == "--maxmemory-clients") {
      if (!ParseSize(v, &n) || n == 0) {
        return Usage(("--maxmemory-clients: bad size " + std::string(v)).c_str());
      }
      o->client_memory = n;
    } else if (a == "--capacity" || a == "--memory" || a == "--max-value" ||
               a == "--journal-size") {
      if (!ParseSize(v, &n) || n == 0) {
        return Usage((a + ": bad size " + v).c_str());
      }
      (a == "--capacity"       ? o->capacity
       : a == "--memory"       ? o->memory
       : a == "--journal-size" ? o->journal
                               : o->max_value) = n;
    } else if (a == "--value-pool") {
      std::string p = v;
      if (p != "nodes" && p != "extents") {
        return Usage("--value-pool: nodes or extents");
      }
      o->extents = p == "extents";
    } else if (a == "--protected-mode") {
      std::string m = v;
      if (m != "yes" && m != "no") return Usage("--protected-mode: yes or no");
      o->protected_mode = m == "yes";
    } else if (a == "--requirepass") {
      o->password = v;
    } else if (a == "--requirepass-file") {
      FILE* f = std::fopen(v, "re");
      if (f == nullptr) {
        return Usage(("--requirepass-file: " + std::string(v) + ": " +
                      std::strerror(errno)).c_str());
      }
      char line[4096];
      o->password = std::fgets(line, sizeof(line), f) ? line : "";
      std::fclose(f);
      while (!o->password.empty() && (o->password.back() == '\n' ||
                                      o->password.back() == '\r')) {
        o->password.pop_back();
      }
      if (o->password.empty()) return Usage("--requirepass-file is empty");
    } else if (a == "--shm-mode") {
      char* end = nullptr;
      unsigned long m = std::strtoul(v, &end, 8);
      if (*v == '\0' || *end != '\0' || m > 0777) {
        return Usage("--shm-mode: octal permission bits, e.g. 0640");
      }
      shmc::SetDefaultSegmentMode(static_cast<mode_t>(m));
    } else if (a == "--worker-protected") {
      o->worker_protected = std::string(v) == "yes";
    } else if (a == "--worker-slot") {
      o->worker_slot = std::atoi(v);
    } else if (a == "--resp-fd" || a == "--http-fd" || a == "--udp-fd") {
      std::vector<int>& fds = a == "--resp-fd"   ? o->resp_fds
                              : a == "--http-fd" ? o->http_fds
                                                 : o->udp_fds;
      for (const char* p = v; *p != '\0';) {
        char* end = nullptr;
        long fd = std::strtol(p, &end, 10);
        if (end == p) break;
        if (fd >= 0) fds.push_back(static_cast<int>(fd));
        p = *end == ',' ? end + 1 : end;
      }
    } else if (a == "--ready-fd") {
      o->ready_fd = std::atoi(v);
    } else if (a == "--ctl-fd") {
      o->ctl_fd = std::atoi(v);
    } else if (a == "--adopt-fd") {
      o->adopt_fd = std::atoi(v);
    } else if (a == "--start-ms") {
      o->start_ms = std::atoll(v);
    } else {
      return Usage(("unknown option: " + a).c_str());
    }
  }
  if (o->dir.empty()) {
    char* cwd = getcwd(nullptr, 0);
    o->dir = cwd != nullptr ? cwd : ".";
    std::free(cwd);
  }
  return -1;  // go on
}

// The map's backend and key from --name (or the older --backend).
bool MakeStoreName(const Options& o, StoreConfig* c, std::string* err) {
  if (shmc::SegmentName::HasBackend(o.seg)) {
    // The shmc tool's syntax: the name says its backend.
    shmc::SegmentName n;
    if (!shmc::SegmentName::Parse(o.seg, &n, err)) return false;
    if (o.backend_given) {
      *err = "--name " + o.seg + " names its backend: drop --backend";
      return false;
    }
    c->backend = n.backend;
    c->name = n.key;
    return true;
  }
  if (o.backend == "posix") {
    c->backend = Backend::kPosix;
  } else if (o.backend == "sysv") {
    c->backend = Backend::kSysv;
    if (c->name == "/shmkv") c->name = "53670";  // a decimal default key
  } else if (o.backend.compare(0, 5, "file:") == 0 && o.backend.size() > 5) {
    c->backend = Backend::kFile;
    c->name = o.backend.substr(5);
  } else {
    *err = "--backend must be posix, sysv or file:PATH";
    return false;
  }
  return true;
}

ServerInfo ServerInfoFrom(const Options& o, const StoreConfig& sc) {
  ServerInfo info;
  info.resp_port = static_cast<uint64_t>(o.port);
  info.http_port = static_cast<uint64_t>(o.http_port);
  info.udp_port = static_cast<uint64_t>(o.udp_port);
  info.workers = static_cast<uint64_t>(o.workers);
  info.start_ms = o.start_ms;
  info.name = SegName(sc);
  for (const std::string& b : o.bind) {
    if (!info.bind.empty()) info.bind += ' ';
    info.bind += b;
  }
  info.protected_mode = o.worker_protected;
  info.max_value = o.max_value;
  info.memory = o.memory;
  info.capacity = o.capacity;
  info.journal = o.journal;
  info.timeout_s = o.timeout_s;
  info.client_memory = o.client_memory;
  info.max_request = MaxRequestBytes(sc);
  info.dir = o.dir;
  info.dbfilename = o.dbfilename;
  info.save = o.save;
  return info;
}

bool MakeStoreConfig(const Options& o, StoreConfig* c, std::string* err) {
  c->capacity = o.capacity;
  c->memory = o.memory;
  c->max_value = o.max_value;
  c->journal = o.journal;
  c->name = o.seg;
  c->hugepages = o.hugepages;
  c->extents = o.extents;
  c->dir = o.dir;
  if (!MakeStoreName(o, c, err)) return false;
  if (c->hugepages && c->backend != Backend::kSysv) {
    *err = "--hugepages puts the map on System V hugetlb segments: name it "
           "sysv:KEY";
    return false;
  }
  return true;
}

bool ResolveClientMemory(const StoreConfig& sc, Options* o, std::string* err) {
  if (o->workers == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->workers = static_cast<int>(std::min<long>(std::max<long>(cores, 1), 32));
  }
  uint64_t least = static_cast<uint64_t>(o->workers) *
                   MinClientMemoryPerWorker(sc);
  if (o->client_memory == 0) {
    o->client_memory = std::max<uint64_t>(256ULL << 20, least);
  } else if (o->client_memory < least) {
    *err = "--maxmemory-clients " + std::to_string(o->client_memory) +
           " is less than " + std::to_string(o->workers) +
           " workers need to each hold one largest request (" +
           std::to_string(least) + "); raise it or lower --max-value";
    return false;
  }
  return true;
}

WorkerConfig WorkerConfigFrom(const Options& o, const StoreConfig& sc) {
  WorkerConfig wc;
  wc.resp_fds = o.resp_fds;
  wc.http_fds = o.http_fds;
  wc.udp_fds = o.udp_fds;
  wc.protected_mode = o.worker_protected;
  if (const char* p = std::getenv("SHMKV_REQUIREPASS")) wc.password = p;
  unsetenv("SHMKV_REQUIREPASS");
  wc.ready_fd = o.ready_fd;
  wc.ctl_fd = o.ctl_fd;
  wc.adopt_fd = o.adopt_fd;
  wc.slot = static_cast<size_t>(o.worker_slot);
  wc.store = sc;
  wc.info = ServerInfoFrom(o, sc);
  wc.timeout_s = static_cast<int64_t>(o.timeout_s);
  wc.client_memory = o.client_memory;
  wc.workers = static_cast<size_t>(std::max(o.workers, 1));
  return wc;
}

}  // namespace shmkv
