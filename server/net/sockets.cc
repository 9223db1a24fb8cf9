#include "server/net/sockets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace shmkv {

bool MakeAddr(const std::string& addr, int port, sockaddr_storage* ss,
              socklen_t* len) {
  std::memset(ss, 0, sizeof(*ss));
  auto* v4 = reinterpret_cast<sockaddr_in*>(ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(ss);
  if (inet_pton(AF_INET, addr.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(*v4);
    return true;
  }
  if (inet_pton(AF_INET6, addr.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(*v6);
    return true;
  }
  return false;
}

bool IsLoopback(const std::string& addr) {
  return addr == "::1" || addr.compare(0, 4, "127.") == 0;
}

bool IsLoopbackPeer(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    return IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr) != 0;
  }
  return true;
}

int BindSocket(const std::string& addr, int port, int type, bool reuse_port,
               std::string* err, bool* no_family) {
  *no_family = false;
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!MakeAddr(addr, port, &ss, &len)) {
    *err = "--bind: '" + addr + "' is not an IPv4 or IPv6 address";
    return -1;
  }
  int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *no_family = errno == EAFNOSUPPORT;
    *err = addr + ": " + std::strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuse_port) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (ss.ss_family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    int e = errno;
    *no_family = e == EADDRNOTAVAIL && ss.ss_family == AF_INET6;
    *err = (ss.ss_family == AF_INET6 ? "[" + addr + "]" : addr) + ":" +
           std::to_string(port) +
           (e == EADDRINUSE ? " is in use (another server?)"
                            : std::string(": ") + std::strerror(e));
    close(fd);
    return -1;
  }
  return fd;
}

int Listen(const std::string& addr, int port, std::string* err) {
  bool no_family = false;
  int fd = BindSocket(addr, port, SOCK_STREAM, true, err, &no_family);
  if (fd >= 0 && listen(fd, 4096) != 0) {
    *err = addr + ":" + std::to_string(port) + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

bool PortFree(const std::string& addr, int port, int type, bool optional,
              bool* skip, std::string* err) {
  bool no_family = false;
  *skip = false;
  int fd = BindSocket(addr, port, type, false, err, &no_family);
  if (fd < 0) {
    if (optional && no_family) {
      *skip = true;
      return true;
    }
    return false;
  }
  close(fd);
  return true;
}

int BindUdp(const std::string& addr, int port, std::string* err) {
  bool no_family = false;
  int fd = BindSocket(addr, port, SOCK_DGRAM, true, err, &no_family);
  if (fd < 0) return -1;
  // Room for bursts: a worker busy with a batch must not lose the next.
  int bytes = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  return fd;
}

}  // namespace shmkv
