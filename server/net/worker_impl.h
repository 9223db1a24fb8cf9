// The worker process's class (server/net/worker.h runs it), shared by the
// files that define it: worker.cc (the event loop, connections and
// commands), worker_handoff.cc (hot restart: connections handed over and
// adopted) and worker_blocking.cc (clients blocked in BLPOP and the
// others). Not for use outside server/net.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/pubsub_hub.h"
#include "server/commands/reply.h"
#include "server/net/blocked.h"
#include "server/net/fdpass.h"
#include "server/net/resp.h"
#include "server/net/udp.h"
#include "server/net/waker.h"
#include "server/net/worker.h"
#include "server/store/latency.h"
#include "server/store/stats.h"
#include "server/store/waits.h"

namespace shmkv {
namespace worker_impl {

// A clock in us: CLOCK_MONOTONIC (MonoUs) or the wall clock (WallUs).
inline double ClockUs(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + ts.tv_nsec / 1e3;
}
inline double MonoUs() { return ClockUs(CLOCK_MONOTONIC); }
inline double WallUs() { return ClockUs(CLOCK_REALTIME); }

struct Conn {
  int fd = -1;
  bool http = false;
  ClientState client;
  std::string in;
  size_t in_off = 0;
  RespCursor cursor;  // how far the request at in_off is parsed
  std::string out;
  size_t out_off = 0;
  bool closing = false;   // close once the output is flushed
  bool reading = true;    // EPOLLIN registered
  bool writing = false;   // EPOLLOUT registered
  // Commands left in `in` when its output passed kMaxPendingOut: run
  // once the output drains (no read may come: the client may be waiting
  // for their replies).
  bool out_paused = false;
  double last_active = 0;  // last byte read or written (--timeout)
  size_t held = 0;         // buffer bytes counted in the worker's total
  // Set while the client waits in a blocking command (BLPOP ...): its
  // input waits too, as in Redis.
  std::unique_ptr<BlockedCommand> blocked;
  double over_soft_since = 0;  // pub/sub output above the soft limit since
  size_t pending_out() const { return out.size() - out_off; }
  size_t buffers() const { return in.capacity() + out.capacity(); }
  bool idle() const { return in_off == in.size() && pending_out() == 0; }
  // Between requests, with nothing to send: a hot restart may move it.
  bool movable() const {
    return !closing && pending_out() == 0 && !client.in_transaction();
  }
};

// "ip:port" of a peer; true when it is a loopback address.
inline bool PeerText(const sockaddr_storage& ss, std::string* out) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  bool loopback = false;
  if (ss.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof(ip));
    port = ntohs(v4->sin_port);
    loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  } else if (ss.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof(ip));
    port = ntohs(v6->sin6_port);
    loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
  } else {
    loopback = true;  // not an IP peer (a Unix socket)
  }
  *out = std::string(ip) + ":" + std::to_string(port);
  return loopback;
}

class Worker {
 public:
  explicit Worker(const WorkerConfig& cfg) : cfg_(cfg) {}

  int Run();

 private:
  // Every listening socket: RESP ones, then HTTP ones.
  std::vector<int> Listeners() const;

  // Unique among this worker's connections; the slot keeps workers apart.
  uint64_t NewClientId();

  void Add(int fd, uint32_t events);

  void Update(Conn* c);

  int Loop();

  void Publish();

  void StartDrain();

  UdpServer* FindUdp(int fd) const;

  // Runs one command for a client and records it. True when it blocked
  // (ctx_.blocked says on what); it is counted once it is answered.
  // `ticket`: a blocked command tried again.
  template <class ArgList>
  bool Run(ClientState* client, const ArgList& args, std::string* out,
           bool may_block = false, uint64_t ticket = 0) {
    // In a batch (Process), the clock read that ended the command before
    // starts this one: one read per command, its parse included.
    double t0 = batch_clock_ != nullptr ? *batch_clock_ : MonoUs();
    // The command's time (NowMs) is when it began, from the same clock
    // read: expiry sees one instant through the command, as in Redis.
    const int64_t frozen_was =
        FreezeNowMs(static_cast<int64_t>((t0 + wall_offset_us_) / 1e3));
    ctx_.client = client;
    ctx_.may_block = may_block && ctx_.waits != nullptr;
    ctx_.ticket = ticket;
    ctx_.blocked.ticket = 0;
    Reply reply(out);
    size_t id = 0;
    if constexpr (std::is_same_v<ArgList, std::vector<std::string_view>>) {
      id = Execute(args, &ctx_, &reply);
    } else {
      retry_args_.assign(args.begin(), args.end());
      id = Execute(retry_args_, &ctx_, &reply);
    }
    ctx_.may_block = false;
    ctx_.ticket = 0;
    FreezeNowMs(frozen_was);
    SendWakes();
    double t1 = MonoUs();
    if (batch_clock_ != nullptr) *batch_clock_ = t1;
    if (ctx_.blocked.ticket != 0) return true;
    local_.Record(id, t1 - t0);
    ++local_.commands;
    local_.errors += reply.error();
    return false;
  }

