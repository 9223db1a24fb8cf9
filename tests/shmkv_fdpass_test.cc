// Long handoff messages (server/net/fdpass.h): SendLong's pieces put back
// together by LongMessage, and every damaged shape of them dropped with
// its connection closed, never used.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "server/net/fdpass.h"

namespace {

using shmkv::kMaxHandoffBytes;
using shmkv::kMaxLongMessage;
using shmkv::LongMessage;
using shmkv::RecvFd;
using shmkv::SendFd;
using shmkv::SendLong;

int OpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

struct Pair {
  int s[2] = {-1, -1};
  Pair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s), 0); }
  ~Pair() {
    close(s[0]);
    close(s[1]);
  }
};

std::string Text(size_t n) {
  std::string t(n, '\0');
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<char>('a' + i * 7 % 26);
  return t;
}

// Reads messages into `in` until it gives a whole one.
bool ReadWhole(int sock, LongMessage* in, std::string* msg, int* fd,
               std::string* why) {
  for (;;) {
    if (RecvFd(sock, msg, fd) <= 0) return false;
    if (in->Feed(msg, fd, why)) return true;
    if (!why->empty()) return false;
  }
}

TEST(LongHandoff, ShortAndLongMessagesArriveWhole) {
  for (size_t size : {size_t{1}, size_t{100}, kMaxHandoffBytes,
                      kMaxHandoffBytes + 1, size_t{5} << 20}) {
    Pair p;
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    std::string sent = Text(size);
    sent[0] = 'S';  // (as every handoff message starts)
    bool ok = false;
    std::thread sender([&] { ok = SendLong(p.s[0], pipefd[1], sent); });
    LongMessage in;
    std::string msg, why;
    int fd = -1;
    ASSERT_TRUE(ReadWhole(p.s[1], &in, &msg, &fd, &why)) << size << why;
    sender.join();
    EXPECT_TRUE(ok);
    EXPECT_EQ(why, "");
    EXPECT_EQ(msg.size(), sent.size());
    EXPECT_TRUE(msg == sent) << size;
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "x", 1), 1);  // the pipe's write end came along
    char c = 0;
    ASSERT_EQ(read(pipefd[0], &c, 1), 1);
    EXPECT_EQ(c, 'x');
    close(fd);
    close(pipefd[0]);
    close(pipefd[1]);
  }
}

std::string Head(uint64_t total) {
  std::string h(1, 'C');
  h.append(reinterpret_cast<const char*>(&total), sizeof(total));
  return h;
}

// Feeds `first` with a descriptor, then `rest` without: what is left
// open afterwards, and the last reason given.
struct Fed {
  bool whole = false;
  std::string why;
  int leaked = 0;
};
Fed FeedPieces(const std::string& first, const std::vector<std::string>& rest,
               bool another_fd_at_end = false) {
  Fed f;
  int before = OpenFds();
  {
    LongMessage in;
    std::string msg = first;
    int fd = dup(0);
    f.whole = in.Feed(&msg, &fd, &f.why);
    if (f.whole && fd >= 0) close(fd);
    for (const std::string& piece : rest) {
      if (!f.why.empty()) break;
      msg = piece;
      fd = -1;
      f.whole = in.Feed(&msg, &fd, &f.why);
      if (f.whole && fd >= 0) close(fd);
    }
    if (another_fd_at_end && f.why.empty()) {
      msg = "S-next";
      fd = dup(0);
      f.whole = in.Feed(&msg, &fd, &f.why);
      EXPECT_EQ(msg, "S-next");
      if (fd >= 0) close(fd);
    }
  }
  f.leaked = OpenFds() - before;
  return f;
}

TEST(LongHandoff, DamagedMessagesAreDroppedAndTheirConnectionsClosed) {
  // A length no longer than the first piece, or past the limit.
  Fed f = FeedPieces(Head(3) + "abc", {});
  EXPECT_FALSE(f.whole);
  EXPECT_NE(f.why, "");
  EXPECT_EQ(f.leaked, 0);
  f = FeedPieces(Head(kMaxLongMessage + 1) + "abc", {});
  EXPECT_NE(f.why, "");
  EXPECT_EQ(f.leaked, 0);
  f = FeedPieces("C12", {});  // shorter than its head
  EXPECT_NE(f.why, "");
  EXPECT_EQ(f.leaked, 0);
  // Pieces past the length.
  f = FeedPieces(Head(10) + "abcd", {"efg", "hijk"});
  EXPECT_FALSE(f.whole);
  EXPECT_NE(f.why, "");
  EXPECT_EQ(f.leaked, 0);
  // Another connection before the end: the first dropped, the second
  // used as it is.
  f = FeedPieces(Head(10) + "abcd", {"efg"}, true);
  EXPECT_TRUE(f.whole);
  EXPECT_NE(f.why, "");
  EXPECT_EQ(f.leaked, 0);
  // The sender gone half way: the destructor closes what it holds.
  f = FeedPieces(Head(10) + "abcd", {"ef"});
  EXPECT_FALSE(f.whole);
  EXPECT_EQ(f.why, "");
  EXPECT_EQ(f.leaked, 0);
  // Exactly the length: whole.
  f = FeedPieces(Head(10) + "abcd", {"efg", "hij"});
  EXPECT_TRUE(f.whole);
  EXPECT_EQ(f.why, "");
  EXPECT_EQ(f.leaked, 0);
}

TEST(LongHandoff, AbandonSaysWhetherAMessageWasUnderWay) {
  LongMessage in;
  EXPECT_FALSE(in.Abandon());
  std::string msg = Head(10) + "abcd", why;
  int fd = dup(0);
  EXPECT_FALSE(in.Feed(&msg, &fd, &why));
  EXPECT_EQ(fd, -1);
  EXPECT_TRUE(in.Abandon());
  EXPECT_FALSE(in.Abandon());
}

}  // namespace
