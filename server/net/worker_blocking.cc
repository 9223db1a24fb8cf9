// Clients blocked in BLPOP and the others, the worker's side
// (docs/server.md, "Blocking commands"): who to wake after a commit, the
// blocked clients tried again in the order they blocked, timeouts, and
// the safety nets.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "server/commands/command_util.h"
#include "server/net/worker_impl.h"
#include "shmc/detail/process.h"

namespace shmkv {
namespace worker_impl {

void Worker::OpenBlocking() {
  std::string err;
  if (!waits_.Open(WaitsKey(cfg_.store), &err) ||
      !waker_.Open(ControlKey(cfg_.store), &err)) {
    // Without the board or a way to be woken a client could wait
    // forever: blocking commands answer at once instead.
    std::fprintf(stderr, "shmkv worker %zu: blocking commands will not "
                 "block: %s\n", cfg_.slot, err.c_str());
    return;
  }
  ctx_.waits = &waits_;
  store_->set_commit_observer(
      [](void* w, uint64_t key) {
        auto* self = static_cast<Worker*>(w);
        if (self->waits_.any()) self->written_.push_back(key);
      },
      this);
}

void Worker::SendWakes() {
  if (written_.empty()) return;
  const uint64_t self = static_cast<uint64_t>(getpid());
  for (uint64_t key : written_) {
    // A SWAPDB changed every key of two databases: every worker with a
    // blocked client tries them all (ServeWoken).
    if (key == Store::kEveryKey) {
      waits_.AllHolders(&holders_);
    } else {
      waits_.Holders(key, &holders_);
    }
    for (uint64_t pid : holders_) {
      if (pid == self) {
        woken_.push_back(key);
      } else if (!waker_.Send(pid, key)) {
        waits_.BumpResync();
      }
    }
  }
  written_.clear();
}

void Worker::Block(Conn* c) {
  auto b = std::make_unique<BlockedCommand>();
  if (ctx_.blocked.args.empty()) {
    b->args.assign(args_.begin(), args_.end());
  } else {
    b->args = std::move(ctx_.blocked.args);
  }
  b->ticket = ctx_.blocked.ticket;
  b->deadline_ns = ctx_.blocked.deadline_ns;
  b->keys = std::move(ctx_.blocked.keys);
  ctx_.blocked = CommandContext::Blocked();
  blocked_.Add(c->fd, *b);
  c->blocked = std::move(b);
}

void Worker::Unblock(Conn* c, bool board) {
  std::unique_ptr<BlockedCommand> b = std::move(c->blocked);
  blocked_.Remove(b->ticket);
  if (board) {
    auto lock = store_->Begin();  // the board changes under the lock
    waits_.Remove(b->ticket);
  }
  written_ = b->keys;
  SendWakes();
  resumed_.push_back(c->fd);
}

void Worker::ServeWoken() {
  if (serving_ || (woken_.empty() && !retry_all_)) return;
  serving_ = true;
  while (!woken_.empty() || retry_all_) {
    if (std::find(woken_.begin(), woken_.end(), Store::kEveryKey) !=
        woken_.end()) {
      retry_all_ = true;
    }
    std::vector<uint64_t> tickets =
        retry_all_ ? blocked_.All() : blocked_.Waiting(woken_);
    woken_.clear();
    retry_all_ = false;
    // Keys a client tried in this pass found nothing it could take: each
    // was empty, or an older client waits on it, older than every later
    // ticket too. A later client waiting only on such keys is not tried:
    // one write wakes one try per worker, not one per blocked client.
    std::vector<uint64_t> stuck;
    auto is_stuck = [&](uint64_t k) {
      return std::find(stuck.begin(), stuck.end(), k) != stuck.end();
    };
    for (uint64_t t : tickets) {
      const std::vector<uint64_t>& keys = blocked_.Keys(t);
      if (std::all_of(keys.begin(), keys.end(), is_stuck)) continue;
      auto it = conns_.find(blocked_.Fd(t));
      if (it == conns_.end() || !it->second->blocked) continue;
      Conn* c = it->second.get();
      if (Run(&c->client, c->blocked->args, &c->out, true, t)) {
        ctx_.blocked = CommandContext::Blocked();  // still waiting
        // An XREAD takes nothing, and waits for entries past its own
        // IDs, an XREADGROUP past its group's: another on the same key may
        // be served where it was not, so its keys are not stuck for the
        // clients after it.
        const std::string_view name = c->blocked->args.at(0);
        if (!cmd::EqualFold(name, "xread") &&
            !cmd::EqualFold(name, "xreadgroup")) {
          for (uint64_t k : keys) {
            if (!is_stuck(k)) stuck.push_back(k);
          }
        }
        continue;
      }
      // Answered; the command freed its rows under its lock.
      Unblock(c, false);
    }
  }
  serving_ = false;
}

void Worker::Resume() {
  while (!resumed_.empty()) {
    std::vector<int> fds;
    fds.swap(resumed_);
    for (int fd : fds) {
      auto it = conns_.find(fd);
      if (it == conns_.end()) continue;
      Conn* c = it->second.get();
      Process(c);
      Flush(c);
    }
    ServeWoken();
  }
}

void Worker::ExpireBlocked() {
  EndUnblocked();
  if (blocked_.empty()) return;
  for (uint64_t t : blocked_.Expired(shmc::detail::MonotonicNs())) {
    auto it = conns_.find(blocked_.Fd(t));
    if (it == conns_.end() || !it->second->blocked) {
      blocked_.Remove(t);
      continue;
    }
    EndWait(it->second.get(), false);
  }
}

// A blocked client's wait ends without its keys: its timeout's reply (a
// null array, as Redis's for every blocking pop), or CLIENT UNBLOCK's
// error.
void Worker::EndWait(Conn* c, bool error) {
  Reply reply(&c->out);
  reply.SetProtocol(c->client.resp);
  if (error) {
    reply.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
    ++local_.errors;
  } else {
    reply.NullArray();
  }
  // Counted once, as answered (Redis counts a blocked call when it
  // ends too); the wait is not its service time.
  local_.Record(CommandId(c->blocked->args.at(0)), 0);
  ++local_.commands;
  Unblock(c, true);
}

// The wait ends once the command that asked has finished (it may run in
// a transaction, under the store's lock, which Unblock takes).
bool Worker::UnblockClient(uint64_t id, bool error) {
  for (auto& [fd, conn] : conns_) {
    Conn* c = conn.get();
    if (c->client.id != id) continue;
    if (c->blocked == nullptr) return false;
    for (const auto& u : unblocks_) {
      if (u.first == fd) return false;  // already ended by an earlier one
    }
    unblocks_.emplace_back(fd, error);
    return true;
  }
  return false;
}

void Worker::EndUnblocked() {
  while (!unblocks_.empty()) {
    std::vector<std::pair<int, bool>> ends;
    ends.swap(unblocks_);
    for (const auto& [fd, error] : ends) {
      auto it = conns_.find(fd);
      // (Served meanwhile by a write: it has its reply.)
      if (it != conns_.end() && it->second->blocked) {
        EndWait(it->second.get(), error);
      }
    }
  }
}

void Worker::CheckBlocked(double now) {
  uint64_t resync = waits_.resync();
  if (resync != resync_seen_ || now - last_check_ >= 1e6) {
    resync_seen_ = resync;
    retry_all_ = !blocked_.empty();
  }
  if (now - last_check_ >= 1e6 && !draining_ && waits_.open()) {
    last_check_ = now;
    std::vector<uint64_t> mine;
    waits_.Mine(&mine);
    std::vector<uint64_t> stray;
    for (uint64_t t : mine) {
      if (!blocked_.Has(t)) stray.push_back(t);
    }
    if (!stray.empty()) {
      auto lock = store_->Begin();
      for (uint64_t t : stray) waits_.Remove(t);
    }
  }
  ServeWoken();
  Resume();
}

}  // namespace worker_impl
}  // namespace shmkv
