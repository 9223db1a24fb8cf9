#include "server/commands/sync_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace shmkv {
namespace cmd {

SyncConn::~SyncConn() {
  if (fd_ >= 0) close(fd_);
}

bool SyncConn::Wait(short events, int timeout_ms) {
  struct pollfd p = {fd_, events, 0};
  for (;;) {
    const int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

bool SyncConn::Connect(const std::string& host, const std::string& port,
                       int timeout_ms) {
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) {
    return false;
  }
  for (struct addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd_ = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 ai->ai_protocol);
    if (fd_ < 0) continue;
    // As Redis's blocking connect: a connection in progress that
    // becomes writable counts as made, even when what made it writable
    // was a refusal (the first write then fails: "writing" in MIGRATE's
    // error, as Redis's says).
    int err = 0;
    if (connect(fd_, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) err = Wait(POLLOUT, timeout_ms) ? 0 : ETIMEDOUT;
    }
    if (err == 0) {
      int one = 1;
      setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      freeaddrinfo(res);
      return true;
    }
    close(fd_);
    fd_ = -1;
  }
  freeaddrinfo(res);
  return false;
}

bool SyncConn::Write(std::string_view bytes, int timeout_ms) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!Wait(POLLOUT, timeout_ms)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool SyncConn::ReadLine(std::string* line, int timeout_ms, size_t max) {
  for (;;) {
    const size_t nl = buf_.find("\r\n", pos_);
    if (nl != std::string::npos) {
      line->assign(buf_, pos_, nl - pos_);
      pos_ = nl + 2;
      if (pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
      }
      return true;
    }
    if (buf_.size() - pos_ > max) return false;
    char tmp[4096];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n > 0) {
      buf_.append(tmp, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!Wait(POLLIN, timeout_ms)) return false;
    } else {
      return false;  // EOF or an error
    }
  }
}

ssize_t SyncConn::Read(char* out, size_t n, int timeout_ms) {
  if (pos_ < buf_.size()) {
    const size_t k = std::min(n, buf_.size() - pos_);
    std::memcpy(out, buf_.data() + pos_, k);
    pos_ += k;
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    return static_cast<ssize_t>(k);
  }
  for (;;) {
    const ssize_t got = recv(fd_, out, n, 0);
    if (got > 0) return got;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd_, POLLIN, 0};
      const int r = poll(&p, 1, timeout_ms);
      if (r == 0 || (r < 0 && errno == EINTR)) return 0;
      if (r < 0) return -1;
      continue;
    }
    return -1;  // EOF or an error
  }
}

}  // namespace cmd
}  // namespace shmkv
