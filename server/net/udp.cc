#include "server/net/udp.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "server/commands/reply.h"
#include "server/net/sockets.h"

namespace shmkv {

namespace {

bool IEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'a' && a[i] <= 'z' ? static_cast<char>(a[i] - 32) : a[i];
    if (x != b[i]) return false;
  }
  return true;
}

// Batches of datagrams read per wake-up, at most: a flood of UDP cannot
// keep a worker from its TCP clients for longer than this.
constexpr int kMaxBatches = 16;

}  // namespace

bool UdpCommandAllowed(std::string_view name) {
  for (std::string_view c : {"GET", "SET", "DEL", "INCR"}) {
    if (IEqual(name, c)) return true;
  }
  return false;
}

UdpServer::UdpServer(int fd, bool drop_remote, const RespLimits& limits)
    : fd_(fd), drop_remote_(drop_remote), limits_(limits),
      in_(kBatch * kUdpMaxRequest), peers_(kBatch), peer_lens_(kBatch) {
  // A request is one datagram: no argument can be longer.
  limits_.max_bulk = std::min(limits_.max_bulk, kUdpMaxRequest);
  limits_.max_inline = std::min(limits_.max_inline, kUdpMaxRequest);
}

bool UdpServer::Answer(const char* p, size_t n, const Run& run,
                       UdpFrame* frame, std::string* reply) {
  if (!DecodeUdpFrame(p, n, frame) || frame->seq != 0 || frame->count != 1 ||
      frame->reserved != 0) {
    return false;
  }
  const char* payload = p + kUdpHeaderBytes;
  size_t len = n - kUdpHeaderBytes;
  RespCursor cur;
  size_t used = 0;
  std::string err;
  if (ParseCommand(payload, len, limits_, &cur, &args_, &used, &inline_,
                   &err) != ParseResult::kOk ||
      used != len || args_.empty()) {
    return false;  // not exactly one whole command
  }
  if (!UdpCommandAllowed(args_[0])) {
    ReplyError(reply, "ERR '" + std::string(args_[0].substr(0, 64)) +
                          "' is not served over UDP (GET, SET, DEL, INCR)");
    return true;
  }
  run(args_, reply);
  return true;
}

void UdpServer::OnReadable(const Run& run, UdpStats* stats) {
  for (int batch = 0; batch < kMaxBatches; ++batch) {
    mmsghdr msgs[kBatch];
    iovec iov[kBatch];
    for (size_t i = 0; i < kBatch; ++i) {
      iov[i] = {in_.data() + i * kUdpMaxRequest, kUdpMaxRequest};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &peers_[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    }
    int got = recvmmsg(fd_, msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (got <= 0) return;  // EAGAIN: nothing more waiting
    ++stats->batches;
    replies_.resize(static_cast<size_t>(got));
    out_.clear();
    for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
      peer_lens_[i] = msgs[i].msg_hdr.msg_namelen;
      std::string& reply = replies_[i];
      reply.clear();
      if (drop_remote_ && !IsLoopbackPeer(peers_[i])) {
        ++stats->denied;
        continue;
      }
      UdpFrame f;
      if ((msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0 ||
          !Answer(in_.data() + i * kUdpMaxRequest, msgs[i].msg_len, run, &f,
                  &reply)) {
        ++stats->bad;
        continue;
      }
      ++stats->requests;
      size_t count = (reply.size() + kUdpReplyPayload - 1) / kUdpReplyPayload;
      if (count > 0xffff) {  // more datagrams than a frame can number
        reply.clear();
        ReplyError(&reply, "ERR reply too large for UDP; use TCP");
        count = 1;
      }
      for (size_t seq = 0; seq < count; ++seq) {
        Out o;
        o.reply = i;
        o.peer = i;
        o.off = seq * kUdpReplyPayload;
        o.len = std::min(kUdpReplyPayload, reply.size() - o.off);
        EncodeUdpFrame({f.id, static_cast<uint16_t>(seq),
                        static_cast<uint16_t>(count), 0},
                       o.header);
        out_.push_back(o);
      }
    }
    Flush(stats);
    if (static_cast<size_t>(got) < kBatch) return;
  }
}

void UdpServer::Flush(UdpStats* stats) {
  for (size_t first = 0; first < out_.size();) {
    size_t n = std::min(kBatch, out_.size() - first);
    mmsghdr msgs[kBatch];
    iovec iov[kBatch][2];
    for (size_t k = 0; k < n; ++k) {
      Out& o = out_[first + k];
      iov[k][0] = {o.header, kUdpHeaderBytes};
      iov[k][1] = {replies_[o.reply].data() + o.off, o.len};
      msgs[k] = {};
      msgs[k].msg_hdr.msg_iov = iov[k];
      msgs[k].msg_hdr.msg_iovlen = 2;
      msgs[k].msg_hdr.msg_name = &peers_[o.peer];
      msgs[k].msg_hdr.msg_namelen = peer_lens_[o.peer];
    }
    int sent = sendmmsg(fd_, msgs, static_cast<unsigned>(n), MSG_DONTWAIT);
    if (sent > 0) {
      first += static_cast<size_t>(sent);
      continue;
    }
    // A datagram may be lost anyway; its client times out and asks again.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
      // No room in the socket's buffer: the rest cannot go either.
      stats->send_drops += out_.size() - first;
      break;
    }
    ++stats->send_drops;  // this peer's address was refused: skip it
    ++first;
  }
  // A large reply's buffer is not kept for the next batch.
  for (std::string& r : replies_) {
    if (r.capacity() > kKeepReply) std::string().swap(r);
  }
}

}  // namespace shmkv