  // ---- Blocking commands (docs/server.md, "Blocking commands") ----

  void OpenBlocking();

  // After a commit: tells the workers holding clients blocked on the keys
  // it wrote (this one through woken_).
  void SendWakes();

  // The command c just ran blocked: hold c until it is served.
  void Block(Conn* c);

  // c's wait is over (answered, timed out, or gone): frees its rows when
  // `board`, and wakes the others waiting on its keys, which may now be
  // first in line.
  void Unblock(Conn* c, bool board);

  // Tries again the clients blocked on keys written since (woken_), first
  // blocked first. The ones served go on with their input in Resume.
  void ServeWoken();

  // Sends what the clients let go have, and goes on with their input.
  void Resume();

  // Answers the clients whose timeout passed: Redis's null reply.
  void ExpireBlocked();
  // Ends a blocked client's wait as its timeout would, or with CLIENT
  // UNBLOCK's error.
  void EndWait(Conn* c, bool error);
  // CLIENT UNBLOCK (CommandContext::unblock_client): whether client `id`
  // of this worker is blocked; if so its wait ends in EndUnblocked,
  // after the asking command.
  bool UnblockClient(uint64_t id, bool error);
  void EndUnblocked();

  // Every 100 ms: a wake some worker could not deliver (its socket was
  // full) makes every worker try all its clients again; once a second,
  // all are tried anyway, and rows of this worker's that no client owns
  // any more are freed.
  void CheckBlocked(double now);

  // The master names our replacement: a socket to hand connections to.
  void OnControl();

  // Passes every connection that is between requests (its reply sent) to
  // the replacement, with the bytes of a request it has only partly
  // received; bytes still in the kernel socket travel with the socket.
  void HandOff();

  // A connection handed over by the worker this one replaces.
  void Adopt();

  // A client that was blocked on the worker this one replaces: its rows
  // on the board become this worker's, in the same place in line, and it
  // is tried again at once (a write may have come while it moved).
  void AdoptBlocked(Conn* c);

  // Redis's timeout: a client that sent or received nothing for longer
  // than timeout_s seconds is closed (one in MULTI too, as Redis does; not
  // one blocked in BLPOP and the others).
  void CloseTimedOut(double now);

  // Counts c's buffers in the worker's total.
  void Account(Conn* c);

  // The server-wide bound on client buffers (this worker's share): while
  // above it, the client holding the most is told and closed, as Redis's
  // client eviction does. True if `keep` is still open.
  bool Evict(const Conn* keep);

  void CloseIdle();

  void Accept(int lfd, bool http);

  // Out of file descriptors: the connection waiting in the backlog would
  // keep the listening socket readable, and a worker that only logged
  // would spin on it. So, as Redis does beyond maxclients: give up the
  // spare descriptor, accept the connection, tell it why
  // ("-ERR max number of clients reached", or HTTP 503), close it, take the
  // spare back. Logged at most once a second, with the count. False when
  // no connection was taken (the spare could not be freed or none waits).
  bool Refuse(int lfd, bool http);

  void Close(int fd);

  void OnReadable(Conn* c);

  void Process(Conn* c);

  // The commands of one Process call, parsed from the client's input
  // before the first of them runs (views into it: it is not changed while
  // they run), so that the store can fetch their keys' lines together.
  struct Ahead {
    static constexpr size_t kMost = Store::kPrefetchMost;
    struct Command {
      size_t used;   // its bytes of input
      size_t first;  // its first argument in args
      size_t argc;
      const cmd::CommandRow* row;  // its name's (null: unknown)
    };
    std::vector<Command> commands;
    std::vector<std::string_view> args;
    size_t next = 0;  // the next to run
    void Clear() {
      commands.clear();
      args.clear();
      next = 0;
    }
  };
  // Parses what c's input holds from in_off, up to kMost commands, into
  // *ahead and asks the store to prefetch their keys. kOk when one or
  // more were parsed; otherwise the first one's result (*err: why).
  ParseResult ParseAhead(Conn* c, Ahead* ahead, std::string* err);
  std::deque<Ahead> ahead_;  // one per Process call in progress
  size_t ahead_depth_ = 0;
  std::vector<std::string_view> keys_;
  std::vector<PartKey> parts_;  // and the parts their fields are in

