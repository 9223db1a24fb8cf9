// Pub/sub in the worker (docs/server.md, "Pub/sub"): its hub, delivery to
// its connections, Redis's output limit for subscribers.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "server/commands/notify.h"
#include "server/net/worker_impl.h"

namespace shmkv {
namespace worker_impl {

namespace {
// Redis's client-output-buffer-limit for pub/sub clients: 32 MiB at once,
// or 8 MiB for 60 s.
constexpr size_t kHardLimit = 32u << 20;
constexpr size_t kSoftLimit = 8u << 20;
constexpr double kSoftUs = 60e6;
}  // namespace

void Worker::OpenPubSub() {
  uint32_t self = static_cast<uint32_t>(getpid());
  hub_ = std::make_unique<PubSubHub>(
      store_.get(), self,
      [this](ClientState* cl, std::string_view frame) {
        DeliverMessage(cl, frame);
      },
      [this](uint32_t pid) {
        // A lost wake is no lost message: the ring is read on every
        // pass of the loop (at least every 100 ms).
        waker_.Send(pid, kPubSubWake);
      });
  std::string err;
  if (!hub_->Open(&err)) {
    std::fprintf(stderr, "shmkv worker %zu: pub/sub is off: %s\n", cfg_.slot,
                 err.c_str());
    hub_.reset();
    return;
  }
  ctx_.pubsub = hub_.get();
  // A key this worker finds expired (on access, under the write lock) is
  // an "expired" keyspace event at once, before the command's own.
  PubSubHub* hub = hub_.get();
  Store* store = store_.get();
  store_->SetExpiryListener([store, hub](uint32_t db, std::string_view key) {
    cmd::NotifyIn(store, hub, db, cmd::kNotifyExpired, "expired", key);
  });
  // A key a command's write makes: its "new" event, with the command's.
  store_->SetCreateListener([this](uint32_t db, std::string_view key) {
    cmd::NotifyNew(&ctx_, db, key);
  });
}

void Worker::DeliverMessage(ClientState* cl, std::string_view frame) {
  auto* c = static_cast<Conn*>(cl->conn);
  if (c == nullptr || c->closing) return;
  size_t pending = c->pending_out() + frame.size();
  double now = MonoUs();
  if (pending > kSoftLimit) {
    if (c->over_soft_since == 0) c->over_soft_since = now;
  } else {
    c->over_soft_since = 0;
  }
  if (pending > kHardLimit ||
      (c->over_soft_since != 0 && now - c->over_soft_since > kSoftUs)) {
    // As Redis: the client is closed, what it had not read is dropped.
    std::fprintf(stderr, "shmkv: closing subscriber %s: its pub/sub output "
                 "passed the limit (%zu bytes pending)\n",
                 cl->addr.c_str(), pending);
    // Closed after the delivery that found it: the hub is mid-walk.
    c->out.resize(c->out_off);
    c->closing = true;
    ++local_.evicted_clients;
    to_close_.push_back(c->fd);
    return;
  }
  c->out.append(frame.data(), frame.size());
  Update(c);
}

void Worker::PollPubSub() {
  if (hub_ != nullptr) hub_->SendWakes();  // published outside a read
  if (hub_ != nullptr && hub_->has_subscribers()) {
    uint64_t lost = hub_->lost();
    hub_->Poll();
    if (hub_->lost() != lost) {
      // This worker fell a whole ring behind (it was stopped, or busy in
      // a long script): its subscribers missed messages. As a subscriber
      // past its output limit, each is closed rather than left to miss
      // them silently; clients subscribe again when they reconnect.
      std::fprintf(stderr, "shmkv worker %zu: fell behind the pub/sub ring; "
                   "closing its subscribers\n", cfg_.slot);
      for (auto& [fd, c] : conns_) {
        if (c->client.subscribed()) to_close_.push_back(fd);
      }
    }
  }
  for (int fd : to_close_) {
    if (conns_.count(fd) != 0) Close(fd);  // once, and only ours
  }
  to_close_.clear();
}

}  // namespace worker_impl
}  // namespace shmkv
