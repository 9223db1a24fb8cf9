// shmkv: a Redis-protocol key-value server on shared memory (docs/server.md).
//
// The master process (server/master.h) owns the segments' lifetime and the
// listening sockets; worker processes (server/net/worker.h) serve. SIGHUP
// (or `shmkv --reload`) replaces the workers one at a time with a fresh
// exec of the binary; SIGTERM stops everything, leaving the data in its
// segment for the next start.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "server/load_rdb.h"
#include "server/master.h"
#include "server/net/worker.h"
#include "server/options.h"

namespace shmkv {
namespace {

void RaiseFdLimit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace
}  // namespace shmkv

int main(int argc, char** argv) {
  using namespace shmkv;
  Options o;
  int rc = ParseArgs(argc, argv, &o);
  if (rc >= 0) return rc;
  StoreConfig sc;
  std::string err;
  if (!MakeStoreConfig(o, &sc, &err)) return Usage(err.c_str());
  if (o.reload) return SendReload(sc);
  if (o.remove) return RemoveSegments(sc);
  if (!o.load_rdb.empty()) return LoadRdbFile(o, sc);
  if (!ResolveClientMemory(sc, &o, &err)) return Usage(err.c_str());
  RaiseFdLimit();
  if (o.worker_slot >= 0) {
    WorkerConfig wc = WorkerConfigFrom(o, sc);
    if (getppid() == 1) return 1;  // the master is already gone
    return RunWorker(wc);
  }
  if (o.password.empty()) {
    if (const char* p = std::getenv("SHMKV_REQUIREPASS")) o.password = p;
  }
  unsetenv("SHMKV_REQUIREPASS");
  if (o.udp_port != 0 && !o.password.empty()) {
    return Usage("--udp-port: a datagram carries no password, so UDP cannot "
                 "serve a server with requirepass");
  }
  return RunMaster(o, sc);
}