  void Flush(Conn* c);

  // Called by the Lua hook of a script of this worker that has run past
  // busy-reply-threshold (server/net/worker_busy.cc): the worker's other
  // clients are read and answered as Redis answers them then (BUSY, but
  // SCRIPT KILL, FUNCTION KILL, FUNCTION STATS and QUIT), so a client on
  // the same worker as the script can stop it.
  void ServeWhileBusy(bool function);
  int running_fd_ = -1;  // the connection whose command runs now
  pid_t master_pid_ = 0;  // the master this worker was started by

  WorkerConfig cfg_;
  std::unique_ptr<Store> store_;
  SharedStats stats_;
  SharedLatency latency_;
  LocalStats local_;
  CommandContext ctx_;
  RespLimits limits_;
  size_t max_request_ = 0;
  uint64_t budget_ = 0;      // this worker's share of client_memory
  uint64_t total_held_ = 0;  // bytes its clients' buffers hold now
  double last_timeout_scan_ = 0;
  int ep_ = -1, sig_fd_ = -1;
  int spare_fd_ = -1;  // given up to refuse a connection (Refuse)
  double refused_logged_us_ = -1e6;  // the last "limit reached" line
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  std::vector<std::string_view> args_;
  std::string inline_;  // an inline command's words, unquoted
  std::vector<std::unique_ptr<UdpServer>> udp_;  // --udp-port
  ClientState udp_client_;  // what every UDP request runs as
  bool draining_ = false;
  double drain_deadline_ = 0;
  // Hot restart of a subscriber: its registrations moved to the
  // replacement and its section of the handoff message in *out; false
  // (it stays) when the registry has no room.
  bool HandOverSubscriber(Conn* c, size_t budget, std::string* out);
  void ReadReplacementHello();
  int handoff_fd_ = -1;
  bool hello_seen_ = false;   // the replacement's hello was read
  uint32_t handoff_pid_ = 0;  // the replacement's pid (0: it did not say)
  bool handoff_long_ = false;  // it reassembles long messages (SendLong)
  int adopt_fd_ = -1;
  LongMessage adopt_long_;  // a long message from the worker replaced
  uint64_t next_id_ = 0;
  // Blocking commands: the shared board, this worker's wake socket, its
  // blocked clients, keys written by its commits with clients waiting
  // (written_), keys to serve (woken_), clients let go (resumed_).
  Waits waits_;
  Waker waker_;
  BlockedClients blocked_;
  std::vector<uint64_t> written_, woken_, holders_;
  std::vector<int> resumed_;
  std::vector<std::pair<int, bool>> unblocks_;  // CLIENT UNBLOCK: fd, error
  std::vector<std::string_view> retry_args_;
  bool serving_ = false, retry_all_ = false;
  uint64_t resync_seen_ = 0;
  double last_check_ = 0;
  double rate_start_ = MonoUs();
  // While Process runs a connection's commands: the clock at the end of
  // the last one (Run).
  double* batch_clock_ = nullptr;
  // The wall clock less MonoUs, in us, read once a loop: what turns a
  // command's start on MonoUs into its time (Run).
  double wall_offset_us_ = WallUs() - MonoUs();
  uint64_t rate_ops_ = 0;
  // Pub/sub (docs/server.md, "Pub/sub"): this worker's hub.
  std::unique_ptr<PubSubHub> hub_;
  std::vector<int> to_close_;  // subscribers past the limit, closed after
  void OpenPubSub();
  // A message for a subscriber: appended, sent when the socket takes it
  // (the loop's EPOLLOUT); a subscriber
  // that has let more than Redis's pub/sub output limit pile up (32 MiB,
  // or 8 MiB for 60 s) is closed.
  void DeliverMessage(ClientState* cl, std::string_view frame);
  void PollPubSub();
};

}  // namespace worker_impl
}  // namespace shmkv
