// A shmkv worker process: one epoll loop serving RESP and HTTP connections
// accepted from its own pair of SO_REUSEPORT listening sockets (and, with
// --udp-port, datagrams on its own UDP socket), which it inherits from the
// master (so the sockets, and the connections waiting in
// their accept queues, outlive any one worker: docs/server.md, "Hot
// restart").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "server/commands/command.h"
#include "server/store/store.h"

namespace shmkv {

struct WorkerConfig {
  std::vector<int> resp_fds, http_fds;  // one listening socket per address
  std::vector<int> udp_fds;  // --udp-port: one datagram socket per address
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
  int64_t timeout_s = 0;  // close a client idle this long (Redis's timeout)
  // Every client's buffered input and output, summed over the workers:
  // above it the client holding the most is closed (Redis's
  // maxmemory-clients). Each worker keeps to its share, workers > 1.
  uint64_t client_memory = 0;
  size_t workers = 1;
};

// The most bytes one request may hold (its arguments up to twice the
// largest value, so a too-large value gets an error reply, not a closed
// connection); a longer request is refused.
size_t MaxRequestBytes(const StoreConfig& store);

// The least client memory a worker may be given: one largest request and
// a read burst. --maxmemory-clients is at least workers times this.
size_t MinClientMemoryPerWorker(const StoreConfig& store);

int RunWorker(const WorkerConfig& cfg);

}  // namespace shmkv
