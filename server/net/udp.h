// shmkv's UDP path (--udp-port; docs/server.md, "UDP"): GET, SET, DEL and
// INCR, one request per datagram, framed as memcached frames its UDP
// requests, and served in batches (recvmmsg, sendmmsg) on one
// SO_REUSEPORT socket per worker.
//
//   datagram: [request id: u16][sequence: u16][datagrams: u16][0: u16]
//             [payload]                               (big-endian header)
//
// A request is one datagram (sequence 0 of 1) whose payload is one
// command, RESP or inline, as a TCP client sends it. Its reply is the RESP
// reply's bytes cut into datagrams of at most kUdpReplyPayload bytes of
// payload, numbered 0..n-1 under the request's id, which the client puts
// back together. A datagram that is not a well-formed request (short,
// truncated, another sequence or count, a reserved word not 0, not one
// whole command) is counted and dropped: a client learns of it, as of any
// lost datagram, by its timeout, never by a wrong answer.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/net/resp.h"
#include "server/store/stats.h"

namespace shmkv {

constexpr size_t kUdpHeaderBytes = 8;
// Reply payload per datagram: header included, 1,408 bytes, within a
// 1,500-byte Ethernet MTU after the IP and UDP headers.
constexpr size_t kUdpReplyPayload = 1400;
// The largest request datagram read; a longer one is dropped as bad.
constexpr size_t kUdpMaxRequest = 8192;

struct UdpFrame {
  uint16_t id = 0, seq = 0, count = 0, reserved = 0;
};

// Reads a header from p[0, n); false if n is too short.
inline bool DecodeUdpFrame(const char* p, size_t n, UdpFrame* f) {
  if (n < kUdpHeaderBytes) return false;
  auto get = [p](int at) {
    return static_cast<uint16_t>(static_cast<unsigned char>(p[at]) << 8 |
                                 static_cast<unsigned char>(p[at + 1]));
  };
  *f = {get(0), get(2), get(4), get(6)};
  return true;
}
inline void EncodeUdpFrame(const UdpFrame& f, char* p) {
  const uint16_t words[4] = {f.id, f.seq, f.count, f.reserved};
  for (int i = 0; i < 4; ++i) {
    p[2 * i] = static_cast<char>(words[i] >> 8);
    p[2 * i + 1] = static_cast<char>(words[i] & 0xff);
  }
}

// The commands served over UDP (any case).
bool UdpCommandAllowed(std::string_view name);

// One worker's UDP socket.
class UdpServer {
 public:
  // Runs one command (args[0] its name) and appends its RESP reply.
  using Run = std::function<void(const std::vector<std::string_view>& args,
                                 std::string* reply)>;

  // `drop_remote`: protected mode, datagrams from non-loopback peers are
  // dropped unanswered (an answer would go to an address nobody checked).
  UdpServer(int fd, bool drop_remote, const RespLimits& limits);
  int fd() const { return fd_; }

  // Reads and answers the datagrams waiting, a batch at a time, up to a
  // bound of batches so that TCP clients are not starved.
  void OnReadable(const Run& run, UdpStats* stats);

 private:
  static constexpr size_t kBatch = 32;
  static constexpr size_t kKeepReply = 64 << 10;

  // The reply to one datagram in *reply; false to drop it.
  bool Answer(const char* p, size_t n, const Run& run, UdpFrame* frame,
              std::string* reply);
  // Sends every queued reply datagram; counts those with no room.
  void Flush(UdpStats* stats);

  int fd_;
  bool drop_remote_;
  RespLimits limits_;
  std::vector<char> in_;  // kBatch buffers of kUdpMaxRequest bytes
  std::vector<sockaddr_storage> peers_;
  std::vector<socklen_t> peer_lens_;
  std::vector<std::string> replies_;  // one per answered datagram
  std::vector<std::string_view> args_;
  std::string inline_;
  // Queued reply datagrams: header bytes, and where each one's payload is.
  struct Out {
    size_t reply;   // index into replies_
    size_t peer;    // index into peers_
    size_t off, len;
    char header[kUdpHeaderBytes];
  };
  std::vector<Out> out_;
};

}  // namespace shmkv
