// shmkv's command line: the options, their parsing and checks, and the
// configurations the master and a worker are built from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/net/worker.h"
#include "server/store/store.h"

namespace shmkv {

struct Options {
  int port = 6380;
  int http_port = 8080;
  int udp_port = 0;  // 0: no UDP
  int workers = 0;  // 0: one per core
  std::string seg = "/shmkv";
  std::string backend = "posix";
  bool backend_given = false;
  uint64_t capacity = 1000000;
  uint64_t memory = 256ULL << 20;
  uint64_t max_value = 16ULL << 20;
  uint64_t journal = 64ULL << 20;
  uint64_t timeout_s = 0;      // Redis's timeout: 0, never
  uint64_t client_memory = 0;  // 0: the default (ClientMemory())
  std::string dir;                      // --dir: SAVE's directory (cwd)
  std::string dbfilename = "dump.rdb";  // --dbfilename: its file
  // --save: Redis's save points, "SECS CHANGES ..." ("": none).
  std::string save;
  bool reload = false;
  bool remove = false;  // --remove: drop the store's segments, exit
  std::string load_rdb;  // --load-rdb FILE: load it into the store, exit
  bool hugepages = false;  // the map on SysV hugetlb segments
  bool extents = true;    // --value-pool extents
  // Redis 7's defaults: loopback only, protected mode on.
  std::vector<std::string> bind = {"127.0.0.1", "::1"};
  bool bind_given = false;
  bool protected_mode = true;
  std::string password;  // requirepass (never passed on a command line)
  // notify-keyspace-events' classes (server/commands/notify.h), set in
  // the store at start; CONFIG SET changes them at run time.
  uint32_t notify_events = 0;
  // worker mode (set by the master when it execs a worker)
  int worker_slot = -1;
  std::vector<int> resp_fds, http_fds, udp_fds;
  int ready_fd = -1, ctl_fd = -1, adopt_fd = -1;
  bool worker_protected = false;
  int64_t start_ms = 0;
};

// Parses the command line: -1 to go on, else the exit code (after --help
// or a usage error, which it has reported).
int ParseArgs(int argc, char** argv, Options* o);

// SavePoint: server/store/settings.h (CONFIG SET save changes them).
// "SECS CHANGES [SECS CHANGES ...]" (or "": none) as Redis's `save`
// takes it: pairs of integers, none negative; false with *why.
bool ParseSavePoints(std::string_view text, std::vector<SavePoint>* out,
                     std::string* why);
// The same, written back as CONFIG GET shows it ("3600 1 300 100").
bool NormalizeSavePoints(std::string_view text, std::string* out,
                         std::string* why);
// Reports a usage error; returns the exit code (2).
int Usage(const char* why);
// The store the options name (--name, --backend, sizes); false with *err.
bool MakeStoreConfig(const Options& o, StoreConfig* c, std::string* err);
// The settings CONFIG GET and the commands read (a worker's, or the
// server's own context: server/local_commands.h).
ServerInfo ServerInfoFrom(const Options& o, const StoreConfig& sc);
// Settles the worker count and the client-buffer bound: 256 MiB by
// default, and never so small that a worker cannot hold one request of
// the largest size.
bool ResolveClientMemory(const StoreConfig& sc, Options* o, std::string* err);
// The mode new segments get (--shm-mode), as octal text ("0600").
std::string ModeText();
// What a worker exec'd by the master serves with.
WorkerConfig WorkerConfigFrom(const Options& o, const StoreConfig& sc);

}  // namespace shmkv
