// A worker whose own script runs long (server/net/worker_impl.h,
// ServeWhileBusy): its other clients are answered as Redis answers every
// client while a script is busy.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/reply.h"
#include "server/commands/script_lua.h"
#include "server/net/resp.h"
#include "server/net/worker_impl.h"

namespace shmkv {
namespace worker_impl {

void Worker::ServeWhileBusy(bool function) {
  static bool serving = false;  // the hook does not nest, but be sure
  if (serving) return;
  // A master gone (killed) leaves no one to stop a script that loops:
  // the worker goes as one killed mid-script goes, the script's writes
  // with it (they are committed only when it ends).
  if (master_pid_ > 1 && getppid() != master_pid_) _exit(1);
  serving = true;
  struct epoll_event events[64];
  const int n = epoll_wait(ep_, events, 64, 0);
  std::vector<std::string_view> args;
  std::string inline_words;
  for (int i = 0; i < n; ++i) {
    auto it = conns_.find(events[i].data.fd);
    if (it == conns_.end() || it->first == running_fd_) continue;
    Conn* c = it->second.get();
    // HTTP clients, blocked ones and those already closing wait for the
    // script to end, as do listeners and the worker's own channels.
    if (c->http || c->blocked || c->closing || !c->reading) continue;
    char buf[16384];
    for (;;) {
      ssize_t got = recv(c->fd, buf, sizeof(buf), 0);
      if (got > 0) {
        c->in.append(buf, static_cast<size_t>(got));
        local_.bytes_in += static_cast<uint64_t>(got);
        if (static_cast<size_t>(got) < sizeof(buf)) break;
        continue;
      }
      if (got == 0) c->closing = true;
      if (got < 0 && errno == EINTR) continue;
      break;
    }
    Reply reply(&c->out);
    reply.SetProtocol(c->client.resp);
    while (c->in_off < c->in.size()) {
      size_t used = 0;
      std::string err;
      ParseResult r =
          ParseCommand(c->in.data() + c->in_off, c->in.size() - c->in_off,
                       limits_, &c->cursor, &args, &used, &inline_words,
                       &err);
      if (r != ParseResult::kOk) break;  // the main loop answers errors
      c->in_off += used;
      if (args.empty()) continue;
      ++local_.commands;
      const std::string name = cmd::Lower(args[0]);
      const std::string sub = args.size() == 2 ? cmd::Lower(args[1]) : "";
      if (name == "script" && sub == "kill") {
        cmd::ReplyKill(store_.get(), true, &reply);
      } else if (name == "function" && sub == "kill") {
        cmd::ReplyKill(store_.get(), false, &reply);
      } else if (name == "function" && sub == "stats") {
        cmd::FunctionStatsWhileBusy(store_.get(), &reply);
      } else if (name == "quit" && args.size() == 1) {
        reply.Simple("OK");
        c->closing = true;
        break;
      } else {
        const size_t before = c->out.size();
        cmd::TransactionWhileBusy(args, store_.get(), &c->client,
                                  cmd::BusyText(function), &reply);
        if (before < c->out.size() && c->out[before] == '-') ++local_.errors;
      }
    }
    // What fits goes out now; the rest, and a close, after the script.
    while (c->pending_out() > 0) {
      ssize_t sent = send(c->fd, c->out.data() + c->out_off, c->pending_out(),
                          MSG_NOSIGNAL);
      if (sent > 0) {
        c->out_off += static_cast<size_t>(sent);
        local_.bytes_out += static_cast<uint64_t>(sent);
        continue;
      }
      if (sent < 0 && errno == EINTR) continue;
      break;
    }
    if (c->closing && c->pending_out() == 0) {
      Close(c->fd);
    } else {
      Update(c);
    }
  }
  serving = false;
}

}  // namespace worker_impl
}  // namespace shmkv
