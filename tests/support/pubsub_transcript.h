// Transcripts of pub/sub against redis-server: three connections to each
// server send the same commands in the same order, and everything each
// connection receives (replies and messages) is compared byte for byte.
// Shared by the pub/sub and keyspace-notification tests.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shmkv_server.h"

namespace shmkv_test {

// What `c` received up to now: a PING carrying `token` is sent and
// everything before its answer is read (a subscriber's PING answers
// after every message published before it, on shmkv as on Redis). The
// token tells the barrier's answer from a PING the transcript sends
// itself (a bare PING's answer, taken for the barrier's, left the
// barrier's unread and every later step's barrier one behind: the
// connection's next command could still be on its way when another
// connection's command went). Inside MULTI the PING is only queued:
// then the replies before its +QUEUED are `replies` (the command's own,
// if `c` sent one), and push messages (RESP3) any number.
inline std::string Received(Client* c, bool in_multi = false,
                            int replies = 0,
                            const std::string& token = "barrier") {
  std::string out;
  if (!c->SendRaw(Client::Encode({"PING", token}))) return "(send failed)";
  const std::string bulk =
      "$" + std::to_string(token.size()) + "\r\n" + token + "\r\n";
  for (;;) {
    std::string r = c->Reply();
    if (r.empty()) return out + "(no answer)";
    if (in_multi) {
      if (r[0] != '>' && replies-- == 0) return out;  // the PING's
    } else if (r == bulk || r == "*2\r\n$4\r\npong\r\n" + bulk) {
      return out;
    }
    out += r;
  }
}

// A step: connection `who` sends `cmd`; then what every connection got;
// then a pause of pause_ms (a TTL running out on both servers).
struct Step {
  int who;
  std::vector<std::string> cmd;
  int pause_ms = 0;
};

// Runs the steps on three connections to each server and compares, per
// connection, everything it received: every reply and every message,
// byte for byte and in order. shmkv's connections 0 and 2 sit on one
// worker, 1 on the other. (Compared whole, not step by step: a message
// may reach a connection after the next step's barrier on either
// server, redis-server's too.)
inline void ExpectSameAsRedis(int port, int redis_port,
                              const std::vector<Step>& steps) {
  using namespace std::chrono_literals;
  auto groups = OnEachWorker(port, 2, 2);
  ASSERT_EQ(groups.size(), 2u);
  Client* ours[3] = {groups[0][0].get(), groups[1][0].get(),
                     groups[0][1].get()};
  Client r0(redis_port), r1(redis_port), r2(redis_port);
  Client* theirs[3] = {&r0, &r1, &r2};
  std::string got[3], want[3];
  // Which connections are inside MULTI, on each server (a subscriber may
  // open one in RESP3).
  bool multi_ours[3] = {}, multi_theirs[3] = {};
  int step = 0;
  for (const Step& s : steps) {
    // One token per step, the same on both servers (a queued barrier's
    // answer is part of the EXEC's).
    const std::string token = "barrier" + std::to_string(step++);
    ASSERT_TRUE(ours[s.who]->SendRaw(Client::Encode(s.cmd)));
    ASSERT_TRUE(theirs[s.who]->SendRaw(Client::Encode(s.cmd)));
    // The sender first: its PING answers after its command, so what the
    // command published is on its way before the others are asked (two
    // workers run commands at once; Redis runs them in arrival order).
    std::string name = s.cmd.empty() ? "" : s.cmd[0];
    for (char& ch : name) ch = static_cast<char>(std::tolower(ch));
    for (int k = 0; k < 3; ++k) {
      int i = (s.who + k) % 3;
      int own = i == s.who ? 1 : 0;
      // (a MULTI's own barrier is counted: its PING is queued if it
      // succeeded, answered if not; either way two replies)
      bool counted = own == 1 && name == "multi";
      std::string w =
          Received(theirs[i], multi_theirs[i] || counted, own, token);
      std::string g = Received(ours[i], multi_ours[i] || counted, own, token);
      want[i] += w;
      got[i] += g;
      if (own == 0) continue;
      if (name == "multi") {
        multi_theirs[i] = multi_theirs[i] || w == "+OK\r\n";
        multi_ours[i] = multi_ours[i] || g == "+OK\r\n";
      } else if (name == "exec" || name == "discard" || name == "reset") {
        multi_theirs[i] = multi_ours[i] = false;
      }
    }
    if (s.pause_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(s.pause_ms));
    }
  }
  std::this_thread::sleep_for(100ms);
  for (int i = 0; i < 3; ++i) {
    want[i] += Received(theirs[i]);
    got[i] += Received(ours[i]);
    EXPECT_EQ(got[i], want[i]) << "connection " << i;
  }
}

}  // namespace shmkv_test
