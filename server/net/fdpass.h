// Passing sockets between shmkv processes (SCM_RIGHTS over a
// SOCK_SEQPACKET socket): the master hands a worker its replacement's
// socket, and a replaced worker hands its open connections over.
#pragma once

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstring>
#include <string>

namespace shmkv {

// Largest partial request passed along with a connection.
constexpr size_t kMaxHandoffBytes = 60 << 10;

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

}  // namespace shmkv
