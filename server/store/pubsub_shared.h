// What pub/sub shares between workers (docs/server.md, "Pub/sub"): who
// is subscribed to what, and the messages on their way.
//
// The registry (SEG.ctl.pubsub, a ShmHashMap) keeps, for each channel,
// pattern and shard channel someone subscribed to, how many subscribers
// each worker process holds: the key is the 128-bit hash of the kind
// byte ('c', 'p' or 's') and the name; the value is
//   u32 name length  name  then (u32 worker pid, u32 count) ...
// and one more entry, the pattern directory (key: the hash of "\1"),
// lists every pattern with subscribers: (u32 length, name) ... Every
// length and count is checked when read: a value that does not parse
// reads as "nobody".
//
// The ring (SEG.ctl.pubsub.ring, a ShmSyncBuf of kRingBytes) carries
// each message published while another worker holds a subscriber that
// may want it: a record is
//   u32 publisher pid  u8 kind ('c' or 's')  u32 channel length  channel
//   message
// Each worker reads the ring from where it was, at its own pace, and
// delivers to its own subscribers.
//
// Writes to both (Change, Forget, Push) happen under the store's write
// lock, which serializes them across workers (and a writer killed in
// the middle leaves the map's intent record, finished by the next change,
// and a ring record never published). Reads take no lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/store/store.h"

namespace shmkv {

std::string PubSubKey(const StoreConfig& cfg);
std::string PubSubRingKey(const StoreConfig& cfg);

class PubSubShared {
 public:
  static constexpr uint64_t kRingBytes = 64ULL << 20;
  // Names with subscribers, and bytes for their entries (a channel with
  // subscribers on every worker takes a few nodes of 64 bytes).
  static constexpr uint64_t kCapacity = 16384;
  static constexpr uint64_t kMemory = 4ULL << 20;

  PubSubShared();
  ~PubSubShared();
  PubSubShared(const PubSubShared&) = delete;
  PubSubShared& operator=(const PubSubShared&) = delete;

  // Attaches both segments, creating them when missing.
  bool Open(const StoreConfig& cfg, std::string* err);

  struct Holder {
    uint32_t pid;
    uint32_t count;
  };
  // Under the write lock: worker `pid` holds `delta` more (or fewer)
  // subscribers of `name`. False when the registry is full.
  bool Change(char kind, std::string_view name, uint32_t pid, int64_t delta);
  // Lock-free: who holds subscribers of `name`.
  void Holders(char kind, std::string_view name, std::vector<Holder>* out) const;
  // Lock-free: every pattern with subscribers.
  void Patterns(std::vector<std::string>* out) const;
  // Lock-free: every name of `kind` with subscribers, and how many.
  void Names(char kind,
             const std::function<void(std::string_view, uint64_t)>& f) const;
  // Under the write lock: drops every subscription of worker `pid` (it is
  // gone, or starts afresh).
  void Forget(uint32_t pid);
  // Under the write lock: Forget for every worker process that is gone.
  void ForgetDead();

  struct Message {
    uint32_t pid = 0;
    char kind = 'c';
    std::string channel, message;
  };
  // Under the write lock: puts a message on the ring. False when it is
  // too large for it (a quarter of the ring).
  bool Push(uint32_t pid, char kind, std::string_view channel,
            std::string_view message);
  // The ring's end: where a reader that wants only what comes next starts.
  uint64_t Tail() const;
  // The record at *pos: 1 read (and *pos moved past it), 0 none yet, -1
  // overrun (the reader fell a ring behind: *pos moves to the oldest
  // record still there, what was between is lost to it).
  int Next(uint64_t* pos, Message* m) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shmkv
