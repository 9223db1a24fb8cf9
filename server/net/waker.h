// Wakes between workers (docs/server.md, "Blocking commands"): each
// worker binds a datagram socket in the abstract namespace, named after
// its store and its pid, and a worker whose commit wrote a key some other
// worker's blocked client waits on sends that worker the key's hash. The
// woken worker checks again under the store's lock, so a stray or
// repeated datagram costs a look, never a wrong reply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shmkv {

class Waker {
 public:
  Waker() = default;
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;
  ~Waker();

  // Binds this process's socket for the store whose control segment is
  // `control_key`. False with *err set when it cannot.
  bool Open(const std::string& control_key, std::string* err);
  int fd() const { return fd_; }
  // Sends `key` to the worker `pid`: false when its socket is full (the
  // wake is lost: Waits::BumpResync). A worker that is gone is no loss.
  bool Send(uint64_t pid, uint64_t key);
  // Every key hash received so far, appended to *keys.
  void Drain(std::vector<uint64_t>* keys);

 private:
  std::string Name(uint64_t pid) const;
  uint64_t store_ = 0;  // hash of the control key
  int fd_ = -1;
};

}  // namespace shmkv
