// Passing sockets between shmkv processes (SCM_RIGHTS over a
// SOCK_SEQPACKET socket): the master hands a worker its replacement's
// socket, and a replaced worker hands its open connections over.
#pragma once

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace shmkv {

// The largest message one send carries (a connection's state, its
// partial request). A longer one travels in pieces (SendLong), up to
// kMaxLongMessage bytes in all.
constexpr size_t kMaxHandoffBytes = 60 << 10;
constexpr uint64_t kMaxLongMessage = uint64_t{256} << 20;

// One message of `len` bytes at `buf` with room for one passed fd.
struct FdMessage {
  struct iovec iov;
  char cbuf[CMSG_SPACE(sizeof(int))] = {};
  struct msghdr msg = {};
  FdMessage(void* buf, size_t len) : iov{buf, len} {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof(cbuf);
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
};

// Sends `fd` with one message of `data` over a SOCK_SEQPACKET socket.
inline bool SendFd(int sock, int fd, const std::string& data) {
  FdMessage m(const_cast<char*>(data.data()), data.size());
  struct msghdr& msg = m.msg;
  struct cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(data.size());
}

// Receives one message and the fd sent with it (-1 if none). Returns the
// message length, 0 at end of stream, -1 on error (errno).
inline ssize_t RecvFd(int sock, std::string* data, int* fd) {
  data->resize(kMaxHandoffBytes + 16);
  FdMessage m(&(*data)[0], data->size());
  struct msghdr& msg = m.msg;
  ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  *fd = -1;
  if (n < 0) return n;
  data->resize(static_cast<size_t>(n));
  for (struct cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr;
       cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
      std::memcpy(fd, CMSG_DATA(cm), sizeof(int));
    }
  }
  return n;
}

// Sends `fd` with `data`, however long: one message when it fits, else
// 'C', its length (8 bytes, host order) and its start with the fd, then
// the rest in messages of kMaxHandoffBytes. Only to a receiver that said
// it reassembles them (LongMessage).
inline bool SendLong(int sock, int fd, const std::string& data) {
  if (data.size() <= kMaxHandoffBytes) return SendFd(sock, fd, data);
  constexpr size_t kHead = 1 + sizeof(uint64_t);
  uint64_t total = data.size();
  std::string first(1, 'C');
  first.append(reinterpret_cast<const char*>(&total), sizeof(total));
  first.append(data, 0, kMaxHandoffBytes - kHead);
  if (!SendFd(sock, fd, first)) return false;
  for (size_t off = kMaxHandoffBytes - kHead; off < data.size();) {
    size_t n = std::min(kMaxHandoffBytes, data.size() - off);
    ssize_t sent;
    do {
      sent = send(sock, data.data() + off, n, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(n)) return false;
    off += n;
  }
  return true;
}

// The receiving side of SendLong: puts the pieces of a long message back
// together. Owns the fd of a message under way.
class LongMessage {
 public:
  LongMessage() = default;
  LongMessage(const LongMessage&) = delete;
  LongMessage& operator=(const LongMessage&) = delete;
  ~LongMessage() { Abandon(); }

  // Takes one received message (*msg, *fd). True when *msg and *fd hold
  // a whole message to use; false when it was a piece (read on) or was
  // damaged. *why says what was damaged and dropped (its fd closed), ""
  // if nothing was.
  bool Feed(std::string* msg, int* fd, std::string* why) {
    why->clear();
    if (fd_ >= 0) {
      if (*fd >= 0) {  // a new connection before this one's end
        *why = "a long message ended early";
        Abandon();
      } else {
        buf_ += *msg;
        if (buf_.size() > total_) {
          *why = "a long message ran past its length";
          Abandon();
          return false;
        }
        if (buf_.size() < total_) return false;
        *msg = std::move(buf_);
        *fd = fd_;
        fd_ = -1;
        buf_.clear();
        return true;
      }
    }
    constexpr size_t kHead = 1 + sizeof(uint64_t);
    if (*fd < 0 || msg->empty() || (*msg)[0] != 'C') return true;
    uint64_t total = 0;
    if (msg->size() >= kHead) std::memcpy(&total, msg->data() + 1, 8);
    if (msg->size() < kHead || total <= msg->size() - kHead ||
        total > kMaxLongMessage) {
      *why = "a long message with a bad length";
      close(*fd);
      *fd = -1;
      return false;
    }
    fd_ = *fd;
    *fd = -1;
    total_ = total;
    buf_.assign(*msg, kHead, std::string::npos);
    return false;
  }

  // The sender is gone: a message under way is dropped. True if one was.
  bool Abandon() {
    if (fd_ < 0) return false;
    close(fd_);
    fd_ = -1;
    buf_.clear();
    return true;
  }

 private:
  int fd_ = -1;
  uint64_t total_ = 0;
  std::string buf_;
};

}  // namespace shmkv
