// shmkv's UDP path (--udp-port): GET, SET, DEL and INCR one request per
// datagram; replies that span datagrams put back together by the client;
// a lost datagram is a timeout, never a wrong answer; bad datagrams
// counted and dropped; off by default, refused with a password, dropped
// from remote peers in protected mode, and served across a hot restart.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "server/net/udp.h"
#include "tests/support/shmkv_server.h"

namespace {

using shmkv_test::Client;
using shmkv_test::InfoField;
using shmkv_test::Server;
using namespace std::chrono_literals;

// INFO's `field` once it is `want` (workers publish every 100 ms), or
// what it was at the deadline.
std::string InfoSettles(Client* c, const std::string& field,
                        const std::string& want) {
  std::string got;
  for (int i = 0; i < 100; ++i) {
    got = InfoField(c, field);
    if (got == want) break;
    std::this_thread::sleep_for(20ms);
  }
  return got;
}

// A UDP port nobody holds, never another test's.
int FreeUdpPort() { return shmkv_test::FreePort(SOCK_DGRAM); }

// A client of the UDP path, as a memcached UDP client works: each request
// gets an id, and a reply's datagrams are gathered by id and sequence.
class UdpClient {
 public:
  explicit UdpClient(int port, const std::string& from = "127.0.0.1")
      : fd_(socket(AF_INET, SOCK_DGRAM, 0)) {
    sockaddr_in me = {};
    me.sin_family = AF_INET;
    inet_pton(AF_INET, from.c_str(), &me.sin_addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&me), sizeof(me));
    to_.sin_family = AF_INET;
    to_.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &to_.sin_addr);
    if (from != "127.0.0.1") inet_pton(AF_INET, from.c_str(), &to_.sin_addr);
  }
  ~UdpClient() { close(fd_); }

  // Sends raw bytes as one datagram.
  void SendRaw(const std::string& d) {
    sendto(fd_, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to_),
           sizeof(to_));
  }
  // One command in a framed request; returns its id.
  uint16_t Send(const std::vector<std::string>& args) {
    std::string d(shmkv::kUdpHeaderBytes, '\0');
    shmkv::EncodeUdpFrame({++id_, 0, 1, 0}, &d[0]);
    d += Client::Encode(args);
    SendRaw(d);
    return id_;
  }
  // The reply to request `id`, its datagrams put back in order; "" when
  // one is missing at the deadline. Datagrams of other ids are ignored;
  // `drop_seq` >= 0 throws that datagram away (a datagram the network
  // lost).
  std::string Receive(uint16_t id, std::chrono::milliseconds wait = 2000ms,
                      int drop_seq = -1) {
    std::map<uint16_t, std::string> parts;
    int count = -1;
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (count < 0 || static_cast<int>(parts.size()) < count) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p = {fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return "";
      }
      char buf[65536];
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      shmkv::UdpFrame f;
      if (n < 0 || !shmkv::DecodeUdpFrame(buf, static_cast<size_t>(n), &f) ||
          f.id != id || f.seq >= f.count || f.reserved != 0 ||
          (count >= 0 && f.count != count) || f.seq == drop_seq) {
        continue;
      }
      ++datagrams_;
      count = f.count;
      parts[f.seq].assign(buf + shmkv::kUdpHeaderBytes,
                          static_cast<size_t>(n) - shmkv::kUdpHeaderBytes);
    }
    std::string out;
    for (auto& [seq, bytes] : parts) out += bytes;
    return out;
  }
  std::string Call(const std::vector<std::string>& args) {
    return Receive(Send(args));
  }
  // Whether anything at all arrives within `wait`.
  bool Silent(std::chrono::milliseconds wait) {
    pollfd p = {fd_, POLLIN, 0};
    return poll(&p, 1, static_cast<int>(wait.count())) == 0;
  }
  size_t datagrams() const { return datagrams_; }

 private:
  int fd_;
  sockaddr_in to_ = {};
  uint16_t id_ = 0;
  size_t datagrams_ = 0;
};

std::string Framed(uint16_t id, uint16_t seq, uint16_t count, uint16_t res,
                   const std::string& payload) {
  std::string d(shmkv::kUdpHeaderBytes, '\0');
  shmkv::EncodeUdpFrame({id, seq, count, res}, &d[0]);
  return d + payload;
}

