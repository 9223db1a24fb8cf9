// A shmkv worker process: one epoll loop serving RESP and HTTP connections
// accepted from its own pair of SO_REUSEPORT listening sockets, which it
// inherits from the master (so the sockets, and the connections waiting in
// their accept queues, outlive any one worker: docs/server.md, "Hot
// restart").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "server/commands.h"
#include "server/store.h"

namespace shmkv {

struct WorkerConfig {
  std::vector<int> resp_fds, http_fds;  // one listening socket per address
  // Protected mode (Redis's): bound beyond loopback with no password, so
  // clients from other hosts are refused with Redis's DENIED error.
  bool protected_mode = false;
  std::string password;  // requirepass; empty: none
  size_t slot = 0;  // statistics slot
  int ready_fd = -1;  // written once serving, then closed
  // Hot restart (docs/server.md): the master sends a handoff socket over
  // ctl_fd when this worker is being replaced; its connections then move,
  // open, to the replacement, which receives them on adopt_fd.
  int ctl_fd = -1;
  int adopt_fd = -1;
  StoreConfig store;
  ServerInfo info;
  int drain_ms = 5000;  // on SIGTERM: time to finish open connections
};

int RunWorker(const WorkerConfig& cfg);

}  // namespace shmkv
