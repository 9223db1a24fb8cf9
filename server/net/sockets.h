// The master's sockets: addresses to bind, listening TCP sockets and UDP
// sockets, one per worker and address, shared with SO_REUSEPORT so the
// kernel spreads connections and datagrams over the workers.
#pragma once

#include <sys/socket.h>

#include <string>

namespace shmkv {

// An IPv4 or IPv6 address with `port`; false if `addr` is neither.
bool MakeAddr(const std::string& addr, int port, sockaddr_storage* ss,
              socklen_t* len);

bool IsLoopback(const std::string& addr);
// A peer's address is a loopback one (any non-IP peer counts as local).
bool IsLoopbackPeer(const sockaddr_storage& ss);

// A socket of `type` (SOCK_STREAM or SOCK_DGRAM) bound to addr:port;
// `reuse_port` shares it with the other workers' (SO_REUSEPORT). -1 with
// *err; *no_family when the address family is not available on this
// machine (IPv6 disabled).
int BindSocket(const std::string& addr, int port, int type, bool reuse_port,
               std::string* err, bool* no_family);

// A listening TCP socket on addr:port shared with SO_REUSEPORT.
int Listen(const std::string& addr, int port, std::string* err);

// A UDP socket on addr:port shared with SO_REUSEPORT, non-blocking.
int BindUdp(const std::string& addr, int port, std::string* err);

// Fails if anyone else (another shmkv included) holds addr:port for
// `type`: a bind without SO_REUSEPORT is refused by every socket bound
// there. *skip is set for an optional address whose family this machine
// lacks (no IPv6).
bool PortFree(const std::string& addr, int port, int type, bool optional,
              bool* skip, std::string* err);

}  // namespace shmkv
