// Replication from a Redis master (docs/server.md, "Replicating from
// Redis"): the role every process of the store obeys and the state of the
// link that follows the master, in a small POSIX segment of their own
// (ReplKey: SEG.ctl.repl), made by whichever process of the store opens
// it first. A new segment is all zero: the store is a master, no link.
//
// REPLICAOF writes the target (host, port, a new generation) and the mode
// under the store's write lock; the master process starts a link process
// (server/replica_link.h) while the mode says replica, and stops it when
// the generation it follows is not the current one. Every worker reads
// the mode before a write command: a replica refuses clients' writes.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"

namespace shmkv {

enum class ReplMode : uint64_t {
  kMaster = 0,
  kReplica = 1,    // clients' writes refused (-READONLY)
  kLoading = 2,    // a replica loading its master's dataset (-LOADING)
  kPromoting = 3,  // REPLICAOF NO ONE waits for the link to stop
};

// What the link is doing (INFO replication's master_link_status and
// master_sync_in_progress).
enum class LinkState : uint64_t {
  kDown = 0,
  kConnecting = 1,
  kTransfer = 2,  // receiving the master's RDB
  kLoading = 3,   // loading it
  kUp = 4,        // applying the command stream
};

constexpr size_t kReplHostWords = 32;  // 255 bytes and a NUL
constexpr size_t kReplIdWords = 5;     // 40 characters

struct ReplBlock {
  std::atomic<uint64_t> magic;  // kReplMagic once made
  std::atomic<uint64_t> mode;   // a ReplMode
  // The target: odd `seq` while REPLICAOF rewrites it.
  std::atomic<uint64_t> seq;
  std::atomic<uint64_t> generation;  // bumped by each REPLICAOF host port
  std::atomic<uint64_t> port;
  std::atomic<uint64_t> host[kReplHostWords];
  // The link's words (written by the link process; the master clears
  // link_pid when it reaps a link that died).
  std::atomic<uint64_t> link_pid;  // 0: none
  std::atomic<uint64_t> state;     // a LinkState
  std::atomic<uint64_t> last_io_ms;
  std::atomic<uint64_t> down_since_ms;  // 0: never up
  std::atomic<uint64_t> sync_total;     // the RDB transfer's bytes
  std::atomic<uint64_t> sync_read;
  // The master's replication id and the offset of its stream applied
  // here; `resumable` is 1 while they describe the data exactly (the
  // link stopped between two commands), so a new link may ask the master
  // to continue (PSYNC id offset+1) instead of sending everything again.
  std::atomic<uint64_t> offset;
  std::atomic<uint64_t> replid[kReplIdWords];
  std::atomic<uint64_t> resumable;
  std::atomic<uint64_t> full_syncs;
  std::atomic<uint64_t> partial_syncs;
  std::atomic<uint64_t> stream_errors;  // streamed commands that failed
  // This store's own replication id (INFO's master_replid as a master),
  // and the one it had before its last promotion (master_replid2) with
  // the offset that began it (second_repl_offset + 1; 0: none).
  std::atomic<uint64_t> own_replid[kReplIdWords];
  std::atomic<uint64_t> replid2[kReplIdWords];
  std::atomic<uint64_t> second_offset;
  // The database the master's stream had selected at `offset` (a link
  // that continues the stream goes on in it).
  std::atomic<uint64_t> stream_db;
  // When the link process began (s since the epoch): with link_pid, tells
  // it from a process that got its pid later.
  std::atomic<uint64_t> link_started_s;
  std::atomic<uint64_t> reserved[6];
};
static_assert(std::is_standard_layout<ReplBlock>::value &&
                  sizeof(ReplBlock) == 8 * 72 &&
                  offsetof(ReplBlock, host) == 40 &&
                  offsetof(ReplBlock, offset) == 8 * 43 &&
                  offsetof(ReplBlock, own_replid) == 8 * 53,
              "ReplBlock lives in shared memory: a change is a new kReplMagic");
// "smkvrpl1": the first layout.
constexpr uint64_t kReplMagic = 0x316c7072766b6d73ULL;

// What INFO and ROLE show: one consistent copy of the block.
struct ReplView {
  ReplMode mode = ReplMode::kMaster;
  std::string host;
  uint64_t port = 0;
  uint64_t generation = 0;
  uint64_t link_pid = 0;
  LinkState state = LinkState::kDown;
  int64_t last_io_ms = 0;
  int64_t down_since_ms = 0;
  uint64_t sync_total = 0, sync_read = 0;
  uint64_t offset = 0;
  std::string replid;  // the master's ("" before the first sync)
  bool resumable = false;
  uint64_t full_syncs = 0, partial_syncs = 0, stream_errors = 0;
  std::string own_replid, replid2;
  uint64_t second_offset = 0;
};

class SharedRepl {
 public:
  // Maps the segment `key`, made (with a fresh replication id) when
  // missing.
  bool Open(const std::string& key, std::string* err);
  bool open() const { return b_ != nullptr; }
  ReplBlock* block() { return b_; }

  ReplMode Mode() const {
    return static_cast<ReplMode>(b_->mode.load(std::memory_order_acquire));
  }
  void SetMode(ReplMode m) {
    b_->mode.store(static_cast<uint64_t>(m), std::memory_order_release);
  }
  // The link's state as it last set it (INFO's master_link_status).
  LinkState State() const {
    return static_cast<LinkState>(b_->state.load(std::memory_order_acquire));
  }
  uint64_t Generation() const {
    return b_->generation.load(std::memory_order_acquire);
  }
  // REPLICAOF host port, under the write lock: a new generation.
  void SetTarget(const std::string& host, uint64_t port);
  // The target (host, port) of the current generation.
  void Target(std::string* host, uint64_t* port, uint64_t* generation) const;
  ReplView View() const;

  // The link's side.
  void SetState(LinkState s);
  void SetReplId(const std::string& id);
  std::string ReplId() const;
  // Promotion: a new id of our own; the master's becomes the second.
  void Promote();

 private:
  ReplBlock* b_ = nullptr;
  shmc::ShmArray<ReplBlock, shmc::POSIX> arr_;
};

// The link process the block names, if it runs: a pid above 1 running
// this program, begun when the block says (so a damaged block or a pid
// used again never names another process). 0 otherwise.
pid_t RunningLink(const ReplBlock* b);

// Text in words (NUL-padded) and back.
void PutText(std::atomic<uint64_t>* words, size_t n, const std::string& s);
std::string GetText(const std::atomic<uint64_t>* words, size_t n);
// 40 random hex characters, as Redis's replication ids.
std::string NewReplId();

}  // namespace shmkv
