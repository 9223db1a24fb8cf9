// shmkv's master process: it owns the segments' setup and the listening
// sockets, forks and execs the workers, restarts a worker that dies,
// replaces them one at a time on SIGHUP (a hot restart), runs the active
// expiry sweep, and stops everything on SIGTERM (docs/server.md,
// "Processes" and "Hot restart").
#pragma once

#include "server/options.h"
#include "server/store/store.h"

namespace shmkv {

// Runs the master until SIGTERM/SIGINT; returns the exit code.
int RunMaster(const Options& o, const StoreConfig& sc);
// `shmkv --reload`: signals the running master of `sc`'s store.
int SendReload(const StoreConfig& sc);
// `shmkv --remove`: removes every segment of `sc`'s store (RemoveStore),
// unless a live master holds them.
int RemoveSegments(const StoreConfig& sc);
// The pid of the master serving the store, 0 when none is.
uint64_t MasterRunning(const StoreConfig& sc);

}  // namespace shmkv
