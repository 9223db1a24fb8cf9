// A worker's blocked clients (docs/server.md, "Blocking commands"): for
// each, the command to run again, its place in line (its ticket on the
// wait board, server/store/waits.h), when it gives up, and the keys it
// waits on. Kept by ticket, the order clients are served in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace shmkv {

struct BlockedCommand {
  std::vector<std::string> args;
  uint64_t ticket = 0;
  uint64_t deadline_ns = 0;  // CLOCK_MONOTONIC; 0: never
  std::vector<uint64_t> keys;  // hashes of the keys waited on

  // For a hot restart's handoff: the command in bytes, and back. Decode
  // takes its bytes from the front of *in and refuses (false) any length
  // or count the bytes cannot hold.
  void Encode(std::string* out) const;
  bool Decode(std::string_view* in);
};

class BlockedClients {
 public:
  void Add(int fd, const BlockedCommand& b);
  void Remove(uint64_t ticket);
  bool empty() const { return by_ticket_.empty(); }
  size_t size() const { return by_ticket_.size(); }
  // The connection of `ticket`, -1 when it is not here.
  int Fd(uint64_t ticket) const;
  bool Has(uint64_t ticket) const { return by_ticket_.count(ticket) != 0; }
  // The keys `ticket` waits on (empty when it is not here).
  const std::vector<uint64_t>& Keys(uint64_t ticket) const;
  // Tickets of the clients waiting on any of `keys`, first blocked first.
  std::vector<uint64_t> Waiting(const std::vector<uint64_t>& keys) const;
  std::vector<uint64_t> All() const;
  // Tickets whose deadline is at or before `now_ns`.
  std::vector<uint64_t> Expired(uint64_t now_ns) const;
  // Milliseconds until the next deadline (rounded up), at most `cap`.
  int WaitMs(uint64_t now_ns, int cap) const;

 private:
  struct Entry {
    int fd;
    uint64_t deadline_ns;
    std::vector<uint64_t> keys;
  };
  std::map<uint64_t, Entry> by_ticket_;
  std::multimap<uint64_t, uint64_t> by_deadline_;  // deadline -> ticket
};

}  // namespace shmkv
