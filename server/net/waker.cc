#include "server/net/waker.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "shmc/hash.h"

namespace shmkv {

namespace {

socklen_t Address(const std::string& name, sockaddr_un* a) {
  std::memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, no file, gone with the socket.
  size_t n = std::min(name.size(), sizeof(a->sun_path) - 1);
  std::memcpy(a->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

Waker::~Waker() {
  if (fd_ >= 0) close(fd_);
}

std::string Waker::Name(uint64_t pid) const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "shmkv-wake/%016" PRIx64 "/%" PRIu64,
                store_, pid);
  return buf;
}

bool Waker::Open(const std::string& control_key, std::string* err) {
  store_ = shmc::HashBytes(control_key.data(), control_key.size());
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *err = std::string("wake socket: ") + std::strerror(errno);
    return false;
  }
  sockaddr_un a;
  socklen_t len = Address(Name(static_cast<uint64_t>(getpid())), &a);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    *err = std::string("wake socket: bind: ") + std::strerror(errno);
    close(fd_);
    fd_ = -1;
    return false;
  }
  return true;
}

bool Waker::Send(uint64_t pid, uint64_t key) {
  if (fd_ < 0) return true;
  sockaddr_un a;
  socklen_t len = Address(Name(pid), &a);
  for (;;) {
    ssize_t n = sendto(fd_, &key, sizeof(key), MSG_DONTWAIT,
                       reinterpret_cast<sockaddr*>(&a), len);
    if (n == static_cast<ssize_t>(sizeof(key))) return true;
    if (n < 0 && errno == EINTR) continue;
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                       errno == ENOBUFS));
  }
}

void Waker::Drain(std::vector<uint64_t>* keys) {
  if (fd_ < 0) return;
  uint64_t key = 0;
  for (;;) {
    ssize_t n = recv(fd_, &key, sizeof(key), MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(sizeof(key))) {
      keys->push_back(key);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: all read
  }
}

}  // namespace shmkv
