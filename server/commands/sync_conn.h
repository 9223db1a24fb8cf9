// A blocking client connection with a deadline on every step, for the
// commands that talk to another server themselves (MIGRATE), as Redis's
// do: the worker waits for it, bounded by the command's timeout.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace shmkv {
namespace cmd {

class SyncConn {
 public:
  SyncConn() = default;
  ~SyncConn();
  SyncConn(const SyncConn&) = delete;
  SyncConn& operator=(const SyncConn&) = delete;

  // Connects to host:port (a name or an address, IPv4 or IPv6) within
  // timeout_ms; false when the name does not resolve, the connect fails
  // at once or times out. A refusal that comes later shows in Write.
  bool Connect(const std::string& host, const std::string& port,
               int timeout_ms);
  // Sends all of `bytes`, waiting at most timeout_ms for the socket each
  // time it is full.
  bool Write(std::string_view bytes, int timeout_ms);
  // One line of the reply stream, without its CRLF, waiting at most
  // timeout_ms for each read; false on EOF, a timeout, or a line longer
  // than `max` bytes.
  bool ReadLine(std::string* line, int timeout_ms, size_t max = 64 << 10);
  // Up to `n` bytes (what ReadLine buffered first), waiting at most
  // timeout_ms: the count, 0 on a timeout, -1 at EOF or on an error.
  ssize_t Read(char* out, size_t n, int timeout_ms);
  int fd() const { return fd_; }

 private:
  bool Wait(short events, int timeout_ms);

  int fd_ = -1;
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace cmd
}  // namespace shmkv