TEST(ShmkvUdp, GetSetDelIncrShareTheStoreWithTcp) {
  Server s("udp_cmds");
  int udp = FreeUdpPort();
  ASSERT_TRUE(s.Start({"--udp-port", std::to_string(udp)})) << s.log();
  UdpClient u(udp);
  Client c(s.port());
  EXPECT_EQ(u.Call({"SET", "k", "hello"}), "+OK\r\n");
  EXPECT_EQ(c.Call({"GET", "k"}), "$5\r\nhello\r\n") << "one store";
  EXPECT_EQ(u.Call({"get", "k"}), "$5\r\nhello\r\n");
  EXPECT_EQ(u.Call({"INCR", "n"}), ":1\r\n");
  EXPECT_EQ(u.Call({"INCR", "k"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(u.Call({"SET", "t", "v", "EX", "100"}), "+OK\r\n");
  EXPECT_EQ(c.Call({"TTL", "t"}), ":100\r\n");
  EXPECT_EQ(u.Call({"DEL", "k", "n", "missing"}), ":2\r\n");
  EXPECT_EQ(u.Call({"GET", "k"}), "$-1\r\n");
  EXPECT_EQ(u.Call({"PING"}),
            "-ERR 'PING' is not served over UDP (GET, SET, DEL, INCR)\r\n");
  EXPECT_EQ(u.Call({"GET"}),
            "-ERR wrong number of arguments for 'get' command\r\n");
  // An inline request, as typed.
  uint16_t id = 500;
  u.SendRaw(Framed(id, 0, 1, 0, "SET inline \"a b\"\r\n"));
  EXPECT_EQ(u.Receive(id), "+OK\r\n");
  EXPECT_EQ(c.Call({"GET", "inline"}), "$3\r\na b\r\n");
  EXPECT_EQ(InfoField(&c, "udp_port"), std::to_string(udp));
  EXPECT_EQ(InfoSettles(&c, "udp_requests", "10"), "10");
}

TEST(ShmkvUdp, RepliesSpanningDatagramsAreReassembled) {
  Server s("udp_big");
  int udp = FreeUdpPort();
  ASSERT_TRUE(s.Start({"--udp-port", std::to_string(udp)})) << s.log();
  Client c(s.port());
  std::string big(100000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  ASSERT_EQ(c.Call({"SET", "big", big}), "+OK\r\n");
  UdpClient u(udp);
  std::string want = "$100000\r\n" + big + "\r\n";
  EXPECT_EQ(u.Call({"GET", "big"}), want);
  EXPECT_EQ(u.datagrams(), (want.size() + 1399) / 1400);
  // A value of 1400 bytes, the largest the bench sends, in one request.
  std::string v1400(1400, 'v');
  EXPECT_EQ(u.Call({"SET", "v", v1400}), "+OK\r\n");
  EXPECT_EQ(u.Call({"GET", "v"}), "$1400\r\n" + v1400 + "\r\n");
}

TEST(ShmkvUdp, LostDatagramIsATimeoutNotAWrongAnswer) {
  Server s("udp_loss");
  int udp = FreeUdpPort();
  ASSERT_TRUE(s.Start({"--udp-port", std::to_string(udp)})) << s.log();
  Client c(s.port());
  ASSERT_EQ(c.Call({"SET", "big", std::string(10000, 'b')}), "+OK\r\n");
  ASSERT_EQ(c.Call({"SET", "small", "s"}), "+OK\r\n");
  UdpClient u(udp);
  // The third of the reply's 8 datagrams is lost: no answer, not a short one.
  uint16_t lost = u.Send({"GET", "big"});
  EXPECT_EQ(u.Receive(lost, 500ms, 3), "");
  // Late datagrams of that reply do not pass for the next one's.
  uint16_t again = u.Send({"GET", "big"});
  u.Send({"GET", "small"});
  EXPECT_EQ(u.Receive(again), "$10000\r\n" + std::string(10000, 'b') + "\r\n");
  EXPECT_EQ(u.Receive(static_cast<uint16_t>(again + 1)), "$1\r\ns\r\n");
  // A request lost on its way: nothing comes back at all.
  EXPECT_TRUE(u.Silent(300ms));
}

TEST(ShmkvUdp, BadDatagramsAreCountedAndDropped) {
  Server s("udp_bad");
  int udp = FreeUdpPort();
  ASSERT_TRUE(s.Start({"--udp-port", std::to_string(udp)})) << s.log();
  UdpClient u(udp);
  const std::string get = Client::Encode({"GET", "k"});
  const std::vector<std::string> bad = {
      std::string("\x00\x01", 2),              // shorter than a header
      Framed(1, 1, 1, 0, get),                 // not sequence 0
      Framed(2, 0, 2, 0, get),                 // a request in 2 datagrams
      Framed(3, 0, 1, 7, get),                 // reserved word not 0
      Framed(4, 0, 1, 0, get + get),           // two commands
      Framed(5, 0, 1, 0, "*2\r\n$3\r\nGET"),   // half a command
      Framed(6, 0, 1, 0, "*1\r\n$-5\r\n"),     // malformed RESP
      Framed(7, 0, 1, 0, ""),                  // no command
      Framed(8, 0, 1, 0, std::string(9000, 'x')),  // beyond 8,192 bytes
      Framed(9, 0, 1, 0, std::string("\xff\xfe\x00\x01", 4)),
  };
  for (const std::string& d : bad) u.SendRaw(d);
  EXPECT_TRUE(u.Silent(500ms)) << "no bad datagram is answered";
  Client c(s.port());
  const std::string n = std::to_string(bad.size());
  EXPECT_EQ(InfoSettles(&c, "udp_bad_datagrams", n), n);
  EXPECT_EQ(u.Call({"SET", "k", "still"}), "+OK\r\n") << "and it serves";
  EXPECT_EQ(InfoSettles(&c, "udp_requests", "1"), "1");
}

TEST(ShmkvUdp, OffByDefaultAndNotWithAPassword) {
  Server s("udp_off");
  ASSERT_TRUE(s.Start()) << s.log();
  Client c(s.port());
  EXPECT_EQ(InfoField(&c, "udp_port"), "0");
  s.Stop();
  Server p("udp_pass");
  EXPECT_FALSE(p.Start({"--udp-port", std::to_string(FreeUdpPort()),
                        "--requirepass", "secret"}));
  EXPECT_EQ(p.exit_code(), 2);
  EXPECT_NE(p.log().find("a datagram carries no password"), std::string::npos)
      << p.log();
  // A UDP port someone else holds: a clear start error.
  int udp = FreeUdpPort();
  int holder = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(udp));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  Server busy("udp_busy");
  EXPECT_FALSE(busy.Start({"--udp-port", std::to_string(udp)}));
  EXPECT_EQ(busy.exit_code(), 1);
  EXPECT_NE(busy.log().find("is in use"), std::string::npos) << busy.log();
  close(holder);
}

// Bound beyond loopback with no password, datagrams from other hosts are
// dropped unanswered (an answer to an unchecked source address is how UDP
// servers get used to flood third parties).
TEST(ShmkvUdp, ProtectedModeDropsRemotePeers) {
  std::string ip = shmkv_test::NonLoopbackIPv4();
  if (ip.empty()) GTEST_SKIP() << "no non-loopback IPv4 address here";
  Server s("udp_prot");
  int udp = FreeUdpPort();
  ASSERT_TRUE(s.Start({"--udp-port", std::to_string(udp), "--bind",
                       "127.0.0.1", ip}))
      << s.log();
  UdpClient remote(udp, ip);  // from, and to, the non-loopback address
  remote.Send({"SET", "k", "v"});
  EXPECT_TRUE(remote.Silent(500ms));
  Client c(s.port());
  EXPECT_EQ(InfoSettles(&c, "udp_denied_datagrams", "1"), "1");
  UdpClient local(udp);
  EXPECT_EQ(local.Call({"SET", "k", "v"}), "+OK\r\n");
}

// SIGHUP replaces every worker; the UDP sockets stay with the master, so
// requests sent all through the restart are answered, late at worst.
TEST(ShmkvUdp, HotRestartKeepsServing) {
  Server s("udp_reload");
  int udp = FreeUdpPort();
  ASSERT_TRUE(s.Start({"--udp-port", std::to_string(udp)})) << s.log();
  UdpClient u(udp);
  int answered = 0, sent = 0;
  auto end = std::chrono::steady_clock::now() + 3s;
  bool signalled = false;
  while (std::chrono::steady_clock::now() < end) {
    std::string v = std::to_string(sent);
    ++sent;
    answered += u.Receive(u.Send({"SET", "k", v}), 5000ms) == "+OK\r\n";
    if (!signalled && sent == 50) {
      s.Signal(SIGHUP);
      signalled = true;
    }
  }
  EXPECT_EQ(answered, sent) << s.log();
  Client c(s.port());
  EXPECT_EQ(c.Call({"GET", "k"}), "$" + std::to_string(std::to_string(sent - 1).size()) +
                                       "\r\n" + std::to_string(sent - 1) + "\r\n");
}

}  // namespace
